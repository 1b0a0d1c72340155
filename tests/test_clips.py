import multiprocessing

import numpy as np
from conftest import wait_for

from drlhp.clips.cutting import ClipBuilder, EpisodeClips
from drlhp.clips.frames import infer_frame_spec
from drlhp.runtime.clip_channel import ClipChannel

SPEC = infer_frame_spec(np.zeros((6, 6, 1), np.uint8))


def test_builder_returns_full_segments_in_order():
    b = ClipBuilder(SPEC, 3)
    done = []
    for t in range(7):
        out = b.add(np.full((6, 6, 1), t, np.uint8), float(t))
        if out is not None:  # the builder's own buffers: read them before the next add()
            done.append((t, out[0][:, 0, 0, 0].tolist(), out[1].tolist()))
    assert done == [(2, [0, 1, 2], [0.0, 1.0, 2.0]), (5, [3, 4, 5], [3.0, 4.0, 5.0])]


def test_segment_never_spans_two_episodes():
    b = ClipBuilder(SPEC, 3)
    for t in range(2):
        b.add(np.full((6, 6, 1), t, np.uint8), 0.0)
    b.end_episode()  # the 2-frame tail is dropped
    assert b.n_tail_frames_dropped == 2
    outs = [b.add(np.full((6, 6, 1), t, np.uint8), 0.0) for t in (10, 11, 12)]
    assert outs[-1][0][:, 0, 0, 0].tolist() == [10, 11, 12]


def test_episode_clips_follow_each_envs_episodes_and_skip_unrecorded_steps():
    clips = EpisodeClips(SPEC, 2, n_envs=2)
    frames = lambda t: np.full((2, 6, 6, 1), t, np.uint8)  # noqa: E731
    assert clips.add(frames(0), [0.0, 0.0]) == []
    done = clips.add(frames(1), [1.0, 1.0], episode_ends=[True, False])  # env 0's episode ends with its clip
    assert [(i, episode, f[:, 0, 0, 0].tolist()) for i, episode, f, *_ in done] == [(0, 0, [0, 1]), (1, 1, [0, 1])]
    clips.add(frames(2), [0.0, 0.0], recorded=[False, True], episode_ends=[False, True])  # env 1: a 1-frame tail
    done = [clips.add(frames(t), [0.0, 0.0]) for t in (3, 4)][-1]
    assert [(i, episode, f[:, 0, 0, 0].tolist()) for i, episode, f, *_ in done] == [(0, 2, [3, 4]), (1, 3, [3, 4])]
    assert clips.n_tail_frames_dropped == 1


def test_episodes_shorter_than_a_clip_are_reported_once_and_only_before_a_first_clip(caplog):
    clips = EpisodeClips(SPEC, 3, n_envs=1)
    frame = np.zeros((1, 6, 6, 1), np.uint8)
    for episode_length in (2, 2):  # the seed's workflow 1 on an env whose episodes are shorter than its clips
        for t in range(episode_length):
            clips.add(frame, [0.0], episode_ends=[t == episode_length - 1])
    warnings = [r.getMessage() for r in caplog.records if "segment_length=3" in r.getMessage()]
    assert len(warnings) == 1 and "after 2 steps" in warnings[0]

    caplog.clear()
    long_enough = EpisodeClips(SPEC, 3, n_envs=1)
    for t in range(5):  # a clip, then an episode end with a 2-frame tail: normal, nothing to say
        long_enough.add(frame, [0.0], episode_ends=[t == 4])
    assert long_enough.n_tail_frames_dropped == 2 and not caplog.records


def test_channel_moves_segments_and_drops_when_full():
    ctx = multiprocessing.get_context("spawn")
    channel = ClipChannel(ctx, SPEC, 3, n_slots=2)
    frames = np.arange(3 * 36, dtype=np.uint8).reshape(3, 6, 6, 1)
    assert channel.send(frames, np.array([1.0, 2.0, 3.0]))
    assert channel.send(frames + 1, np.zeros(3))
    assert not channel.send(frames, np.zeros(3))  # both slots in flight: dropped, not blocked
    assert (channel.n_sent, channel.n_dropped) == (2, 1)
    first = channel.receive(timeout=5)
    assert first.clip_id == 0 and np.array_equal(first.frames, frames) and first.rewards.tolist() == [1, 2, 3]
    frames[:] = 0  # the sender's buffer is reused: the received copy must not change
    assert first.frames.sum() > 0
    assert channel.receive(timeout=5).clip_id == 1
    # Slots come back asynchronously (through the queue's feeder thread).
    assert wait_for(lambda: channel.send(frames, np.zeros(3)), timeout=5)
    assert channel.receive(timeout=5).frames.sum() == 0
    assert channel.receive(timeout=0.01) is None
    channel.close()
