"""The env process's cost of an ensemble: the batch-1 reward forward pass (what ``step()``
calls every step) of a 3-member ensemble vs one network, same run, one torch thread.

Both go through ``RewardPredictor.rewards`` (normaliser included). Aim: 3 members
<= 1.5x one member. Also shown: 3 separate networks called in turn, the naive ensemble,
and the same for a batch of 8 frames (a vector env's step). The variants are timed in
turn over 7 rounds and each keeps its fastest round: the machine is shared.

    python -m benchmarks.speed.ensemble_forward [--calls 3000] [--envs moving_dot pong]
"""
from __future__ import annotations

import time

import numpy as np

from benchmarks.measured_envs import make_env, one_thread, run_per_env
from drlhp.clips.frames import infer_frame_spec
from drlhp.reward.predictor import NetConfig, RewardPredictor


def per_call_ms(fns: dict, frames, n: int, rounds: int = 7) -> dict:
    """Milliseconds per call of each of ``fns`` on ``frames``: fastest of ``rounds`` interleaved rounds."""
    for fn in fns.values():
        for _ in range(200):
            fn(frames)
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            for _ in range(n):
                fn(frames)
            best[name] = min(best[name], (time.perf_counter() - start) / n * 1e3)
    return best


def measure(env_name: str, n_calls: int) -> None:
    one_thread()
    env = make_env(env_name)
    obs, _ = env.reset(seed=0)
    frame = np.asarray(obs)[None]
    spec = infer_frame_spec(frame[0])
    single = RewardPredictor(NetConfig(spec, n_members=1))
    ensemble = RewardPredictor(NetConfig(spec, n_members=3))
    separate = [RewardPredictor(NetConfig(spec, n_members=1)) for _ in range(3)]
    fns = {"one": single.rewards, "ensemble": ensemble.rewards,
           "separate": lambda f: [p.rewards(f) for p in separate]}
    for batch in (frame, np.repeat(frame, 8, axis=0)):
        t = per_call_ms(fns, batch, n_calls // len(batch) * 2 if len(batch) > 1 else n_calls)
        print(f"{env_name:10s} batch {len(batch)}: one network {t['one']:.3f} ms | 3-member ensemble "
              f"{t['ensemble']:.3f} ms = {t['ensemble'] / t['one']:.2f}x | 3 separate networks "
              f"{t['separate']:.3f} ms = {t['separate'] / t['one']:.2f}x", flush=True)


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--calls", 3000)
