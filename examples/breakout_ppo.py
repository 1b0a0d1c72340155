"""Atari Breakout from synthetic preferences: the Pong example's recipe (``atari_recipe.py``), unchanged, on Breakout.

Breakout is the second game because SB3's Atari PPO learns it within the first 1-2M agent steps
(a random policy scores about 1.5 a game, five lives), it is one of the paper's games, and its
reward is unlike Pong's: a brick broken is worth a point at any time, and a life is lost without a
point against. ``make_atari_env`` ends an episode at each lost life (the agent sees that) while the
true return printed and written to ``learning_curve.csv`` is the whole game's, as in Pong.

    pip install -e ".[examples]"
    python examples/breakout_ppo.py --total-timesteps 2000000 [--n-envs 8]
    python examples/breakout_ppo.py --resume --log-dir drlhp_logs/breakout/<date-time>   # go on after a stop
"""
from atari_recipe import ATARI_DEFAULTS, make_agent, make_atari  # Pong's recipe: they cannot drift apart
from common import parse_args, train_from_preferences

ENV_ID = "BreakoutNoFrameskip-v4"


if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/breakout", **ATARI_DEFAULTS)
    train_from_preferences(make_atari(ENV_ID, args.n_envs, args.seed, args.life_loss_penalty), args, make_agent,
                           ENV_ID)
