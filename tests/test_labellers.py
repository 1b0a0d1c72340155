import math
import random

import numpy as np
import pytest

from drlhp import SyntheticTeacher
from drlhp.clips.clip import Clip
from drlhp.labelling.protocols import SyntheticLabeller


def answers(teacher, ra, rb, n=4000):
    rng = random.Random(0)
    return [teacher.answer(np.asarray(ra, float), np.asarray(rb, float), rng) for _ in range(n)]


def test_the_default_teacher_is_todays_deterministic_rule():
    t = SyntheticTeacher()
    assert answers(t, [1, 1], [1, 0], 5) == [1.0] * 5
    assert answers(t, [0, 0], [0, 1], 5) == [0.0] * 5
    assert answers(t, [1, 0], [0, 1], 5) == [0.5] * 5
    seg = lambda i, r: Clip(i, np.zeros((2, 4, 4, 1), np.uint8), np.asarray(r, float))  # noqa: E731
    assert SyntheticLabeller().label(seg(0, [1, 1]), seg(1, [0, 1])) == 1.0


@pytest.mark.parametrize("difference", [0.5, 1.0, 2.0])
def test_rationality_beta_samples_bradley_terry(difference):
    got = np.mean(answers(SyntheticTeacher(beta=1.0), [difference], [0.0]))
    assert got == pytest.approx(1 / (1 + math.exp(-difference)), abs=0.025)


def test_mistake_rate_flips_that_share_of_answers():
    got = answers(SyntheticTeacher(mistake_rate=0.1), [2.0], [1.0])
    assert np.mean(np.array(got) == 0.0) == pytest.approx(0.1, abs=0.015)


def test_myopia_weighs_the_end_of_a_clip_more():
    early, late = [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]
    assert answers(SyntheticTeacher(gamma=0.9), late, early, 1) == [1.0]
    assert answers(SyntheticTeacher(), late, early, 1) == [0.5]
    assert SyntheticTeacher(gamma=0.5).judged_return(np.array([4.0, 2.0, 1.0])) == 1 + 1 + 1


def test_skip_when_both_clips_are_uninformative_and_equal_within_a_threshold():
    t = SyntheticTeacher(skip_threshold=1.0, equal_threshold=0.3)
    assert answers(t, [0.5], [0.9], 1) == [None]
    assert answers(t, [1.2], [0.9], 1) == [0.5]
    assert answers(t, [1.5], [0.9], 1) == [1.0]


@pytest.mark.parametrize("kwargs", [dict(beta=0), dict(gamma=0), dict(gamma=1.5), dict(mistake_rate=2),
                                    dict(equal_threshold=-1)])
def test_bad_teacher_settings_are_refused(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SyntheticTeacher(**kwargs)
