"""What ``stats()`` returns: one typed, frozen object for the local pipeline and a Ray runner's.

Fields a source does not count are None: a Ray runner cuts and sends clips, but the labels and the
training steps are its preference service's (``PreferenceService.stats()``), and only a runner
fetches weights. ``to_dict()`` gives the fields as a plain dict.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PipelineStats:
    """Counters of a run as seen from the process that steps the envs (counts since this process started
    unless said otherwise).

    Attributes:
        n_envs: envs stepping together.
        clips_sent: clips sent on to be labelled (a Ray runner: to its service).
        clips_dropped: clips dropped, not labelled: the interface was behind (a Ray runner: over its
            share of the clip rate, or its service behind).
        tail_frames_dropped: frames at episodes' ends too few to make a clip.
        predictor_training_step: training steps of the reward network in use (None: none yet).
        env_steps: steps of all envs (the label schedule's clock).
        clips_received: clips the interface received.
        pairs_asked: pairs the run asked about, answered or skipped (a resumed run's earlier ones too).
        labels_sent: labels answered in this session.
        labels_received: labels the trainer received in this session.
        run_labels: labels of the run (a resumed run's earlier ones too), not counting those taken back.
        training_steps: the trainer's training steps.
        db_bytes: clip data the trainer's database holds in memory, compressed.
        labels_in_snapshot: the run's labels in log_dir's train/val snapshot files.
        label_budget: ``PreferenceConfig.label_budget`` (None: no limit, or not known here).
        labels_remaining: labels the budget still allows (None: no limit, or not known here).
        labels_retracted: answers labellers took back in this session (``undo_limit``).
        pairs_answered_twice: pairs two labellers answered, in the run (``second_opinion_share``).
        label_agreement: the share of those pairs both labellers gave the same answer (nan: none yet).
        agreement: per labeller pair, ``(a, b, pairs answered by both, same answer, share)``.
        clips_cut: a Ray runner's clips cut (None elsewhere).
        clips_over_share: a Ray runner's clips over its share of the clip rate (None elsewhere).
        clips_dropped_backlog: a Ray runner's clips dropped as its service was behind (None elsewhere).
        weights_version: the version of the service's weights a Ray runner has (None elsewhere).
    """

    n_envs: int
    clips_sent: int
    clips_dropped: int
    tail_frames_dropped: int
    predictor_training_step: int | None
    # The preference interface's and the trainer's counts (None on a Ray runner: its service has them).
    env_steps: int | None = None
    clips_received: int | None = None
    pairs_asked: int | None = None
    labels_sent: int | None = None
    labels_received: int | None = None
    run_labels: int | None = None
    training_steps: int | None = None
    db_bytes: int | None = None
    labels_in_snapshot: int | None = None
    label_budget: int | None = None
    labels_remaining: int | None = None
    labels_retracted: int | None = None
    pairs_answered_twice: int | None = None
    label_agreement: float | None = None
    agreement: tuple[tuple[str, str, int, int, float], ...] | None = None
    # A Ray runner's own.
    clips_cut: int | None = None
    clips_over_share: int | None = None
    clips_dropped_backlog: int | None = None
    weights_version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (every field, None where not counted here)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
