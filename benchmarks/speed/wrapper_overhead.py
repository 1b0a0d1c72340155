"""Wrapper overhead per step vs the cost of one batch-1 forward pass of the reward net.

For each env: raw steps/s; wrapped steps/s (a) returning the predicted reward
only (pretrained predictor, no worker processes) and (b) also collecting clips
for the preference interface, with both worker processes running; the bare
batch-1 forward pass of the reward network (``net(x)``: the module call, every
ensemble member; input prepared beforehand), alone and inside the env loop (raw env + ``net(x)`` on each new
observation: interleaving the emulator and the network costs cache locality that
a warm forward-only loop does not pay); and the ratio  (wrapped - raw time per
step) / forward, against both forward costs.
Aim: (b) <= 1.2x forward: the wrapper adds little beyond the forward pass it must do.

    python -m benchmarks.speed.wrapper_overhead [--steps 20000] [--envs moving_dot pong]
"""
from __future__ import annotations

import tempfile
import time

import numpy as np
import torch

from benchmarks.measured_envs import make_env, one_thread, run_per_env, steps_per_second, untrained_checkpoint
from drlhp import HumanPreferencesEnvWrapper
from drlhp.clips.frames import frames_to_net_input
from drlhp.reward.predictor import RewardPredictor, member_input


def forward_ms(predictor: RewardPredictor, frame: np.ndarray, n: int = 2000) -> float:
    """Bare batch-1 forward pass, input tensor prepared beforehand."""
    x = member_input(frames_to_net_input(frame[None], predictor.config.frame_spec), predictor.n_members)
    net = predictor.net.eval()
    with torch.inference_mode():
        for _ in range(100):
            net(x)
        start = time.perf_counter()
        for _ in range(n):
            net(x)
    return (time.perf_counter() - start) / n * 1e3


def forward_in_loop_ms(predictor: RewardPredictor, env, n_steps: int, raw_sps: float) -> float:
    """Per-step cost of a hand-written bare forward on each observation, inside the env loop."""
    net = predictor.net.eval()
    spec = predictor.config.frame_spec
    actions = np.random.default_rng(0).integers(0, env.action_space.n, n_steps)
    env.reset(seed=0)
    with torch.inference_mode():
        start = time.perf_counter()
        for a in actions:
            obs, _, terminated, truncated, _ = env.step(int(a))
            net(member_input(frames_to_net_input(obs[None], spec), predictor.n_members))
            if terminated or truncated:
                env.reset()
    return ((time.perf_counter() - start) / n_steps - 1 / raw_sps) * 1e3


def measure(name: str, n_steps: int) -> None:
    one_thread()
    raw_sps = steps_per_second(make_env(name), n_steps)
    with tempfile.TemporaryDirectory() as tmp:
        ckpt_dir = untrained_checkpoint(make_env(name), tmp)
        predictor = RewardPredictor.load(ckpt_dir + "/reward_predictor.ckpt")
        fwd = forward_ms(predictor, make_env(name).observation_space.sample())
        fwd_loop = forward_in_loop_ms(predictor, make_env(name), n_steps, raw_sps)
        print(f"{name}: raw {raw_sps:.0f} steps/s ({1e3 / raw_sps:.3f} ms/step); batch-1 forward {fwd:.3f} ms alone, "
              f"{fwd_loop:.3f} ms in the env loop")
        for label, collect in (("predicted reward only", False), ("collecting + predicted", True)):
            env = HumanPreferencesEnvWrapper(make_env(name), pretrained_reward_predictor_dir=ckpt_dir,
                                             collect_prefs=collect, train_reward=False, log_dir=tmp + "/log",
                                             log_level=30, autosave_prefs=False)
            with env:
                assert env.using_reward_from_predictor
                steps_per_second(env, 500)  # warm-up
                sps = steps_per_second(env, n_steps)
                stats = env.stats()
            overhead_ms = (1 / sps - 1 / raw_sps) * 1e3
            print(f"  {label:24s} {sps:7.0f} steps/s ({sps / raw_sps:.2f}x raw) | "
                  f"wrapper adds {overhead_ms:.3f} ms/step"
                  f" = {overhead_ms / fwd:.2f}x forward alone, {overhead_ms / fwd_loop:.2f}x forward in loop"
                  " (aim <= 1.2)"
                  f" | clips sent {stats.clips_sent}, dropped {stats.clips_dropped}")


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--steps", 20_000)
