"""RLlib PPO on the bundled MovingDot env, on a Ray cluster, from synthetic preferences only.

Env runners (``--num-env-runners``, on any node of the cluster) play MovingDot and
send a capped stream of clips (``--clips-per-second`` in all) to one drlhp
preference service, which labels pairs and trains the reward ensemble. The
runners' untrained policy plays until the reward predictor is ready (the paper's
pre-training); then PPO learns from the predicted reward only and the service keeps
labelling, ``--label-budget`` labels in all. It prints the *true* episode return
(random policy: about 35; best: about 49) and the labels used.

    python examples/rllib_moving_dot.py                        # starts a local Ray cluster
    python examples/rllib_moving_dot.py --address HEAD_IP:6379 # joins a running one (`ray start --head`)
    python examples/rllib_moving_dot.py --web --web-port 0     # label in a browser
"""
from __future__ import annotations

import argparse
import os
import time

import gymnasium
import numpy as np
import ray
from ray.rllib.algorithms.ppo import PPOConfig

from drlhp.cli.setting_flags import add_setting_flag, add_setting_flags, settings_from
from drlhp.cluster import PreferenceService
from drlhp.cluster.rllib import sample_until_reward_predictor_ready, with_preferences


def make_env(env_config: dict) -> gymnasium.Env:
    """One MovingDot env as RLlib's CNN wants its input: floats in [0, 1]."""
    import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0 in this runner's process)

    env = gymnasium.make("drlhp/MovingDot-v0")
    space = gymnasium.spaces.Box(0.0, 1.0, env.observation_space.shape, np.float32)
    return gymnasium.wrappers.TransformObservation(env, lambda obs: obs.astype(np.float32) / 255.0, space)


def to_uint8(obs: np.ndarray) -> np.ndarray:
    """drlhp's ``obs_transform_func``: the frame the reward network sees and a person is shown,
    the env's own pixels again (8 times smaller in clips than floats)."""
    return np.round(obs * 255.0).astype(np.uint8)


#: drlhp's settings this example takes as flags, with their declared defaults (and --label-budget, 300 here).
DRLHP_SETTINGS = ("n_initial_prefs", "n_initial_training_steps", "web_port")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--address", default=None,
                   help="a running Ray cluster's address, or 'auto' on one of its nodes (default: start a local one)")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local cluster (default: all)")
    p.add_argument("--num-env-runners", type=int, default=2)
    p.add_argument("--num-envs-per-env-runner", type=int, default=4)
    p.add_argument("--total-timesteps", type=int, default=20_000, help="env steps of PPO training, all runners")
    p.add_argument("--clips-per-second", type=float, default=20.0, help="cap on clips the runners send, in all")
    p.add_argument("--web", action="store_true", help="label in a browser instead of synthetically")
    add_setting_flags(p, DRLHP_SETTINGS)
    add_setting_flag(p, "label_budget", 300)
    add_setting_flag(p, "log_dir", os.path.join("drlhp_logs", "rllib_moving_dot", time.strftime("%Y%m%d-%H%M%S")),
                     also="here, on the service's node (the driver's)")
    add_setting_flag(p, "seed", 0, also="here also RLlib's")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    ray.init(address=args.address, num_cpus=args.num_cpus, include_dashboard=False)
    with PreferenceService(
            make_env({}).observation_space, obs_transform_func=to_uint8, clips_per_second=args.clips_per_second,
            segment_length=25, synthetic_preferences=not args.web, labelling="web" if args.web else "terminal",
            label_schedule_steps=args.total_timesteps, log_dir=args.log_dir, seed=args.seed,
            **settings_from(args, (*DRLHP_SETTINGS, "label_budget"))) as service:
        print(f"drlhp run in {service.log_dir} (service on {service.node_ip})", flush=True)
        config = (PPOConfig()
                  .env_runners(num_env_runners=args.num_env_runners,
                               num_envs_per_env_runner=args.num_envs_per_env_runner)
                  # Rollouts of 512 steps, a short horizon, a high learning rate: MovingDot rewards come every step.
                  .training(train_batch_size_per_learner=512, minibatch_size=64, num_epochs=4, lr=1e-3, gamma=0.9,
                            entropy_coeff=0.0)
                  .fault_tolerance(restart_failed_env_runners=True)
                  .debugging(seed=args.seed))
        algo = with_preferences(config, make_env, service).build_algo()
        try:
            train(algo, service, args)
        finally:
            algo.stop()
    ray.shutdown()


def train(algo, service: PreferenceService, args: argparse.Namespace) -> None:
    warm_up = sample_until_reward_predictor_ready(algo, service)
    stats = service.stats()
    print(f"reward predictor ready after {warm_up} warm-up steps, {stats['training_steps']} training steps "
          f"on {stats['run_labels']} labels", flush=True)
    start, steps, true_return = time.monotonic(), 0, float("nan")
    while steps < args.total_timesteps:
        result = algo.train()
        runners = result["env_runners"]
        steps = int(runners.get("num_env_steps_sampled_lifetime", 0)) - warm_up  # PPO's own steps
        true_return = runners.get("drlhp_true_episode_return", float("nan"))
        d = result["drlhp"]
        print(f"step {steps:6d} | {steps / (time.monotonic() - start):4.0f} SPS | true return {true_return:5.1f} | "
              f"labels {d['run_labels']:4d} | clips in {d['runner_clips_received']} "
              f"({d['clips_over_cap']} over the cap) "
              f"| reward training step {d['training_steps']}", flush=True)
    stats = service.stats()
    print(f"done: mean true return of the last 100 episodes {true_return:.1f} (random policy: about 35); labels: "
          f"{stats['run_labels']} in all ({stats['pairs_asked']} asked of a budget of {args.label_budget}); "
          f"logs in {service.log_dir}", flush=True)


if __name__ == "__main__":
    main()
