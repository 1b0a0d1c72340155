"""Which pair to ask about: the one the reward ensemble disagrees on most.

Christiano et al. 2017 sample many candidate pairs and ask about those where the
ensemble members' predicted preferences vary most: a label there teaches the
most. ``DisagreementScorer`` reads the trainer's latest checkpoint and keeps each
clip's per-member return, so scoring a candidate costs nothing once its clips are
known. Clips are evaluated a few at a time (``max_new_per_pick``), newest first,
and the rest in the labeller's idle time: a person's next pair never waits for a
whole buffer of clips to be evaluated after a new checkpoint.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, get_args

import numpy as np

from drlhp.clips.clip import Clip
from drlhp.storage.checkpoint_watch import CheckpointWatch

if TYPE_CHECKING:
    from drlhp.reward.predictor import RewardPredictor

log = logging.getLogger("drlhp.pair_selection")

#: How the interface picks the pair to ask (``PreferenceConfig.pair_selection``).
PairSelection = Literal["coverage", "disagreement", "random"]
SELECTIONS: tuple[PairSelection, ...] = get_args(PairSelection)

#: Random pairs the ensemble judges for each pair it picks by disagreement.
DEFAULT_N_CANDIDATES = 64


def preference_disagreement(returns_a: np.ndarray, returns_b: np.ndarray) -> np.ndarray:
    """Variance over members of P(a preferred) = sigmoid(R_a - R_b); returns ``(n, M)`` -> ``(n,)``."""
    p = 1.0 / (1.0 + np.exp(-np.clip(returns_a - returns_b, -50, 50)))
    return p.var(axis=-1)


class DisagreementScorer:
    """Per-member returns of clips under the latest checkpoint at ``ckpt_path``, and pair scores from them."""

    def __init__(self, ckpt_path: str, poll_interval: float, max_new_per_pick: int = 8) -> None:
        self.ckpt_path, self.max_new_per_pick = ckpt_path, max_new_per_pick
        self.predictor: RewardPredictor | None = None
        self._watch = CheckpointWatch(ckpt_path, poll_interval)
        # clip_id -> (checkpoint generation, per-member return): an older generation's is used until refreshed.
        self._returns: dict[int, tuple[int, np.ndarray]] = {}
        self._generation = 0

    @property
    def ready(self) -> bool:
        """True once a checkpoint of an ensemble (2+ members) is loaded."""
        return self.predictor is not None and self.predictor.n_members > 1

    def poll(self) -> None:
        """Load a newer checkpoint if there is one (a stat call at most every ``poll_interval`` s)."""
        from drlhp.reward.predictor import RewardPredictor  # torch: only in interfaces that select by disagreement

        try:
            predictor = self._watch.poll(RewardPredictor.load)
        except ValueError as e:  # e.g. replaced while read: the next poll tries again
            log.debug("could not load %s yet: %s", self.ckpt_path, e)
            return
        if predictor is None:
            return
        if self.predictor is None:
            log.info("picking pairs by the disagreement of the %d-member ensemble in %s", predictor.n_members,
                     self.ckpt_path)
        self.predictor = predictor
        self._generation += 1

    def refresh(self, clips: Sequence[Clip], limit: int) -> int:
        """Evaluate up to ``limit`` clips without a current-generation return, newest first; returns how many."""
        if not self.ready:
            return 0
        predictor = self.predictor
        assert predictor is not None  # ready
        todo = [s for s in reversed(clips) if self._returns.get(s.clip_id, (-1,))[0] != self._generation][:limit]
        for clip in todo:
            self._returns[clip.clip_id] = (self._generation, predictor.member_rewards(clip.frames).sum(axis=0))
        return len(todo)

    def forget(self, clip_id: int) -> None:
        self._returns.pop(clip_id, None)

    def most_disagreed(self, candidates: Sequence[tuple[Clip, Clip]]) -> tuple[Clip, Clip] | None:
        """The candidate pair with the largest disagreement among those whose clips have returns, or None."""
        scored = [(a, b) for a, b in candidates if a.clip_id in self._returns and b.clip_id in self._returns]
        if not scored:
            return None
        ra = np.stack([self._returns[a.clip_id][1] for a, _ in scored])
        rb = np.stack([self._returns[b.clip_id][1] for _, b in scored])
        return scored[int(np.argmax(preference_disagreement(ra, rb)))]
