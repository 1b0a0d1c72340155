"""drlhp on a local Ray cluster (``ray.init(num_cpus=2)``): what scaling out costs and gains, in one run.

Three parts (``--parts``):

* ``runners``: RLlib env runners sampling MovingDot (4 envs each, PPO's untrained
  policy), 1 runner vs 2, without drlhp (the raw env: the baseline) and with it (a
  3-member reward ensemble), its trainer idle (a pretrained predictor) or training
  beside the runners as in a real run (a third busy process on 2 cores). Steps/s are of
  ``EnvRunner.sample`` called on all runners at once, fastest of 5 rounds.
  Also timed: one PPO ``train()`` iteration (512 steps), to set the learner's work against.
* ``reward_cost``: the predicted reward's cost per env step where it can be computed:
  in a runner (one env's frame at a time, as ``ClusterPreferenceWrapper`` does; or a
  runner's 4 envs in one batch, as ``ClusterPreferenceVectorWrapper`` does) vs on the
  learner (a 512-step train batch, in chunks of 64 frames: the fastest size here),
  MovingDot and Pong frames, one torch thread, fastest of 5 interleaved rounds.
* ``bandwidth``: two runners play Pong (84x84, 4-frame stack) at random for
  ``--seconds`` with the service's cap at ``--clips-per-second``: clips cut vs sent,
  bytes per second cut (uncompressed) vs received by the service; then how many runner
  calls per second the service actor answers (empty, and with one Pong clip each).

    python -m benchmarks.speed.cluster_scaling [--parts runners reward_cost bandwidth] [--seconds 20]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import gymnasium
import numpy as np
import ray

from benchmarks.measured_envs import make_env, untrained_checkpoint
from drlhp.clips.frames import infer_frame_spec
from drlhp.cluster import ClusterPreferenceWrapper, PackedClip, PreferenceService
from drlhp.reward.predictor import NetConfig, RewardPredictor

SERVICE = dict(synthetic_preferences=True, segment_length=25, n_initial_prefs=40, n_initial_training_steps=50,
               label_budget=None, log_level=30)


def moving_dot(env_config: dict) -> gymnasium.Env:
    """MovingDot with float pixels for RLlib's CNN (``to_uint8`` gives drlhp the env's own frames)."""
    import drlhp  # noqa: F401  (registers the env in the runner's process)

    env = gymnasium.make("drlhp/MovingDot-v0")
    space = gymnasium.spaces.Box(0.0, 1.0, env.observation_space.shape, np.float32)
    return gymnasium.wrappers.TransformObservation(env, lambda obs: obs.astype(np.float32) / 255.0, space)


def to_uint8(obs: np.ndarray) -> np.ndarray:
    return np.round(obs * 255.0).astype(np.uint8)


def sampling_rate(algo, steps_per_runner: int, rounds: int = 5) -> float:
    """Env steps per second of all runners sampling at once (fastest of ``rounds``)."""
    group = algo.env_runner_group
    sample = lambda r: sum(len(e) for e in r.sample(num_timesteps=steps_per_runner))  # noqa: E731
    group.foreach_env_runner(sample, local_env_runner=False)  # warm-up
    best = 0.0
    for _ in range(rounds):
        start = time.perf_counter()
        steps = sum(group.foreach_env_runner(sample, local_env_runner=False))
        best = max(best, steps / (time.perf_counter() - start))
    return best


def ppo_config(n_runners: int):
    from ray.rllib.algorithms.ppo import PPOConfig

    return (PPOConfig().env_runners(num_env_runners=n_runners, num_envs_per_env_runner=4)
            .training(train_batch_size_per_learner=512, minibatch_size=64, num_epochs=4, lr=1e-3, gamma=0.9))


def measure_runners(steps_per_runner: int) -> None:
    from drlhp.cluster.rllib import sample_until_reward_predictor_ready, with_preferences

    variants = ("raw env", "drlhp, trainer idle", "drlhp, trainer training")
    rates, iteration_s = {}, None
    for n in (1, 2):
        algo = ppo_config(n).environment(env=_registered("raw-moving-dot", moving_dot)).build_algo()
        rates["raw env", n] = sampling_rate(algo, steps_per_runner)
        algo.stop()
        for variant in variants[1:]:
            with tempfile.TemporaryDirectory() as log_dir:
                settings = dict(SERVICE, log_dir=os.path.join(log_dir, "run"))
                if variant == "drlhp, trainer idle":  # a 3-member predictor from the start, no reward training
                    settings.update(train_reward=False, pretrained_reward_predictor_dir=untrained_checkpoint(
                        make_env("moving_dot"), log_dir))
                service = PreferenceService(moving_dot({}).observation_space, clips_per_second=20.0,
                                            obs_transform_func=to_uint8, **settings)
                algo = with_preferences(ppo_config(n), moving_dot, service).build_algo()
                sample_until_reward_predictor_ready(algo, service)
                rates[variant, n] = sampling_rate(algo, steps_per_runner)
                if n == 2 and variant == "drlhp, trainer training":
                    algo.train()
                    start = time.perf_counter()
                    algo.train()
                    iteration_s = time.perf_counter() - start
                algo.stop()
                service.close()
        print(f"{n} runner(s): " + " | ".join(
            f"{v} {rates[v, n]:5.0f} steps/s ({rates[v, n] / rates['raw env', n]:.2f}x)" for v in variants), flush=True)
    print("2 runners / 1 runner: " + " | ".join(f"{v} {rates[v, 2] / rates[v, 1]:.2f}x" for v in variants))
    print(f"one PPO iteration (512 steps, 2 runners, drlhp, trainer training): {iteration_s:.2f} s")


def _registered(name: str, creator) -> str:
    from ray.tune.registry import register_env

    register_env(name, creator)
    return name


def per_step_us(fn, frames: np.ndarray, n_calls: int) -> float:
    start = time.perf_counter()
    for _ in range(n_calls):
        fn(frames)
    return (time.perf_counter() - start) / n_calls / len(frames) * 1e6


def measure_reward_cost(env_name: str) -> None:
    import torch

    torch.set_num_threads(1)
    env = make_env(env_name)
    obs, _ = env.reset(seed=0)
    frames = [obs]
    for _ in range(511):
        obs, *_ = env.step(env.action_space.sample())
        frames.append(obs)
    frames = np.stack(frames)
    predictor = RewardPredictor(NetConfig(infer_frame_spec(obs)))
    ways = {  # name -> (frames of one call, calls per round, the call)
        "runner, one env's frame": (frames[:1], 300, predictor.rewards),
        "runner, its 4 envs' frames": (frames[:4], 100, predictor.rewards),
        "learner, a 512-step batch": (frames, 3, lambda f: predictor.normalised_rewards(f, batch_size=64)),
    }
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(5):
        for name, (batch, n_calls, fn) in ways.items():
            best[name] = min(best[name], per_step_us(fn, batch, n_calls))
    learner = best["learner, a 512-step batch"]
    for name, us in best.items():
        print(f"{env_name:10s} {name:28s} {us:8.1f} us per env step ({us / learner:5.2f}x the learner's)")


def measure_bandwidth(seconds: float, clips_per_second: float) -> None:
    env = make_env("pong")
    with tempfile.TemporaryDirectory() as log_dir:
        service = PreferenceService(env.observation_space, log_dir=log_dir, clips_per_second=clips_per_second,
                                    **dict(SERVICE, n_initial_prefs=10 ** 6))  # labels, no training: clips only
        runners = [PongRunner.remote(service.name, 0.5) for _ in range(2)]
        start = time.perf_counter()
        counts = ray.get([r.run.remote(seconds) for r in runners])
        stats = service.stats()
        elapsed = time.perf_counter() - start
        calls = service_calls_per_second(service, PackedClip.pack(*ray.get(runners[0].a_clip.remote()), 0, 0))
        service.close()
    cut = sum(c["clips_cut"] for c in counts)
    clip_mb = np.prod(env.observation_space.shape) * SERVICE["segment_length"] / 1e6
    steps = sum(c["steps"] for c in counts)
    print(f"Pong, 2 runners, {elapsed:.0f} s: {steps / elapsed:.0f} env steps/s; clips cut {cut / elapsed:.1f}/s "
          f"({cut * clip_mb / elapsed:.1f} MB/s uncompressed)")
    per_clip = stats["clip_bytes_received"] / max(1, stats["runner_clips_received"])
    print(f"  sent {sum(c['clips_sent'] for c in counts) / elapsed:.1f} clips/s (cap {clips_per_second:g}); service "
          f"received {stats['clip_bytes_received'] / elapsed / 1e3:.1f} kB/s "
          f"({per_clip / 1e3:.1f} kB per clip, {clip_mb * 1e6 / per_clip:.0f}x compressed); "
          f"{stats['clips_over_cap']} over the cap")
    print("  the service answers " + " | ".join(f"{rate:,.0f} add_clips calls/s {what}"
                                                for what, rate in calls.items()))


def service_calls_per_second(service: PreferenceService, clip: PackedClip, n_calls: int = 2000) -> dict:
    """How many runner calls one service actor answers per second, 8 callers at a time."""
    rates = {}
    for what, batch in (("with no clip", []), ("with one Pong clip", [clip])):
        start = time.perf_counter()
        pending = []
        for _ in range(n_calls):
            pending.append(service.actor.add_clips.remote(batch, 1))
            if len(pending) >= 8:
                ray.get(pending.pop(0))
        ray.get(pending)
        rates[what] = n_calls / (time.perf_counter() - start)
    return rates


@ray.remote(num_cpus=1)
class PongRunner:
    def __init__(self, service_name: str, share: float) -> None:
        self.env = ClusterPreferenceWrapper(make_env("pong"), service_name, share)
        self.link = self.env.pipeline

    def run(self, seconds: float) -> dict:
        self.env.reset(seed=0)
        steps, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            _, _, term, trunc, _ = self.env.step(self.env.action_space.sample())
            steps += 1
            if term or trunc:
                self.env.reset()
        self.link.flush()
        return dict(self.link.counts, steps=steps)

    def a_clip(self) -> tuple:
        """The frames and rewards of one Pong clip, as a runner cuts it."""
        frames = np.stack([self.env.step(self.env.action_space.sample())[0] for _ in range(25)])
        return frames, np.zeros(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", default=["runners", "reward_cost", "bandwidth"])
    parser.add_argument("--steps-per-runner", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--clips-per-second", type=float, default=10.0)
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": root}})  # the runners import the benchmarks package
    try:
        if "runners" in args.parts:
            measure_runners(args.steps_per_runner)
        if "reward_cost" in args.parts:
            for env_name in ("moving_dot", "pong"):
                measure_reward_cost(env_name)
        if "bandwidth" in args.parts:
            measure_bandwidth(args.seconds, args.clips_per_second)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
