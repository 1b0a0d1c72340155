"""Vector wrapper overhead per step vs one batch-N forward pass of the reward net.

For each env, an SB3 VecEnv of N envs (MovingDot; Pong by SB3's Atari recipe,
``make_atari_env`` + ``VecFrameStack(4)``), or with ``--api gymnasium`` a gymnasium
``SyncVectorEnv`` (Pong: ``AtariPreprocessing`` + ``FrameStackObservation(4)``):
raw vector steps/s; the raw loop plus a hand-written batch-N forward of the
reward net on each step's N observations ("forward in the loop"); and drlhp's
vector front-end for that API with a pretrained predictor (a) returning the predicted reward only (no worker
processes) and (b) also collecting clips of all N envs, both worker processes
running (on 2 vCPUs the interface's work on the other vCPU slows this one too).
Ratio: (wrapped - raw time per vector step) / forward in the loop.
Each variant runs ``--rounds`` times, interleaved; medians are printed.
Aim: (b) <= 1.2x: the wrapper adds little beyond the one batched forward it must do.

    python -m benchmarks.speed.vector_overhead [--steps 3000] [--n-envs 8] [--rounds 5] [--api sb3] \\
        [--envs moving_dot pong]
"""
from __future__ import annotations

import statistics
import tempfile
import time

import numpy as np
import torch
from gymnasium.vector import SyncVectorEnv

from benchmarks.measured_envs import make_env, make_vec_env, one_thread, run_per_env, untrained_checkpoint
from drlhp import HumanPreferencesVectorWrapper
from drlhp.clips.frames import frames_to_net_input
from drlhp.reward.predictor import RewardPredictor, member_input
from drlhp.sb3 import HumanPreferencesVecEnvWrapper

APIS = {  # the raw vector env of N envs, and drlhp's front-end for it
    "sb3": (make_vec_env, HumanPreferencesVecEnvWrapper),
    "gymnasium": (lambda name, n: SyncVectorEnv([lambda: make_env(name)] * n), HumanPreferencesVectorWrapper),
}


def seconds_per_step(venv, n_steps: int, per_step=None) -> float:
    """Mean seconds per vector step with random actions (drawn beforehand); ``per_step(obs)`` after each."""
    n_actions = getattr(venv, "single_action_space", venv.action_space).n
    actions = np.random.default_rng(0).integers(0, n_actions, (n_steps, venv.num_envs))
    venv.reset()
    start = time.perf_counter()
    for a in actions:
        obs = venv.step(a)[0]
        if per_step is not None:
            per_step(obs)
    return (time.perf_counter() - start) / n_steps


def measure(name: str, n_steps: int, n_envs: int, rounds: int, api: str) -> None:
    one_thread()
    make_raw, front_end = APIS[api]
    times = {"raw": [], "raw + forward": [], "predicted reward only": [], "collecting + predicted": []}
    with tempfile.TemporaryDirectory() as tmp:
        raw = make_raw(name, n_envs)
        ckpt_dir = untrained_checkpoint(raw, tmp)
        predictor = RewardPredictor.load(ckpt_dir + "/reward_predictor.ckpt")
        net, spec = predictor.net.eval(), predictor.config.frame_spec

        def forward(obs: np.ndarray) -> None:
            with torch.inference_mode():
                net(member_input(frames_to_net_input(obs, spec), predictor.n_members))

        def wrapped(collect: bool):
            return front_end(make_raw(name, n_envs), pretrained_reward_predictor_dir=ckpt_dir,
                             collect_prefs=collect, train_reward=False, log_dir=tmp + "/log", log_level=30,
                             autosave_prefs=False)

        with wrapped(False) as predicting, wrapped(True) as collecting:
            for venv in (predicting, collecting):
                seconds_per_step(venv, 200)  # warm-up
            for _ in range(rounds):
                times["raw"].append(seconds_per_step(raw, n_steps))
                times["raw + forward"].append(seconds_per_step(raw, n_steps, forward))
                times["predicted reward only"].append(seconds_per_step(predicting, n_steps))
                times["collecting + predicted"].append(seconds_per_step(collecting, n_steps))
            stats = collecting.stats()
        raw.close()
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    fwd = med["raw + forward"] - med["raw"]
    print(f"{name} x{n_envs} ({api}): raw {n_envs / med['raw'] * 1e3:.0f} env steps/s "
          f"({med['raw']:.3f} ms per vector step)"
          f" | batch-{n_envs} forward in the loop {fwd:.3f} ms | median of {rounds}")
    for label in ("predicted reward only", "collecting + predicted"):
        added = med[label] - med["raw"]
        print(f"  {label:24s} {n_envs / med[label] * 1e3:6.0f} env steps/s ({med['raw'] / med[label]:.2f}x raw) | "
              f"wrapper adds {added:.3f} ms per vector step = {added / fwd:.2f}x forward in loop (aim <= 1.2)")
    print(f"  clips sent {stats.clips_sent}, dropped {stats.clips_dropped}")


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--steps", 3000, ("--n-envs", int, 8, "envs stepped together"),
                ("--rounds", int, 5, "interleaved runs of each variant"),
                ("--api", str, "sb3", "sb3 (SB3 VecEnv) or gymnasium (SyncVectorEnv)"))
