import math
from typing import Callable

import pytest
from conftest import FAST, FakePixelEnv, step_until, wait_for

from drlhp import HumanPreferencesEnvWrapper
from drlhp.labelling.schedule import LabelSchedule


def test_no_budget_means_no_limit():
    assert LabelSchedule(budget=None).allowed(0) == math.inf


@pytest.mark.parametrize("kind", ["constant", "hyperbolic", "inverse_quadratic"])
def test_initial_batch_at_once_and_whole_budget_by_the_horizon(kind):
    s = LabelSchedule(budget=300, initial=40, kind=kind, horizon=30_000)
    allowed = [s.allowed(t) for t in range(0, 40_000, 500)]
    assert allowed[0] == 40 and s.allowed(30_000) == 300 and s.allowed(10 ** 9) == 300
    assert all(a <= b for a, b in zip(allowed, allowed[1:]))


@pytest.mark.parametrize("kind, expected_share", [
    ("constant", 1 / 3), ("hyperbolic", math.log(2) / math.log(4)), ("inverse_quadratic", math.atan(1) / math.atan(3))])
def test_the_labels_allowed_are_the_integral_of_the_rate(kind, expected_share):
    s = LabelSchedule(budget=1_000_040, initial=40, kind=kind, horizon=3_000, t0=1_000)
    assert s.allowed(1_000) - 40 == pytest.approx(1_000_000 * expected_share, abs=1)


def test_the_papers_rate_falls_as_t0_over_t_plus_t0():
    s = LabelSchedule(budget=10 ** 7, initial=0, kind="hyperbolic", horizon=100_000, t0=10_000)
    first, last = s.allowed(1_000) - s.allowed(0), s.allowed(100_000) - s.allowed(99_000)
    assert last / first == pytest.approx(10_500 / 109_500, rel=0.01)  # the rate ratio at the two midpoints


@pytest.mark.parametrize("kwargs, message", [
    (dict(budget=10, initial=20), "must fit in the label budget"),
    (dict(budget=10, kind="linear"), "label_schedule must be one of"),
    (dict(budget=10, horizon=0), "label_schedule_steps"),
])
def test_bad_schedules_are_refused_with_the_fix(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LabelSchedule(**kwargs)


def test_a_run_never_asks_more_than_the_schedule_allows_and_spends_its_budget(tmp_path):
    # A horizon long enough that the interface's start-up (thousands of env steps on a busy machine) is early in it.
    horizon = 50_000
    schedule = dict(label_budget=20, n_initial_prefs=8, label_schedule="constant", label_schedule_steps=horizon)
    # Many pairs per clip: the schedule, not the clips (some are dropped on a busy machine), sets the pace.
    config = {**FAST, **schedule, "train_reward": False, "synthetic_prefs_per_segment": 10}
    allowed = LabelSchedule(20, 8, "constant", horizon).allowed
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **config) as env:
        def within_schedule(until) -> Callable[[], bool]:
            def check() -> bool:
                stats = env.stats()
                # The interface reads the step counter after the main process wrote it: this holds at every step.
                assert stats.pairs_asked <= allowed(stats.env_steps)
                return until(stats)
            return check

        step_until(env, within_schedule(lambda s: s.env_steps >= 200 and s.clips_received >= 10))
        steps = env.stats().env_steps
        assert allowed(steps) < 20
        assert wait_for(lambda: env.stats().pairs_asked == allowed(steps), timeout=30)  # its share, the env waiting
        step_until(env, within_schedule(lambda s: s.pairs_asked == 20))
        step_until(env, within_schedule(lambda s: s.env_steps >= horizon + 2000))
        stats = env.stats()
        assert stats.pairs_asked == 20 and stats.labels_remaining == 0 and stats.label_budget == 20
