"""The env process's cost of an ensemble: the batch-1 reward forward pass (what ``step()``
calls every step) of a 3-member ensemble vs one network, same run, one torch thread.

Both go through ``RewardPredictor.rewards`` (normaliser included). Aim: 3 members
<= 1.5x one member. Also shown: 3 separate networks called in turn, the naive ensemble.

    python benchmarks/ensemble_forward.py [--calls 3000] [--envs moving_dot pong]
"""
from __future__ import annotations

import time

import numpy as np

from common import make_env, one_thread, run_per_env
from drlhp.frames import infer_frame_spec
from drlhp.reward_predictor import NetConfig, RewardPredictor


def per_call_ms(fn, frame, n: int) -> float:
    for _ in range(200):
        fn(frame)
    best = float("inf")
    for _ in range(3):  # best of three: the machine is shared
        start = time.perf_counter()
        for _ in range(n):
            fn(frame)
        best = min(best, (time.perf_counter() - start) / n * 1e3)
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
    t1 = per_call_ms(single.rewards, frame, n_calls)
    t3 = per_call_ms(ensemble.rewards, frame, n_calls)
    ts = per_call_ms(lambda f: [p.rewards(f) for p in separate], frame, n_calls)
    print(f"{env_name:10s} one network {t1:.3f} ms | 3-member ensemble {t3:.3f} ms = {t3 / t1:.2f}x | "
          f"3 separate networks {ts:.3f} ms = {ts / t1:.2f}x", flush=True)


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--calls", 3000)
