"""MuJoCo Hopper from state, synthetic preferences: SB3 SAC on the predicted reward, its replay buffer
relabelled -- ``halfcheetah_sac.py``'s run on the paper's second task.

As in the paper (Christiano et al. 2017, appendix A), an episode does not end when the hopper falls: it runs its
1,000 steps, and a fallen hopper earns no health bonus (gymnasium's ``terminate_when_unhealthy=False``; seals and
rl-teacher do the same). An episode that ended at a fall would tell the agent what the labels should teach, and
would pay it for falling wherever the predicted reward is below 0. Both arms, ``--true-reward`` too, run this env.

    pip install -e ".[examples,mujoco]"
    python examples/hopper_sac.py                      # 300k agent steps, 700 labels
    python examples/hopper_sac.py --true-reward        # baseline: SAC on the env's reward
    python examples/hopper_sac.py --resume --log-dir drlhp_logs/hopper/<date-time>   # go on after a stop
"""
from common import parse_args, train_from_preferences
from mujoco_recipe import MUJOCO_DEFAULTS, make_mujoco, make_sac_agent

ENV_ID = "Hopper-v5"
ENV_KWARGS = dict(terminate_when_unhealthy=False)

if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/hopper", **MUJOCO_DEFAULTS)
    venv = make_mujoco(ENV_ID, args.n_envs, args.seed, people=args.human or args.web, **ENV_KWARGS)
    train_from_preferences(venv, args, make_sac_agent, ENV_ID, ENV_KWARGS)
