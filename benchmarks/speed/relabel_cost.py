"""What relabelling an off-policy agent's replay buffer costs: transitions relabelled per second by
``drlhp.sb3.RelabelReplayBuffer``, against the agent's own steps per second in the same run.

Two cases, each on one torch thread (as an agent's process runs by default), with drlhp's default reward
network for its observations and a buffer filled with the env's own observations:

- ``state``: SAC on HalfCheetah-v5 (17 floats; an MLP reward network), a buffer of ``--state-buffer`` transitions;
  the agent's baseline: SAC's steps per second (env step + one gradient step of batch 256).
- ``pixels``: DQN on Pong (84x84x4 frame stacks, memory-optimised buffer; the keypoint network), a buffer of
  ``--pixel-buffer`` transitions; the baseline: DQN's steps per second (SB3 zoo's Atari settings: a gradient
  step every 4 env steps).

It prints the seconds one relabelling of a full buffer takes, what that is in agent steps, and how often the
default bound (``max_time_share`` 0.1: at most a tenth of the run's wall time) lets a run relabel.

    python -m benchmarks.speed.relabel_cost [--state-buffer 300000] [--pixel-buffer 20000] [--cases state pixels]
"""
from __future__ import annotations

import argparse
import tempfile
import time

import gymnasium
import numpy as np
import torch
from stable_baselines3 import DQN, SAC
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

from drlhp.clips.frames import infer_frame_spec
from drlhp.reward.predictor import NetConfig, RewardPredictor
from drlhp.reward.relabel_bound import DEFAULT_MAX_TIME_SHARE
from drlhp.sb3 import HumanPreferencesVecEnvWrapper, RelabelReplayBuffer


def wrapped(venv: VecEnv, log_dir: str) -> HumanPreferencesVecEnvWrapper:
    """drlhp's wrapper predicting rewards with a default network for ``venv``'s observations, no processes."""
    frame = venv.observation_space.sample()
    path = f"{log_dir}/reward_predictor.ckpt"
    RewardPredictor(NetConfig(infer_frame_spec(frame))).save(path)
    return HumanPreferencesVecEnvWrapper(venv, log_dir=log_dir, collect_prefs=False, train_reward=False,
                                         pretrained_reward_predictor_dir=path, log_level=30)


def fill(agent, n: int) -> None:
    """Fill ``agent``'s buffer to ``n`` transitions with its env's own observations (random actions)."""
    env = agent.get_env()
    obs = env.reset()
    for _ in range(n):
        actions = np.array([env.action_space.sample()])
        next_obs, rewards, dones, infos = env.step(actions)
        agent.replay_buffer.add(obs, next_obs, actions, rewards, dones, infos)
        obs = next_obs


def agent_steps_per_second(agent, steps: int) -> float:
    """The agent's learning speed once it trains: ``steps`` agent steps, timed."""
    agent.learn(agent.learning_starts + 1)  # past learning_starts: every timed step trains as in a run
    start = time.perf_counter()
    agent.learn(steps, reset_num_timesteps=False)
    return steps / (time.perf_counter() - start)


def relabel_seconds(agent) -> float:
    callback = RelabelReplayBuffer()
    callback.init_callback(agent)
    start = time.perf_counter()
    n = callback.relabel()
    assert n == agent.replay_buffer.buffer_size * agent.replay_buffer.n_envs or not agent.replay_buffer.full
    return time.perf_counter() - start


def report(case: str, n: int, seconds: float, agent_sps: float) -> None:
    between = seconds * (1 - DEFAULT_MAX_TIME_SHARE) / DEFAULT_MAX_TIME_SHARE
    print(f"{case:>6}: {n:,} transitions relabelled in {seconds:.2f} s ({n / seconds:,.0f} /s) = "
          f"{seconds * agent_sps:,.0f} agent steps ({agent_sps:.0f} agent steps/s, same run); with the default "
          f"bound ({DEFAULT_MAX_TIME_SHARE:g} of wall time) a run relabels at most every {between:.0f} s "
          f"= {between * agent_sps:,.0f} agent steps", flush=True)


def state_case(buffer_size: int, log_dir: str) -> None:
    env = wrapped(make_vec_env("HalfCheetah-v5", n_envs=1, seed=0), log_dir)
    with env:
        agent = SAC("MlpPolicy", env, buffer_size=buffer_size, learning_starts=1_000, seed=0)
        sps = agent_steps_per_second(agent, 500)
        fill(agent, buffer_size - agent.replay_buffer.pos)
        report("state", buffer_size, relabel_seconds(agent), sps)


def pixel_case(buffer_size: int, log_dir: str) -> None:
    import ale_py
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack

    gymnasium.register_envs(ale_py)
    env = wrapped(VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=1, seed=0), 4), log_dir)
    with env:
        agent = DQN("CnnPolicy", env, buffer_size=buffer_size, learning_starts=1_000, train_freq=4,
                    optimize_memory_usage=True, replay_buffer_kwargs=dict(handle_timeout_termination=False), seed=0)
        sps = agent_steps_per_second(agent, 2_000)
        fill(agent, buffer_size - agent.replay_buffer.pos)
        report("pixels", buffer_size, relabel_seconds(agent), sps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state-buffer", type=int, default=300_000, help="SAC's buffer (default: 300,000)")
    parser.add_argument("--pixel-buffer", type=int, default=20_000, help="DQN's buffer (default: 20,000)")
    parser.add_argument("--cases", nargs="+", choices=("state", "pixels"), default=["state", "pixels"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread", flush=True)
    for case in args.cases:
        with tempfile.TemporaryDirectory() as log_dir:
            (state_case if case == "state" else pixel_case)(
                args.state_buffer if case == "state" else args.pixel_buffer, log_dir)


if __name__ == "__main__":
    main()
