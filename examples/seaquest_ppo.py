"""Atari Seaquest from synthetic preferences: the Pong example's recipe (``atari_recipe.py``), unchanged, on Seaquest.

Seaquest is the third game of the Atari results, chosen before its first run (docs/results.md) and run with
the defaults nothing was tuned on: one of the paper's games, on which the paper's synthetic labels approached
RL's score more slowly than on Pong; SB3's Atari PPO learns it steadily within the first 1M agent steps (a
random policy scores about 68 a game); and its reward is unlike Pong's and Breakout's: points for each enemy
shot and for divers brought to the surface, a life lost for running out of air. As on Breakout, the score and
the lives left (the top 12 rows of the 84x84 frame) are blanked.

    pip install -e ".[examples]"
    python examples/seaquest_ppo.py --total-timesteps 1000000 --label-budget 3000
    python examples/seaquest_ppo.py --resume --log-dir drlhp_logs/seaquest/<date-time>   # go on after a stop
    python examples/seaquest_ppo.py --total-timesteps 1000000 --label-budget 3000 --life-loss-penalty 1

The last is a lever, not the defaults: the synthetic teacher counts each life lost as a point against its clip,
where the score alone never prefers a clip for staying alive (docs/results.md, "The third game").
"""
from atari_recipe import ATARI_DEFAULTS, make_agent, make_atari  # Pong's recipe: they cannot drift apart
from common import parse_args, train_from_preferences

ENV_ID = "SeaquestNoFrameskip-v4"


if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/seaquest", **ATARI_DEFAULTS)
    train_from_preferences(make_atari(ENV_ID, args.n_envs, args.seed, args.life_loss_penalty), args, make_agent,
                           ENV_ID)
