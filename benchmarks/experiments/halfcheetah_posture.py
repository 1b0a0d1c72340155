"""Where a HalfCheetah agent spent its steps: the share of them on its back, and its forward speed, window by window
of a run, read from the replay buffer a SAC run of ``benchmarks.experiments.learning_curves`` saves beside its curve
(``OUT/drlhp/agent/replay_buffer.npz``, kept for resuming; it holds every observation while the run is shorter than
the buffer).

A cheetah on its back earns little forward reward, and its clips differ little: runs from few labels that sat near a
random policy's return for their first 100k steps are read against this.

    python -m benchmarks.experiments.halfcheetah_posture /work/runs/hc_m01_s1 /work/runs/hc_m01_s2 \\
        --out benchmarks/results/halfcheetah_sac/posture.log
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import numpy as np

from benchmarks.report.run_records import git_commit

#: HalfCheetah-v5's observation: qpos without x (rootz, rooty, 6 joints), then qvel (x velocity first).
ROOT_ANGLE, FORWARD_SPEED = 1, 8


def posture(observations: np.ndarray, window: int) -> list[tuple[int, float, float]]:
    """For each ``window`` steps of ``observations`` (steps, obs): its first step, the share of steps on its back
    (the torso turned more than a quarter turn) and the mean forward speed."""
    rows = []
    for start in range(0, len(observations), window):
        obs = observations[start:start + window]
        rows.append((start, float(np.mean(np.cos(obs[:, ROOT_ANGLE]) < 0)), float(np.mean(obs[:, FORWARD_SPEED]))))
    return rows


def stored_observations(run_dir: Path) -> np.ndarray:
    """The agent's observations in step order, from the run's saved replay buffer (one env)."""
    with np.load(run_dir / "drlhp" / "agent" / "replay_buffer.npz") as buffer:
        obs, pos, full = buffer["observations"][:, 0], int(buffer["pos"]), bool(buffer["full"])
    return np.concatenate([obs[pos:], obs[:pos]]) if full else obs[:pos]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="learning_curves --out folders of HalfCheetah SAC runs")
    parser.add_argument("--window", type=int, default=20_000, help="agent steps per row")
    parser.add_argument("--out", type=Path, help="also write the table here, with the command and commit")
    args = parser.parse_args()
    lines = [f"# python -m benchmarks.experiments.halfcheetah_posture {shlex.join(sys.argv[1:])}",
             f"# commit {git_commit()}; on its back: cos(torso angle) < 0; speed: mean forward velocity (m/s)",
             "run recorded_as first_step last_step on_its_back forward_speed"]
    for run in args.runs:
        recorded = run / "drlhp" / "recorded_as"
        record = "/".join(Path(recorded.read_text().strip()).parts[-2:]) if recorded.exists() else "-"
        observations = stored_observations(run)
        for start, back, speed in posture(observations, args.window):
            last = min(start + args.window, len(observations)) - 1
            lines.append(f"{run.name} {record} {start} {last} {back:.2f} {speed:.2f}")
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
