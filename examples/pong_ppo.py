"""Atari Pong from synthetic preferences: SB3 PPO on the predicted reward.

SB3's Atari recipe: ``make_atari_env`` (no-op starts, frame skip 4, 84x84
grayscale, rewards clipped) with 8 envs, the score blanked, then ``VecFrameStack(4)``
(observations 84x84x4 uint8), then drlhp -- after the frame stack, so the reward
network sees motion and a person is shown the newest frame of each stack --
then PPO with SB3 zoo's Atari settings. The agent never sees Pong's score: a
random policy first plays until the reward predictor is ready, then PPO learns
from the predicted reward. Real Pong training takes hours on a CPU; watch the
true return (-21 for a random player) in the printed progress.

    pip install -e ".[examples]"
    python examples/pong_ppo.py --total-timesteps 10000000 [--n-envs 8]
    python examples/pong_ppo.py --resume --log-dir drlhp_logs/pong/<date-time>   # go on after a stop

The agent is saved in the run's log_dir every ``--save-every`` agent steps (default 50,000) and at the
end; ``--resume`` goes on from there. ``learning_curve.csv`` there has a row per finished episode.
"""
from atari_recipe import ATARI_DEFAULTS, make_agent, make_atari
from common import parse_args, train_from_preferences

ENV_ID = "PongNoFrameskip-v4"


if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/pong", **ATARI_DEFAULTS)
    train_from_preferences(make_atari(ENV_ID, args.n_envs, args.seed, args.life_loss_penalty), args, make_agent,
                           ENV_ID)
