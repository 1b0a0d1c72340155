import numpy as np
import pytest

from drlhp.clips.clip import Clip
from drlhp.labelling.interface import PrefInterface, PrefInterfaceConfig
from drlhp.labelling.pair_selection import DisagreementScorer, preference_disagreement
from drlhp.reward.optimiser import adapted_l2


class MemberColumns:
    """A stand-in ensemble: member m's reward of a frame is the frame's m-th value."""

    n_members = 3

    def __init__(self):
        self.frames_evaluated = 0

    def member_rewards(self, frames):
        self.frames_evaluated += len(frames)
        return frames.astype(np.float64)


def seg(i, per_member):
    return Clip(i, np.tile(np.asarray(per_member, np.float32), (5, 1)), np.zeros(5))


def scorer_with(predictor, max_new_per_pick=8):
    scorer = DisagreementScorer("/nonexistent/reward_predictor.ckpt", poll_interval=1.0,
                                max_new_per_pick=max_new_per_pick)
    scorer.predictor, scorer._generation = predictor, 1  # as poll() leaves it after loading a checkpoint
    return scorer


class NoLabeller:
    pairs_per_segment = 1.0


def test_disagreement_is_zero_when_members_agree_and_grows_with_their_spread():
    same = preference_disagreement(np.array([[1.0, 1.0, 1.0]]), np.array([[0.0, 0.0, 0.0]]))
    small = preference_disagreement(np.array([[1.0, 0.5, 0.0]]), np.array([[0.0, 0.0, 0.0]]))
    large = preference_disagreement(np.array([[4.0, 0.0, -4.0]]), np.array([[0.0, 0.0, 0.0]]))
    assert same[0] == 0 and 0 < small[0] < large[0]


def test_the_interface_asks_about_the_pair_the_members_disagree_on_most():
    scorer = scorer_with(MemberColumns(), max_new_per_pick=100)
    interface = PrefInterface(PrefInterfaceConfig(max_segs=20, seed=0, n_candidate_pairs=1000),
                              NoLabeller(), None, scorer=scorer)
    for i in range(10):
        interface.add_clip(seg(i, [i, i, i]))  # every member agrees on these: returns 5i
    interface.add_clip(seg(10, [20, 0, -20]))  # the members disagree about this clip
    interface.add_clip(seg(11, [0, 0, 0]))
    scorer.poll = lambda: None
    a, b = interface.chooser.pick()
    assert 10 in (a.clip_id, b.clip_id)


def test_a_pick_evaluates_only_a_few_new_clips():
    predictor = MemberColumns()
    scorer = scorer_with(predictor, max_new_per_pick=4)
    scorer.poll = lambda: None
    interface = PrefInterface(PrefInterfaceConfig(max_segs=200, seed=0, n_candidate_pairs=64),
                              NoLabeller(), None, scorer=scorer)
    for i in range(200):
        interface.add_clip(seg(i, [i % 7, i % 5, i % 3]))
    assert interface.chooser.pick() is not None
    assert predictor.frames_evaluated == 4 * 5  # four clips of five frames, however many clips wait


def test_random_until_there_is_an_ensemble():
    scorer = DisagreementScorer("/nonexistent/reward_predictor.ckpt", poll_interval=1.0)
    interface = PrefInterface(PrefInterfaceConfig(max_segs=20, seed=0), NoLabeller(), None, scorer=scorer)
    for i in range(5):
        interface.add_clip(seg(i, [0, 0, 0]))
    assert not scorer.ready and interface.chooser.pick() is not None


@pytest.mark.parametrize("val, train, direction", [(2.0, 1.0, 1), (1.3, 1.0, 0), (1.0, 1.0, -1)])
@pytest.mark.parametrize("factor", [1.5, 1.05])
def test_adaptive_l2_moves_the_coefficient_the_right_way_by_its_factor(val, train, direction, factor):
    got = adapted_l2(1e-3, val_loss=val, train_loss=train, factor=factor)
    assert got == pytest.approx(1e-3 * factor ** direction)
