"""How the reward an agent learned from rated what the agent did, model by model over a SAC run of
``benchmarks.experiments.learning_curves``, and whether the agent fell with its reward or against it.

It reads the run's reward models kept over time (the examples' ``--keep-reward-models``: ``drlhp/reward_history/``),
its saved replay buffer (``drlhp/agent/replay_buffer.npz``, every step while the run is shorter than the buffer) and
its learning curve (each episode's true return). Each model scores every episode of the run: the sum of its
normalised rewards over the episode's steps. Per model, the table gives Spearman's rank correlation between those
scores and the true returns, over all the run's episodes and over the 20 before the model's step (what the agent
was doing then), and how much the reward of a step changed since the model kept before (its shift of every step
alike left out: that changes no choice of the agent's).

Then, for each fall (the results page's: episodes below the task's first milestone once the 20-episode mean had
reached the second; consecutive ones make one fall), the model the agent had when it fell: the share of pairs (a
fallen episode, one of the 20 before the fall) it ranks the right way round. Near 1, the reward said the fall was
worse, and the agent fell against it (the learner lost its policy); near 0.5 or below, the reward led it down.

    python -m benchmarks.experiments.reward_over_run /work/runs/hop_m01_s2 --task hopper_sac \\
        --out benchmarks/results/hopper_sac/reward_over_run.log
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import numpy as np

from benchmarks.report.results_report import fall_steps
from benchmarks.report.run_records import git_commit
from benchmarks.report.tasks import TASKS, WINDOW
from drlhp.cli.offline import spearman
from drlhp.reward.predictor import RewardPredictor
from drlhp.sb3 import reward_history
from drlhp.storage.curve_csv import read_learning_curve


def stored_steps(run_dir: Path, key: str = "next_observations") -> np.ndarray:
    """``key`` of the run's saved replay buffer (one env), slot i holding agent step i + 1's transition."""
    path = run_dir / "drlhp" / "agent" / "replay_buffer.npz"
    with np.load(path) as buffer:
        if bool(buffer["full"]):
            sys.exit(f"error: {path} has wrapped round, so the run's first steps are gone: a run shorter than the "
                     "agent's buffer_size is needed")
        return buffer[key][:int(buffer["pos"]), 0]


def run_episodes(run_dir: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A run's stored steps (the observations its transitions end in) and, for each episode they hold, its last agent
    step, its length and its true return (from the learning curve)."""
    observations = stored_steps(run_dir).astype(np.float32)
    curve = read_learning_curve(str(run_dir / "drlhp"))
    assert curve is not None, f"{run_dir} has no learning curve"
    within = curve["agent_steps"] <= len(observations)
    return (observations, curve["agent_steps"][within].astype(int), curve["episode_length"][within].astype(int),
            curve["true_episode_return"][within])


def episode_scores(rewards: np.ndarray, ends: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Each episode's summed reward: the episode ending at agent step ``end`` after ``length`` steps is the buffer's
    steps ``end - length + 1 .. end`` (slots ``end - length .. end - 1``)."""
    cumulative = np.concatenate([[0.0], np.cumsum(rewards)])
    return cumulative[ends] - cumulative[ends - lengths]


def fall_episodes(falls: list[int], ends: np.ndarray) -> list[np.ndarray]:
    """The episodes (indices into ``ends``) of each fall: falling episodes in a row make one fall."""
    indices = np.searchsorted(ends, falls)
    return [group for group in np.split(indices, np.flatnonzero(np.diff(indices) > 1) + 1) if group.size]


def ranked_right(scores: np.ndarray, fallen: np.ndarray, before: np.ndarray) -> float:
    """The share of pairs (a fallen episode, an episode before) whose episode before scores higher (a tie: half)."""
    diff = scores[before][:, None] - scores[fallen][None, :]
    return float(np.mean((diff > 0) + 0.5 * (diff == 0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a learning_curves --out folder of a SAC run with kept reward models")
    parser.add_argument("--task", choices=[k for k, t in TASKS.items() if len(t.milestones) > 1], required=True,
                        help="the results page's task, whose milestones define a fall")
    parser.add_argument("--out", type=Path, help="also write the table here, with the command and commit")
    args = parser.parse_args()
    log_dir = args.run / "drlhp"
    kept = reward_history(str(log_dir))
    if not kept:
        sys.exit(f"error: {log_dir} has no reward models kept over the run (run the example with "
                 "--keep-reward-models N)")
    observations, ends, lengths, returns = run_episodes(args.run)
    lines = [f"# python -m benchmarks.experiments.reward_over_run {shlex.join(sys.argv[1:])}",
             f"# commit {git_commit()}; {len(ends)} episodes; a model's score of an episode: the sum of its "
             "normalised rewards; rho: Spearman's rank correlation with the true returns; change: the std of the "
             "change of a step's reward from the model kept before, in this model's reward std (a shift of all "
             "alike is none)",
             "model_step rho_all_episodes rho_last_20_episodes change"]
    scores, previous = {}, None
    for step, path in kept:
        rewards = RewardPredictor.load(path).normalised_rewards(observations)
        scores[step] = score = episode_scores(rewards, ends, lengths)
        recent = np.flatnonzero(ends <= step)[-WINDOW:]
        rho_recent = spearman(score[recent], returns[recent]) if len(recent) > 2 else float("nan")
        change = np.std(rewards - previous) / np.std(rewards) if previous is not None else float("nan")
        lines.append(f"{step} {spearman(score, returns):.3f} {rho_recent:.3f} {change:.3f}")
        previous = rewards
    milestones = TASKS[args.task].milestones
    lines.append(f"# falls: episodes below {milestones[0]:g} once the 20-episode mean had reached {milestones[1]:g}; "
                 "ranked right: the share of pairs (fallen episode, one of the 20 before) the model in use at the "
                 "fall's first step ranks with the episode before higher")
    lines.append("first_step last_step episodes model_step ranked_right true_return_before true_return_fallen")
    for fallen in fall_episodes(fall_steps(ends, returns, milestones), ends):
        start = ends[fallen[0]] - lengths[fallen[0]]
        in_use = [step for step in scores if step <= start]
        before = np.arange(max(0, fallen[0] - WINDOW), fallen[0])
        model = in_use[-1] if in_use else None
        right = f"{ranked_right(scores[model], fallen, before):.2f}" if model is not None else "-"
        lines.append(f"{start + 1} {ends[fallen[-1]]} {len(fallen)} {model if model is not None else '-'} {right} "
                     f"{np.mean(returns[before]):.0f} {np.mean(returns[fallen]):.0f}")
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
