"""The interface's bookkeeping of undo and second opinions, on its own: what each labeller may take back, which
labels are gone, how often two labellers agree."""
import numpy as np
import pytest

from drlhp.clips.clip import Clip
from drlhp.errors import NothingToUndo
from drlhp.label_store.agreement import Agreement
from drlhp.labelling.ledger import AnswerLedger, Recorded


def answer(seq: int, labeller: str, label: float = 1.0, second: bool = False) -> Recorded:
    clip = Clip(seq, np.zeros((2, 4, 4), np.uint8), np.zeros(2))
    return Recorded(seq, clip, clip, labeller, label, second)


def test_each_labeller_takes_back_their_own_latest_answers_up_to_the_limit():
    ledger = AnswerLedger(undo_limit=2)
    for seq in range(3):
        ledger.remember(answer(seq, "al"))
    ledger.remember(answer(3, "bo"))
    assert [ledger.last("al").seq, ledger.last("al").seq] == [2, 1]  # newest first; 0 is past the limit
    with pytest.raises(NothingToUndo, match="al has no answer left to take back .the last 2 answers"):
        ledger.last("al")
    assert ledger.last("bo").seq == 3


def test_no_undo_limit_remembers_nothing():
    ledger = AnswerLedger(undo_limit=0)
    ledger.remember(answer(0, "al"))
    with pytest.raises(NothingToUndo):
        ledger.last("al")


def test_a_second_answer_counts_towards_agreement_until_either_answer_is_taken_back():
    ledger = AnswerLedger(undo_limit=5, agreement=Agreement())
    first = answer(0, "al", 1.0)
    second = answer(0, "bo", 1.0, second=True)
    ledger.remember(first)
    ledger.add_second(first, second)
    assert (ledger.n_second, ledger.agreement.n_pairs, ledger.agreement.rate()) == (1, 1, 1.0)

    ledger.take_back(ledger.last("bo"))  # the second answer goes: the label stands
    assert (ledger.n_retracted, ledger.agreement.n_pairs, ledger.retracted) == (1, 0, set())
    assert ledger.may_second(first)

    ledger.add_second(first, answer(0, "cy", 0.0, second=True))
    ledger.take_back(ledger.last("al"))  # the first answer goes: the label, and its pair's agreement, with it
    assert (ledger.n_retracted, ledger.agreement.n_pairs, ledger.retracted) == (2, 0, {0})
    assert not ledger.may_second(first)


def test_a_resumed_runs_agreement_goes_on():
    earlier = Agreement()
    earlier.add("al", 1.0, "bo", 0.0)
    ledger = AnswerLedger(agreement=earlier)
    first = answer(7, "al", 0.5)
    ledger.add_second(first, answer(7, "bo", 0.5, second=True))
    assert ledger.agreement.n_pairs == 2 and ledger.agreement.rate() == 0.5
