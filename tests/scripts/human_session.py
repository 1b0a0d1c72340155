"""Run by the end-to-end human-labelling tests in a tmux pane: steps a pixel env with
human preferences until the file named by argv[2] appears, then saves and exits.

argv: LOG_DIR STOP_FILE [N_ENVS]. With N_ENVS, an SB3 DummyVecEnv of that many envs
behind drlhp's SB3 front-end (one window and one prompt for all of them). With DRLHP_SESSION_STATE set, the
observations are a state vector (the step, the dot's row and column) and a person is shown the env's renders."""
import os
import sys

import gymnasium
import numpy as np

import drlhp  # noqa: F401
from drlhp import HumanPreferencesEnvWrapper

SETTINGS = dict(synthetic_preferences=False, collect_prefs=True, train_reward=False, segment_length=20,
                display_fps=20, seed=0, log_level=30)
# A checkpoint whose ensemble picks the pairs (benchmarks/speed/human_labelling_rate.py --disagreement).
if os.environ.get("DRLHP_SESSION_CHECKPOINT"):
    SETTINGS["pretrained_reward_predictor_dir"] = os.environ["DRLHP_SESSION_CHECKPOINT"]
# The task in words, shown above every question.
if os.environ.get("DRLHP_SESSION_TASK"):
    SETTINGS["labelling_instructions"] = os.environ["DRLHP_SESSION_TASK"]


class Bars(gymnasium.ObservationWrapper):
    """MovingDot, plus a bar whose position follows the step count: clips visibly play."""

    def observation(self, obs):
        obs = obs.copy()
        obs[:4, (self.unwrapped._t * 3) % 64] = 255
        return obs


class State(gymnasium.ObservationWrapper):
    """MovingDot observed as a state vector: the step, the dot's row and column (its renders are the picture)."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self.observation_space = gymnasium.spaces.Box(0, 1000, (3,), np.float32)

    def observation(self, obs):
        row, col = np.unravel_index(int(np.argmax(obs[..., 0])), obs.shape[:2])
        return np.array([self.unwrapped._t, row, col], np.float32)


def make_env() -> gymnasium.Env:
    if os.environ.get("DRLHP_SESSION_STATE"):
        return State(gymnasium.make("drlhp/MovingDot-v0", render_mode="rgb_array"))
    return Bars(gymnasium.make("drlhp/MovingDot-v0"))


def play_until(env: gymnasium.Env, stop_file: str) -> int:
    """Step ``env`` at random until ``stop_file`` appears; returns the steps taken."""
    env.reset(seed=0)
    steps = 0
    while not os.path.exists(stop_file):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            env.reset()
    return steps


def run_single(log_dir: str, stop_file: str) -> int:
    env = HumanPreferencesEnvWrapper(make_env(), log_dir=log_dir, **SETTINGS)
    steps = play_until(env, stop_file)
    env.save_prefs()
    env.close()
    return steps


def run_vector(log_dir: str, stop_file: str, n_envs: int) -> int:
    from stable_baselines3.common.vec_env import DummyVecEnv

    from drlhp.sb3 import HumanPreferencesVecEnvWrapper

    venv = HumanPreferencesVecEnvWrapper(DummyVecEnv([make_env] * n_envs), log_dir=log_dir, **SETTINGS)
    venv.reset()
    steps = 0
    while not os.path.exists(stop_file):
        venv.step(np.array([venv.action_space.sample() for _ in range(n_envs)]))
        steps += 1
    venv.save_prefs()
    venv.close()
    return steps


if __name__ == "__main__":
    if len(sys.argv) > 3:
        steps = run_vector(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    else:
        steps = run_single(sys.argv[1], sys.argv[2])
    print(f"SAVED after {steps} steps", flush=True)
