"""Preferences over a recorded dataset, then offline RL: HalfCheetah episodes of SAC's training, 500 synthetic
labels, a reward model, the dataset relabelled with it, and d3rlpy's IQL on the predicted reward beside IQL on the
true reward.

1. The dataset (Minari): episodes of SAC's policies saved during one training run (``--agents``: a folder of
   ``agent_<steps>.pt``, as ``halfcheetah_sac.py --true-reward --keep-agents`` keeps them), each acting with its own
   exploration noise, up to ``--up-to`` agent steps, and a random policy: behaviour of every quality from falling
   over to running, as D4RL's medium-replay. Each observation's MuJoCo state is recorded (``infos["qpos"]``,
   ``infos["qvel"]``), so a person labelling it is shown the body.
2. For each seed: ``--labels`` synthetic labels of the dataset's clips (``drlhp collect --dataset``), a reward model
   trained on them (``drlhp train-reward``), and the dataset relabelled with it (``drlhp relabel-dataset``).
3. IQL (Kostrikov et al. 2022, d3rlpy's, the paper's MuJoCo settings) for ``--iql-steps`` gradient steps on the
   relabelled dataset and on the original, evaluated every ``--eval-every`` steps on the true reward.

Every stage is kept under ``--out`` and skipped when it is there: run the same command again after a stop. The
datasets live in ``<out>/datasets`` (``MINARI_DATASETS_PATH``).

    pip install -e ".[examples,mujoco,offline]"
    python examples/halfcheetah_sac.py --true-reward --keep-agents --total-timesteps 100000 --log-dir runs/hc_sac
    python examples/halfcheetah_offline_iql.py --agents runs/hc_sac/agent --out runs/hc_iql
"""
from __future__ import annotations

import argparse
import glob
import json
import logging
import os
import re
import time

import gymnasium
import numpy as np

ENV_ID = "HalfCheetah-v5"
ARMS = ("drlhp", "true_reward")
#: IQL's MuJoCo locomotion settings (Kostrikov et al. 2022, appendix; d3rlpy's reproduction): rewards scaled so the
#: dataset's returns span 1000, which also makes both arms' rewards the same scale whatever the reward model's.
IQL_SETTINGS = dict(actor_learning_rate=3e-4, critic_learning_rate=3e-4, batch_size=256, expectile=0.7,
                    weight_temp=3.0, max_weight=100.0, gamma=0.99, tau=0.005)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--agents", help="a folder of SAC snapshots agent_<steps>.pt (needed until the dataset exists)")
    p.add_argument("--out", required=True, help="where every stage keeps its output")
    p.add_argument("--up-to", type=int, default=100_000, help="the last snapshot used, in agent steps")
    p.add_argument("--episodes-per-agent", type=int, default=10)
    p.add_argument("--episode-length", type=int, default=1000)
    p.add_argument("--labels", type=int, default=500)
    p.add_argument("--reward-steps", type=int, default=3000, help="reward-model training steps")
    p.add_argument("--iql-steps", type=int, default=100_000)
    p.add_argument("--eval-every", type=int, default=10_000)
    p.add_argument("--eval-episodes", type=int, default=5)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    return p.parse_args(argv)


def dataset_id(args: argparse.Namespace, relabelled_seed: int | None = None) -> str:
    """The dataset's Minari id, or that of its copy relabelled by the reward model of ``relabelled_seed``."""
    relabelled = "" if relabelled_seed is None else f"-relabelled-seed{relabelled_seed}"
    return f"drlhp/halfcheetah-sac-upto{args.up_to // 1000}k{relabelled}-v0"


# -- 1. the dataset -----------------------------------------------------------------------------------------------

def snapshots(folder: str, up_to: int) -> list[tuple[int, str]]:
    """The folder's ``agent_<steps>.pt`` up to ``up_to`` steps, in order."""
    found = [(int(m.group(1)), path) for path in glob.glob(os.path.join(folder, "agent_*.pt"))
             if (m := re.search(r"agent_(\d+)\.pt$", path))]
    return sorted((steps, path) for steps, path in found if steps <= up_to)


def make_dataset(args: argparse.Namespace) -> None:
    """Roll out a random policy and each snapshot; write the episodes as a Minari dataset."""
    from agent_checkpoint import load_agent_state
    from mujoco_recipe import make_mujoco, make_sac_agent

    from drlhp.datasets import Episode, write_dataset

    if not args.agents:
        raise SystemExit(f"the dataset {dataset_id(args)} is not in {args.out}/datasets yet: pass --agents, a folder "
                         "of SAC snapshots (halfcheetah_sac.py --true-reward --keep-agents keeps them)")
    found = snapshots(args.agents, args.up_to)
    if not found:
        raise SystemExit(f"no agent_<steps>.pt up to {args.up_to} steps in {args.agents}")
    agent = make_sac_agent(make_mujoco(ENV_ID, 1, 0), 0)
    env = gymnasium.make(ENV_ID, max_episode_steps=args.episode_length)
    episodes: list[Episode] = []
    for steps, path in [(0, None), *found]:
        if path is not None:
            agent.policy.load_state_dict(load_agent_state(path)["policy"])
        returns = []
        for k in range(args.episodes_per_agent):
            seed = 1000 * len(episodes) + k
            env.action_space.seed(seed)
            act = ((lambda obs: env.action_space.sample()) if path is None else
                   (lambda obs: agent.predict(obs, deterministic=False)[0]))  # the policy explores, as in training
            episodes.append(rollout(env, act, len(episodes), seed))
            returns.append(episodes[-1].rewards.sum())
        print(f"{'random policy' if path is None else f'SAC at {steps} steps'}: returns "
              f"{', '.join(f'{r:.0f}' for r in returns)}", flush=True)
    write_dataset(dataset_id(args), episodes, env.observation_space, env.action_space, env.spec,
                  algorithm_name="SB3 SAC snapshots during training, stochastic actions; a random policy",
                  description=f"HalfCheetah-v5: {args.episodes_per_agent} episodes of a random policy and of each "
                              f"SAC snapshot up to {args.up_to} agent steps ({', '.join(str(s) for s, _ in found)})")


def rollout(env: gymnasium.Env, act, episode_id: int, seed: int):
    from drlhp.datasets import Episode

    obs, _ = env.reset(seed=seed)
    data = env.unwrapped.data  # type: ignore[attr-defined]
    observations, actions, rewards, terminations, truncations = [obs], [], [], [], []
    qpos, qvel = [data.qpos.copy()], [data.qvel.copy()]
    while True:
        action = act(obs)
        obs, reward, terminated, truncated, _ = env.step(action)
        observations.append(obs)
        actions.append(action)
        rewards.append(reward)
        terminations.append(terminated)
        truncations.append(truncated)
        qpos.append(data.qpos.copy())
        qvel.append(data.qvel.copy())
        if terminated or truncated:
            return Episode(episode_id, np.array(observations), np.array(actions, np.float32), np.array(rewards),
                           np.array(terminations), np.array(truncations),
                           {"qpos": np.array(qpos), "qvel": np.array(qvel)})


# -- 2. labels, reward model, relabelled dataset --------------------------------------------------------------------

def relabelled(args: argparse.Namespace, seed: int) -> str:
    """The dataset relabelled by the reward model of this seed's labels (made here unless it is there)."""
    import minari

    from drlhp.cli.collect import collect
    from drlhp.cli.offline import train_reward
    from drlhp.datasets.writing import relabel_dataset
    from drlhp.storage.layout import LogDir

    made = dataset_id(args, seed)
    if made in minari.list_local_datasets():
        return made
    labels, reward = os.path.join(args.out, f"labels_seed{seed}"), os.path.join(args.out, f"reward_seed{seed}")
    if not os.path.exists(os.path.join(labels, "train.pkl.gz")):
        collect(None, labels, args.labels, dataset=dataset_id(args), synthetic_preferences=True, seed=seed,
                log_level=logging.WARNING, resume=os.path.isdir(labels))
    if not os.path.exists(LogDir(reward).checkpoint):
        row = train_reward(labels, reward, args.reward_steps, seed=seed, torch_threads=1)
        print(f"seed {seed}: reward model at step {row['training_step']}, validation accuracy "
              f"{row['val_accuracy']:.3f}", flush=True)
    relabel_dataset(dataset_id(args), LogDir(reward).checkpoint_dir, made)
    return made


def labels_used(args: argparse.Namespace, seed: int) -> int:
    """The labels this seed's reward model was trained and validated on, as its checkpoint says."""
    from drlhp.reward.predictor import RewardPredictor
    from drlhp.storage.layout import LogDir

    trained_on = RewardPredictor.load(LogDir(os.path.join(args.out, f"reward_seed{seed}")).checkpoint).provenance
    return trained_on["train_labels"] + trained_on["val_labels"]


# -- 3. IQL ---------------------------------------------------------------------------------------------------------

def mdp_dataset(name: str):
    """A Minari dataset as d3rlpy's MDPDataset: each step's observation, action, reward and end."""
    import d3rlpy
    import minari

    episodes = list(minari.load_dataset(name).iterate_episodes())
    return d3rlpy.dataset.MDPDataset(
        np.concatenate([e.observations[:-1] for e in episodes]), np.concatenate([e.actions for e in episodes]),
        np.concatenate([e.rewards for e in episodes]), np.concatenate([e.terminations for e in episodes]),
        timeouts=np.concatenate([e.truncations & ~e.terminations for e in episodes]))


def run_iql(args: argparse.Namespace, arm: str, seed: int, dataset_name: str, labels: int) -> str:
    """IQL on ``dataset_name`` (``labels``: those its reward came from, 0 for the true reward); its learning curve, a
    row per evaluation episode, goes in ``<out>/iql_<arm>_seed<seed>/learning_curve.csv``. An interrupted run goes on
    from its last saved model (``iql_saved.json`` names it), as a new session of the curve."""
    import d3rlpy
    import structlog
    import torch

    from drlhp.storage.curve_csv import LearningCurveWriter, next_session
    from drlhp.storage.files import atomic_write

    folder = os.path.join(args.out, f"iql_{arm}_seed{seed}")
    saved_path = os.path.join(folder, "iql_saved.json")
    saved = json.loads(open(saved_path).read()) if os.path.exists(saved_path) else {"step": 0, "wall_time_s": 0.0}
    done = saved["step"]
    if done >= args.iql_steps:
        return folder
    torch.set_num_threads(1)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))  # d3rlpy's chatter
    d3rlpy.seed(seed)
    dataset = mdp_dataset(dataset_name)
    config = d3rlpy.algos.IQLConfig(reward_scaler=d3rlpy.preprocessing.ReturnBasedRewardScaler(multiplier=1000.0),
                                    **IQL_SETTINGS)
    iql = config.create(device="cpu")
    iql.build_with_dataset(dataset)
    if done:
        iql.load_model(os.path.join(folder, saved["model"]))
    env = gymnasium.make(ENV_ID, max_episode_steps=args.episode_length)
    started = time.monotonic()
    curve = LearningCurveWriter(folder, arm, next_session(folder, arm), done)
    while done < args.iql_steps:
        n = min(args.eval_every, args.iql_steps - done)
        iql.fit(dataset, n_steps=n, n_steps_per_epoch=n, show_progress=False, save_interval=10**9,
                logger_adapter=d3rlpy.logging.NoopAdapterFactory())
        done += n
        wall = saved["wall_time_s"] + time.monotonic() - started
        returns = []
        for k in range(args.eval_episodes):
            ret, length = evaluate(env, iql, seed=10_000 * seed + 100 * (done // args.eval_every) + k)
            curve.add(done, ret, length, labels, wall)
            returns.append(ret)
        curve.flush()
        # The model under its step's name, then the note naming it: a stop between the two resumes from the last
        # model named, and the curve drops the rows past it.
        model = f"iql_{done}.d3"
        iql.save_model(os.path.join(folder, model))
        with atomic_write(saved_path) as f:
            f.write(json.dumps({"step": done, "wall_time_s": wall, "model": model}).encode())
        if saved.get("model"):
            os.remove(os.path.join(folder, saved["model"]))
        saved = {"step": done, "wall_time_s": wall, "model": model}
        print(f"IQL {arm} seed {seed}: step {done}, true return {np.mean(returns):.0f}", flush=True)
    curve.close()
    return folder


def evaluate(env: gymnasium.Env, iql, seed: int) -> tuple[float, int]:
    obs, _ = env.reset(seed=seed)
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, _ = env.step(iql.predict(obs[None].astype(np.float32))[0])
        total, steps = total + float(reward), steps + 1
        if terminated or truncated:
            return total, steps


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    os.environ["MINARI_DATASETS_PATH"] = os.path.abspath(os.path.join(args.out, "datasets"))
    import minari

    if dataset_id(args) not in minari.list_local_datasets():
        make_dataset(args)
    for seed in args.seeds:
        for arm in args.arms:
            if arm == "drlhp":
                run_iql(args, arm, seed, relabelled(args, seed), labels_used(args, seed))
            else:
                run_iql(args, arm, seed, dataset_id(args), 0)


if __name__ == "__main__":
    main()
