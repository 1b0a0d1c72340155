"""Each checkpoint's figures, written where people look: a row of ``reward_training_metrics.csv``, TensorBoard
scalars (with ``tensorboard_log``), and a line of the log."""
from __future__ import annotations

import logging
import math
import time

from drlhp.label_store.agreement import Agreement
from drlhp.reward.learner import Evaluation
from drlhp.reward.tensorboard_log import ScalarLog
from drlhp.storage.files import append_csv_row

log = logging.getLogger("drlhp.learner")

#: The columns of ``reward_training_metrics.csv`` (``drlhp plot`` reads them; a file of other columns is set aside).
#: ``labels``: the run's labels, less ``labels_retracted`` (those their labeller took back); ``agreement``: the share
#: of pairs answered twice (``pairs_answered_twice``, among the pairs held) that got the same answer (nan: none);
#: ``centre_gap``: where the raw reward's mean lies against its median (``drlhp.reward.normaliser.centre_gap``);
#: ``noise_prob``: the share of random answers the loss assumes; ``pairs_left_out`` and ``pairs_flipped``: by the
#: label filter (``label_filter``, ``label_flip``).
METRICS_COLUMNS = ("training_step", "wall_time_s", "labels", "pairs_asked", "labels_remaining", "n_train_labels",
                   "n_val_labels", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "l2_coefficient",
                   "pairs_per_second", "labels_retracted", "pairs_answered_twice", "agreement", "centre_gap",
                   "noise_prob", "pairs_left_out", "pairs_flipped")


#: Significant digits of the CSV's floats: a loss or an accuracy needs no more, and a long run's file halves.
METRICS_DIGITS = 6


def significant(value):
    """A float as the CSV writes it (``METRICS_DIGITS`` significant digits); anything else as it is."""
    return f"{value:.{METRICS_DIGITS}g}" if isinstance(value, float) else value


class MetricsLog:
    """Appends a row per checkpoint to the CSV file ``path``; ``tensorboard_log``: also a TensorBoard run there."""

    def __init__(self, path: str, tensorboard_log: str | None = None) -> None:
        self.path = path
        self.scalars = ScalarLog(tensorboard_log) if tensorboard_log else None
        self._start = time.monotonic()

    def write(self, evaluation: Evaluation, labels: int, pairs_asked: int, labels_remaining: int | None,
              labels_retracted: int = 0, agreement: Agreement | None = None) -> dict:
        """Record one checkpoint: ``labels`` the run has (``labels_retracted`` of them taken back), ``pairs_asked``
        and ``labels_remaining`` of its budget (None: no budget), the labellers' ``agreement`` on the pairs answered
        twice (None: none were). Returns the CSV row."""
        e = evaluation
        agreement = agreement or Agreement()
        row = {"training_step": e.training_step, "wall_time_s": round(time.monotonic() - self._start, 3),
               "labels": labels, "pairs_asked": pairs_asked,
               "labels_remaining": math.nan if labels_remaining is None else labels_remaining,
               "n_train_labels": e.n_train_labels, "n_val_labels": e.n_val_labels, "train_loss": e.train_loss,
               "train_accuracy": e.train_accuracy, "val_loss": e.val_loss, "val_accuracy": e.val_accuracy,
               "l2_coefficient": e.l2_coefficient, "pairs_per_second": e.pairs_per_second,
               "labels_retracted": labels_retracted, "pairs_answered_twice": agreement.n_pairs,
               "agreement": agreement.rate(), "centre_gap": e.centre_gap, "noise_prob": e.noise_prob,
               "pairs_left_out": e.pairs_left_out, "pairs_flipped": e.pairs_flipped}
        append_csv_row(self.path, METRICS_COLUMNS, {key: significant(value) for key, value in row.items()})
        if self.scalars is not None:
            self.scalars.add(e.training_step, {
                "reward/train_loss": e.train_loss, "reward/train_accuracy": e.train_accuracy,
                "reward/val_loss": e.val_loss, "reward/val_accuracy": e.val_accuracy,
                "reward/pairs_per_second": e.pairs_per_second, "reward/labels": labels,
                "reward/pairs_asked": pairs_asked, "reward/labels_kept": e.n_train_labels + e.n_val_labels,
                "reward/l2_coefficient": e.l2_coefficient, "reward/raw_reward_centre": e.raw_reward_centre,
                "reward/raw_reward_std": e.raw_reward_std, "reward/centre_gap": e.centre_gap,
                "labels/retracted": labels_retracted,
                **agreement_scalars(agreement)})
        log.info("reward step %d: train loss %.4f acc %.3f | val loss %.4f acc %.3f | %d/%d labels | L2 %.2g | "
                 "%.0f pairs/s", e.training_step, e.train_loss, e.train_accuracy, e.val_loss, e.val_accuracy,
                 e.n_train_labels, e.n_val_labels, e.l2_coefficient, e.pairs_per_second)
        return row

    def close(self) -> None:
        if self.scalars is not None:
            self.scalars.close()


def agreement_scalars(agreement: Agreement) -> dict[str, float]:
    """TensorBoard's agreement curves: over all labeller pairs, and per pair (``labels/agreement/<a>~<b>``); none
    until a pair is answered twice (a NaN point would only break the curve)."""
    if not agreement.n_pairs:
        return {}
    return {"labels/agreement": agreement.rate(),
            **{f"labels/agreement/{a}~{b}": rate for a, b, _, _, rate in agreement.rows()}}
