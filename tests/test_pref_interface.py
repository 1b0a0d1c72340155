import queue

import numpy as np
import pytest

from drlhp.clips.clip import Clip
from drlhp.label_store.stream import ClipData, ForgetClip, Preference
from drlhp.labelling.interface import PrefInterface, PrefInterfaceConfig
from drlhp.labelling.protocols import SyntheticLabeller


def seg(i, ret):
    return Clip(i, np.full((2, 3, 3), i, np.uint8), np.array([ret / 2, ret / 2]))


def test_synthetic_labeller_prefers_the_larger_true_return():
    lab = SyntheticLabeller()
    assert lab.label(seg(0, 3.0), seg(1, 1.0)) == 1.0
    assert lab.label(seg(0, -3.0), seg(1, 1.0)) == 0.0
    assert lab.label(seg(0, 2.0), seg(1, 2.0)) == 0.5


def test_pairs_are_distinct_and_never_repeated():
    iface = PrefInterface(PrefInterfaceConfig(max_segs=10, seed=0), SyntheticLabeller(), queue.Queue())
    for i in range(6):
        iface.add_clip(seg(i, i))
    seen = set()
    while (pair := iface.chooser.pick()) is not None:
        a, b = pair
        assert a.clip_id != b.clip_id
        key = frozenset((a.clip_id, b.clip_id))
        assert key not in seen
        seen.add(key)
        iface.ask(a, b)
    assert len(seen) == 6 * 5 // 2  # every pair asked exactly once, then no more


def test_segments_travel_once_and_are_forgotten_when_they_leave_the_buffer():
    out = queue.Queue()
    iface = PrefInterface(PrefInterfaceConfig(max_segs=3, seed=0), SyntheticLabeller(), out)
    for i in range(3):
        iface.add_clip(seg(i, i))
    iface.ask(iface.chooser.clips[0], iface.chooser.clips[1])
    iface.ask(iface.chooser.clips[0], iface.chooser.clips[2])
    iface.add_clip(seg(3, 3))  # evicts segment 0
    msgs = [out.get_nowait() for _ in range(out.qsize())]
    sent = [m.clip.clip_id for m in msgs if isinstance(m, ClipData)]
    assert sent == [0, 1, 2]  # 0 was in two pairs but sent once
    assert [m for m in msgs if isinstance(m, Preference)] == [Preference(0, 1, 0.0, 0, "SyntheticLabeller"),
                                                             Preference(0, 2, 0.0, 1, "SyntheticLabeller")]
    assert msgs[-1] == ForgetClip(0)


def test_a_label_for_clips_that_left_the_buffer_while_their_pair_was_out_sends_them_then_forgets_them():
    out = queue.Queue()
    iface = PrefInterface(PrefInterfaceConfig(max_segs=2, seed=0), SyntheticLabeller(), out)
    a, b = seg(0, 0), seg(1, 1)
    iface.add_clip(a)
    iface.add_clip(b)
    iface.mark_asked(a, b)  # handed to a web labeller, who takes their time
    iface.add_clip(seg(2, 2))
    iface.add_clip(seg(3, 3))  # a and b leave the buffer
    assert iface.n_asked == 1 and iface.chooser.pick() is not None
    iface.record(a, b, 1.0, "web:alice")
    msgs = [out.get_nowait() for _ in range(out.qsize())]
    assert all(isinstance(m, ClipData) for m in msgs[:2]) and [m.clip.clip_id for m in msgs[:2]] == [0, 1]
    assert msgs[2:] == [Preference(0, 1, 1.0, 0, "web:alice"), ForgetClip(0), ForgetClip(1)]


def test_incomparable_answers_record_nothing_and_are_not_asked_again():
    class Shrug:
        pairs_per_segment = None

        def label(self, a, b):
            return None

        def close(self):
            pass

    out = queue.Queue()
    iface = PrefInterface(PrefInterfaceConfig(max_segs=5, seed=0), Shrug(), out)
    iface.add_clip(seg(0, 0))
    iface.add_clip(seg(1, 1))
    assert iface.ask(*iface.chooser.pick()) is None
    assert out.empty() and iface.chooser.pick() is None


def test_interface_needs_room_for_a_pair():
    with pytest.raises(ValueError, match="max_segs"):
        PrefInterface(PrefInterfaceConfig(max_segs=1), SyntheticLabeller(), queue.Queue())


def test_episode_tracker_follows_each_env_apart_when_their_segments_interleave():
    from drlhp.labelling.interface import EpisodeTracker

    tracker = EpisodeTracker(max_clips=10)
    frames, rewards = np.zeros((2, 3, 3), np.uint8), np.zeros(2)
    # (clip_id, episode, env): env 0 plays episode 0 then 2; env 1 plays episode 1 throughout.
    arrivals = [(0, 0, 0), (1, 1, 1), (2, 0, 0), (3, 1, 1), (4, 2, 0), (5, 1, 1)]
    finished = [tracker.add(Clip(i, frames, rewards, episode, env)) for i, episode, env in arrivals]
    assert [None if f is None else [s.clip_id for s in f] for f in finished] == [None, None, None, None, [0, 2], None]


def test_the_interface_asks_as_the_schedule_allows_and_journals_each_label_before_sending_it(tmp_path):
    from drlhp.label_store.journal import JournalWriter, read_journal
    from drlhp.labelling.schedule import LabelSchedule

    out = queue.Queue()
    journal = JournalWriter(str(tmp_path), lambda: 0)
    schedule = LabelSchedule(budget=10, initial=3, kind="constant", horizon=100)
    iface = PrefInterface(PrefInterfaceConfig(max_segs=20, seed=0, schedule=schedule),
                          SyntheticLabeller(), out, journal=journal)
    for i in range(8):
        iface.receive(seg(i, i))
    assert not iface.chooser.clips  # received clips join the buffer at the next step
    for _ in range(10):
        iface.step(env_steps=0)
    labels = [m for m in out.queue if isinstance(m, Preference)]
    # the initial batch
    assert len(iface.chooser.clips) == 8 and iface.n_asked == iface.recorder.n_sent == len(labels) == 3
    assert [r.seq for r in read_journal(str(tmp_path))] == [0, 1, 2]
    for _ in range(10):
        iface.step(env_steps=50)  # half the horizon: half the other 7 labels
    assert iface.n_asked == 3 + 3
    for label in labels:  # each from the true returns
        assert label.label == (1.0 if label.clip_id_a > label.clip_id_b else 0.0)
    iface.close()


def test_a_concurrent_labeller_gets_pairs_on_offer_and_its_answers_are_recorded():
    from drlhp.labelling.answers import Answer

    class Page:  # the web page's part of the labeller's interface, answering whatever is on offer
        pairs_per_segment = None

        def __init__(self):
            self.offered, self.progress, self.closed = [], None, False

        def offer(self, a, b):
            self.offered.append((a, b))

        def wants_pairs(self):
            return len(self.offered) < 2

        def take_answers(self):
            answers = [Answer(a, b, 1.0 if k == 0 else None, "ann", 2.0, k) for k, (a, b) in enumerate(self.offered)]
            self.offered = []
            return answers

        def set_progress(self, run_labels, asked, agreement=None):
            self.progress = (run_labels, asked)

        def acknowledge(self, answer):
            answer.done.set_result(True)

        def label(self, a, b):
            raise TypeError

        def close(self):
            self.closed = True

    out, page = queue.Queue(), Page()
    iface = PrefInterface(PrefInterfaceConfig(max_segs=10, seed=0), page, out)
    for i in range(4):
        iface.receive(seg(i, i))
    iface.step(env_steps=0)  # two pairs go on offer
    iface.step(env_steps=0)  # their answers come back: one label, one "can't tell"; two more pairs on offer
    labels = [m for m in out.queue if isinstance(m, Preference)]
    assert len(labels) == 1 and labels[0].labeller == "web:ann" and labels[0].seconds == 2.0
    assert iface.n_asked == 4 and iface.recorder.n_sent == 1 and page.progress == (1, 4)
    iface.close()  # the answers that came in as it stopped are recorded too
    assert page.closed and len([m for m in out.queue if isinstance(m, Preference)]) == 2


def test_a_labeller_that_shows_episodes_is_shown_each_one_as_it_ends():
    class Watcher(SyntheticLabeller):
        def __init__(self):
            super().__init__()
            self.episodes = []

        def show_episode(self, frames):
            self.episodes.append(len(frames))

    watcher = Watcher()
    iface = PrefInterface(PrefInterfaceConfig(max_segs=10, seed=0), watcher, queue.Queue())
    frames, rewards = np.zeros((2, 3, 3), np.uint8), np.zeros(2)
    for i, episode in enumerate([0, 0, 0, 1]):
        iface.receive(Clip(i, frames, rewards, episode, 0))
    assert watcher.episodes == [6]  # episode 0's three clips of two frames, once episode 1 began


class LongerClipWins:
    """A labeller of a user's own, as docs/labelling.md shows one: only Labeller's three members."""

    pairs_per_segment = 1.0

    def __init__(self):
        self.closed = False

    def label(self, a, b):
        return 0.5 if a.rewards.sum() == b.rewards.sum() else float(a.rewards.sum() > b.rewards.sum())

    def close(self):
        self.closed = True


def test_a_users_own_labeller_meets_the_labeller_protocol_and_nothing_more_is_asked_of_it():
    from drlhp.labellers import ConcurrentLabeller, Labeller, ServesPage, ShowsEpisodes, TimesAnswers

    mine = LongerClipWins()
    assert isinstance(mine, Labeller)
    assert not isinstance(mine, (ShowsEpisodes, TimesAnswers, ConcurrentLabeller, ServesPage))
    out = queue.Queue()
    iface = PrefInterface(PrefInterfaceConfig(max_segs=10, seed=0), mine, out)
    assert not iface.concurrent
    for i, episode in enumerate([0, 0, 1, 1]):  # an episode ends: nothing to show it to, no error
        iface.receive(Clip(i, np.zeros((2, 3, 3), np.uint8), np.full(2, float(i)), episode, 0))
        iface.step(env_steps=i)
    labels = [m for m in out.queue if isinstance(m, Preference)]
    assert len(labels) == 3 and all(m.labeller == "LongerClipWins" and m.seconds is None for m in labels)
    iface.close()
    assert mine.closed


def test_the_built_in_labellers_declare_what_the_interface_asks_of_them():
    from drlhp.labellers import (
        ConcurrentLabeller,
        GivesSecondOpinions,
        Labeller,
        NamesAnswerers,
        ServesPage,
        ShowsEpisodes,
        TimesAnswers,
    )
    from drlhp.labelling.human import HumanLabeller

    synthetic = SyntheticLabeller()
    assert isinstance(synthetic, Labeller) and not isinstance(synthetic, (ShowsEpisodes, ConcurrentLabeller))
    assert isinstance(synthetic, NamesAnswerers) and isinstance(synthetic, GivesSecondOpinions)  # several teachers
    person = object.__new__(HumanLabeller)  # its __init__ opens a window and a terminal
    person.last_seconds = None
    assert isinstance(person, ShowsEpisodes) and isinstance(person, TimesAnswers)
    assert not isinstance(person, ConcurrentLabeller)
    pytest.importorskip("aiohttp")
    from drlhp.labelling.web.labeller import WebLabeller

    page = object.__new__(WebLabeller)  # its __init__ starts the web server
    page.url, page.owner_url = "http://127.0.0.1:1/?token=t", "http://127.0.0.1:1/owner?token=o"
    assert isinstance(page, ConcurrentLabeller) and isinstance(page, ServesPage) and isinstance(page, ShowsEpisodes)
