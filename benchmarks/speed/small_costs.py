"""The small costs that chose how a piece of drlhp works, each against what it replaced (docs/benchmarks.md,
"Figures behind the code"): microseconds to milliseconds, timed with ``timeit`` on one thread.

- the per-step check that the workers live: ``select`` on cached sentinels vs ``multiprocessing.connection.wait``;
- a label appended to the journal and fsynced (what each label waits for before the next pair is asked);
- a Pong clip (25 x 84x84x4) packed and unpacked (the trainer holds its clips packed), and its size packed;
- moving a Pong clip to the interface: a copy into shared memory vs pickling it through a queue;
- the reward network's ``eval()`` (called only when a training step left it in training mode);
- the batch-1 forward pass as plain tensor calls vs the module;
- a training pass (forward + backward) of a keypoint network whose maps are as sharp as a trained Pong
  network's: its softmax logits floored 50 below each map's peak vs a plain softmax, which spends its time
  on float32's denormal numbers.

    python -m benchmarks.speed.small_costs
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import pickle
import select
import tempfile
import time
import timeit

import numpy as np
import torch

from benchmarks.measured_envs import make_env
from drlhp.clips.clip import pack_frames, unpack_frames
from drlhp.clips.frames import frames_to_net_input, infer_frame_spec
from drlhp.reward import layers
from drlhp.reward.predictor import DEFAULT_ENSEMBLE_SIZE, NetConfig, RewardPredictor, member_input


def per_call(fn, number: int) -> float:
    """Seconds per call of ``fn``: the fastest of 5 rounds of ``number`` calls."""
    return min(timeit.repeat(fn, number=number, repeat=5)) / number


def show(what: str, seconds: float, against: tuple[str, float] | None = None) -> None:
    line = f"{what:58s} {seconds * 1e6:9.1f} us"
    if against is not None:
        line += f"   ({against[0]}: {against[1] * 1e6:.1f} us, {against[1] / seconds:.1f}x)"
    print(line, flush=True)


def pong_clip() -> np.ndarray:
    env = make_env("pong")
    env.reset(seed=0)
    return np.stack([np.asarray(env.step(env.action_space.sample())[0]) for _ in range(25)])


def main() -> None:
    torch.set_num_threads(1)
    ctx = multiprocessing.get_context("fork")
    worker = ctx.Process(target=time.sleep, args=(60,), daemon=True)
    worker.start()
    show("worker check: select on the cached sentinel", per_call(lambda: select.select([worker.sentinel], [], [], 0),
                                                                   10_000),
         ("connection.wait", per_call(lambda: multiprocessing.connection.wait([worker.sentinel], timeout=0), 10_000)))
    worker.kill()
    worker.join()

    with tempfile.TemporaryDirectory(dir=".") as directory:  # the file system a log_dir would be on
        fd = os.open(os.path.join(directory, "journal"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        show("a label record appended to the journal and fsynced", per_call(
            lambda: (os.write(fd, b"x" * 200), os.fsync(fd)), 200))
        os.close(fd)

    clip = pong_clip()
    packed = pack_frames(clip)
    print(f"a Pong clip: {clip.nbytes / 1e6:.2f} MB, packed {len(packed) / 1e3:.1f} kB "
          f"({clip.nbytes / len(packed):.0f}x)")
    show("  packed", per_call(lambda: pack_frames(clip), 50))
    show("  unpacked", per_call(lambda: unpack_frames(packed, clip.shape, clip.dtype), 50))
    shared = np.empty_like(clip)
    show("  copied into shared memory", per_call(lambda: np.copyto(shared, clip), 200),
         ("pickled", per_call(lambda: pickle.loads(pickle.dumps(clip, protocol=pickle.HIGHEST_PROTOCOL)), 50)))

    frame = clip[:1]  # one frame (a 4-frame stack), as the single-env wrapper rewards it
    spec = infer_frame_spec(frame[0])
    predictor = RewardPredictor(NetConfig(spec, n_members=DEFAULT_ENSEMBLE_SIZE, arch="atari"))
    show("the reward network's eval()", per_call(predictor.net.eval, 2_000))
    x = member_input(frames_to_net_input(frame, spec), DEFAULT_ENSEMBLE_SIZE)  # a copy per member, as the module takes

    def module() -> None:
        with torch.inference_mode():
            predictor.net(x)

    show("batch-1 forward (Atari network, 3 members): plain calls", per_call(lambda: predictor.rewards(frame), 500),
         ("the module", per_call(module, 500)))

    # A fresh network's last convolution scaled x5: then about as many of the softmax's weights on the clip's
    # frames fall in float32's denormal range (8 %) as a trained Pong network's (5 %, the 2026-11-26 run's).
    net = RewardPredictor(NetConfig(spec, n_members=1, arch="keypoints", batchnorm=True)).net.train()
    last_conv = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)][-1]
    with torch.no_grad():
        last_conv.weight.mul_(5)
    x = frames_to_net_input(np.concatenate([clip] * 8), spec)

    def training_pass() -> None:
        net.zero_grad()
        net(x).sum().backward()

    floored = per_call(training_pass, 3)
    peak_softmax, layers.peak_softmax = layers.peak_softmax, lambda logits, dim: torch.softmax(logits, dim=dim)
    try:
        plain = per_call(training_pass, 3)
    finally:
        layers.peak_softmax = peak_softmax
    show("a sharp keypoint network's training pass, 200 frames", floored, ("a plain softmax", plain))


if __name__ == "__main__":
    main()
