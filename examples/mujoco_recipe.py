"""The MuJoCo examples' recipe (``halfcheetah_sac.py``, ``hopper_sac.py``, ``halfcheetah_ppo.py``): gymnasium's v5
tasks from state as an SB3 VecEnv, the paper's defaults, and SAC with RL Zoo's MuJoCo settings; each task script
names its task (and its PPO, where it has one) and runs it."""
from stable_baselines3 import SAC
from stable_baselines3.common.vec_env import VecEnv

#: Every MuJoCo example's defaults: the paper's 700 labels; 300k agent steps, #47's yardstick for SAC.
MUJOCO_DEFAULTS = dict(total_timesteps=300_000, n_envs=1, label_budget=700, log_every=5_000, save_every=25_000)


def make_mujoco(env_id: str, n_envs: int, seed: int, people: bool = False, **env_kwargs: object) -> VecEnv:
    """gymnasium's MuJoCo task as an SB3 VecEnv (with SB3's Monitor: the true return of each episode); ``env_kwargs``
    go to ``gymnasium.make``. ``people``: people label, so the envs render the body for them (160 px: what they
    are shown), off a screen with EGL."""
    import os

    from stable_baselines3.common.env_util import make_vec_env

    from drlhp.errors import MissingExtraError

    if people:
        env_kwargs = {**env_kwargs, "render_mode": "rgb_array", "width": 160, "height": 160}
        if not os.environ.get("DISPLAY"):
            os.environ.setdefault("MUJOCO_GL", "egl")  # MuJoCo's default (glfw) needs a screen
    try:
        import mujoco  # noqa: F401
    except ImportError as e:
        raise MissingExtraError(f'{env_id} needs MuJoCo: pip install "drlhp[mujoco]"') from e
    return make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs)


def make_sac_agent(venv: VecEnv, seed: int) -> SAC:
    # RL Zoo's MuJoCo SAC: SB3's defaults (1M-transition buffer, batch 256, lr 3e-4, entropy tuned) after 10k
    # random steps.
    return SAC("MlpPolicy", venv, learning_starts=10_000, seed=seed, verbose=0)
