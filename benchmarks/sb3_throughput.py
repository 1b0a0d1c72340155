"""The user's view: SB3 PPO agent steps/s on the wrapped env vs on the raw env, same run.

Wrapped: predicted reward on from the first step, clips collected and labelled,
the reward trainer training all the while (default thread settings: one torch
thread for this process, one for the trainer). Aim: wrapped >= 0.85x raw.

A second baseline, raw PPO while a plain busy loop (matrix products, one
thread) runs in another process, shows what merely sharing the machine with a
trainer costs: on 2 vCPUs that share caches and memory bandwidth, Pong's
emulator slows down even though the trainer never touches its core.

    python benchmarks/sb3_throughput.py [--steps 2048] [--rounds 5] [--envs moving_dot pong]
"""
from __future__ import annotations

import multiprocessing
import statistics
import tempfile
import time

import torch

from stable_baselines3 import PPO

from common import make_env, one_thread, run_per_env, untrained_checkpoint
from drlhp import HumanPreferencesEnvWrapper


def make_ppo(env) -> PPO:
    model = PPO("CnnPolicy", env, n_steps=128, batch_size=64, n_epochs=4, seed=0, verbose=0)
    model.learn(256)  # warm-up
    return model


def timed_learn(model: PPO, n_steps: int) -> float:
    start = time.perf_counter()
    model.learn(n_steps, reset_num_timesteps=False)
    return n_steps / (time.perf_counter() - start)


def busy_loop(stop) -> None:
    torch.set_num_threads(1)
    a = torch.rand(400, 400)
    while not stop.is_set():
        a @ a


def timed_learn_next_to_a_busy_core(model: PPO, n_steps: int) -> float:
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    neighbour = ctx.Process(target=busy_loop, args=(stop,))
    neighbour.start()
    try:
        return timed_learn(model, n_steps)
    finally:
        stop.set()
        neighbour.join()


def measure(name: str, n_steps: int, rounds: int) -> None:
    """Median over ``rounds`` interleaved runs of each variant, so drift on a shared machine hits all alike."""
    one_thread()
    raw, crowded = make_ppo(make_env(name)), make_ppo(make_env(name))
    sps = {"raw": [], "crowded": [], "wrapped": []}
    with tempfile.TemporaryDirectory() as tmp:
        env = HumanPreferencesEnvWrapper(make_env(name), pretrained_reward_predictor_dir=untrained_checkpoint(make_env(name), tmp),
                                         collect_prefs=True, train_reward=True, n_initial_prefs=16,
                                         log_dir=tmp + "/log", log_level=30, autosave_prefs=False)
        with env:
            wrapped = make_ppo(env)
            for _ in range(rounds):
                sps["raw"].append(timed_learn(raw, n_steps))
                sps["crowded"].append(timed_learn_next_to_a_busy_core(crowded, n_steps))
                sps["wrapped"].append(timed_learn(wrapped, n_steps))
            stats = env.stats()
    med = {k: statistics.median(v) for k, v in sps.items()}
    print(f"{name:10s} PPO steps/s, median of {rounds}: raw {med['raw']:4.0f} | raw next to a busy core "
          f"{med['crowded']:4.0f} ({med['crowded'] / med['raw']:.2f}x) | wrapped {med['wrapped']:4.0f} | "
          f"ratio {med['wrapped'] / med['raw']:.2f} (aim >= 0.85), {med['wrapped'] / med['crowded']:.2f}x the crowded raw"
          f" | wrapped run: {stats['prefs_received']} labels, {stats['training_steps']} reward-training steps")


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--steps", 2048, ("--rounds", int, 5, "interleaved runs of each variant"))
