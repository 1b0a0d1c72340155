"""MuJoCo Hopper from state, synthetic preferences: SB3 SAC on the predicted reward, its replay buffer
relabelled -- ``halfcheetah_sac.py``'s run on the paper's second task (an episode ends when the hopper falls).

    pip install -e ".[examples,mujoco]"
    python examples/hopper_sac.py                      # 300k agent steps, 700 labels
    python examples/hopper_sac.py --true-reward        # baseline: SAC on the env's reward
    python examples/hopper_sac.py --resume --log-dir drlhp_logs/hopper/<date-time>   # go on after a stop
"""
from common import parse_args, train_from_preferences
from halfcheetah_sac import MUJOCO_DEFAULTS, make_agent, make_mujoco

ENV_ID = "Hopper-v5"

if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/hopper", **MUJOCO_DEFAULTS)
    train_from_preferences(make_mujoco(ENV_ID, args.n_envs, args.seed), args, make_agent, ENV_ID)
