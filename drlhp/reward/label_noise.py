"""Labels that are sometimes wrong: how likely the reward network finds each label, the share of random answers
that best explains the validation labels, and a filter that leaves out the training pairs it finds least likely.

A person answers some pairs the wrong way round (B-Pref, Lee et al. 2021, takes one in ten as an ordinary
labeller's rate). The preference model already allows for it: a label is a random answer with probability
``noise_prob`` (Christiano et al. 2017: 0.1), so a wrong label costs at most ``-ln(noise_prob / 2)``. Two levers
act on what is left:

- ``estimate_noise_prob``: ``noise_prob`` refitted at each checkpoint to the validation labels (pairs the network
  never trained on) by maximum likelihood, never below the configured value;
- ``label_filter`` and ``label_flip``: RIME's trusted-sample selection and label flipping (Cheng et al., ICML 2024),
  simplified: at each checkpoint the network judges every training pair; a pair whose label it gives a probability
  below ``label_flip`` is trained on with the label flipped, and one below ``label_filter`` (but not flipped) is
  left out of training, each until a later checkpoint judges it otherwise. A tie ("equally good") is neither.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from drlhp.errors import ConfigError
from drlhp.label_store.database import PrefDB

#: Pairs judged a forward pass at a time (as the optimiser's evaluation batches).
JUDGE_BATCH = 64
#: The highest share of random answers an estimate may reach: above it labels say almost nothing.
MAX_NOISE_PROB = 0.9


def label_probabilities(returns: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
                        db: PrefDB) -> tuple[np.ndarray, np.ndarray]:
    """Each member's Bradley-Terry probability of each of ``db``'s labels ``(n, M)``, and the labels ``(n,)``.
    ``returns(frames_a, frames_b)``: every member's clip returns ``(n, M)`` of each side. A tie's probability is 0.5
    whatever the network says."""
    probabilities, labels = [], []
    for i in range(0, len(db), JUDGE_BATCH):
        frames_a, frames_b, batch_labels = db.batch(np.arange(i, min(i + JUDGE_BATCH, len(db))))
        ra, rb = returns(frames_a, frames_b)
        p_a = 1.0 / (1.0 + np.exp(-(ra - rb)))
        label = batch_labels[:, None]
        probabilities.append(np.where(label == 0.5, 0.5, label * p_a + (1 - label) * (1 - p_a)))
        labels.append(batch_labels)
    if not labels:
        return np.empty((0, 1)), np.empty(0)
    return np.concatenate(probabilities), np.concatenate(labels)


def estimate_noise_prob(probabilities: np.ndarray, labels: np.ndarray, floor: float) -> float:
    """The share of random answers ``eps`` that makes the strict labels likeliest under the network's probabilities
    ``(n, M)`` of them, ``P = (1 - eps) p + eps / 2``, averaged over members; at least ``floor``. ``floor`` when
    there is no strict label to go by."""
    strict = labels != 0.5
    if not strict.any():
        return floor
    p = probabilities[strict]
    grid = np.linspace(floor, MAX_NOISE_PROB, 1 + round((MAX_NOISE_PROB - floor) / 0.005))
    log_likelihood = [np.log((1 - eps) * p + eps / 2).mean() for eps in grid]
    return float(grid[int(np.argmax(log_likelihood))])


class LabelFilter:
    """Which training pairs the network trusts, and which it overrules: ``judge`` at each checkpoint, ``trusted``
    and ``as_trained`` between. ``leave_out_below``: a label the network gives a lower probability is left out;
    ``flip_below``: a label it gives a lower probability still is flipped (either may be None: never). A pair is
    known by its two clips' ids, so the verdicts outlive the database's growth and evictions; a pair not yet judged
    (it arrived since the last checkpoint) is trusted as labelled."""

    def __init__(self, leave_out_below: float | None, flip_below: float | None = None) -> None:
        for name, bound in (("label_filter", leave_out_below), ("label_flip", flip_below)):
            if bound is not None and not 0.0 < bound < 0.5:
                raise ConfigError(f"{name} must be in (0, 0.5): the probability of a label below which the network "
                                  f"overrules it (e.g. 0.1 to leave out, 0.02 to flip), or None; got {bound}")
        if leave_out_below is not None and flip_below is not None and flip_below >= leave_out_below:
            raise ConfigError(f"label_flip ({flip_below}) must be below label_filter ({leave_out_below}): a label is "
                              "flipped where the network is surer of the other answer than where it is left out")
        self.leave_out_below, self.flip_below = leave_out_below, flip_below
        self._distrusted: set[tuple[int, int]] = set()
        self._flipped: set[tuple[int, int]] = set()
        self._trusted: tuple[tuple, np.ndarray] | None = None  # (the database's state, its trusted indices)

    def judge(self, probabilities: np.ndarray, db: PrefDB) -> None:
        """Judge each pair of ``db`` by the probability the members give its label, on average (``probabilities``
        ``(len(db), M)`` from :func:`label_probabilities`)."""
        p = probabilities.mean(axis=1)
        flip = p < self.flip_below if self.flip_below is not None else np.zeros(len(p), bool)
        out = (p < self.leave_out_below) & ~flip if self.leave_out_below is not None else np.zeros(len(p), bool)
        ids = [(a, b) for a, b, _ in db.prefs]
        self._distrusted = {pair for pair, o in zip(ids, out) if o}
        self._flipped = {pair for pair, f in zip(ids, flip) if f}
        self._trusted = None

    def trusted(self, db: PrefDB) -> np.ndarray:
        """Indices of ``db``'s pairs to train on; worked out again only when the database or the verdicts changed
        (the trainer asks at every step)."""
        state = (len(db), db.prefs[0][:2], db.prefs[-1][:2]) if len(db) else (0,)
        if self._trusted is None or self._trusted[0] != state:
            self._trusted = (state, np.array([i for i, (a, b, _) in enumerate(db.prefs)
                                              if (a, b) not in self._distrusted], dtype=np.int64))
        return self._trusted[1]

    def as_trained(self, db: PrefDB, idx: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """``labels`` of ``db``'s pairs ``idx`` (any shape) as the network trains on them: the flipped ones the
        other way round."""
        if not self._flipped:
            return labels
        flipped = np.array([db.prefs[i][:2] in self._flipped for i in idx.ravel()]).reshape(idx.shape)
        return np.where(flipped, 1.0 - labels, labels).astype(labels.dtype)

    @property
    def n_left_out(self) -> int:
        """Pairs left out at the last judgement."""
        return len(self._distrusted)

    @property
    def n_flipped(self) -> int:
        """Pairs flipped at the last judgement."""
        return len(self._flipped)
