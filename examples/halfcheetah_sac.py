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
from mujoco_recipe import MUJOCO_DEFAULTS, make_mujoco, make_sac_agent

ENV_ID = "HalfCheetah-v5"

if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/halfcheetah", **MUJOCO_DEFAULTS)
    venv = make_mujoco(ENV_ID, args.n_envs, args.seed, people=args.human or args.web)
    train_from_preferences(venv, args, make_sac_agent, ENV_ID)
