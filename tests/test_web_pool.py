"""The pairs out with web labellers: one labeller per pair, timeouts, answers counted once."""
import numpy as np
import pytest

from drlhp.clips.clip import Clip
from drlhp.labelling.web.pool import ACTIVE_SECONDS, PairPool


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def seg(i):
    return Clip(i, np.zeros((2, 4, 4, 1), np.uint8), np.zeros(2))


def pool_with(n_pairs, timeout=60.0):
    clock = Clock()
    pool = PairPool(timeout, clock)
    ids = [pool.offer(seg(2 * i), seg(2 * i + 1)) for i in range(n_pairs)]
    return pool, clock, ids


def test_each_labeller_gets_a_different_pair_and_keeps_it_until_they_answer():
    pool, _, ids = pool_with(3)
    alice, bob = pool.next_for("alice"), pool.next_for("bob")
    assert alice.pair_id != bob.pair_id
    assert pool.next_for("alice").pair_id == alice.pair_id  # a reload shows the same pair
    assert pool.answer(alice.pair_id, 1.0, "alice")[0] == "new"
    following = pool.next_for("alice")
    assert following.pair_id not in (alice.pair_id, bob.pair_id)
    assert pool.next_for("carol") is None  # all three are handed out or answered


def test_a_pair_not_answered_in_time_goes_to_someone_else_and_the_first_answer_counts():
    pool, clock, _ = pool_with(1, timeout=60.0)
    held = pool.next_for("alice")
    assert pool.next_for("bob") is None
    clock.now += 61
    assert pool.next_for("bob").pair_id == held.pair_id
    status, answer = pool.answer(held.pair_id, 0.0, "bob")
    assert status == "new" and answer.labeller == "bob" and answer.seconds == 0.0
    late_status, first = pool.answer(held.pair_id, 1.0, "alice")  # alice answers late: bob's answer stands
    assert late_status == "duplicate" and first is answer
    assert [a.label for a in pool.take_answers()] == [0.0]


def test_an_answer_sent_twice_is_taken_once():
    pool, clock, _ = pool_with(2)
    pair = pool.next_for("alice")
    clock.now += 4.5
    status, first = pool.answer(pair.pair_id, 0.5, "alice")
    assert status == "new" and first.seconds == pytest.approx(4.5)
    assert pool.answer(pair.pair_id, 0.5, "alice") == ("duplicate", first)
    answers = pool.take_answers()
    assert len(answers) == 1 and (answers[0].a.clip_id, answers[0].b.clip_id, answers[0].label) == (0, 1, 0.5)
    assert pool.take_answers() == []
    assert pool.count("alice") == 1


def test_unknown_and_never_shown_pairs_are_refused():
    pool, _, ids = pool_with(1)
    assert pool.answer(999, 1.0, "alice") == ("unknown", None)
    assert pool.answer(ids[0], 1.0, "alice") == ("unknown", None)  # offered, but nobody was shown it
    assert pool.take_answers() == []


def test_skips_are_passed_on_but_not_counted_as_labels():
    pool, _, _ = pool_with(1)
    pair = pool.next_for("alice")
    pool.answer(pair.pair_id, None, "alice")
    assert [a.label for a in pool.take_answers()] == [None]
    assert pool.count("alice") == 0


def test_the_pool_wants_a_free_pair_per_active_labeller_plus_one():
    pool, clock, _ = pool_with(0)
    assert pool.wants_pairs()  # one spare even before anyone comes
    pool.offer(seg(0), seg(1))
    assert not pool.wants_pairs()
    for name in ("alice", "bob"):
        pool.next_for(name)  # alice takes the pair; bob finds none
    assert pool.wants_pairs()
    pool.offer(seg(2), seg(3)), pool.offer(seg(4), seg(5))
    assert pool.wants_pairs()  # alice will want her next pair the moment she answers
    pool.offer(seg(6), seg(7))
    assert not pool.wants_pairs()  # a free pair each for alice's next and bob's, plus a spare
    clock.now += ACTIVE_SECONDS + 61  # everyone left; alice's pair timed out and is free again
    assert not pool.wants_pairs()


def test_clips_are_served_only_while_a_pair_out_shows_them():
    pool, _, _ = pool_with(1)
    assert pool.clip(1).clip_id == 1 and pool.clip(7) is None
    pair = pool.next_for("alice")
    pool.answer(pair.pair_id, 1.0, "alice")
    assert pool.clip(1) is None


def answered_and_recorded(pool, name, label=1.0, seq=0):
    """``name`` answers the pair they are handed; the interface records it as label ``seq``."""
    pair = pool.next_for(name)
    status, answer = pool.answer(pair.pair_id, label, name)
    assert status == "new"
    answer.seq = seq
    pool.recorded(answer)
    return answer


def test_a_labeller_takes_back_their_answers_newest_first_and_gets_the_pair_again():
    pool, _, _ = pool_with(3)
    pool.undo_limit = 2
    answers = [answered_and_recorded(pool, "alice", seq=i) for i in range(3)]
    pool.take_answers()
    assert pool.undoable("alice") == answers[2].pair_id
    assert pool.take_back(answers[1].pair_id, "alice") == ("not_last", None)
    status, event = pool.take_back(answers[2].pair_id, "alice")
    assert status == "new" and event.answer is answers[2]
    assert pool.take_back(answers[2].pair_id, "alice") == ("duplicate", event)  # sent twice: taken back once
    again = pool.next_for("alice")
    assert (again.a.clip_id, again.b.clip_id) == (answers[2].a.clip_id, answers[2].b.clip_id)  # handed straight back
    assert pool.take_back(answers[1].pair_id, "alice")[0] == "new"
    assert pool.take_back(answers[0].pair_id, "alice") == ("nothing", None)  # past the limit of 2
    assert pool.take_answers() == [event, pool._taken_back[(answers[1].pair_id, "alice")]]
    assert pool.count("alice") == 1


def test_nobody_takes_back_someone_elses_answer():
    pool, _, _ = pool_with(2)
    alices = answered_and_recorded(pool, "alice")
    answered_and_recorded(pool, "bob", seq=1)
    assert pool.take_back(alices.pair_id, "bob") == ("not_yours", None)
    assert pool.take_back(999, "bob") == ("unknown", None)
    assert pool.take_back(alices.pair_id, "carol") == ("nothing", None)
    assert pool.undoable("alice") == alices.pair_id  # still hers to take back


def test_a_second_opinion_goes_to_someone_else_and_names_the_answer_it_seconds():
    pool, _, _ = pool_with(2)
    pool.second_opinion_share = 1.0
    alice_pair, bob_pair = pool.next_for("alice"), pool.next_for("bob")
    _, alices = pool.answer(alice_pair.pair_id, 1.0, "alice")
    assert pool.next_for("alice") is None  # her own answered pair waits for someone else, not her
    _, bobs = pool.answer(bob_pair.pair_id, 0.0, "bob")
    second = pool.next_for("bob")
    assert second.pair_id == alice_pair.pair_id and second.first is alices
    _, seconded = pool.answer(second.pair_id, 0.5, "bob")
    assert seconded.first is alices and pool.next_for("alice").first is bobs


def test_alone_nobody_is_asked_for_second_opinions():
    pool, _, _ = pool_with(2)
    pool.second_opinion_share = 1.0
    answered_and_recorded(pool, "alice")
    assert pool.next_for("alice").first is None  # a new pair, and no pair waits for a second opinion
    assert all(p.first is None for p in pool._out.values())


def test_answers_past_the_undo_limit_are_remembered_without_their_clips():
    pool, _, _ = pool_with(3)
    pool.undo_limit = 1
    first, second = answered_and_recorded(pool, "alice"), answered_and_recorded(pool, "alice", seq=1)
    status, kept = pool.answer(first.pair_id, first.label, "alice")  # sent again, after it left the undo window
    assert status == "duplicate" and not hasattr(kept, "a") and kept.done is first.done
    assert pool.answer(second.pair_id, second.label, "alice") == ("duplicate", second)  # still undoable: whole
