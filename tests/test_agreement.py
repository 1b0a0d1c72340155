"""Two labellers' answers to one pair: the label it trains on, and agreement counted per labeller pair."""
import math
import pickle

from drlhp.label_store.agreement import Agreement, combined_label


def test_the_pair_trains_on_the_answer_both_gave_else_a_tie():
    assert [combined_label(a, b) for a, b in [(1.0, 1.0), (0.0, 0.0), (0.5, 0.5)]] == [1.0, 0.0, 0.5]
    assert [combined_label(a, b) for a, b in [(1.0, 0.0), (0.0, 0.5), (0.5, 1.0)]] == [0.5, 0.5, 0.5]


def test_agreement_is_counted_per_labeller_pair_whichever_answered_first():
    agreement = Agreement()
    agreement.add("web:bo", 1.0, "web:al", 1.0)
    agreement.add("web:al", 0.5, "web:bo", 0.5)  # E/E is the same answer
    agreement.add("web:al", 1.0, "web:bo", 0.0)
    agreement.add("web:al", 0.0, "web:cy", 0.0)
    assert agreement.counts == {("web:al", "web:bo"): [3, 2], ("web:al", "web:cy"): [1, 1]}
    assert agreement.rate("web:bo", "web:al") == agreement.rate("web:al", "web:bo") == 2 / 3
    assert agreement.rate() == 3 / 4 and agreement.rate("web:cy") == 1.0 and agreement.rate("web:al") == 3 / 4
    assert math.isnan(agreement.rate("web:bo", "web:cy")) and math.isnan(Agreement().rate())
    assert agreement.n_pairs == 4
    assert agreement.rows() == [("web:al", "web:bo", 3, 2, 2 / 3), ("web:al", "web:cy", 1, 1, 1.0)]
    agreement.remove("web:al", 1.0, "web:bo", 0.0)  # a retracted second answer no longer counts
    agreement.remove("web:cy", 0.0, "web:al", 0.0)
    assert agreement.counts == {("web:al", "web:bo"): [2, 2]} and agreement.n_pairs == 2


def test_agreement_pickles_and_adds_up():
    a, b = Agreement(), Agreement()
    a.add("x", 1.0, "y", 1.0)
    b.add("y", 1.0, "x", 0.0)
    b.add("x", 1.0, "z", 1.0)
    assert pickle.loads(pickle.dumps(a)) == a  # it travels to the interface in RunStart
    assert Agreement.total(a, b).counts == {("x", "y"): [2, 1], ("x", "z"): [1, 1]}
    assert a.counts == {("x", "y"): [1, 1]}  # the parts are left as they were
