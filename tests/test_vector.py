"""Vector front-ends: SB3 VecEnvs and gymnasium vector envs share one pipeline."""
import multiprocessing
import os
import signal
import time
from functools import partial

import gymnasium
import numpy as np
import pytest
from conftest import FAST, StampedEnv, assert_same_in_float32
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from drlhp import (
    PREDICTED_REWARD_KEY,
    TRUE_REWARD_KEY,
    HumanPreferencesVectorWrapper,
    PrefDB,
    RewardPredictor,
    WorkerError,
)
from drlhp.clips.frames import infer_frame_spec
from drlhp.reward.normaliser import RewardNormaliser
from drlhp.reward.predictor import NetConfig
from drlhp.sb3 import HumanPreferencesVecEnvWrapper

# With clips of 5 frames: an episode of exactly one clip, one with a tail, one of exactly
# two clips (its last frame is the terminal observation), and one of two clips and a tail.
EPISODE_LENGTHS = (5, 7, 10, 11)
KINDS = ["sb3-dummy", "sb3-subproc", "gym-sync-NEXT_STEP", "gym-sync-SAME_STEP", "gym-sync-DISABLED",
         "gym-async-NEXT_STEP", "gym-async-SAME_STEP"]


def make_venv(kind: str, n: int = 4):
    fns = [partial(StampedEnv, i, EPISODE_LENGTHS[i % len(EPISODE_LENGTHS)]) for i in range(n)]
    if kind == "sb3-dummy":
        return DummyVecEnv(fns)
    if kind == "sb3-subproc":
        return SubprocVecEnv(fns, start_method="forkserver")
    _, runner, mode = kind.split("-")
    if runner == "sync":
        return SyncVectorEnv(fns, autoreset_mode=AutoresetMode[mode])
    return AsyncVectorEnv(fns, autoreset_mode=AutoresetMode[mode], context="forkserver")


def wrap(kind: str, n: int = 4, **kwargs):
    venv = make_venv(kind, n)
    front_end = HumanPreferencesVecEnvWrapper if kind.startswith("sb3") else HumanPreferencesVectorWrapper
    try:
        return front_end(venv, **kwargs)
    except BaseException:
        venv.close()
        raise


class Driver:
    """Steps either API with action 0 and hands back, per sub-env, the frame the step ended on."""

    def __init__(self, venv) -> None:
        self.venv, self.n = venv, venv.num_envs
        self.sb3 = isinstance(venv, HumanPreferencesVecEnvWrapper)
        self.mode = None if self.sb3 else venv.metadata["autoreset_mode"]
        self.venv.reset() if self.sb3 else self.venv.reset(seed=0)

    def step(self):
        """(rewards, infos, last frames, real transition mask)."""
        actions = np.zeros(self.n, dtype=np.int64)
        if self.sb3:
            obs, rewards, dones, infos = self.venv.step(actions)
            last = np.stack([infos[i]["terminal_observation"] if dones[i] else obs[i] for i in range(self.n)])
            return rewards, infos, last, np.ones(self.n, bool)
        obs, rewards, term, trunc, infos = self.venv.step(actions)
        ends = term | trunc
        last, real = obs.copy(), np.ones(self.n, bool)
        if self.mode == AutoresetMode.SAME_STEP:
            for i in np.flatnonzero(infos.get("_final_obs", np.zeros(self.n, bool))):
                last[i] = infos["final_obs"][i]
        elif self.mode == AutoresetMode.NEXT_STEP:
            real = obs[:, 0, 0, 0] != 0  # t = 0 only right after a reset
        elif ends.any():
            self.venv.reset(options={"reset_mask": ends})
        return rewards, infos, last, real

    def until(self, condition, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"condition not reached; stats: {self.venv.stats()}"
            self.step()


def drlhp_processes():
    return [p for p in multiprocessing.active_children() if p.name.startswith("drlhp-")]


@pytest.mark.parametrize("kind", KINDS)
def test_clips_come_from_every_sub_env_and_never_span_its_episodes(tmp_path, kind):
    with wrap(kind, log_dir=str(tmp_path), train_reward=False, **FAST) as venv:
        assert len(drlhp_processes()) == 2 and set(venv.pipeline.processes) == {"reward_trainer", "pref_interface"}
        Driver(venv).until(lambda: venv.stats().labels_received >= 40)
        venv.save_prefs()
        assert venv.stats().n_envs == 4
    segments = list(PrefDB.load(str(tmp_path / "train.pkl.gz")).segments.values())
    assert {int(s.frames[0, 0, 2, 0]) for s in segments} == {0, 1, 2, 3}  # every sub-env contributes
    for seg in segments:
        t, episode, instance = (seg.frames[:, 0, i, 0].astype(int) for i in range(3))
        assert len(set(instance)) == 1 and len(set(episode)) == 1, "a clip mixes envs or episodes"
        # Consecutive steps from the start of a clip slot; never the reset frame (t = 0),
        # never past the episode's last step (the terminal observation ends a clip).
        assert t[0] % 5 == 1 and t.tolist() == list(range(t[0], t[0] + 5)), t
        assert t[-1] <= EPISODE_LENGTHS[instance[0]]
        assert seg.rewards.tolist() == [float(x % 7) for x in t]


@pytest.mark.parametrize("kind", ["sb3-dummy", "gym-sync-NEXT_STEP", "gym-sync-SAME_STEP"])
def test_batched_predicted_rewards_equal_single_frame_ones(tmp_path, kind):
    spec = infer_frame_spec(StampedEnv().observation_space.sample())
    predictor = RewardPredictor(NetConfig(spec), normaliser=RewardNormaliser(0.01, 0.02, 0.05), training_step=7)
    predictor.save(str(tmp_path / "reward_predictor.ckpt"))
    predictor = RewardPredictor.load(str(tmp_path / "reward_predictor.ckpt"))
    with wrap(kind, pretrained_reward_predictor_dir=str(tmp_path), collect_prefs=False, train_reward=False,
              log_dir=str(tmp_path / "unused")) as venv:
        driver = Driver(venv)
        assert venv.using_reward_from_predictor
        n_real = 0
        for _ in range(30):
            rewards, infos, last, real = driver.step()
            single = [predictor.reward(frame) if ok else 0.0 for frame, ok in zip(last, real)]
            assert_same_in_float32(rewards, single)  # a batch of 4 frames against one at a time
            true = [infos[i][TRUE_REWARD_KEY] for i in range(4)] if driver.sb3 else infos[TRUE_REWARD_KEY]
            predicted = ([infos[i][PREDICTED_REWARD_KEY] for i in range(4)] if driver.sb3
                         else infos[PREDICTED_REWARD_KEY])
            assert list(true) == [float(f[0, 0, 0] % 7) for f in last]
            assert predicted == pytest.approx(rewards)
            n_real += real.sum()
        assert n_real < 120 if kind.endswith("NEXT_STEP") else n_real == 120  # autoreset steps are skipped
        assert len(set(np.round(rewards, 6))) > 1  # different frames, different rewards: a real check


@pytest.mark.parametrize("kind", ["sb3-dummy", "gym-sync-NEXT_STEP"])
def test_collect_train_and_switch_with_one_reward_network(tmp_path, kind):
    with wrap(kind, log_dir=str(tmp_path), **FAST) as venv:
        driver = Driver(venv)
        driver.until(lambda: venv.using_reward_from_predictor)
        rewards, infos, _, _ = driver.step()
        assert venv.stats().predictor_training_step >= FAST["n_initial_training_steps"]
        venv.switch_to_true_reward()
        rewards, infos, last, _ = driver.step()
        assert list(rewards) == [float(f[0, 0, 0] % 7) for f in last]
        venv.switch_to_predicted_reward()
        assert venv.using_reward_from_predictor
        assert len(drlhp_processes()) == 2
    assert os.path.isfile(tmp_path / "reward_predictor_checkpoints" / "reward_predictor.ckpt")


def test_train_from_saved_prefs_and_use_the_checkpoint_through_vector_wrappers(tmp_path):
    prefs, train = tmp_path / "prefs", tmp_path / "train"
    with wrap("gym-sync-SAME_STEP", log_dir=str(prefs), train_reward=False, **FAST) as venv:
        Driver(venv).until(lambda: venv.stats().labels_received >= 30)
        venv.save_prefs()
    fast = dict(FAST, reward_predictor_ckpt_interval=10)
    with wrap("sb3-dummy", prefs_dir=str(prefs), collect_prefs=False, log_dir=str(train), **fast) as venv:
        Driver(venv).until(lambda: venv.stats().training_steps >= 20)
        assert venv.stats().labels_sent == 0
    ckpt_dir = str(train / "reward_predictor_checkpoints")
    assert RewardPredictor.load(ckpt_dir + "/reward_predictor.ckpt").training_step % 10 == 0
    with wrap("gym-sync-NEXT_STEP", pretrained_reward_predictor_dir=ckpt_dir, collect_prefs=False,
              train_reward=False, log_dir=str(tmp_path / "use")) as venv:
        assert venv.using_reward_from_predictor and not drlhp_processes()
        Driver(venv).step()


def test_obs_transform_func_is_applied_to_each_sub_envs_observation(tmp_path):
    def to_vector(obs):  # module-level lambdas would not pickle; this runs in this process only
        return obs[0, :3, 0].astype(np.float32)

    with wrap("sb3-dummy", obs_transform_func=to_vector, train_reward=False, log_dir=str(tmp_path), **FAST) as venv:
        assert venv.frame_spec.shape == (3,) and venv.frame_spec.layout == "vector"
        Driver(venv).until(lambda: venv.stats().labels_received >= 10)
        venv.save_prefs()
    for seg in PrefDB.load(str(tmp_path / "train.pkl.gz")).segments.values():
        assert seg.frames.shape == (5, 3) and seg.frames[0, 0] % 5 == 1


def dict_stamped_env(instance: int) -> gymnasium.Env:
    env = StampedEnv(instance, EPISODE_LENGTHS[instance])
    space = gymnasium.spaces.Dict({"pixels": env.observation_space, "step": gymnasium.spaces.Discrete(1)})
    return gymnasium.wrappers.TransformObservation(env, lambda o: {"pixels": o, "step": 0}, space)


def test_dict_observations_of_a_gymnasium_vector_env(tmp_path):
    envs = SyncVectorEnv([partial(dict_stamped_env, i) for i in range(4)], autoreset_mode=AutoresetMode.SAME_STEP)
    with HumanPreferencesVectorWrapper(envs, obs_transform_func=lambda o: o["pixels"], train_reward=False,
                                       log_dir=str(tmp_path), **FAST) as venv:
        assert venv.frame_spec.shape == (12, 12, 1)
        venv.reset(seed=0)
        deadline = time.monotonic() + 60
        while venv.stats().labels_received < 10:
            assert time.monotonic() < deadline, venv.stats()
            venv.step(np.zeros(4, dtype=np.int64))
        venv.save_prefs()
    for seg in PrefDB.load(str(tmp_path / "train.pkl.gz")).segments.values():
        t = seg.frames[:, 0, 0, 0].astype(int)
        assert t[0] % 5 == 1 and t.tolist() == list(range(t[0], t[0] + 5))  # final_obs used at episode ends


@pytest.mark.parametrize("kind", ["sb3-dummy", "gym-sync-NEXT_STEP"])
def test_bad_arguments_fail_clearly_and_close_the_vector_env(tmp_path, kind):
    with pytest.raises(TypeError, match="unknown drlhp argument.*segment_lenght"):
        wrap(kind, segment_lenght=5)
    with pytest.raises(ValueError, match="segment_length must be >= 1"):
        wrap(kind, segment_length=0, log_dir=str(tmp_path))


@pytest.mark.parametrize("kind", ["sb3-subproc", "gym-async-NEXT_STEP"])
def test_a_killed_worker_is_reported_and_close_is_bounded(tmp_path, kind):
    venv = wrap(kind, log_dir=str(tmp_path), **FAST)
    try:
        driver = Driver(venv)
        victim = venv.pipeline.processes["pref_interface"]
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(10)
        with pytest.raises(WorkerError, match="pref_interface.*SIGKILL"):
            driver.until(lambda: False, timeout=30)
    finally:
        start = time.monotonic()
        venv.close()
        assert time.monotonic() - start < 15
    venv.close()  # idempotent
    assert not drlhp_processes()
