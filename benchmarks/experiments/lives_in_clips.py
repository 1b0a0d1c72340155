"""How many of an Atari game's lost lives a teacher can see: the share of lives lost that fall inside one of the
clips drlhp cuts, with the examples' recipe (``examples/atari_recipe.py``) as it is, with drlhp's clips spanning lives
(``clips_span_lives``: a clip ends where SB3's Monitor says the game ended), and with a life lost not ending the
agent's episode.

A clip never spans two episodes: at an episode's end its unfinished clip is dropped. SB3's ``AtariWrapper`` ends an
episode at each life lost, so a life's last steps -- the death itself -- are in a clip only when the life lasted a
whole number of clips. The labels, the life-loss penalty (``--life-loss-penalty``) and the reward network then never
see a death. A uniformly random policy plays (actions seeded), 8 envs as the examples run them; the figures are the
same each time.

    python -m benchmarks.experiments.lives_in_clips --steps 16000 \\
        --out benchmarks/results/atari_lives/lives_in_clips.log
"""
from __future__ import annotations

import argparse
import shlex
import sys

import numpy as np

from benchmarks.examples_path import with_examples
from drlhp.clips.cutting import EpisodeClips
from drlhp.clips.frames import infer_frame_spec
from drlhp.config import PreferenceConfig
from drlhp.frontends.sb3 import clip_ends

GAMES = ("BreakoutNoFrameskip-v4", "SeaquestNoFrameskip-v4")
N_ENVS = 8


def lives_in_clips(game: str, steps: int, life_ends_episode: bool, clips_span_lives: bool = False,
                   seed: int = 0) -> tuple[int, int]:
    """Lives lost in ``steps`` agent steps of a random policy, and how many of them fall inside a clip (cut as the
    SB3 front-end cuts them, with ``clips_span_lives`` or not)."""
    from atari_recipe import make_atari

    venv = make_atari(game, N_ENVS, seed, life_ends_episode=life_ends_episode)
    venv.action_space.seed(seed)
    observations = venv.reset()
    clips = EpisodeClips(infer_frame_spec(observations[0]), PreferenceConfig().segment_length, N_ENVS)
    lives = [None] * N_ENVS
    lost = seen = 0
    for _ in range(steps // N_ENVS):
        actions = np.array([venv.action_space.sample() for _ in range(N_ENVS)])
        observations, _, dones, infos = venv.step(actions)
        died = np.array([lives[i] is not None and info.get("lives", 0) < lives[i] for i, info in enumerate(infos)])
        lives = [None if done and "episode" in info else info.get("lives") for done, info in zip(dones, infos)]
        lost += int(died.sum())
        ends = clip_ends(dones, infos) if clips_span_lives else dones
        seen += int(sum(c.rewards.sum() for c in clips.add(observations, died.astype(float), episode_ends=ends)))
    venv.close()
    return lost, seen


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--games", nargs="+", default=list(GAMES))
    p.add_argument("--steps", type=int, default=16_000, help="agent steps per game and recipe (all envs)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="also write the table to this log")
    args = p.parse_args()
    with_examples()
    lines = [f"# python -m benchmarks.experiments.lives_in_clips {shlex.join(sys.argv[1:])}",
             f"# a random policy, {N_ENVS} envs, {args.steps:,} agent steps each; clips of "
             f"{PreferenceConfig().segment_length} steps",
             "game life_ends_episode clips_span_lives lives_lost inside_a_clip share"]
    for game in args.games:
        for life_ends_episode, span in ((True, False), (True, True), (False, False)):
            lost, seen = lives_in_clips(game, args.steps, life_ends_episode, span, args.seed)
            lines.append(f"{game} {life_ends_episode} {span} {lost} {seen} {seen / max(lost, 1):.3f}")
            print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
