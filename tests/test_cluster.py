"""drlhp on a local Ray cluster: runners feeding one preference service, caps, failures, shutdown."""
from __future__ import annotations

import os
import signal
import time
import warnings

import gymnasium
import numpy as np
import pytest

ray = pytest.importorskip("ray")
psutil = pytest.importorskip("psutil")

from conftest import FAST, StampedEnv, assert_same_in_float32, gone, labels_by_seq, wait_for  # noqa: E402

from drlhp import PrefBuffer  # noqa: E402
from drlhp.cluster import (  # noqa: E402
    ClusterPreferenceVectorWrapper,
    ClusterPreferenceWrapper,
    PackedClip,
    PreferenceService,
    PreferenceServiceDied,
    RateCap,
)
from drlhp.envs.moving_dot import MovingDotEnv  # noqa: E402
from drlhp.errors import WorkerError, WriteError  # noqa: E402
from drlhp.frontends.base import PREDICTED_REWARD_KEY, TRUE_REWARD_KEY  # noqa: E402

CLUSTER = dict(FAST, synthetic_preferences=True, pair_selection="random", ensemble_size=1)


@pytest.fixture(scope="module")
def cluster():
    # The workers import this module (its actor class and env maker) from the tests folder.
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
    # Processes this test run had before (e.g. the resource tracker of an earlier test's wrapper, which lives
    # as long as pytest does) are not the cluster's.
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    # Ray starts its workers at niceness 15: beside busy processes of niceness 0 (the other pytest-xdist worker's
    # tests), the cluster's actors and drlhp's processes under them got a few per cent of a core, and a test that
    # takes 20 s alone ran past its timeout. The tests' workers run at the rest of the test run's priority.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"PYTHONPATH": path}}, _system_config={"worker_niceness": 0})
    yield
    descendants = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    ray.shutdown()
    if wait_for(lambda: all(gone(p.pid) for p in descendants), timeout=60):
        return
    # On a loaded machine Ray's own processes (raylet, its agents, idle workers) can outlive
    # ray.shutdown() by minutes: end them here so that nothing outlives the tests, and fail
    # only on a process that is not Ray's -- one that drlhp left behind.
    left = {p: _command_line(p) for p in descendants if not gone(p.pid)}
    rays = [p for p, cmd in left.items() if not cmd or _is_rays(cmd)]
    _kill(rays)
    assert wait_for(lambda: all(gone(p.pid) for p in rays), timeout=30), f"unkillable: {left}"
    # What Ray's stragglers still held open ends by itself once they are gone (a multiprocessing resource
    # tracker serves every process that inherited its pipe): wait for it before calling it left behind.
    others = [p for p in left if p not in rays]
    if not wait_for(lambda: all(gone(p.pid) for p in others), timeout=30):
        survivors = {p.pid: left[p] for p in others if not gone(p.pid)}
        _kill(others)
        raise AssertionError(f"left behind after ray.shutdown(): {survivors}")
    warnings.warn(f"Ray's own processes outlived ray.shutdown() by 60 s; killed: {[left[p] for p in rays]}",
                  stacklevel=2)


def _kill(processes) -> None:
    for p in processes:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


def _command_line(process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # it has just ended
        return ""


def _is_rays(command_line: str) -> bool:
    """Ray's system processes and workers (``ray::...``): drlhp's own processes are neither."""
    return command_line.startswith("ray::") or f"{os.sep}ray{os.sep}" in command_line


def small_dot(env_config=None):
    return MovingDotEnv(size=16, grid=4, episode_length=20)


def linked_env(service_name: str, clip_share: float, env=None) -> ClusterPreferenceWrapper:
    """An env runner's wrapped env (in a ``Runner`` actor, or in the driver: any process of the cluster)."""
    env = ClusterPreferenceWrapper(env or small_dot(), service_name, clip_share, flush_interval=0.05,
                                   weights_poll_interval=0.05)
    env.reset(seed=0)
    return env


def run_for(*envs: ClusterPreferenceWrapper, seconds: float) -> list[dict]:
    """Step ``envs`` in turn with random actions for ``seconds``, send what they kept; each one's link counts."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for env in envs:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
    counts = []
    for env in envs:
        env.pipeline.flush()
        counts.append(dict(env.pipeline.counts))
    return counts


#: The idle service's cap on clips entering it (clips/s).
IDLE_RATE = 5.0


@pytest.fixture(scope="module")
def idle_service(cluster, tmp_path_factory):
    """One service for the tests of what it does with clips, where it never trains (its initial labels are out of
    reach): a service costs a Ray actor and two processes to start. Each test reads the counters' changes."""
    with start_service(tmp_path_factory.mktemp("idle_service"), n_initial_prefs=10 ** 6,
                       clips_per_second=IDLE_RATE) as service:
        yield service


def settled_stats(service) -> dict:
    """The service's counters once its interface has taken in every clip the service passed on."""
    def settled() -> bool:
        stats = service.stats()
        return stats["clips_received"] == stats["clips_sent"]

    assert wait_for(settled, timeout=60), service.stats()
    return service.stats()


@ray.remote(num_cpus=1)
class Runner:
    """Stands in for an env runner: one wrapped env stepped with random actions."""

    def __init__(self, service_name: str, clip_share: float, instance: int) -> None:
        self.env = linked_env(service_name, clip_share, StampedEnv(instance, episode_length=12))
        self.link = self.env.pipeline

    def run(self, seconds: float) -> dict:
        return run_for(self.env, seconds=seconds)[0]

    def step_with_newest_weights(self) -> tuple:
        assert self.link.sync_weights(), "the service has ready weights"
        obs, reward, _, _, info = self.env.step(0)
        return reward, info, self.link.predictor.training_step, self.link.predictor.reward(obs)


def test_before_the_predictor_is_ready_a_runner_gets_no_reward_at_all(idle_service):
    env = ClusterPreferenceVectorWrapper(gymnasium.vector.SyncVectorEnv([small_dot] * 3), idle_service.name)
    env.reset(seed=0)
    true_return = 0.0
    for _ in range(30):
        _, rewards, *_, infos = env.step(env.action_space.sample())
        assert list(rewards) == [0.0] * 3
        true_return += infos[TRUE_REWARD_KEY].sum()
    env.close()
    assert true_return > 0


def kill(actor) -> None:
    """``ray.kill``, then wait until the actor is gone: the kill is asynchronous."""
    ray.kill(actor)

    def dead() -> bool:
        try:
            ray.get(actor.ready.remote(), timeout=10)
            return False
        except ray.exceptions.RayActorError:
            return True

    assert wait_for(dead, timeout=60, poll=0.1)


def start_service(tmp_path, env=None, **kwargs) -> PreferenceService:
    settings = dict(CLUSTER, log_dir=str(tmp_path), **kwargs)
    return PreferenceService((env or small_dot()).observation_space,
                             clips_per_second=settings.pop("clips_per_second", 50.0), **settings)


def test_a_rate_cap_allows_its_rate_and_burst_and_no_more():
    now = [0.0]
    cap = RateCap(4.0, burst=2.0, clock=lambda: now[0])
    assert [cap.take() for _ in range(3)] == [True, True, False]  # the burst, then nothing
    now[0] += 0.25
    assert [cap.take(), cap.take()] == [True, False]  # one token per 1/4 s
    now[0] += 100.0
    assert sum(cap.take() for _ in range(10)) == 2  # idle time saves up only ``burst``
    with pytest.raises(ValueError, match="clips/s"):
        RateCap(0.0)


def test_clips_from_two_runners_reach_one_database_and_weights_reach_the_runners(cluster, tmp_path):
    with start_service(tmp_path, env=StampedEnv()) as service:
        runners = [Runner.remote(service.name, 0.5, instance) for instance in (1, 2)]
        counts = ray.get([r.run.remote(1.0) for r in runners])
        assert all(c["clips_sent"] > 0 for c in counts)
        service.wait_for_reward_predictor(timeout=120)
        stats = service.stats()
        assert stats["runner_clips_received"] == sum(c["clips_sent"] for c in counts)  # none lost on the way
        assert stats["runner_env_steps"] > 0 and stats["env_steps"] == stats["runner_env_steps"]
        reward, info, training_step, expected = ray.get(runners[0].step_with_newest_weights.remote())
        assert training_step >= CLUSTER["n_initial_training_steps"]
        assert reward == info[PREDICTED_REWARD_KEY] == pytest.approx(expected) and TRUE_REWARD_KEY in info
        service.save_prefs()
        log_dir = service.log_dir
    db = PrefBuffer.load_all(log_dir)
    clips = [seg.frames[:, 0, :3, 0] for d in (db.train_db, db.val_db) for seg in d.segments.values()]
    assert {int(c[0, 2]) for c in clips} == {1, 2}, "the database holds clips of both runners"
    for clip in clips:  # each whole: 5 consecutive steps of one episode of one env
        assert len(set(clip[:, 1])) == 1 and len(set(clip[:, 2])) == 1
        assert list(np.diff(clip[:, 0].astype(int))) == [1] * (len(clip) - 1)


def test_people_label_the_clusters_clips_on_the_services_web_page(cluster, tmp_path):
    import json
    import urllib.request

    settings = dict(CLUSTER, synthetic_preferences=False, labelling="web", web_port=0)
    with start_service(tmp_path, **settings) as service:
        assert service.labelling_url.startswith("http://127.0.0.1:")
        env = linked_env(service.name, 1.0)
        base, token = service.labelling_url.split("/?token=")
        headers = {"X-Drlhp-Token": token}
        answered = []
        deadline = time.monotonic() + 120
        while len(answered) < 3 and time.monotonic() < deadline:
            run_for(env, seconds=0.2)  # clips keep coming from the runner
            with urllib.request.urlopen(urllib.request.Request(base + "/api/next?name=ann", headers=headers)) as r:
                pair = json.loads(r.read())
            if pair["pair"] is None:
                continue
            body = json.dumps({"pair": pair["pair"], "label": "L", "name": "ann"}).encode()
            request = urllib.request.Request(base + "/api/answer", data=body,
                                             headers={**headers, "Content-Type": "application/json"})
            urllib.request.urlopen(request).read()
            answered.append((pair["left"], pair["right"], 1.0, "web:ann"))
        service.save_prefs()
    buffer = PrefBuffer.load_all(str(tmp_path))
    stored = [(a, b, label, who) for db in (buffer.train_db, buffer.val_db)
              for (a, b, label), who in zip(db.prefs, db.labellers)]
    assert len(answered) == 3 and sorted(stored) == sorted(answered)


def test_the_clip_cap_holds_for_the_cluster(idle_service):
    before = settled_stats(idle_service)
    start = time.monotonic()
    # Each runner claims 4x the whole rate: the service's own cap must hold the line.
    run_for(linked_env(idle_service.name, 4.0), linked_env(idle_service.name, 4.0), seconds=1.0)
    stats = idle_service.stats()
    elapsed = time.monotonic() - start
    received, over_cap = (stats[k] - before[k] for k in ("runner_clips_received", "clips_over_cap"))
    assert over_cap > 0, "the runners sent more than the cap"
    assert received - over_cap <= IDLE_RATE * elapsed + IDLE_RATE  # the rate over the whole time, plus one burst


def test_a_service_that_cannot_start_says_why(idle_service):
    with pytest.raises(RuntimeError, match=r"could not start: .*LogDirInUseError.*is in use"):
        start_service(idle_service.log_dir)  # a second run in the same log_dir


def test_a_person_in_a_terminal_needs_one_of_their_own_on_a_cluster(cluster, tmp_path):
    with pytest.raises(ValueError, match=r"human_terminal='/dev/pts/N'.*labelling='web'"):
        start_service(tmp_path, synthetic_preferences=False)


def test_a_clip_of_the_wrong_shape_is_rejected_and_counted(idle_service):
    before = settled_stats(idle_service)
    clip = PackedClip.pack(np.zeros((CLUSTER["segment_length"], 8, 8, 1), np.uint8), np.zeros(5), 1, 1)
    ray.get(idle_service.actor.add_clips.remote([clip], 5))
    stats = idle_service.stats()
    assert [stats[k] - before[k] for k in ("runner_clips_received", "clips_rejected", "clips_received")] == [1, 1, 0]


def test_each_runner_keeps_to_its_share(idle_service):
    seconds = 1.0
    [counts] = run_for(linked_env(idle_service.name, 0.5), seconds=seconds)
    assert counts["clips_over_share"] > 0
    assert counts["clips_sent"] <= 0.5 * IDLE_RATE * (seconds + 0.05) + 1  # share x seconds + its burst


def test_a_failed_trainer_is_a_clear_error_in_the_driver(cluster, tmp_path):
    service = start_service(tmp_path)
    pids = service.processes()
    os.kill(pids["reward_trainer"], signal.SIGKILL)
    with pytest.raises(WorkerError, match=r"reward_trainer process was killed by signal SIGKILL.*preference service"):
        assert wait_for(lambda: service.check() and False, timeout=30, poll=0.1)
    with pytest.raises(WorkerError, match="reward_trainer"):  # and again: a runner's call cannot swallow it
        service.check()
    service.close()
    assert wait_for(lambda: all(gone(pid) for pid in pids.values()), timeout=30)


def test_a_dead_service_is_a_clear_error_in_the_driver_and_leaves_no_process(cluster, tmp_path):
    service = start_service(tmp_path)
    pids = service.processes()
    kill(service.actor)
    with pytest.raises(PreferenceServiceDied, match=r"resume=True") as e:
        service.check()
    assert service.log_dir in str(e.value)
    service.close()  # returns at once: nothing is left to stop
    # The workers see their parent go and stop by themselves (the trainer saving first).
    assert wait_for(lambda: all(gone(pid) for pid in pids.values()), timeout=60)


def test_rllib_ppo_runners_feed_the_service_a_killed_runner_is_restarted_and_no_label_is_lost(cluster, tmp_path):
    from ray.rllib.algorithms.ppo import PPOConfig

    from drlhp.cluster.rllib import sample_until_reward_predictor_ready, with_preferences

    budget = 40
    service = start_service(tmp_path, env=_flat(small_dot()), obs_transform_func=_frame, label_budget=budget,
                            label_schedule="constant", label_schedule_steps=6_000, n_initial_prefs=10)
    config = (PPOConfig()
              .env_runners(num_env_runners=2, num_envs_per_env_runner=2, rollout_fragment_length=50)
              .training(train_batch_size_per_learner=200, minibatch_size=50, num_epochs=1)
              .fault_tolerance(restart_failed_env_runners=True, delay_between_env_runner_restarts_s=0.0)
              .rl_module(model_config={"fcnet_hiddens": [16]}))
    algo = with_preferences(config, lambda env_config: _flat(small_dot()), service).build_algo()
    try:
        sample_until_reward_predictor_ready(algo, service, timeout=120)
        result = algo.train()
        assert "drlhp_true_episode_return" in result["env_runners"]
        assert algo._drlhp_relabeller is None and "relabellings" not in result["drlhp"]  # on-policy: no buffer
        group = algo.env_runner_group
        runner_pids = group.foreach_env_runner(lambda r: os.getpid(), local_env_runner=False)
        labels_before = result["drlhp"]["run_labels"]
        assert labels_before < budget, "the kill comes mid-run"
        os.kill(runner_pids[0], signal.SIGKILL)
        for _ in range(60):
            result = algo.train()
            if result["drlhp"]["pairs_asked"] >= budget and group.num_healthy_remote_workers() == 2:
                break
        assert group.num_healthy_remote_workers() == 2, "RLlib restarted the killed runner"
        new_pids = group.foreach_env_runner(lambda r: os.getpid(), local_env_runner=False)
        assert runner_pids[0] not in new_pids
        # The interface counts a pair as asked before its label reaches the trainer: the last one may be in flight.
        assert wait_for(lambda: service.stats()["run_labels"] == budget, timeout=30, poll=0.1), \
            "labelling went on to the end of the budget"
        service_pids = service.processes()
        kill(service.actor)  # and a dead service stops training with drlhp's error
        with pytest.raises(PreferenceServiceDied):
            algo.train()
    finally:
        algo.stop()
        service.close()
    assert wait_for(lambda: all(gone(pid) for pid in [*service_pids.values(), *new_pids]), timeout=60)
    db = PrefBuffer.load_all(str(tmp_path))
    assert len(db.train_db) + len(db.val_db) == budget, "every label made is in the log_dir"


def _flat(env):
    """MovingDot as a flat float vector for a small MLP policy (the reward network still gets its frames)."""
    import gymnasium

    space = gymnasium.spaces.Box(0.0, 1.0, (int(np.prod(env.observation_space.shape)),), np.float32)
    return gymnasium.wrappers.TransformObservation(env, lambda o: o.reshape(-1).astype(np.float32) / 255.0, space)


def _frame(obs: np.ndarray) -> np.ndarray:
    """The flat policy input back to the 16x16 frame the reward network sees (drlhp's obs_transform_func)."""
    return np.round(obs.reshape(16, 16, 1) * 255.0).astype(np.uint8)


def test_rllib_dqn_replay_buffer_holds_the_newest_predictors_rewards_after_a_switch(cluster, tmp_path):
    from ray.rllib.algorithms.dqn import DQNConfig

    from drlhp.cluster.rllib import sample_until_reward_predictor_ready, with_preferences

    service = start_service(tmp_path, env=_flat(small_dot()), obs_transform_func=_frame)
    config = (DQNConfig()  # the driver's own env runner: no runner actors to start
              .env_runners(num_env_runners=0, num_envs_per_env_runner=2, rollout_fragment_length=20)
              .training(train_batch_size_per_learner=16, num_steps_sampled_before_learning_starts=0,
                        # fewer steps than the run takes: the buffer evicts episodes
                        replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": 300,
                                              "alpha": 0.6, "beta": 0.4})
              .reporting(min_time_s_per_iteration=0, min_sample_timesteps_per_iteration=0)
              .rl_module(model_config={"fcnet_hiddens": [16]}))
    algo = with_preferences(config, lambda env_config: _flat(small_dot()), service, max_time_share=1.0,
                            weights_poll_interval=0.05).build_algo()
    try:
        sample_until_reward_predictor_ready(algo, service, timeout=120)
        relabeller = algo._drlhp_relabeller
        deadline = time.monotonic() + 120
        relabelled = False
        buffer = algo.local_replay_buffer
        # Until an iteration ends in a relabelling that is not the first (the buffer moves from one predictor to a
        # newer one) once the buffer is full (it has evicted episodes).
        while not relabelled:
            assert time.monotonic() < deadline, "no second relabelling of a full buffer within 120 s"
            before = relabeller.relabellings
            result = algo.train()
            relabelled = relabeller.relabellings > before >= 1 and buffer.get_num_episodes_evicted() > 0
        stats = result["drlhp"]
        assert stats["relabellings"] >= 2 and stats["relabel_seconds"] > 0
        assert stats["relabelled_weights_version"] == relabeller.version >= stats["weights_version"]  # the newest
        predictor = relabeller.predictor
        stored, expected, given = [], [], []
        for episode in buffer.episodes:  # reward t: of the step into observation t + 1
            frames = np.stack([_frame(episode.get_observations(t + 1)) for t in range(len(episode))])
            stored.extend(episode.get_rewards())
            expected.extend(predictor.normalised_rewards(frames))
            given.extend(episode.get_infos(t + 1).get(PREDICTED_REWARD_KEY, 0.0) for t in range(len(episode)))
        assert len(stored) == len(buffer) > 200
        assert np.ptp(expected) > 0.05  # rewards that tell steps apart (0.13-0.14 in runs)
        assert_same_in_float32(stored, expected)
        # What the runner gave (an older predictor's reward, or 0.0 before the first): the buffer held it before.
        assert np.mean(np.abs(np.subtract(given, expected)) > 1e-3) > 0.5, "the relabelling changed nothing"
    finally:
        algo.stop()
        service.close()


class _WeightsOnly:
    """Stands in for a PreferenceService handle: a newer predictor at every ask, with ``_frame`` as its
    obs_transform_func."""

    def __init__(self, predictor) -> None:
        self.config = type("Config", (), {"obs_transform_func": staticmethod(_frame)})()
        self.data, self.asked = predictor.to_bytes(), 0

    def weights_after(self, version: int):
        self.asked += 1
        return version + 1, self.data


def _episode(seed: int, steps: int, integer_rewards: bool = False):
    from ray.rllib.env.single_agent_episode import SingleAgentEpisode

    env, episode = _flat(small_dot()), SingleAgentEpisode()
    obs, _ = env.reset(seed=seed)
    episode.add_env_reset(obs)
    for _ in range(steps):
        obs, _, _, _, _ = env.step(env.action_space.sample())
        episode.add_env_step(obs, 0, 7 if integer_rewards else 7.0)
    return episode


def test_a_replay_buffer_is_relabelled_whole_lookbacks_and_numpyd_episodes_too_within_the_time_bound(monkeypatch):
    from ray.rllib.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer

    from drlhp.clips.frames import infer_frame_spec
    from drlhp.cluster.relabel import ReplayBufferRelabeller
    from drlhp.reward.predictor import NetConfig, RewardPredictor

    buffer = EpisodeReplayBuffer(capacity=1000)
    ongoing = _episode(1, 12)
    continuation = ongoing.cut(len_lookback_buffer=1)  # stored alone: its first step's reward is in its lookback
    for _ in range(5):
        obs = _flat(small_dot()).observation_space.sample()
        continuation.add_env_step(obs, 0, 7.0)
    buffer.add([_episode(0, 20).to_numpy(), _episode(2, 9, integer_rewards=True).to_numpy(), continuation])
    assert continuation.rewards.lookback == 1 and not continuation.is_numpy
    predictor = RewardPredictor(NetConfig(infer_frame_spec(_frame(ongoing.get_observations(0))), dropout=0.0))
    service = _WeightsOnly(predictor)
    relabeller = ReplayBufferRelabeller(buffer, service, max_time_share=0.5)
    assert relabeller.maybe_relabel() and relabeller.version == 1
    assert not relabeller.maybe_relabel() and service.asked == 1  # as long again as it took: not before
    for episode in buffer.episodes:
        first = -1 if episode.rewards.lookback else 0  # the lookback's reward, of the step into observation 0
        frames = np.stack([_frame(episode.get_observations(t + 1, neg_index_as_lookback=True))
                           for t in range(first, len(episode))])
        assert_same_in_float32(episode.get_rewards(slice(first, None), neg_index_as_lookback=True),
                               predictor.normalised_rewards(frames))
    later = time.monotonic() + relabeller.last_seconds  # as long again as the last one took has passed
    monkeypatch.setattr(time, "monotonic", lambda: later)
    assert relabeller.maybe_relabel() and relabeller.relabellings == 2 and relabeller.version == 2


def test_replay_buffers_drlhp_cannot_relabel_are_refused_with_the_fix():
    from ray.rllib.utils.replay_buffers import MultiAgentEpisodeReplayBuffer, ReplayBuffer

    from drlhp.cluster.relabel import ReplayBufferRelabeller
    from drlhp.cluster.rllib import with_preferences
    from drlhp.errors import ConfigError

    service = _WeightsOnly.__new__(_WeightsOnly)
    service.config = None
    with pytest.raises(ConfigError, match=r"multi-agent.*PrioritizedEpisodeReplayBuffer.*relabel=False"):
        ReplayBufferRelabeller(MultiAgentEpisodeReplayBuffer(), service)
    with pytest.raises(ConfigError, match=r"ReplayBuffer: run it on the new API stack.*relabel=False"):
        ReplayBufferRelabeller(ReplayBuffer(), service)
    with pytest.raises(ConfigError, match="max_time_share"):
        with_preferences(None, small_dot, service, max_time_share=0.0)


def feed_until(env, condition, timeout: float = 60.0) -> bool:
    """Step the runner's env a tenth of a second at a time until ``condition()`` holds (or ``timeout`` s pass)."""
    def fed() -> bool:
        run_for(env, seconds=0.1)
        return condition()

    return wait_for(fed, timeout=timeout, poll=0)


def feed_until_trained(env, service) -> None:
    """Feed the service clips until it has its initial labels and a reward predictor ready."""
    assert feed_until(env, lambda: service.stats()["run_labels"] >= CLUSTER["n_initial_prefs"])
    service.wait_for_reward_predictor(timeout=120)


def test_a_service_worker_that_raises_mid_run_is_a_clear_error_in_the_driver_and_loses_no_label(cluster, tmp_path):
    # The interface's labeller raises, once the service has trained a checkpoint (a trainer cannot be made to raise
    # mid-run where Ray starts it: test_worker_faults.py does so on one machine).
    from test_worker_faults import LABELLER_FAULT, PROMPT_CLOSE_S, LabellerFailingOnCue

    cue, log_dir = tmp_path / "fail now", str(tmp_path / "log")
    service = start_service(log_dir, labeller=LabellerFailingOnCue(str(cue)))
    env = linked_env(service.name, 1.0)
    pids = service.processes()

    try:
        feed_until_trained(env, service)
        answered = service.stats()["labels_sent"]
        cue.touch()  # the labeller raises at the pair the next clip brings
        with pytest.raises(WorkerError) as err:
            feed_until(env, lambda: service.check() and False)
        assert "pref_interface process failed" in str(err.value) and LABELLER_FAULT in str(err.value)
        assert "preference service" in str(err.value)
        with pytest.raises(WorkerError, match="pref_interface"):  # and again: a runner's call cannot swallow it
            service.check()
    finally:
        env.close()
        start = time.monotonic()
        service.close()  # the driver saw the failure: closing raises nothing
        assert time.monotonic() - start < PROMPT_CLOSE_S
    assert gone(pids["reward_trainer"]) and gone(pids["pref_interface"])  # stopped before close() returned
    assert wait_for(lambda: gone(pids["service"]), timeout=60)
    seqs = [seq for seq, *_ in labels_by_seq(PrefBuffer.load_all(log_dir))]
    assert seqs == list(range(len(seqs))) and len(seqs) >= answered


def test_a_service_that_cannot_write_its_log_dir_mid_run_is_one_write_error_line_in_the_driver(cluster, tmp_path):
    log_dir, aside = tmp_path / "log", tmp_path / "log.aside"
    service = start_service(str(log_dir))
    env = linked_env(service.name, 1.0)

    try:
        feed_until_trained(env, service)
        os.rename(log_dir, aside)  # root ignores permissions: a file in the log_dir's place makes it unwritable
        log_dir.write_text("in the way")
        with pytest.raises(WriteError) as err:
            feed_until(env, lambda: service.check() and False)
        message = str(err.value)
        assert "\n" not in message and str(log_dir) in message and "a file stands where" in message
        assert "preference service" in message
        with pytest.raises(WriteError):  # and again, to every later caller
            service.check()
    finally:
        env.close()
        service.close()  # the driver saw the failure: closing raises nothing
