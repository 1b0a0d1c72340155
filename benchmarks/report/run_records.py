"""Run records: each agent run the docs cite lives in a folder of its own under ``benchmarks/results/<task>/``.

A record folder holds the run's learning curve (``curve.csv``: its own current rows in the merged columns of
``learning_curves.py``, one row per finished episode), drlhp's reward-training metrics where the run had them,
and ``run.json``, which says what the run was::

    game                     the env id (PongNoFrameskip-v4)
    task                     the example that ran it (pong): the folder under benchmarks/results
    arm                      "drlhp" (synthetic labels) or "true_reward" (the env's own reward)
    seed                     the example's --seed
    label_budget, labels     the labels the run could ask for and those it used (null for the true reward)
    agent_steps              the agent's steps at the end of the run
    defaults                 true when the command chose nothing about the reward model or labelling (only
                             the label budget, the seed and the length); false for a lever tried
    variant                  "defaults", or a short name of what the command changed (a lever)
    teacher                  who gave the synthetic labels, by what differs from the perfect teacher (the clip
                             with the larger true return always wins): {} for the perfect teacher,
                             {"mistake_rate": 0.1} for one answer in ten the wrong way round; null for the true
                             reward. It does not touch "defaults", which is about drlhp's own settings
    description              that change in words
    commit                   the commit whose code ran
    command                  the command that ran it
    settings                 {"example": the example's arguments, "env_kwargs": what ``gymnasium.make`` got
                             beside the id ({} for the env as registered), "drlhp": drlhp's resolved settings
                             (null for the true reward)}
    wall_time_s              the run's wall time, all its sessions
    date                     the day it finished
    curve                    the curve's file name (curve.csv)
    reward_training_metrics  that file's name (reward_training_metrics.csv.gz), or null
    reconstructed            true for a run recorded after the fact, from the docs and the history of the
                             time (its settings as the code of its commit resolved them)
    notes                    anything else a reader should know (the machine was shared, resumed ...)
    dataset                  only for a run that learned from a recorded dataset (offline RL): its Minari id,
                             episodes and steps, how it was made, and the relabelled copy learned from (or null)

``benchmarks/experiments/learning_curves.py --record benchmarks/results`` writes a record for each finished run;
``benchmarks/report/results_report.py`` reads them all.

Lean records: ``run.json`` and the curve as they are; the metrics, a row per reward checkpoint (megabytes for a
SAC run), gzipped (``reward_training_metrics.csv.gz``, written with no time stamp: the same rows give the same
bytes), while a run's own log_dir keeps the plain CSV that drlhp appends to. A reward checkpoint or a recording
(``*.npz``) is committed only where a documented measurement reads it; recordings are kept LZMA-compressed inside
their ``.npz`` (``np.load`` reads them as any other). ``benchmarks/results/`` stays under 20 MiB with no file over
2 MiB (a test holds it); records written otherwise (by older code, or a recording made elsewhere) are brought to
that form, in place and losslessly, by::

    python -m benchmarks.report.run_records slim     # what it changed, the folder's size and its largest files
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from drlhp.reward.metrics import METRICS_DIGITS, significant

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
RECORD_FILE = "run.json"
CURVE_FILE = "curve.csv"
METRICS_FILE = "reward_training_metrics.csv.gz"
PLAIN_METRICS_FILE = "reward_training_metrics.csv"  # a log_dir's, and a record's before it was slimmed
BUDGET_BYTES = 20 * 2**20  # the whole of benchmarks/results/
FILE_LIMIT_BYTES = 2 * 2**20  # any one file in it
CURVE_COLUMNS = ("run", "agent_steps", "true_episode_return", "labels", "wall_time_s", "episode_length", "session")
ARMS = ("drlhp", "true_reward")
KEYS = ("game", "task", "arm", "seed", "label_budget", "labels", "agent_steps", "defaults", "variant", "teacher",
        "description", "commit", "command", "settings", "wall_time_s", "date", "curve", "reward_training_metrics",
        "reconstructed", "notes")


class RecordError(ValueError):
    """A run record that is incomplete or names a file that is not there."""


@dataclass(frozen=True)
class Record:
    folder: Path
    data: dict

    def __getitem__(self, key: str):
        return self.data[key]

    @property
    def name(self) -> str:
        return f"{self.folder.parent.name}/{self.folder.name}"

    def curve(self) -> dict[str, np.ndarray]:
        """The run's episodes: agent steps and true returns, as arrays."""
        rows = read_csv(self.folder / self.data["curve"])
        return {"agent_steps": np.array([int(r["agent_steps"]) for r in rows]),
                "true_episode_return": np.array([float(r["true_episode_return"]) for r in rows]),
                "labels": np.array([int(r["labels"]) for r in rows])}

    def metrics(self) -> list[dict[str, str]] | None:
        """The reward model's metrics, a row per checkpoint (None for a run without them)."""
        name = self.data["reward_training_metrics"]
        return None if name is None else read_csv(self.folder / name)


def open_csv(path: str | Path) -> IO[str]:
    """A CSV file for reading, gzipped (``.csv.gz``: a record's metrics) or plain (``.csv``: a log_dir's)."""
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", newline="")
    return open(path, newline="")


def read_csv(path: str | Path) -> list[dict[str, str]]:
    with open_csv(path) as f:
        return list(csv.DictReader(f))


def rounded_csv(data: bytes) -> bytes:
    """A metrics CSV with its floats at the significant digits drlhp writes them with today (``METRICS_DIGITS``):
    an older drlhp wrote every float's 17 digits, which doubled a long run's file and meant nothing more."""
    rows = list(csv.reader(io.StringIO(data.decode())))
    out = io.StringIO()
    csv.writer(out).writerows([rows[0], *([_rounded(cell) for cell in row] for row in rows[1:])])
    return out.getvalue().encode()


def _rounded(cell: str) -> str:
    if not cell or cell.lstrip("-").isdigit():
        return cell
    try:
        return significant(float(cell))
    except ValueError:
        return cell


def gzipped(data: bytes) -> bytes:
    """``data`` gzipped without a file name or time stamp: the same bytes in, the same bytes out."""
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as f:
        f.write(data)
    return out.getvalue()


def save_arrays(path: str | Path, **arrays) -> None:
    """``np.savez_compressed`` with LZMA instead of deflate: ``np.load`` reads it the same, in about half the bytes
    for the Atari recordings' frames (deflate sees 32 kB back, a few frames; LZMA sees many); the same arrays give
    the same bytes."""
    with zipfile.ZipFile(path, "w") as out:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.asanyarray(array), allow_pickle=False)
            out.writestr(_member(f"{name}.npy"), buffer.getvalue())


def _member(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_LZMA
    return info


def git_commit() -> str:
    """HEAD's commit, with ``+changes`` when tracked files differ from it (the code that ran was not HEAD's)."""
    def git(*cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(ROOT), *cmd], capture_output=True, text=True)

    head = git("rev-parse", "HEAD")
    if head.returncode != 0:
        return "unknown (not a git checkout)"
    return head.stdout.strip() + ("+changes" if git("diff", "--quiet", "HEAD").returncode else "")


def record_name(arm: str, seed: int, labels: int | None, variant: str = "defaults", teacher: dict | None = None) -> str:
    """A record folder's name, from what the run is: ``drlhp_seed1_3000labels``, ``true_reward_seed1``, a teacher
    other than the perfect one after them (``drlhp_seed0_200labels_mistake-rate-0.1``), and the variant last for a
    lever (``drlhp_seed0_3000labels_median-centre``)."""
    parts = [arm, f"seed{seed}"]
    if arm == "drlhp":
        parts.append(f"{labels}labels")
    if teacher:
        parts.append(teacher_name(teacher))
    if variant != "defaults":
        parts.append(variant)
    return "_".join(parts)


def teacher_name(teacher: dict) -> str:
    """A teacher in a name: ``mistake-rate-0.1``, ``mistake-rate-0.1-life-loss-penalty-1``."""
    return "-".join(f"{name.replace('_', '-')}-{value if isinstance(value, str) else format(value, 'g')}"
                    for name, value in teacher.items())


def free_folder(task_dir: Path, name: str) -> Path:
    """``task_dir/name``, or ``name_2``, ``name_3`` ... when the same configuration ran before."""
    folder, n = task_dir / name, 1
    while folder.exists():
        n += 1
        folder = task_dir / f"{name}_{n}"
    return folder


def check(data: dict, folder: Path) -> None:
    missing = [k for k in KEYS if k not in data]
    if missing:
        raise RecordError(f"{folder / RECORD_FILE} lacks {missing}: rewrite it with every key of "
                          "benchmarks/report/run_records.py's KEYS")
    if data["arm"] not in ARMS:
        raise RecordError(f"{folder / RECORD_FILE}: arm {data['arm']!r} is not one of {ARMS}")
    for key in ("curve", "reward_training_metrics"):
        if data[key] is not None and not (folder / data[key]).is_file():
            raise RecordError(f"{folder / RECORD_FILE} names {key} {data[key]!r}, which is not in {folder}")


def write_record(folder: Path, data: dict, curve_rows: list[dict], metrics_path: str | None = None) -> Path:
    """Write a record folder: the curve's rows, a copy of the metrics file if any, and ``run.json``."""
    folder.mkdir(parents=True, exist_ok=False)
    with open(folder / CURVE_FILE, "w", newline="") as f:
        writer = csv.DictWriter(f, CURVE_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(curve_rows)
    data = {**data, "curve": CURVE_FILE, "reward_training_metrics": None}
    if metrics_path is not None and os.path.exists(metrics_path):
        (folder / METRICS_FILE).write_bytes(gzipped(rounded_csv(Path(metrics_path).read_bytes())))
        data["reward_training_metrics"] = METRICS_FILE
    data = {k: data.get(k) for k in KEYS} | ({"dataset": data["dataset"]} if data.get("dataset") else {})
    check(data, folder)
    (folder / RECORD_FILE).write_text(json.dumps(data, indent=1) + "\n")
    return folder


def read_records(root: Path = RESULTS) -> list[Record]:
    """Every record under ``root``, checked, in folder order."""
    records = []
    for path in sorted(root.rglob(RECORD_FILE)):
        data = json.loads(path.read_text())
        check(data, path.parent)
        records.append(Record(path.parent, data))
    return records


# -- lean records ---------------------------------------------------------------------------------------------------

def slim(root: Path = RESULTS) -> list[str]:
    """Bring every file under ``root`` to the lean form, in place; what it changed, a line each. A second run changes
    nothing.

    - a record's plain metrics CSV: gzipped beside it (``reward_training_metrics.csv.gz``), its ``run.json`` naming
      that, the CSV removed; its floats, there or in a gzipped one, at the ``METRICS_DIGITS`` significant digits
      drlhp writes today (an older drlhp wrote 17: the only change that is not lossless, and to nothing a page
      reads);
    - a ``.npz`` whose arrays are stored otherwise than LZMA-compressed (``np.savez``/``savez_compressed``'s):
      rewritten with LZMA (:func:`save_arrays`), the same members in the same order, their bytes checked."""
    done = []
    for path in sorted(root.rglob(RECORD_FILE)):
        text = path.read_text()
        data = json.loads(text)
        plain, packed = path.parent / PLAIN_METRICS_FILE, path.parent / METRICS_FILE
        if data.get("reward_training_metrics") == METRICS_FILE and plain.is_file() and packed.is_file() and (
                gzipped(rounded_csv(plain.read_bytes())) == packed.read_bytes()):  # a slim stopped before its last step
            plain.unlink()
            done.append(f"{_rel(plain, root)}: removed, the same rows as {METRICS_FILE} beside it")
        if data.get("reward_training_metrics") != PLAIN_METRICS_FILE:
            continue
        before = plain.stat().st_size
        packed.write_bytes(gzipped(rounded_csv(plain.read_bytes())))
        key = f'"reward_training_metrics": "{PLAIN_METRICS_FILE}"'
        # Only that value changes: the rest of the file (written by hand for some) keeps its every byte.
        new_text = text.replace(key, f'"reward_training_metrics": "{METRICS_FILE}"') if key in text else None
        if new_text is None or json.loads(new_text) != {**data, "reward_training_metrics": METRICS_FILE}:
            new_text = json.dumps({**data, "reward_training_metrics": METRICS_FILE}, indent=1) + "\n"
        path.write_text(new_text)
        plain.unlink()
        done.append(f"{_rel(packed, root)}: {before / 1024:,.0f} kB as CSV, {packed.stat().st_size / 1024:,.0f} kB "
                    "gzipped")
    for packed in sorted(root.rglob(METRICS_FILE)):
        rows = gzip.decompress(packed.read_bytes())
        if rounded_csv(rows) != rows:
            before = packed.stat().st_size
            packed.write_bytes(gzipped(rounded_csv(rows)))
            done.append(f"{_rel(packed, root)}: floats to {METRICS_DIGITS} significant digits, {before / 1024:,.0f} "
                        f"-> {packed.stat().st_size / 1024:,.0f} kB")
    for path in sorted(root.rglob("*.npz")):
        with zipfile.ZipFile(path) as z:
            members = z.infolist()
            if all(m.compress_type == zipfile.ZIP_LZMA for m in members):
                continue
            contents = [(m.filename, z.read(m)) for m in members]
        before = path.stat().st_size
        temporary = path.with_name(path.name + ".slim")
        with zipfile.ZipFile(temporary, "w") as out:
            for name, content in contents:
                out.writestr(_member(name), content)
        with zipfile.ZipFile(temporary) as z:
            if [(m.filename, z.read(m)) for m in z.infolist()] != contents:
                temporary.unlink()
                raise RuntimeError(f"{path}: its LZMA copy does not read back the same: left as it was")
        os.replace(temporary, path)
        done.append(f"{_rel(path, root)}: {before / 1024:,.0f} kB deflated, {path.stat().st_size / 1024:,.0f} kB "
                    "with LZMA")
    return done


def sizes(root: Path = RESULTS) -> list[tuple[int, Path]]:
    """Every file under ``root`` with its size in bytes, largest first."""
    return sorted(((p.stat().st_size, p) for p in root.rglob("*") if p.is_file()), key=lambda s: (-s[0], s[1]))


def over_budget(root: Path = RESULTS) -> str | None:
    """What breaks the budget (the folder at 20 MiB or more, a file over 2 MiB) and what to do, or None."""
    files = sizes(root)
    total = sum(size for size, _ in files)
    problems = [f"{_rel(p, root)} is {size / 2**20:.2f} MiB, over {FILE_LIMIT_BYTES / 2**20:g} MiB"
                for size, p in files if size > FILE_LIMIT_BYTES]
    if total >= BUDGET_BYTES:
        largest = ", ".join(f"{_rel(p, root)} ({size / 2**20:.2f} MiB)" for size, p in files[:5])
        problems.append(f"{root} holds {total / 2**20:.2f} MiB, not under {BUDGET_BYTES / 2**20:g} MiB; its "
                        f"largest files: {largest}")
    if not problems:
        return None
    return ("; ".join(problems) + ". Run python -m benchmarks.report.run_records slim (it gzips a record's metrics "
            "CSV and repacks recordings with LZMA); what is still too large, commit only where a documented "
            "measurement reads it (a reward checkpoint, a recording), or split it losslessly and have its reader join "
            "it.")


def _rel(path: Path, root: Path) -> str:
    """``path`` as a reader finds it: from the repository's root, or else from ``root``."""
    for base in (ROOT, root):
        if base.resolve() in path.resolve().parents:
            return str(path.resolve().relative_to(base.resolve()))
    return str(path)


def main() -> None:
    parser = argparse.ArgumentParser(description="Run records: slim them to the lean form and report their sizes.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("slim", "gzip records' metrics CSVs and repack recordings with LZMA, in place; then sizes"),
                       ("sizes", "the folder's size, its largest files and whether it keeps to the budget")):
        p = sub.add_parser(name, help=text)
        p.add_argument("root", nargs="?", type=Path, default=RESULTS, help="default: benchmarks/results")
    args = parser.parse_args()
    if args.command == "slim":
        done = slim(args.root)
        print("\n".join(done) if done else "nothing to slim: every record is lean already")
    files = sizes(args.root)
    print(f"{args.root}: {len(files)} files, {sum(s for s, _ in files) / 2**20:.2f} MiB "
          f"(budget: under {BUDGET_BYTES / 2**20:g} MiB, no file over {FILE_LIMIT_BYTES / 2**20:g} MiB); largest:")
    for size, path in files[:10]:
        print(f"  {size / 1024:8,.0f} kB  {_rel(path, args.root)}")
    problem = over_budget(args.root)
    if problem:
        raise SystemExit(f"over budget: {problem}")


if __name__ == "__main__":
    main()
