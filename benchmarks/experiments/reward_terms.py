"""What a SAC run's reward paid for, step by step, against the terms of the env's own reward, model by model.

``reward_over_run`` ranks whole episodes; this looks at the steps the agent learned from. For each reward model the
run kept (the examples' ``--keep-reward-models``), over the ``--window`` agent steps before the model's step (the
replay buffer's newest transitions then), it gives:

- ``corr``: the correlation of the model's normalised reward of each step with the env's reward of that step (what
  SAC's critic sums: a linear measure, not a rank);
- on Hopper, whose reward pays 1 a step for being upright (gymnasium's health bonus; the example does not end an
  episode at a fall, as in the paper): the share of steps upright, and how much more an upright step earns than a
  fallen one, in each reward's own standard deviation over the window, the model's beside the env's. A model that
  pays far less for standing than the env does leaves the agent little reason to stand up.

On Hopper it also gives what the run's labels showed of standing: by 40 labels in the order asked, the share of
pairs with an upright frame on either side, and of their frames upright.

The env's reward of a stored step is rebuilt from the stored observation and action (the replay buffer holds the
predicted reward): gymnasium's terms with its default weights, the forward velocity read from the observation. The
log's header gives how closely that matches the env's reward over random steps (``rebuilt_reward_check``).

    python -m benchmarks.experiments.reward_terms /work/runs/hop_m01_s2 --task hopper_sac \\
        --out benchmarks/results/hopper_sac/reward_terms_seed2_200labels_mistake-rate-0.1.log
"""
from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.experiments.reward_over_run import stored_steps
from benchmarks.experiments.steps_per_label import labels_in_order
from benchmarks.report.run_records import git_commit
from drlhp.config import PreferenceConfig
from drlhp.errors import NoLabelsError
from drlhp.reward.predictor import RewardPredictor
from drlhp.sb3 import reward_history


def hopper_upright(obs: np.ndarray) -> np.ndarray:
    """Gymnasium Hopper's ``is_healthy`` from its observation (height, angle, then the rest of the state)."""
    return (obs[:, 0] > 0.7) & (np.abs(obs[:, 1]) < 0.2) & (np.abs(obs[:, 1:]) < 100).all(axis=1)


@dataclass(frozen=True)
class EnvReward:
    env_id: str
    env_kwargs: dict
    rebuild: Callable[[np.ndarray, np.ndarray], np.ndarray]  # (observations after the step, actions) -> reward
    upright: Callable[[np.ndarray], np.ndarray] | None = None


TASKS = {
    # Each example's env and gymnasium's reward terms at their default weights.
    "hopper_sac": EnvReward("Hopper-v5", dict(terminate_when_unhealthy=False),
                            lambda o, a: hopper_upright(o) + o[:, 5] - 1e-3 * (a ** 2).sum(axis=1), hopper_upright),
    "halfcheetah_sac": EnvReward("HalfCheetah-v5", {}, lambda o, a: o[:, 8] - 0.1 * (a ** 2).sum(axis=1)),
}


def rebuilt_reward_check(spec: EnvReward, steps: int = 2000, seed: int = 0) -> float:
    """The correlation of the rebuilt reward with the env's own over ``steps`` random steps."""
    import gymnasium as gym

    env = gym.make(spec.env_id, **spec.env_kwargs)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    observations, actions, rewards = [], [], []
    for _ in range(steps):
        action = env.action_space.sample()
        obs, reward, terminated, truncated, _ = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        if terminated or truncated:
            obs, _ = env.reset()
    env.close()
    return float(np.corrcoef(spec.rebuild(np.array(observations), np.array(actions)), rewards)[0, 1])


def upright_gap(reward: np.ndarray, upright: np.ndarray) -> float:
    """How much more an upright step earns than a fallen one, in the reward's std; nan without both kinds."""
    if upright.all() or not upright.any():
        return float("nan")
    return float((reward[upright].mean() - reward[~upright].mean()) / reward.std())


def every(kept: list[tuple[int, str]], interval: int) -> list[tuple[int, str]]:
    """Of the models kept (by step, in order), the first in each ``interval`` of agent steps."""
    first: dict[int, tuple[int, str]] = {}
    for step, path in kept:
        first.setdefault(step // interval, (step, path))
    return list(first.values())


LABELS_A_ROW = 40


def labelled_upright(log_dir: Path, upright: Callable[[np.ndarray], np.ndarray]) -> list[str]:
    """The rows of what the run's labels showed of standing (its snapshot and label journal; none without labels)."""
    try:
        labels = labels_in_order(str(log_dir), PreferenceConfig())
    except NoLabelsError:
        return []
    pairs = []  # (upright on either side, the share of upright frames)
    for a, b, *_ in labels:
        frames = np.concatenate([a.frames, b.frames])
        up = upright(frames.reshape(len(frames), -1))
        pairs.append((up.any(), up.mean()))
    rows = []
    for start in range(0, len(pairs), LABELS_A_ROW):
        chunk = np.array(pairs[start:start + LABELS_A_ROW], dtype=float)
        rows.append(f"{start}-{start + len(chunk) - 1} {chunk[:, 0].mean():.2f} {chunk[:, 1].mean():.3f}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a learning_curves --out folder of a SAC run with kept reward models")
    parser.add_argument("--task", choices=sorted(TASKS), required=True)
    parser.add_argument("--window", type=int, default=10_000, help="agent steps before each model's step")
    parser.add_argument("--every", type=int, default=20_000,
                        help="score the first model kept in each span of this many agent steps")
    parser.add_argument("--out", type=Path, help="also write the table here, with the command and commit")
    args = parser.parse_args()
    spec = TASKS[args.task]
    kept = every(reward_history(str(args.run / "drlhp")), args.every)
    if not kept:
        sys.exit(f"error: {args.run / 'drlhp'} has no reward models kept over the run (run the example with "
                 "--keep-reward-models N)")
    observations = stored_steps(args.run).astype(np.float32)
    true = spec.rebuild(observations, stored_steps(args.run, "actions"))
    upright = spec.upright(observations) if spec.upright is not None else None
    lines = [f"# python -m benchmarks.experiments.reward_terms {shlex.join(sys.argv[1:])}",
             f"# commit {git_commit()}; each model over the {args.window:,} agent steps before its step; corr: of its "
             f"normalised reward with the env's reward per step; gaps: upright minus fallen, in each reward's std "
             f"there; rebuilt_reward_check {rebuilt_reward_check(spec):.3f}",
             "model_step corr" + (" upright_share upright_gap_model upright_gap_env" if upright is not None else "")]
    for step, path in kept:
        window = slice(max(0, step - args.window), min(step, len(observations)))
        if window.stop - window.start < 2:
            continue
        predicted = RewardPredictor.load(path).normalised_rewards(observations[window])
        line = f"{step} {np.corrcoef(predicted, true[window])[0, 1]:.2f}"
        if upright is not None:
            up = upright[window]
            line += (f" {up.mean():.2f} {upright_gap(predicted, up):+.2f} "
                     f"{upright_gap(true[window], up):+.2f}")
        lines.append(line)
    if upright is not None and (labelled := labelled_upright(args.run / "drlhp", spec.upright)):
        lines += [f"# the run's labels in the order asked, by {LABELS_A_ROW}: the share of pairs with an upright frame "
                  "on either side, and of their frames upright", "labels pairs_with_upright frames_upright", *labelled]
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
