"""Labels that are sometimes wrong, offline: what a fallible teacher costs the reward model, and what each lever
against it (``drlhp.reward.label_noise``) gives back, in minutes instead of an hour of RL a run.

For each teacher (a mistake rate and a label budget) and seed, ``benchmarks.experiments.reward_signal labels`` draws
pairs of clips of recorded policies and labels them; for each variant ``drlhp train-reward`` trains a reward network on
them with drlhp's defaults and the variant's settings; ``reward_signal.py measure`` scores its checkpoint on other
recordings of the same policies (``r_disc``: the correlation of the predicted and true discounted return-to-go, what a
critic learns; ``policy_rho``: how the policies are ordered). Recordings come from an examples run's kept agents
(``--keep-agents``)::

    python -m benchmarks.experiments.reward_signal record RUN/true_reward/agent --example halfcheetah_sac \\
        --steps 5000 --seed 200 --out rec_hc/labels
    python -m benchmarks.experiments.reward_signal record RUN/true_reward/agent --example halfcheetah_sac \\
        --steps 3000 --seed 100 --out rec_hc/eval
    python -m benchmarks.experiments.label_noise --labels-from rec_hc/labels --eval rec_hc/eval --out ln_hc \\
        --teachers 0:200 0.1:200 0.3:700 --seeds 0 1 2

It prints a row per teacher, seed and variant, then each teacher's and variant's mean over the seeds with the
lowest and highest; ``--out`` keeps the labels and checkpoints, so a second call scores only what is new.
"""
from __future__ import annotations

import argparse
import csv
import os
import sys

import numpy as np

from benchmarks.experiments.reward_signal import load_recordings, make_labels, measure
from drlhp.cli.offline import train_reward

#: The levers, by the name a row gives them: drlhp's settings each changes (``{}``: the defaults).
VARIANTS: dict[str, dict] = {
    "defaults": {},
    "estimate-noise-prob": {"estimate_noise_prob": True},
    "label-filter-0.1": {"label_filter": 0.1},
    "both": {"estimate_noise_prob": True, "label_filter": 0.1},
    "label-flip-0.05": {"label_flip": 0.05},
    "label-flip-0.2": {"label_flip": 0.2},
    "all": {"estimate_noise_prob": True, "label_filter": 0.1, "label_flip": 0.02},
}
SHOWN = ("r_disc", "r_100", "r_episode", "policy_rho")
SEGMENT_LENGTH = 25  # the examples' clips


def parse_teacher(text: str) -> tuple[float, int]:
    """``0.1:200``: a mistake rate and a label budget."""
    rate, labels = text.split(":")
    return float(rate), int(labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels-from", required=True, help="recordings whose clips are labelled")
    parser.add_argument("--eval", required=True, help="recordings the checkpoints are scored on")
    parser.add_argument("--out", required=True, help="labels and checkpoints go here")
    parser.add_argument("--teachers", nargs="+", type=parse_teacher, default=[(0.0, 200), (0.1, 200), (0.3, 700)],
                        help="MISTAKE_RATE:LABELS each (default: 0:200 0.1:200 0.3:700)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--steps", type=int, default=3000, help="training steps of each network (default: 3000)")
    args = parser.parse_args()

    evaluation = load_recordings(args.eval)
    print(f"{'teacher':>14} {'seed':>4} {'variant':>20} " + " ".join(f"{c:>10}" for c in SHOWN)
          + f" {'val_acc':>8} {'noise_p':>8} {'left_out':>8} {'flipped':>8}", flush=True)
    results: dict[tuple, list[dict]] = {}
    for rate, n_labels in args.teachers:
        teacher = f"{rate:g}:{n_labels}"
        for seed in args.seeds:
            labels = os.path.join(args.out, "labels", f"mistakes{rate:g}_{n_labels}labels_seed{seed}")
            if not os.path.isdir(labels):
                make_labels(args.labels_from, labels, n_labels, SEGMENT_LENGTH, None, seed, mistake_rate=rate)
            for variant in args.variants:
                log_dir = os.path.join(args.out, "train", os.path.basename(labels), variant)
                if not trained(log_dir, args.steps):
                    train_reward(labels, log_dir, steps=args.steps, torch_threads=1, seed=seed,
                                 segment_length=SEGMENT_LENGTH, **VARIANTS[variant])
                row = {**measure(log_dir, evaluation), **last_metrics(log_dir)}
                results.setdefault((teacher, variant), []).append(row)
                print(f"{teacher:>14} {seed:>4} {variant:>20} " + " ".join(f"{row[c]:>10.3f}" for c in SHOWN)
                      + f" {row['val_accuracy']:>8.3f} {row['noise_prob']:>8.3f} {row['pairs_left_out']:>8.0f}"
                      + f" {row['pairs_flipped']:>8.0f}",
                      flush=True)
    print("\nmean over the seeds [lowest, highest]")
    for (teacher, variant), rows in results.items():
        print(f"{teacher:>14} {variant:>20} " + "  ".join(
            f"{c} {np.mean([r[c] for r in rows]):.3f} [{min(r[c] for r in rows):.3f}, {max(r[c] for r in rows):.3f}]"
            for c in SHOWN[:2]), flush=True)


def last_checkpoint(log_dir: str) -> dict[str, str] | None:
    """The last row of ``log_dir``'s metrics CSV; None before its first checkpoint."""
    path = os.path.join(log_dir, "reward_training_metrics.csv")
    if not os.path.isfile(path):
        return None
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return rows[-1] if rows else None


def trained(log_dir: str, steps: int) -> bool:
    """Whether ``log_dir`` holds a network trained ``steps`` steps (not one a stop left part-way)."""
    last = last_checkpoint(log_dir)
    return last is not None and int(last["training_step"]) >= steps


def last_metrics(log_dir: str) -> dict[str, float]:
    """The last checkpoint's validation accuracy, assumed share of random answers, and pairs left out and flipped
    (none in a file from before flipping)."""
    last = last_checkpoint(log_dir)
    assert last is not None  # trained() before
    return {key: float(last.get(key, 0)) for key in ("val_accuracy", "noise_prob", "pairs_left_out", "pairs_flipped")}


if __name__ == "__main__":
    sys.exit(main())
