"""How much the reward of a step moves while the trainer trains on labels that do not change, per setting, offline.

A run's trainer trains without pause, also while no new label comes (a label every thousand agent steps at the
examples' 200-label budget), and an off-policy agent's buffer is relabelled with each newer checkpoint. What moves
the reward between labels moves the agent's targets for nothing. This trains a reward network on a SAC run's labels
(``drlhp train-reward``'s learner, one thread) for ``--warm-up`` steps, then keeps a checkpoint every ``--every``
steps up to ``--steps``, and scores each on the run's own states (its saved replay buffer, as
``benchmarks.experiments.reward_over_run`` reads it):

- change: the std of the change of a step's reward from the checkpoint kept before, in this one's reward std (a shift
  of every step alike is left out: it changes no choice of the agent's);
- rho: Spearman's rank correlation of the checkpoint's episode scores (its summed rewards) with the true returns;
- the L2 penalty the checkpoints trained with, and the validation accuracy at the end.

    python -m benchmarks.experiments.reward_drift /work/runs/hop_m01_s1 --out hop_drift \\
        --log benchmarks/results/hopper_sac/reward_drift.log
"""
from __future__ import annotations

import argparse
import csv
import shlex
import shutil
import sys
from pathlib import Path

import numpy as np

from benchmarks.experiments.reward_over_run import episode_scores, run_episodes
from benchmarks.report.run_records import git_commit
from drlhp.cli.offline import spearman, train_reward
from drlhp.config import PreferenceConfig
from drlhp.reward.predictor import RewardPredictor
from drlhp.storage.layout import LogDir

#: The settings compared, by the name a row gives them: drlhp's settings each changes (``{}``: the defaults).
VARIANTS: dict[str, dict] = {
    "defaults": {},
    "weight-average-0.9999": {"reward_predictor_weight_average": 0.9999},
    "adaptive-l2-factor-1.05": {"adaptive_l2_factor": 1.05},
    "adaptive-l2-factor-1.05-weight-average-0.9999": {"adaptive_l2_factor": 1.05,
                                                      "reward_predictor_weight_average": 0.9999},
    "no-adaptive-l2-weight-decay-0.5": {"adaptive_l2": False, "reward_predictor_weight_decay": 0.5},
}


def measure(run: Path, out: Path, settings: dict, steps: int, every: int, warm_up: int, seed: int) -> dict:
    """Train on ``run``'s labels with ``settings``, keeping checkpoints after ``warm_up``; their figures."""
    interval = settings.get("reward_predictor_ckpt_interval", PreferenceConfig.reward_predictor_ckpt_interval)
    if every % interval or warm_up % interval:
        sys.exit(f"error: --every {every} and --warm-up {warm_up} must be multiples of the checkpoint interval "
                 f"({interval}), or the same checkpoint is kept twice")
    log_dir = out / "log"
    shutil.rmtree(out, ignore_errors=True)
    (out / "kept").mkdir(parents=True)

    def keep(step: int, total: int) -> None:
        if step > warm_up and (step - warm_up) % every == 0:
            shutil.copy(LogDir(str(log_dir)).checkpoint, out / "kept" / f"step_{step}.ckpt")

    last = train_reward(str(run / "drlhp"), str(log_dir), steps=steps, on_step=keep, torch_threads=1, seed=seed,
                        **settings)
    observations, ends, lengths, returns = run_episodes(run)
    changes, rhos, previous = [], [], None
    for step in range(warm_up + every, steps + 1, every):
        rewards = RewardPredictor.load(str(out / "kept" / f"step_{step}.ckpt")).normalised_rewards(observations)
        rhos.append(spearman(episode_scores(rewards, ends, lengths), returns))
        if previous is not None:
            changes.append(np.std(rewards - previous) / np.std(rewards))
        previous = rewards
    with open(LogDir(str(log_dir)).metrics, newline="") as f:
        l2 = [float(r["l2_coefficient"]) for r in csv.DictReader(f) if int(r["training_step"]) > warm_up]
    return {"change": changes, "rho": rhos, "l2": (min(l2), max(l2)), "val_accuracy": float(last["val_accuracy"])}


def spread(values: list[float]) -> str:
    return f"{np.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a learning_curves --out folder of a SAC run (labels, replay buffer)")
    parser.add_argument("--out", type=Path, required=True, help="the trainings' checkpoints go here")
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--steps", type=int, default=45_000, help="training steps in all")
    parser.add_argument("--warm-up", type=int, default=30_000, help="training steps before the first kept checkpoint")
    parser.add_argument("--every", type=int, default=1_500, help="training steps between kept checkpoints")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", type=Path, help="also write the table here, with the command and commit")
    args = parser.parse_args()
    lines = [f"# python -m benchmarks.experiments.reward_drift {shlex.join(sys.argv[1:])}",
             f"# commit {git_commit()}; checkpoints every {args.every} training steps from step {args.warm_up} to "
             f"{args.steps}; median [lowest, highest] over them",
             "variant change_per_checkpoint episode_rho l2_lowest l2_highest val_accuracy_at_end"]
    print("\n".join(lines), flush=True)
    for name in args.variants:
        m = measure(args.run, args.out / name, VARIANTS[name], args.steps, args.every, args.warm_up, args.seed)
        lines.append(f"{name} {spread(m['change'])} {spread(m['rho'])} {m['l2'][0]:.3g} {m['l2'][1]:.3g} "
                     f"{m['val_accuracy']:.3f}")
        print(lines[-1], flush=True)
    if args.log:
        args.log.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
