"""The Atari examples' recipe (``pong_ppo.py``, ``breakout_ppo.py``, ``seaquest_ppo.py``): one module, so the games
cannot drift apart; each task script names its game and runs it.

SB3's Atari recipe: ``make_atari_env``'s wrappers (no-op starts, frame skip 4, 84x84 grayscale, rewards clipped)
with 8 envs, the score blanked, then ``VecFrameStack(4)`` (observations 84x84x4 uint8), then drlhp -- after the
frame stack, so the reward network sees motion and a person is shown the newest frame of each stack -- then PPO
with SB3 zoo's Atari settings.
"""
import ale_py
import gymnasium
from common import LifeLossPenalty
from stable_baselines3 import PPO
from stable_baselines3.common.atari_wrappers import AtariWrapper
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecFrameStack

#: Every Atari example's defaults.
#: The reward network keeps drlhp's defaults: centred frames learn Pong without batch normalisation, with far
#: less noise in the reward (docs/history.md, "Centred frames").
ATARI_DEFAULTS = dict(total_timesteps=10_000_000, n_initial_prefs=500, n_initial_training_steps=200,
                      log_every=10_000, save_every=50_000)


#: The rows of the 84x84 frame that show the score (Breakout: and the lives left), blanked so that neither the
#: reward network nor a person judges a clip by its digits; the play starts below them. The Pong run with them
#: blanked kept pace with the true reward's until 900k steps and had the least noisy reward measured
#: (docs/history.md, "The score on the screen").
SCORE_ROWS = {"PongNoFrameskip-v4": 9, "BreakoutNoFrameskip-v4": 6, "SeaquestNoFrameskip-v4": 12}


class BlankScore(gymnasium.ObservationWrapper):
    """Black out the top ``rows`` of each 84x84 frame: the agent, the reward network and a person see the play only."""

    def __init__(self, env: gymnasium.Env, rows: int) -> None:
        super().__init__(env)
        self.rows = rows

    def observation(self, observation):
        observation = observation.copy()
        observation[:self.rows] = 0
        return observation


def make_atari(env_id: str, n_envs: int, seed: int, life_loss_penalty: float = 0.0,
               life_ends_episode: bool = True) -> VecEnv:
    """SB3's ``make_atari_env`` (Monitor, then ``AtariWrapper``), the score blanked, then 4 frames stacked;
    with ``life_loss_penalty``, each life lost costs that many points in the reward drlhp's teacher counts.
    ``life_ends_episode``: SB3's recipe, each life lost ends an episode for the agent -- and so for drlhp, whose clips
    never span two episodes: the last steps of each life are then in no clip
    (``benchmarks/experiments/lives_in_clips.py``); False: only the game's end does, as in Christiano et al."""
    gymnasium.register_envs(ale_py)
    rows = SCORE_ROWS.get(env_id, 0)

    def atari_wrapper(env: gymnasium.Env) -> gymnasium.Env:
        env = BlankScore(AtariWrapper(env, terminal_on_life_loss=life_ends_episode), rows)
        return LifeLossPenalty(env, life_loss_penalty) if life_loss_penalty else env

    # NoFrameskip: SB3's AtariWrapper skips 4 frames itself (ALE/Pong-v5 would skip 4 x 4).
    return VecFrameStack(make_vec_env(env_id, n_envs=n_envs, seed=seed, wrapper_class=atari_wrapper), 4)


def make_agent(venv: VecEnv, seed: int) -> PPO:
    return PPO("CnnPolicy", venv, n_steps=128, batch_size=256, n_epochs=4, learning_rate=2.5e-4,
               clip_range=0.1, ent_coef=0.01, vf_coef=0.5, seed=seed, verbose=0)
