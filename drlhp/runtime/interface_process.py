"""The preference-interface process: a small loop around the interface (``drlhp.labelling.interface``).

It waits for the trainer to say where the run's numbering continues, builds the labeller, the journal
and the interface, then, until asked to stop, moves clips from the channel into the interface and
lets it ask (``PrefInterface.step``), publishing its counters. While a person thinks, the labeller
calls ``idle``: clips keep coming off the channel (none is dropped) and the ensemble scores clips for
the next pick.
"""
from __future__ import annotations

import queue

from drlhp.label_store.journal import JournalWriter
from drlhp.labelling.interface import PrefInterface, PrefInterfaceConfig
from drlhp.labelling.pair_selection import DisagreementScorer
from drlhp.labelling.protocols import Labeller, ServesPage, SyntheticLabeller
from drlhp.labelling.recorder import EarlierLabels
from drlhp.reward.torch_setup import set_up_torch
from drlhp.runtime.clip_channel import ClipChannel
from drlhp.runtime.messages import RunStart
from drlhp.runtime.settings import InterfaceConfig
from drlhp.runtime.shared import SharedStats, StopFlag

#: Seconds to wait for a clip when there is nothing to ask now (a concurrent labeller: for its answers too,
#: so an answer waits at most this long to be journaled).
IDLE_WAIT_S, CONCURRENT_WAIT_S = 0.1, 0.01


def run_pref_interface(config: InterfaceConfig, channel: ClipChannel, label_queue, run_start, stop: StopFlag,
                       stats: SharedStats, url_queue=None) -> None:
    """Process main: receive clips, ask for labels, until ``stop`` is set; ``url_queue`` gets the web page's address."""
    start = _await_run_start(run_start, stop)
    if start is None:
        label_queue.put(None)
        return
    try:
        process = InterfaceProcess(config, channel, label_queue, start, stop, stats)
        if url_queue is not None:
            labeller = process.interface.labeller
            url_queue.put((labeller.url, labeller.owner_url) if isinstance(labeller, ServesPage) else None)
        process.run()
    finally:
        label_queue.put(None)  # the end marker: the trainer stops waiting for labels


def _await_run_start(run_start, stop: StopFlag) -> RunStart | None:
    """The trainer's numbering for this run (sent once it has loaded earlier labels), or None if stopped first."""
    while not stop.is_set():
        try:
            return run_start.get(timeout=0.1)
        except queue.Empty:
            pass
    return None


class InterfaceProcess:
    """The interface process's main thread: clips from ``channel`` into the interface, labels onto ``label_queue``."""

    def __init__(self, config: InterfaceConfig, channel: ClipChannel, label_queue, start: RunStart,
                 stop: StopFlag, stats: SharedStats) -> None:
        self.channel, self.stop, self.stats = channel, stop, stats
        self.first_clip_id = start.first_clip_id
        self._n_second_published = self._n_retracted_published = -1  # agreement rows are written when they change
        scorer = None
        if config.selection_ckpt is not None:
            set_up_torch(1)  # the interface's core is shared with the env process
            scorer = DisagreementScorer(config.selection_ckpt, config.ckpt_poll_interval)
        journal = None
        if config.journal_log_dir is not None:
            journal = JournalWriter(config.journal_log_dir, lambda: stats.labels_in_snapshot.value,
                                    config.instructions, config.val_fraction)
        asking = PrefInterfaceConfig(config.max_segs, config.seed, config.n_candidate_pairs, config.schedule,
                                     config.undo_limit, config.second_opinion_share,
                                     coverage=config.pair_selection == "coverage")
        self.interface = PrefInterface(asking, self._make_labeller(config), label_queue, journal, scorer,
                                       EarlierLabels(start.next_seq, start.n_retracted, start.agreement))
        self._publish()

    def _make_labeller(self, config: InterfaceConfig) -> Labeller:
        if config.labeller is not None:
            return config.labeller
        if config.web is not None:
            from drlhp.labelling.web.labeller import WebLabeller

            return WebLabeller(config.web)
        if config.human is not None:
            from drlhp.labelling.human import HumanLabeller

            return HumanLabeller(config.human, self.stop, idle=self.idle)
        return SyntheticLabeller(config.pairs_per_segment, config.synthetic_teacher, config.seed,
                                 config.synthetic_teachers)

    def receive(self, timeout: float) -> None:
        """Move every clip waiting on the channel into the interface (waiting up to ``timeout`` s for the first)."""
        clip = self.channel.receive(timeout)
        while clip is not None:
            clip.clip_id += self.first_clip_id
            self.interface.receive(clip)
            self.stats.clips_received.value += 1
            clip = self.channel.receive(0.0)

    def idle(self) -> None:
        """While a person thinks: take clips in, and score clips for the next pick."""
        self.receive(0.0)
        self.interface.chooser.refresh_scores(2)

    def run(self) -> None:
        interface, stats = self.interface, self.stats
        try:
            while not self.stop.is_set():
                # Wait for a clip only when there is nothing to ask right now.
                if interface.concurrent:
                    self.receive(CONCURRENT_WAIT_S)
                else:
                    self.receive(0.0 if interface.may_ask(stats.env_steps.value) else IDLE_WAIT_S)
                interface.step(stats.env_steps.value)
                self._publish()
        finally:
            interface.close()
            self._publish()

    def _publish(self) -> None:
        """The interface's counters, for ``stats()``."""
        interface, stats = self.interface, self.stats
        stats.pairs_asked.value, stats.labels_sent.value = interface.n_asked, interface.recorder.n_sent
        ledger = interface.recorder.ledger
        stats.labels_retracted.value = ledger.n_retracted
        if ledger.n_second != self._n_second_published or ledger.n_retracted != self._n_retracted_published:
            self._n_second_published, self._n_retracted_published = ledger.n_second, ledger.n_retracted
            stats.agreement.write(ledger.agreement.rows())
