"""MuJoCo HalfCheetah from state, synthetic preferences: SB3 PPO on the predicted reward -- the on-policy
counterpart of ``halfcheetah_sac.py`` (an on-policy agent learns from fresh rollouts only: nothing to relabel).

PPO with RL Zoo's tuned HalfCheetah settings, 1M agent steps, the paper's 700 labels. As in RL Zoo, the agent
sees observations and rewards through ``VecNormalize``; it sits outside drlhp's wrapper, so drlhp's clips and
reward network get the env's own observations, and the agent's rewards are the predicted ones, rescaled.

    pip install -e ".[examples,mujoco]"
    python examples/halfcheetah_ppo.py                      # 1M agent steps, 700 labels
    python examples/halfcheetah_ppo.py --true-reward        # baseline: PPO on the env's reward
    python examples/halfcheetah_ppo.py --resume --log-dir drlhp_logs/halfcheetah_ppo/<date-time>   # after a stop

The agent (with VecNormalize's statistics) is saved in the run's log_dir every ``--save-every`` agent steps and
at the end; ``--resume`` goes on from there. ``learning_curve.csv`` there has a row per finished episode.
"""
from common import parse_args, train_from_preferences
from mujoco_recipe import MUJOCO_DEFAULTS, make_mujoco
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from torch import nn

ENV_ID = "HalfCheetah-v5"


def make_agent(venv: VecEnv, seed: int) -> PPO:
    # RL Zoo's tuned PPO for HalfCheetah (hyperparams/ppo.yml, HalfCheetah-v3), its VecNormalize's gamma the agent's.
    return PPO("MlpPolicy", VecNormalize(venv, gamma=0.98), n_steps=512, batch_size=64, gamma=0.98,
               learning_rate=2.0633e-05, ent_coef=0.000401762, clip_range=0.1, n_epochs=20, gae_lambda=0.92,
               max_grad_norm=0.8, vf_coef=0.58096, seed=seed, verbose=0,
               policy_kwargs=dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU,
                                  net_arch=dict(pi=[256, 256], vf=[256, 256])))


if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/halfcheetah_ppo",
                      **{**MUJOCO_DEFAULTS, "total_timesteps": 1_000_000, "log_every": 20_000, "save_every": 50_000})
    venv = make_mujoco(ENV_ID, args.n_envs, args.seed, people=args.human or args.web)
    train_from_preferences(venv, args, make_agent, ENV_ID)
