"""#67's offline runs: ``examples/halfcheetah_offline_iql.py`` launched (or resumed) in ``--out``, and a run record
written for each IQL run that finished.

    python -m benchmarks.experiments.offline_iql --out runs/hc_iql --record benchmarks/results -- \\
        --agents runs/hc_sac/agent
    python -m benchmarks.experiments.offline_iql --out runs/hc_iql --record benchmarks/results --record-only

A record (``benchmarks/results/halfcheetah_iql/<arm>_seed<k>...``) has the columns of every other: ``agent_steps``
counts IQL's gradient steps, ``true_episode_return`` the return of an evaluation episode on the true reward. Its
run.json names the Minari dataset under ``"dataset"`` (and, for drlhp, the relabelled copy IQL learned from); a drlhp
record keeps its reward model's training metrics.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.examples_path import with_examples
from benchmarks.experiments.learning_curves import LAUNCH_FILE, RECORDED_AS, note_launch
from benchmarks.report.run_records import free_folder, record_name, write_record
from drlhp.storage.curve_csv import current_rows, read_rows

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "halfcheetah_offline_iql.py"
TASK = "halfcheetah_iql"


def parse_args() -> tuple[argparse.Namespace, list[str]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="the example's --out")
    p.add_argument("--record", help="write a record of each finished run under this folder (benchmarks/results)")
    p.add_argument("--record-only", action="store_true", help="record what is finished; run nothing")
    args, example_args = p.parse_known_args()
    return args, [a for a in example_args if a != "--"]


def main() -> None:
    args, example_args = parse_args()
    if not args.record_only:
        note_launch(args.out, ["offline_iql"], "benchmarks.experiments.offline_iql")
        proc = subprocess.run([sys.executable, str(EXAMPLE), "--out", args.out, *example_args])
        if proc.returncode != 0:
            sys.exit(proc.returncode)
    if args.record:
        for curve in sorted(Path(args.out).glob("iql_*_seed*/learning_curve.csv")):
            record(args, curve.parent)


def record(args: argparse.Namespace, folder: Path) -> None:
    """Write ``folder``'s record if its run reached the steps it was launched for and is not recorded yet."""
    with_examples()
    import minari
    from halfcheetah_offline_iql import ENV_ID, IQL_SETTINGS, dataset_id

    marker = folder / RECORDED_AS
    if marker.exists():
        print(f"== {folder.name}: recorded before, in {marker.read_text().strip()}")
        return
    launches = json.loads((Path(args.out) / LAUNCH_FILE).read_text())["launches"]
    example = vars(example_parser_args(launches[-1]["command"]))
    rows = current_rows(read_rows(str(folder / "learning_curve.csv")))
    if int(rows[-1]["agent_steps"]) < example["iql_steps"]:
        print(f"== {folder.name}: not finished ({rows[-1]['agent_steps']} of {example['iql_steps']} steps)")
        return
    arm, seed = rows[0]["run"], int(folder.name.rsplit("seed", 1)[1])
    drlhp = arm == "drlhp"
    os.environ["MINARI_DATASETS_PATH"] = os.path.abspath(os.path.join(args.out, "datasets"))
    source = minari.load_dataset(dataset_id(argparse.Namespace(**example)))
    dataset = {"id": source.spec.dataset_id, "episodes": int(source.total_episodes), "steps": int(source.total_steps),
               "algorithm_name": source.storage.metadata.get("algorithm_name"),
               "description": source.storage.metadata.get("description"),
               "relabelled": dataset_id(argparse.Namespace(**example), seed) if drlhp else None}
    reward_dir = Path(args.out) / f"reward_seed{seed}"
    trained_on = reward_settings(reward_dir) if drlhp else None
    written = write_record(free_folder(Path(args.record) / TASK, record_name(arm, seed, example["labels"])), {
        "game": ENV_ID, "task": TASK, "arm": arm, "seed": seed,
        "label_budget": example["labels"] if drlhp else None,
        "labels": trained_on["train_labels"] + trained_on["val_labels"] if trained_on else None,
        "agent_steps": int(rows[-1]["agent_steps"]), "defaults": True, "variant": "defaults",
        "teacher": {} if drlhp else None,
        "description": "IQL (d3rlpy) on the dataset relabelled by a reward model of synthetic labels" if drlhp else
        "IQL (d3rlpy) on the dataset's own reward",
        "commit": launches[0]["commit"], "command": launches[0]["command"],
        "settings": {"example": example, "env_kwargs": {}, "iql": IQL_SETTINGS,
                     "drlhp": trained_on},
        "wall_time_s": float(rows[-1]["wall_time_s"]), "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "reconstructed": False, "dataset": dataset,
        "notes": "; ".join(f"resumed at {la['started']} by {la['command']} (commit {la['commit']})"
                           for la in launches[1:]),
    }, rows, str(reward_dir / "reward_training_metrics.csv") if drlhp else None)
    marker.write_text(f"{written}\n")
    print(f"== {folder.name}: recorded in {written}")


def example_parser_args(command: str) -> argparse.Namespace:
    """The example's arguments as the launch ``command`` gave them (its defaults where it gave none): this script's
    command (the example's after ``--``), or the example's own."""
    from halfcheetah_offline_iql import parse_args as example_parse_args

    words = shlex.split(command)
    own = [i for i, word in enumerate(words) if word.endswith(EXAMPLE.name)]
    if own:
        return example_parse_args(words[own[0] + 1:])
    after = words[words.index("--") + 1:] if "--" in words else []
    return example_parse_args(["--out", words[words.index("--out") + 1], *after])


def reward_settings(reward_dir: Path) -> dict:
    """What the reward model was trained with and on, as its checkpoint says."""
    from drlhp.reward.predictor import RewardPredictor
    from drlhp.storage.layout import LogDir

    return RewardPredictor.load(LogDir(str(reward_dir)).checkpoint).provenance


if __name__ == "__main__":
    main()
