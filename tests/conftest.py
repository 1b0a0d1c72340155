"""Shared fixtures: a tiny pixel env with injectable behaviour, a guard against leftover processes, and, on CI,
a failed run for any skip not in ``CI_ALLOWED_SKIPS``."""
from __future__ import annotations

import multiprocessing
import os
import time
from typing import Callable

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

import drlhp.frontends.quiet_gym  # noqa: F401  (tests import SB3 too, and its gym's banner would be in their stderr)

#: How far two float32 computations of the same values may differ when they take different code paths
#: (batch sizes, thread counts, grouped or single-member kernels, the lean per-step path): as a share of the
#: largest value compared. Summing n terms in another order moves the result by up to about n units of
#: float32 roundoff (eps = 1.2e-7) of the terms' magnitude, and the networks in these tests sum at most about
#: a thousand terms per output, hence 2**10 eps (1.2e-4). A real fault (a wrong weight, a member left out, a
#: stale normaliser) moves the values by their own order, far beyond it. Relative to the largest value, not
#: to each one: a value near 0 keeps no relative precision through a sum of larger terms.
FLOAT32_PATH_TOLERANCE = 2**10 * float(np.finfo(np.float32).eps)

#: The skips a CI run accepts: test node id -> the reason it skips with. Any other skip fails the run where the
#: ``CI`` environment variable is ``true`` (.ci/run sets it): there a skip means a dependency or tool CI should
#: have installed is missing, and the suite would pass without running the test. Each test here needs CUDA, or
#: its absence, and CI's machine has one or the other.
CI_ALLOWED_SKIPS = {
    # Check the error for asking for CUDA where torch finds none: nothing to check on a machine with CUDA.
    "tests/test_failures.py::test_a_device_the_trainer_cannot_find_fails_at_construction_with_the_fix":
        "this machine has CUDA",
    "tests/test_learner.py::test_asking_for_cuda_where_there_is_none_says_what_to_pass_instead":
        "this machine has CUDA",
    # Trains on a GPU: nothing to train on without one.
    "tests/test_learner.py::test_a_learner_on_a_gpu_trains_there_and_its_checkpoint_loads_on_the_cpu":
        "needs a CUDA device",
}


def on_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def skip_reason(longrepr) -> str:
    """What a skip report says (pytest keeps it as (file, line, "Skipped: <reason>"))."""
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text.removeprefix("Skipped: ")


def fail_a_skip_ci_does_not_allow(report: pytest.CollectReport | pytest.TestReport) -> None:
    """On CI, turn ``report`` of a skip not in ``CI_ALLOWED_SKIPS`` into a failure saying why and what to do.

    Changed in the report itself, where it is made: under pytest-xdist that is in the worker, and the failure
    travels to the controller like any other."""
    if not (on_ci() and report.skipped) or hasattr(report, "wasxfail"):
        return
    reason = skip_reason(report.longrepr)
    if CI_ALLOWED_SKIPS.get(report.nodeid) == reason:
        return
    report.outcome = "failed"
    report.longrepr = (f"skipped on CI ({reason}), and CI=true fails every skip not in CI_ALLOWED_SKIPS "
                       f"(tests/conftest.py): install what the test needs in .ci/run or the dev extra; or, if CI's "
                       f"machine cannot run it, add {report.nodeid!r}: {reason!r} there with why")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test skipped by a mark or by ``pytest.skip``/``importorskip`` in its body or fixtures."""
    outcome = yield
    fail_a_skip_ci_does_not_allow(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """A whole module skipped as it is collected (a module-level ``importorskip``)."""
    outcome = yield
    fail_a_skip_ci_does_not_allow(outcome.get_result())


def assert_same_in_float32(actual, expected) -> None:
    """``actual`` equals ``expected`` up to the rounding of float32 code paths (:data:`FLOAT32_PATH_TOLERANCE`)."""
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    scale = float(np.abs(expected).max()) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=0, atol=FLOAT32_PATH_TOLERANCE * scale)


class FakePixelEnv(gymnasium.Env):
    """Observation: a frame filled with the step counter (mod 256); reward: ``reward_fn(t)``.

    ``episode_length`` steps end with ``terminated`` (or ``truncated`` with
    ``truncate=True``), so tests control exactly where episodes and segments end.
    """

    metadata = {"render_modes": ["rgb_array"]}
    #: What ``render()`` returns: an RGB image of this shape, every pixel the step counter (mod 256).
    RENDER_SHAPE = (40, 30, 3)

    def __init__(self, shape: tuple[int, ...] = (12, 12, 1), dtype=np.uint8, episode_length: int = 1000,
                 truncate: bool = False, reward_fn: Callable[[int], float] | None = None,
                 render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        high = 255 if np.issubdtype(dtype, np.integer) else 1.0
        self.observation_space = spaces.Box(0, high, shape, dtype)
        self.action_space = spaces.Discrete(2)
        self.episode_length, self.truncate = episode_length, truncate
        self.reward_fn = reward_fn or (lambda t: float(t % 7))
        self.t = 0

    def _obs(self) -> np.ndarray:
        value = self.t % 256 if np.issubdtype(self.observation_space.dtype, np.integer) else (self.t % 256) / 255
        return np.full(self.observation_space.shape, value, dtype=self.observation_space.dtype)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        done = self.t >= self.episode_length
        return self._obs(), self.reward_fn(self.t), done and not self.truncate, done and self.truncate, {}

    def render(self):
        return np.full(self.RENDER_SHAPE, self.t % 256, np.uint8) if self.render_mode == "rgb_array" else None


class StampedEnv(gymnasium.Env):
    """Each observation carries who made it: pixel (0, 0) is the step t within the episode
    (0 after reset), (0, 1) the episode number, (0, 2) the env's ``instance``. Reward: t % 7.

    Episodes last ``episode_length`` steps (``truncated``); lets tests check, per sub-env
    of a vector env, which frames went into each clip.
    """

    metadata = {"render_modes": []}

    def __init__(self, instance: int = 0, episode_length: int = 10) -> None:
        self.observation_space = spaces.Box(0, 255, (12, 12, 1), np.uint8)
        self.action_space = spaces.Discrete(2)
        self.instance, self.episode_length = instance, episode_length
        self.t, self.episode = 0, -1

    def _obs(self) -> np.ndarray:
        obs = np.zeros((12, 12, 1), np.uint8)
        obs[0, :3, 0] = (self.t, self.episode % 256, self.instance)
        return obs

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.episode = 0, self.episode + 1
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        return self._obs(), float(self.t % 7), False, self.t >= self.episode_length, {}


def gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie waiting for its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_for(condition: Callable[[], bool], timeout: float, poll: float = 0.01) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` s pass (a bounded wait, not a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll)
    return condition()


def step_until(env, condition: Callable[[], bool], timeout: float = 60.0) -> int:
    """Step ``env`` with random actions until ``condition()``; returns the number of steps."""
    env.reset(seed=0)
    deadline = time.monotonic() + timeout
    n = 0
    while not condition():
        assert time.monotonic() < deadline, f"condition not reached after {n} steps; stats: {env.stats()}"
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        n += 1
        if terminated or truncated:
            env.reset()
    return n


def step_vec_until(venv, condition: Callable[[], bool], timeout: float = 120.0) -> None:
    """Step the vector env ``venv`` with random actions until ``condition()`` (bounded by time, not steps: on a
    loaded machine the labeller and trainer processes fall behind however many steps the test takes)."""
    venv.reset()
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"condition not reached; stats: {venv.stats()}"
        venv.step(np.array([venv.action_space.sample() for _ in range(venv.num_envs)]))


# Small, fast settings for wrapper tests.
FAST = dict(segment_length=5, n_initial_prefs=8, n_initial_training_steps=4, reward_predictor_ckpt_interval=4,
            reward_predictor_batch_size=4, seed=0, ckpt_poll_interval=0.0, log_level=30, label_budget=None)


@pytest.fixture
def one_torch_thread():
    """Torch on one thread in this process for the test: on a machine whose cores are shared (2, with the
    suite's other processes), two threads contend, and a compute-bound test takes several times as long."""
    import torch  # here: tests that never use torch do not import it

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def no_leftover_processes():
    yield
    alive = multiprocessing.active_children()
    for p in alive:
        p.kill()
    assert not alive, f"test left processes behind: {alive}"


def resume_and_read_labels(env: gymnasium.Env, log_dir: str, pairs_asked: int, **settings) -> list[tuple[float, str]]:
    """Resume the run in ``log_dir`` (synthetic labels, nothing stepped), check its budget counts ``pairs_asked``
    pairs, close it; returns the (label, labeller) pairs the log_dir then holds, in label order."""
    from drlhp import HumanPreferencesEnvWrapper
    from drlhp.label_store.database import PrefBuffer

    wrapped = HumanPreferencesEnvWrapper(env, log_dir=log_dir, resume=True, train_reward=False, log_level=30,
                                         **settings)
    try:
        assert wait_for(lambda: wrapped.stats().pairs_asked == pairs_asked, timeout=60), wrapped.stats()
    finally:
        wrapped.close()
    return [(label, who) for _, _, _, label, who in labels_by_seq(PrefBuffer.load_all(log_dir))]


def labels_by_seq(buffer) -> list[tuple[int, int, int, float, str]]:
    """(the run's label number, clip a, clip b, label, labeller) of every label a ``PrefBuffer`` holds, in the
    order they were given."""
    held = [(seq, a, b, label, who) for db in (buffer.train_db, buffer.val_db)
            for seq, (a, b, label), who in zip(db.seqs, db.prefs, db.labellers)]
    return sorted(held)
