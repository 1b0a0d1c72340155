"""A person shown the env's renders where the observations are flat vectors (``display_frames``)."""
from __future__ import annotations

import io
import json
import threading

import gymnasium
import numpy as np
import pytest
from conftest import FakePixelEnv

from drlhp import HumanPreferencesEnvWrapper, HumanPreferencesVectorWrapper, PrefBuffer
from drlhp.errors import ConfigError, ObservationError
from drlhp.labelling.display import DISPLAY_PX, fitted_render

VECTOR = dict(shape=(4,), dtype=np.float32)  # FakePixelEnv's observation: 4 features, each the step / 255


def test_a_render_is_shrunk_by_a_whole_factor_and_centred():
    big = np.zeros((480, 480, 3), np.uint8)
    big[:, :240] = 90  # the left half: the block means keep the edge where it is
    fitted = fitted_render(big)
    assert fitted.shape == (DISPLAY_PX, DISPLAY_PX, 3) and fitted.dtype == np.uint8
    assert (fitted[:, :80] == 90).all() and (fitted[:, 80:] == 0).all()
    atari = np.full((210, 160, 3), 200, np.uint8)  # halved to 105 x 80, in the middle of the square
    shown = np.argwhere(fitted_render(atari)[..., 0] == 200)
    assert shown.min(axis=0).tolist() == [27, 40] and shown.max(axis=0).tolist() == [131, 119]
    for bad in (np.zeros((8, 8), np.uint8), np.zeros((8, 8, 3), np.float32), None):
        with pytest.raises(ObservationError, match='render_mode="rgb_array"'):
            fitted_render(bad)


def test_renders_need_an_env_that_renders():
    people = dict(synthetic_preferences=False, labelling="web", web_port=0, train_reward=False)
    with pytest.raises(ConfigError, match='render_mode="rgb_array"'):
        HumanPreferencesEnvWrapper(FakePixelEnv(**VECTOR), display_frames="render", **people)
    with pytest.raises(ObservationError, match='render_mode="rgb_array"'):  # auto: vectors, but nothing to render
        HumanPreferencesEnvWrapper(FakePixelEnv(**VECTOR), **people)
    vector = gymnasium.vector.SyncVectorEnv([lambda: FakePixelEnv(**VECTOR)] * 2)
    with pytest.raises(ConfigError, match='render_mode="rgb_array"'):
        HumanPreferencesVectorWrapper(vector, display_frames="render", **people)
    vector.close()
    with pytest.raises(ConfigError, match="display_frames must be one of"):
        HumanPreferencesEnvWrapper(FakePixelEnv(), display_frames="pixels")


@pytest.mark.parametrize("front_end", ["gymnasium", "sb3"])
def test_vector_envs_show_each_sub_envs_renders_beside_its_clips(tmp_path, front_end):
    pytest.importorskip("aiohttp")
    make = [lambda: FakePixelEnv(episode_length=7, render_mode="rgb_array", **VECTOR)] * 2
    people = dict(synthetic_preferences=False, labelling="web", web_port=0, train_reward=False, segment_length=5,
                  log_dir=str(tmp_path), log_level=30)
    if front_end == "sb3":
        from stable_baselines3.common.vec_env import DummyVecEnv

        from drlhp.sb3 import HumanPreferencesVecEnvWrapper

        env = HumanPreferencesVecEnvWrapper(DummyVecEnv(make), **people)
        env.reset()
        step = lambda: env.step(np.zeros(2, int))  # noqa: E731
    else:
        env = HumanPreferencesVectorWrapper(gymnasium.vector.SyncVectorEnv(make), **people)
        env.reset(seed=0)
        step = lambda: env.step(np.zeros(2, int))  # noqa: E731
    with env:
        assert env.pipeline.display_spec.shape == (DISPLAY_PX, DISPLAY_PX, 3)
        for _ in range(20):
            step()
        assert env.stats().clips_sent >= 4  # a clip of each sub-env's episodes, each with its renders


def test_a_person_on_the_page_sees_the_renders_of_the_steps_whose_observations_are_stored(tmp_path):
    pytest.importorskip("aiohttp")
    from PIL import Image
    from test_web import http

    env = HumanPreferencesEnvWrapper(FakePixelEnv(episode_length=60, render_mode="rgb_array", **VECTOR),
                                     synthetic_preferences=False, labelling="web", web_port=0, segment_length=5,
                                     log_dir=str(tmp_path), train_reward=False, label_budget=100, seed=0, log_level=30)
    stop = threading.Event()

    def agent():
        env.reset(seed=0)
        while not stop.wait(0.001):
            if any(env.step(0)[2:4]):
                env.reset()

    thread = threading.Thread(target=agent)
    thread.start()
    try:
        base, token = env.labelling_url.split("/?token=")
        auth = {"X-Drlhp-Token": token}
        pair = None
        for _ in range(200):  # each request waits for a pair up to the server's own timeout
            pair = json.loads(http(base + "/api/next?name=alice", headers=auth)[1])
            if pair["pair"] is not None:
                break
        assert pair["pair"] is not None and (pair["h"], pair["w"], pair["frames"]) == (DISPLAY_PX, DISPLAY_PX, 5)
        status, png, _ = http(base + f"/clip/{pair['left']}.png", headers=auth)
        assert status == 200
        sheet = np.asarray(Image.open(io.BytesIO(png)))
        cols = pair["cols"]
        # Each tile's middle pixel: the render of that step is the step counter.
        shown = [int(sheet[r * DISPLAY_PX + 80, c * DISPLAY_PX + 80].flat[0]) for r, c in
                 (divmod(i, cols) for i in range(5))]
        assert http(base + "/api/answer", {"pair": pair["pair"], "label": "L", "name": "alice"}, headers=auth)[0] == 200
    finally:
        stop.set()
        thread.join()
        env.close()
    buffer = PrefBuffer.load_all(str(tmp_path))
    db = buffer.train_db if len(buffer.train_db) else buffer.val_db
    stored = db.segments[pair["left"]].frames  # the observations the reward network trains on
    assert stored.shape == (5, 4)
    assert shown == np.rint(stored[:, 0] * 255).astype(int).tolist()
    assert np.diff(shown).tolist() == [1, 1, 1, 1]  # five consecutive steps
