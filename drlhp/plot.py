"""A run at a glance (``drlhp plot LOG_DIR``): reward-model curves, labels over time, predicted vs true return."""
from __future__ import annotations

import csv
import os
from typing import Optional

import numpy as np

from drlhp.offline import spearman
from drlhp.pref_db import PrefBuffer, has_labels
from drlhp.reward_predictor import RewardPredictor
from drlhp.run_dir import METRICS_FILENAME, checkpoint_file

RECENT_CLIPS = 300


def read_metrics(log_dir: str) -> dict[str, np.ndarray]:
    path = os.path.join(log_dir, METRICS_FILENAME)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: point drlhp plot at the log_dir of a run that trained a "
                                "reward network (it writes a row per checkpoint)")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"{path} has no rows yet: the run has not written a checkpoint")
    return {key: np.array([float(r[key]) for r in rows]) for key in rows[0]}


def plot(log_dir: str, out: Optional[str] = None, prefs_dir: Optional[str] = None) -> str:
    """Write the figure as a PNG (default ``<log_dir>/drlhp_plot.png``); returns its path.

    The fourth panel needs the run's checkpoint and labelled clips (``prefs_dir``, else ``log_dir``):
    per clip, the network's predicted return against the env's true return.
    """
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError('drlhp plot draws with matplotlib: pip install "drlhp[plot]"') from e
    matplotlib.use("Agg")  # a file, never a window
    import matplotlib.pyplot as plt

    m = read_metrics(log_dir)
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    (loss, acc), (labels, returns) = axes
    for split in ("train", "val"):
        loss.plot(m["training_step"], m[f"{split}_loss"], marker=".", label=split)
        acc.plot(m["training_step"], m[f"{split}_accuracy"], marker=".", label=split)
    loss.set(title="reward model: preference loss", xlabel="training step", ylabel="cross-entropy")
    acc.set(title="reward model: accuracy on strict labels", xlabel="training step", ylim=(0, 1.02))
    acc.axhline(0.5, color="grey", lw=0.8, ls=":")
    for ax in (loss, acc):
        ax.legend()
    labels.plot(m["wall_time_s"] / 60, m["n_train_prefs"] + m["n_val_prefs"], marker=".")
    labels.set(title="labels in the database", xlabel="minutes since the trainer started", ylabel="pairs")
    _plot_returns(returns, log_dir, prefs_dir or log_dir)
    fig.suptitle(os.path.abspath(log_dir), fontsize=9)
    fig.tight_layout()
    out = out or os.path.join(log_dir, "drlhp_plot.png")
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _plot_returns(ax, log_dir: str, prefs_dir: str) -> None:
    ax.set(title=f"predicted vs true return, latest {RECENT_CLIPS} clips", xlabel="true return (env reward)",
           ylabel="predicted return (raw)")
    ckpt = checkpoint_file(log_dir)
    if not (os.path.exists(ckpt) and has_labels(prefs_dir)):
        ax.text(0.5, 0.5, "needs a checkpoint and labelled clips", ha="center", transform=ax.transAxes)
        return
    predictor = RewardPredictor.load(ckpt)
    buffer = PrefBuffer.load_all(prefs_dir)
    clips = {**buffer.train_db.segments, **buffer.val_db.segments}
    recent = [clips[i] for i in sorted(clips)[-RECENT_CLIPS:]]
    true = np.array([c.true_return for c in recent])
    predicted = np.array([predictor.normalised_rewards(c.frames).sum() for c in recent])
    ax.scatter(true, predicted, s=8, alpha=0.6)
    rho = spearman(predicted, true)
    ax.text(0.02, 0.95, "Spearman ρ n/a (no true reward)" if np.isnan(rho) else f"Spearman ρ = {rho:.2f}",
            transform=ax.transAxes, va="top")
