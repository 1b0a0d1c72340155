"""The user's view: SB3 PPO agent steps/s on the wrapped env vs on the raw env, same run.

Wrapped: predicted reward on from the first step, clips collected and labelled,
the reward trainer training all the while (default thread settings: one torch
thread for this process, one for the trainer). Aim: wrapped >= 0.85x raw with
one env; >= 0.9x with 8 envs (``--n-envs 8``: an SB3 VecEnv -- for Pong SB3's
Atari recipe -- wrapped by ``drlhp.sb3.HumanPreferencesVecEnvWrapper``, which
predicts the 8 rewards of a step in one batch).

A second baseline, raw PPO while a plain busy loop (matrix products, one
thread) runs in another process, shows what merely sharing the machine with a
trainer costs: on 2 vCPUs that share caches and memory bandwidth, Pong's
emulator slows down even though the trainer never touches its core.

    python -m benchmarks.speed.sb3_throughput [--steps 2048] [--rounds 5] [--n-envs 1] [--envs moving_dot pong]
"""
from __future__ import annotations

import multiprocessing
import statistics
import tempfile
import time

import torch
from stable_baselines3 import PPO

from benchmarks.measured_envs import make_env, make_vec_env, one_thread, run_per_env, untrained_checkpoint
from drlhp import HumanPreferencesEnvWrapper
from drlhp.sb3 import HumanPreferencesVecEnvWrapper


def make_raw(name: str, n_envs: int):
    return make_env(name) if n_envs == 1 else make_vec_env(name, n_envs)


def make_wrapped(name: str, n_envs: int, tmp: str):
    """One env and ``HumanPreferencesEnvWrapper``, or N envs and the SB3 vector front-end."""
    front_end = HumanPreferencesEnvWrapper if n_envs == 1 else HumanPreferencesVecEnvWrapper
    ckpt_dir = untrained_checkpoint(make_raw(name, n_envs), tmp)
    return front_end(make_raw(name, n_envs), pretrained_reward_predictor_dir=ckpt_dir, collect_prefs=True,
                     train_reward=True, n_initial_prefs=16, log_dir=tmp + "/log", log_level=30, autosave_prefs=False)


def make_ppo(env, n_envs: int) -> PPO:
    # 128 steps per env per rollout; minibatches of 64, or 256 with many envs (SB3 zoo's Atari setting).
    model = PPO("CnnPolicy", env, n_steps=128, batch_size=64 if n_envs == 1 else 32 * n_envs, n_epochs=4, seed=0,
                verbose=0)
    model.learn(256 * n_envs)  # warm-up
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


def measure(name: str, n_steps: int, rounds: int, n_envs: int) -> None:
    """Median over ``rounds`` interleaved runs of each variant, so drift on a shared machine hits all alike.

    ``n_steps`` agent steps per run and env: ``n_steps * n_envs`` in all.
    """
    one_thread()
    n_steps *= n_envs
    raw, crowded = make_ppo(make_raw(name, n_envs), n_envs), make_ppo(make_raw(name, n_envs), n_envs)
    sps = {"raw": [], "crowded": [], "wrapped": []}
    with tempfile.TemporaryDirectory() as tmp:
        with make_wrapped(name, n_envs, tmp) as env:
            wrapped = make_ppo(env, n_envs)
            for _ in range(rounds):
                sps["raw"].append(timed_learn(raw, n_steps))
                sps["crowded"].append(timed_learn_next_to_a_busy_core(crowded, n_steps))
                sps["wrapped"].append(timed_learn(wrapped, n_steps))
            stats = env.stats()
    med = {k: statistics.median(v) for k, v in sps.items()}
    print(f"{name:10s} x{n_envs} PPO steps/s, median of {rounds}: raw {med['raw']:4.0f} | raw next to a busy core "
          f"{med['crowded']:4.0f} ({med['crowded'] / med['raw']:.2f}x) | wrapped {med['wrapped']:4.0f} | "
          f"ratio {med['wrapped'] / med['raw']:.2f} (aim >= {0.85 if n_envs == 1 else 0.9}), "
          f"{med['wrapped'] / med['crowded']:.2f}x the crowded raw"
          f" | wrapped run: {stats.labels_received} labels, {stats.training_steps} reward-training steps")


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--steps", 2048, ("--rounds", int, 5, "interleaved runs of each variant"),
                ("--n-envs", int, 1, "envs stepped together (> 1: an SB3 VecEnv and the vector front-end)"))
