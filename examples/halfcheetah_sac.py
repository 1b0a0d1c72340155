"""MuJoCo HalfCheetah from state, synthetic preferences: SB3 SAC on the predicted reward, its replay buffer
relabelled.

The paper's continuous-control half (Christiano et al. 2017: 700 synthetic labels): observations are flat
vectors (drlhp's reward network is then an MLP), one env, SAC with RL Zoo's MuJoCo settings. The agent never
sees the env's reward: a random policy plays until the first labels are in and the reward predictor is ready,
then SAC learns from the predicted reward, and at each newer reward checkpoint the rewards already in its
replay buffer are recomputed (``drlhp.sb3.RelabelReplayBuffer``; ``--no-relabel`` keeps each as collected).
Watch the true return in the printed progress.

    pip install -e ".[examples,mujoco]"
    python examples/halfcheetah_sac.py                      # 300k agent steps, 700 labels
    python examples/halfcheetah_sac.py --true-reward        # baseline: SAC on the env's reward
    python examples/halfcheetah_sac.py --resume --log-dir drlhp_logs/halfcheetah/<date-time>   # go on after a stop

The agent and its replay buffer are saved in the run's log_dir every ``--save-every`` agent steps and at the
end; ``--resume`` goes on from there. ``learning_curve.csv`` there has a row per finished episode.
"""
from common import parse_args, train_from_preferences
from stable_baselines3 import SAC
from stable_baselines3.common.vec_env import VecEnv

ENV_ID = "HalfCheetah-v5"
#: Every MuJoCo example's defaults: the paper's 700 labels; 300k agent steps, #47's yardstick for SAC.
MUJOCO_DEFAULTS = dict(total_timesteps=300_000, n_envs=1, label_budget=700, log_every=5_000, save_every=25_000)


def make_mujoco(env_id: str, n_envs: int, seed: int, **env_kwargs: object) -> VecEnv:
    """gymnasium's MuJoCo task as an SB3 VecEnv (with SB3's Monitor: the true return of each episode); ``env_kwargs``
    go to ``gymnasium.make``."""
    from stable_baselines3.common.env_util import make_vec_env

    from drlhp.errors import MissingExtraError

    try:
        import mujoco  # noqa: F401
    except ImportError as e:
        raise MissingExtraError(f'{env_id} needs MuJoCo: pip install "drlhp[mujoco]"') from e
    return make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs)


def make_agent(venv: VecEnv, seed: int) -> SAC:
    # RL Zoo's MuJoCo SAC: SB3's defaults (1M-transition buffer, batch 256, lr 3e-4, entropy tuned) after 10k
    # random steps.
    return SAC("MlpPolicy", venv, learning_starts=10_000, seed=seed, verbose=0)


if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/halfcheetah", **MUJOCO_DEFAULTS)
    train_from_preferences(make_mujoco(ENV_ID, args.n_envs, args.seed), args, make_agent, ENV_ID)
