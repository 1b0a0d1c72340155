"""Taking answers back and asking second labellers: in the preference interface alone (no process), what is
journaled and sent, what the budget counts, and the agreement two simulated teachers reach; then a whole
synthetic run of two teachers. The people's side -- keys in a terminal and a browser -- is tested in
test_human_labelling.py and test_web.py."""
from __future__ import annotations

import queue

import numpy as np
import pytest
from conftest import FakePixelEnv, labels_by_seq, wait_for

from drlhp import HumanPreferencesEnvWrapper
from drlhp.clips.clip import Clip
from drlhp.errors import ConfigError, NothingToUndo
from drlhp.label_store.database import PrefBuffer
from drlhp.label_store.journal import JournalWriter
from drlhp.label_store.stream import Preference, Retraction, SecondAnswer
from drlhp.labelling.interface import PrefInterface, PrefInterfaceConfig
from drlhp.labelling.protocols import UNDO, SyntheticLabeller, SyntheticTeacher


def seg(i: int, ret: float) -> Clip:
    return Clip(i, np.full((2, 3, 3), i % 256, np.uint8), np.array([ret / 2, ret / 2]))


class Scripted:
    """A person at the terminal, as the interface sees them: answers from a list, UNDO included."""

    pairs_per_segment = None

    def __init__(self, answers):
        self.answers, self.shown = list(answers), []

    def label(self, a, b):
        self.shown.append((a.clip_id, b.clip_id))
        return self.answers.pop(0)

    def close(self):
        pass


def test_l_r_undo_e_leaves_l_and_e_and_asks_the_taken_back_pair_again_then_the_one_on_screen(tmp_path):
    out = queue.Queue()
    person = Scripted([1.0, 0.0, UNDO, 0.5, 1.0])
    iface = PrefInterface(PrefInterfaceConfig(max_segs=10, seed=0, undo_limit=10),
                          person, out, journal=JournalWriter(str(tmp_path), lambda: 0))
    for i in range(6):
        iface.add_clip(seg(i, i))
    for _ in range(5):
        iface.step(env_steps=0)
    first, second, on_screen, again, after = person.shown
    assert again == second and after == on_screen  # the taken-back pair, then the one on screen when U came
    records = [r for r in out.queue if isinstance(r, (Preference, Retraction))]
    assert [(type(r).__name__, r.seq) for r in records] == [
        ("Preference", 0), ("Preference", 1), ("Retraction", 1), ("Preference", 2), ("Preference", 3)]
    assert records[2].labeller == "Scripted" and records[3].label == 0.5
    # the budget got the label back
    assert (iface.n_asked, iface.recorder.next_seq, iface.recorder.ledger.n_retracted) == (3, 4, 1)
    iface.close()
    buffer = PrefBuffer.load(str(tmp_path), 100, 0.2)  # what a resumed run reads: the journal, replayed
    assert [(seq, (a, b), label) for seq, a, b, label, _ in labels_by_seq(buffer)] == [
        (0, first, 1.0), (2, second, 0.5), (3, on_screen, 1.0)]
    assert buffer.retracted == {1}


def test_undo_goes_back_to_the_limit_and_no_further():
    iface = PrefInterface(PrefInterfaceConfig(max_segs=20, seed=0, undo_limit=2), SyntheticLabeller(), queue.Queue())
    for i in range(8):
        iface.add_clip(seg(i, i))
    asked = [iface.chooser.pick() for _ in range(3)]
    for a, b in asked:
        iface.ask(a, b)
    name = "SyntheticLabeller"
    assert [iface.retract_last(name).seq for _ in range(2)] == [2, 1]  # newest first
    with pytest.raises(NothingToUndo, match="no answer left to take back"):
        iface.retract_last(name)
    with pytest.raises(NothingToUndo):
        iface.retract_last("someone else")  # nobody takes back another labeller's answers
    assert iface.n_asked == 1
    unasked = {frozenset((a.clip_id, b.clip_id)) for a, b in iface.chooser.candidate_pairs(100)}
    assert {frozenset((a.clip_id, b.clip_id)) for a, b in asked[1:]} <= unasked  # taken back: may be asked again


def test_an_undo_with_nothing_to_take_back_asks_the_pair_on_screen_again_and_loses_nothing():
    person = Scripted([UNDO, 1.0])
    iface = PrefInterface(PrefInterfaceConfig(max_segs=10, seed=0, undo_limit=10), person, queue.Queue())
    for i in range(4):
        iface.add_clip(seg(i, i))
    iface.step(0)
    iface.step(0)
    assert person.shown[0] == person.shown[1] and (iface.n_asked, iface.recorder.next_seq) == (1, 1)


def test_two_teachers_agree_as_often_as_their_mistake_rates_say():
    """Teacher A never errs, B gives the wrong answer to a strict preference 30 % of the time: on pairs of unequal
    returns they agree 70 % of the time, on ties always."""
    out = queue.Queue()
    teachers = {"careful": SyntheticTeacher(), "hasty": SyntheticTeacher(mistake_rate=0.3)}
    labeller = SyntheticLabeller(teachers=teachers, seed=1)
    iface = PrefInterface(PrefInterfaceConfig(max_segs=100, seed=0, second_opinion_share=1.0), labeller, out)
    rng = np.random.default_rng(0)
    for i in range(100):
        iface.add_clip(seg(i, float(rng.integers(0, 4))))  # returns 0-3: a quarter of the pairs tie
    for _ in range(2000):
        iface.ask(*iface.chooser.pick())
    seconds = [r for r in out.queue if isinstance(r, SecondAnswer)]
    firsts = {r.seq: r for r in out.queue if isinstance(r, Preference)}
    assert len(seconds) == len(firsts) == 2000
    assert {r.labeller for r in seconds} | {r.labeller for r in firsts.values()} == {"synthetic:careful",
                                                                                     "synthetic:hasty"}
    assert all(firsts[r.seq].labeller != r.labeller for r in seconds)  # a second opinion is someone else's
    returns = {s.clip_id: s.rewards.sum() for s in iface.chooser.clips.values()}
    ties = np.mean([returns[f.clip_id_a] == returns[f.clip_id_b] for f in firsts.values()])
    implied = ties + (1 - ties) * 0.7
    (a, b, n, same, rate), = iface.recorder.ledger.agreement.rows()
    assert (a, b, n) == ("synthetic:careful", "synthetic:hasty", 2000)
    assert rate == pytest.approx(implied, abs=0.03), (rate, implied)


def test_taking_back_a_second_answer_leaves_the_first_and_the_agreement_without_it():
    out = queue.Queue()
    labeller = SyntheticLabeller(teachers={"a": SyntheticTeacher(), "b": SyntheticTeacher()}, seed=0)
    asking = PrefInterfaceConfig(max_segs=10, seed=0, second_opinion_share=1.0, undo_limit=5)
    iface = PrefInterface(asking, labeller, out)
    for i in range(4):
        iface.add_clip(seg(i, i))
    iface.ask(*iface.chooser.pick())
    second = next(r for r in out.queue if isinstance(r, SecondAnswer))
    assert iface.recorder.ledger.agreement.n_pairs == 1
    iface.retract_last(second.labeller)
    # the label stands: only its second answer went
    assert iface.recorder.ledger.agreement.n_pairs == 0 and iface.n_asked == 1
    assert out.queue[-1] == Retraction(second.seq, second.labeller)


def test_second_opinions_need_someone_to_give_them():
    from drlhp.config import PreferenceConfig

    with pytest.raises(ConfigError, match="second_opinion_share asks a second labeller"):
        PreferenceConfig(second_opinion_share=0.5)
    with pytest.raises(ConfigError, match="second_opinion_share must be in"):
        PreferenceConfig(second_opinion_share=1.5)
    with pytest.raises(ConfigError, match="synthetic_teachers must map names"):
        PreferenceConfig(synthetic_teachers={"a": 0.1})
    with pytest.raises(ConfigError, match="undo_limit"):
        PreferenceConfig(undo_limit=-1)
    with pytest.raises(ConfigError, match="labelling_instructions"):
        PreferenceConfig(labelling_instructions="  ")
    PreferenceConfig(second_opinion_share=0.5, synthetic_teachers={"a": SyntheticTeacher(), "b": SyntheticTeacher()})


def test_a_synthetic_run_of_two_teachers_reports_the_agreement_their_mistake_rates_imply(tmp_path):
    n_labels = 400
    env = HumanPreferencesEnvWrapper(
        FakePixelEnv(reward_fn=lambda t: float((t * 7919) % 13)), log_dir=str(tmp_path), train_reward=False,
        label_budget=n_labels, n_initial_prefs=n_labels, synthetic_prefs_per_segment=5, second_opinion_share=1.0,
        synthetic_teachers={"careful": SyntheticTeacher(), "hasty": SyntheticTeacher(mistake_rate=0.3)}, seed=0,
        log_level=30)
    try:
        env.reset(seed=0)

        def step_until_labelled() -> bool:
            if any(env.step(0)[2:4]):
                env.reset()
            # The interface publishes its label count and its agreement table one after the other: wait for both.
            stats = env.stats()
            return stats.labels_sent == n_labels and stats.pairs_answered_twice == n_labels

        assert wait_for(step_until_labelled, timeout=120, poll=0)
        stats = env.stats()
    finally:
        env.close()
    buffer = PrefBuffer.load_all(str(tmp_path))
    dbs = (buffer.train_db, buffer.val_db)
    ((a, b, n, same, rate),) = stats.agreement
    assert (a, b, n) == ("synthetic:careful", "synthetic:hasty", n_labels)
    assert stats.agreement == tuple(buffer.agreement.rows()) and stats.pairs_answered_twice == n_labels
    ties = np.mean([db.segments[x].rewards.sum() == db.segments[y].rewards.sum() for db in dbs for x, y, _ in db.prefs])
    assert rate == pytest.approx(ties + (1 - ties) * 0.7, abs=0.06)
