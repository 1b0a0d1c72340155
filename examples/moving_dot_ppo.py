"""Train SB3 PPO on the bundled MovingDot env from synthetic preferences only.

The agent never sees the env's reward. First a random policy plays until 80
pairs of its clips are labelled, and the reward predictor (one network) trains
on them (the paper's pre-training phase); then PPO learns from the predicted
reward only, while new random pairs keep being labelled at an even rate, 300
labels in all (``--label-budget``), and the predictor keeps training. It prints the *true* episode return as it learns
(random policy: about 35; best: about 49) and the labels used. 8 envs step together
(``--n-envs``); one drlhp pipeline serves them all.

    python examples/moving_dot_ppo.py --total-timesteps 30000
    python examples/moving_dot_ppo.py --human --n-initial-prefs 20   # you label the clips
    python examples/moving_dot_ppo.py --true-reward                  # baseline: PPO on the env's reward
    python examples/moving_dot_ppo.py --resume --log-dir drlhp_logs/moving_dot/<date-time>   # go on after a stop

The run's log_dir (printed at the start, with the command that resumes it) gets the agent every
``--save-every`` agent steps and at the end, and ``learning_curve.csv``: a row per finished episode.
"""
from common import parse_args, train_from_preferences
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv

import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0)

ENV_ID = "drlhp/MovingDot-v0"


def make_agent(venv: VecEnv, seed: int) -> PPO:
    # Rollouts of 128 steps in all, a short horizon and a high learning rate: MovingDot rewards come every step.
    return PPO("CnnPolicy", venv, n_steps=max(1, 128 // venv.num_envs), batch_size=64, n_epochs=4,
               learning_rate=1e-3, gamma=0.9, ent_coef=0.0, seed=seed, verbose=0)


if __name__ == "__main__":
    # 80 of the 300 labels before the agent starts: PPO settles on its policy in the first 10k of the 30k steps,
    # and with 40 it settled low in 2 of 14 runs (docs/history.md, "Defaults").
    args = parse_args(__doc__, log_dir="drlhp_logs/moving_dot", save_every=10_000, n_initial_prefs=80)
    train_from_preferences(make_vec_env(ENV_ID, n_envs=args.n_envs, seed=args.seed), args, make_agent, ENV_ID)
