"""A run at a glance (``drlhp plot LOG_DIR``): reward-model curves, labels over time, predicted vs true return,
and the agent's true episode return by agent step when the run wrote a learning curve (the examples do)."""
from __future__ import annotations

import csv
import os

import numpy as np

from drlhp.cli.offline import spearman
from drlhp.errors import FileFormatError, MissingExtraError, MissingFileError
from drlhp.label_store.database import PrefBuffer
from drlhp.reward.predictor import RewardPredictor
from drlhp.storage.curve_csv import read_learning_curve, smooth
from drlhp.storage.layout import LogDir

RECENT_CLIPS = 300
SMOOTHING_EPISODES = 20


def read_metrics(log_dir: str) -> dict[str, np.ndarray]:
    path = LogDir(log_dir).metrics
    if not os.path.exists(path):
        raise MissingFileError(f"{path} does not exist: point drlhp plot at the log_dir of a run that trained a "
                                "reward network (it writes a row per checkpoint)")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise FileFormatError(f"{path} has no rows yet: the run has not written a checkpoint")
    return {key: np.array([float(r[key]) for r in rows]) for key in rows[0]}


def plot(log_dir: str, out: str | None = None, prefs_dir: str | None = None) -> str:
    """Write the figure as a PNG (default ``<log_dir>/drlhp_plot.png``); returns its path.

    The fourth panel needs the run's checkpoint and labelled clips (``prefs_dir``, else ``log_dir``):
    per clip, the network's predicted return against the env's true return. With a
    ``learning_curve.csv``, a fifth panel below shows the true episode return by agent step
    (a run on the true reward, which trains no reward network, gets that panel alone).
    """
    try:
        import matplotlib
    except ImportError as e:
        raise MissingExtraError('drlhp plot draws with matplotlib: pip install "drlhp[plot]"') from e
    matplotlib.use("Agg")  # a file, never a window
    import matplotlib.pyplot as plt

    curve = read_learning_curve(log_dir)
    if curve is not None and not os.path.exists(LogDir(log_dir).metrics):
        fig, ax = plt.subplots(figsize=(11, 4.5))
        plot_learning_curve(ax, curve)
        return _save(fig, log_dir, out)
    m = read_metrics(log_dir)
    if curve is None:
        fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    else:
        fig = plt.figure(figsize=(11, 12))
        grid = fig.add_gridspec(3, 2)
        axes = np.array([[fig.add_subplot(grid[row, col]) for col in range(2)] for row in range(2)])
        plot_learning_curve(fig.add_subplot(grid[2, :]), curve)
    (loss, acc), (labels, returns) = axes
    for split in ("train", "val"):
        loss.plot(m["training_step"], m[f"{split}_loss"], marker=".", label=split)
        acc.plot(m["training_step"], m[f"{split}_accuracy"], marker=".", label=split)
    loss.set(title="reward model: preference loss", xlabel="training step", ylabel="cross-entropy")
    acc.set(title="reward model: accuracy on strict labels", xlabel="training step", ylim=(0, 1.02))
    acc.axhline(0.5, color="grey", lw=0.8, ls=":")
    for ax in (loss, acc):
        ax.legend()
    held = ("n_train_labels", "n_val_labels") if "n_train_labels" in m else ("n_train_prefs", "n_val_prefs")  # older
    labels.plot(m["wall_time_s"] / 60, m[held[0]] + m[held[1]], marker=".")
    labels.set(title="labels in the database", xlabel="minutes since the trainer started", ylabel="pairs")
    _plot_returns(returns, log_dir, prefs_dir or log_dir)
    return _save(fig, log_dir, out)


def _save(fig, log_dir: str, out: str | None) -> str:
    import matplotlib.pyplot as plt

    fig.suptitle(os.path.abspath(log_dir), fontsize=9)
    fig.tight_layout()
    out = out or LogDir(log_dir).plot
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def plot_learning_curve(ax, curve: dict, name: str | None = None, color: str | None = None,
                        window: int = SMOOTHING_EPISODES, labels_ax=None, legend: bool = True):
    """Draw a learning curve (from ``read_learning_curve``) on ``ax``: each episode's true return as a faint dot,
    their trailing mean over ``window`` episodes as a line, and the labels used so far, if any, as a dashed line
    on a twin axis (``labels_ax``, made if None and needed). Returns the legend's handles and the labels' axis."""
    steps, returns = curve["agent_steps"], curve["true_episode_return"]
    name = name or str(curve["run"][0])
    # Envs stepped together end episodes at the same agent step: draw the mean once per step, after its last one.
    last_of_step = np.r_[steps[1:] != steps[:-1], True]
    line, = ax.plot(steps[last_of_step], smooth(returns, window)[last_of_step], color=color, lw=1.8,
                    label=f"{name}: true return, mean of last {window} episodes")
    ax.scatter(steps, returns, s=4, alpha=0.25, color=line.get_color())
    ax.set(title="true episode return (the env's own reward) by agent step", xlabel="agent steps",
           ylabel="true episode return")
    handles = [line]
    if curve["labels"].max() > 0:
        labels_ax = labels_ax or ax.twinx()
        labels_line, = labels_ax.plot(steps, curve["labels"], color=line.get_color(), ls="--", lw=1,
                                      label=f"{name}: labels used ({int(curve['labels'][-1])} in all)")
        labels_ax.set_ylabel("labels used (dashed)")
        labels_ax.set_ylim(bottom=0)
        handles.append(labels_line)
    if legend:
        ax.legend(handles=handles, loc="lower right", fontsize=8)
    return handles, labels_ax


def _plot_returns(ax, log_dir: str, prefs_dir: str) -> None:
    ax.set(title=f"predicted vs true return, latest {RECENT_CLIPS} clips", xlabel="true return (env reward)",
           ylabel="predicted return (raw)")
    ckpt = LogDir(log_dir).checkpoint
    if not (os.path.exists(ckpt) and LogDir(prefs_dir).has_labels()):
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
