"""The generated pages' tables and sentences from the offline measures' logs (not run records): what Seaquest's
reward pays where its agents die, lost lives inside clips, a step's reward drifting between checkpoints, the
trainer pausing at K steps per label, a fallible teacher's labels offline, and the labelling page's pace."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from benchmarks.report.formatting import and_list, thousands
from benchmarks.report.run_records import RESULTS, ROOT
from benchmarks.report.tasks import TASKS

#: The labelling page's pace, measured by benchmarks/experiments/web_labelling_pace.py.
PACE = RESULTS / "labelling_pace" / "pong_web.json"


def with_sources(lines: list[str], sources: list[str]) -> str:
    """A table's lines, then the commands and commits of the logs it was read from; none read: not measured."""
    return "\n".join(lines) + "\n\n" + "; ".join(sources) + "." if sources else "Not measured yet."


def ending_table(log: Path = RESULTS / "seaquest" / "policies" / "ending.log", repo: Path = ROOT) -> str:
    """What a reward checkpoint pays where the agents it was measured on lose a life (``python -m
    benchmarks.experiments.reward_signal measure --per-policy``, logged; its paths are from the repository's root,
    ``repo``), beside what each recording holds: its steps, the lives it lost (each ends an episode: the examples end
    the agent's episode at a life lost) and its points."""
    if not log.is_file():
        return "Not measured yet."
    lines = ["| reward checkpoint | the agent it scored (its recording) | steps played | lives lost | points | "
             "`r_disc` | `typical` | `ending` | `ending_true` |", "|---|---|---|---|---|---|---|---|---|"]
    checkpoint = policies = None
    columns: list[str] = []
    for line in log.read_text().splitlines():
        words = line.split()
        if line.startswith("$ ") and "measure" in words and any("reward_signal" in word for word in words):
            # python -m benchmarks.experiments.reward_signal measure ..., or in older logs
            # python benchmarks/reward_signal.py measure ...
            checkpoint, policies = Path(words[words.index("measure") + 1]), repo / words[words.index("--policies") + 1]
        elif line.startswith("checkpoint "):
            columns = line.split()[1:]
        elif line.startswith("  agent_") and checkpoint is not None and policies is not None:
            name, *values = line.split()
            measured = dict(zip(columns, values))
            with np.load(policies / f"{name}.npz") as recording:
                steps, lives = len(recording["rewards"]), int(recording["episodes"].max())
                points = float(recording["rewards"].sum())
            where = checkpoint.relative_to("benchmarks/results")
            agent = f"{policies.name} at {thousands(int(name.split('_')[1]))}"
            lines.append(f"| `{where}` | {agent} | {steps:,} | {lives} | {points:g} | {measured['r_disc']} | "
                         f"{measured['typical']} | {measured['ending']} | {measured['ending_true']} |")
    return "\n".join(lines)


def lives_sentence(log: Path = RESULTS / "atari_lives" / "lives_in_clips.log") -> str:
    """How many lost lives fall inside a clip: with the recipe as it is, with clips spanning lives, and with a life
    lost not ending the agent's episode (``benchmarks/experiments/lives_in_clips.py``'s log)."""
    if not log.exists():
        return "Not measured yet."
    rows = [line.split() for line in log.read_text().splitlines()[3:] if line.strip()]
    counts = {(game, ends == "True", span == "True"): (int(lost), int(seen))
              for game, ends, span, lost, seen, _ in rows}

    def shares(ends: bool, span: bool) -> str:
        return and_list([f"{counts[g, e, s][1]:,} of {counts[g, e, s][0]:,} on {g.removesuffix('NoFrameskip-v4')}"
                         for g, e, s in counts if (e, s) == (ends, span)])

    return (f"The recipe ends the agent's episode at each life lost, and drlhp's clip with it, so a life's last steps "
            f"are in a clip only when the life lasted a whole number of clips: of the lives a random policy lost, "
            f"{shares(True, False)} fell inside a clip. Neither the labels, this penalty nor the reward network sees "
            f"a death. With `--clips-span-lives` (the setting `clips_span_lives`: a clip ends at the game's end, the "
            f"agent's episodes unchanged), {shares(True, True)} did; with a life lost not ending the agent's episode "
            f"(`make_atari(..., life_ends_episode=False)`, the paper's handling), {shares(False, False)}. Neither has "
            f"run yet (`benchmarks/experiments/lives_in_clips.py`; the log in `benchmarks/results/atari_lives/`).")


def drift_table(root: Path = RESULTS) -> str:
    """How much a step's reward moves between checkpoints on unchanged labels (``benchmarks/experiments/
    reward_drift.py``), each task's logged variants as a table, with the run and commit the log names."""
    lines = ["| task | variant | change of a step's reward per checkpoint kept, median [lowest, highest] | episodes' "
             "rank correlation with the true returns, median [lowest, highest] | L2 penalty, lowest-highest | "
             "validation accuracy at the end |", "|---|---|---|---|---|---|"]
    sources = []
    for log in sorted(root.glob("*/reward_drift.log")):
        title = TASKS[log.parent.name].title
        comments = [line[2:] for line in log.read_text().splitlines() if line.startswith("# ")]
        sources.append(f"{title}: `{comments[0]}` ({comments[1]})")
        for line in log.read_text().splitlines()[3:]:
            variant, change, change_range, rho, rho_range, l2_low, l2_high, val = line.replace(", ", ",").split()
            lines.append(f"| {title} | {variant} | {change} {change_range.replace(',', ', ')} | {rho} "
                         f"{rho_range.replace(',', ', ')} | {l2_low}-{l2_high} | {val} |")
    return with_sources(lines, sources)


def steps_per_label_table(root: Path = RESULTS) -> str:
    """The reward network label by label with the trainer pausing at K steps per label (``benchmarks/experiments/
    steps_per_label.py``): per task and K, its episode ranking and validation accuracy at each scoring, and its
    training steps at the end, with the run and commit the log names."""
    lines = ["| task | steps per label | labels | episodes' rank correlation with the true returns | validation "
             "accuracy (all the run's validation labels) | training steps at the end |", "|---|---|---|---|---|---|"]
    sources = []
    for log in sorted(root.glob("*/steps_per_label.log")):
        title = TASKS[log.parent.name].title
        text = log.read_text().splitlines()
        sources.append(f"{title}: `{text[0][2:]}` ({text[1][2:]})")
        rows: dict[str, list[list[str]]] = {}
        for line in text[3:]:
            if not line.startswith("#"):
                rows.setdefault(line.split()[0], []).append(line.split())
        for k, scored in rows.items():
            lines.append(f"| {title} | {k} | {', '.join(r[1] for r in scored)} | {', '.join(r[3] for r in scored)} | "
                         f"{', '.join(r[6] for r in scored)} | {int(scored[-1][2]):,} |")
    return with_sources(lines, sources)


def label_noise_table(root: Path = RESULTS) -> str:
    """The offline measure of a fallible teacher (``benchmarks/experiments/label_noise.py``): each task's logged
    means over the seeds, with the lowest and highest, as a table; from the seeds' own rows, on how many a variant's
    ``r_disc`` beat the defaults' of the same seed, the share of random answers it ended up assuming (``noise_p``),
    and the training pairs its filter left out (``left_out``) and flipped (``flipped``), lowest and highest."""
    lines = ["| task | mistake rate | labels | variant | `r_disc`, mean [lowest, highest] | `r_100`, mean [lowest, "
             "highest] | seeds with `r_disc` above the defaults' | `noise_p`, lowest-highest | pairs left out, "
             "lowest-highest | pairs flipped, lowest-highest |", "|---|---|---|---|---|---|---|---|---|---|"]
    summary = re.compile(r"^\s*([\d.]+):(\d+)\s+(\S+)\s+r_disc (\S+) \[(\S+), (\S+)\]\s+r_100 (\S+) \[(\S+), (\S+)\]$")
    for log in sorted(root.glob("*/label_noise/label_noise.log")):
        title = TASKS[log.parent.parent.name].title
        seeds_part, _, means_part = log.read_text().partition("mean over the seeds")
        seeds: dict[tuple[str, str], dict[str, dict[str, str]]] = {}  # (teacher, variant) -> seed -> columns
        header = seeds_part.splitlines()[0].split() if seeds_part.strip() else []
        for line in seeds_part.splitlines()[1:]:
            if len(values := line.split()) == len(header):
                row = dict(zip(header, values))
                seeds.setdefault((row["teacher"], row["variant"]), {})[row["seed"]] = row
        for line in means_part.splitlines():
            if m := summary.match(line):
                rate, labels, variant, *r = m.groups()
                own, base = seeds.get((f"{rate}:{labels}", variant), {}), seeds.get((f"{rate}:{labels}", "defaults"))
                above = ("—" if variant == "defaults" or not own or not base else
                         f"{sum(float(row['r_disc']) > float(base[seed]['r_disc']) for seed, row in own.items())} "
                         f"of {len(own)}")
                spans = [("—" if not (v := [float(row[k]) for row in own.values() if k in row]) else
                          f"{min(v):g}" if min(v) == max(v) else f"{min(v):g}-{max(v):g}")
                         for k in ("noise_p", "left_out", "flipped")]
                lines.append(f"| {title} | {rate} | {labels} | {variant} | {r[0]} [{r[1]}, {r[2]}] | "
                             f"{r[3]} [{r[4]}, {r[5]}] | {above} | {' | '.join(spans)} |")
    return "\n".join(lines) if len(lines) > 2 else "Not measured yet."


def pace_sentence(path: Path = PACE) -> str:
    """How many labels an hour of a person makes on the page: the pace record's seconds a label, as a sentence."""
    if not path.exists():
        return "Not measured yet."
    r = json.loads(path.read_text())
    seconds = r["label_seconds"]
    mean = float(np.mean(seconds))
    return (f"With the default clip ({r['clip']['frames']} frames at {r['clip']['fps']:g} a second; Pong), a person "
            f"who watches both clips once and answers at once gives a label every {mean:.2f} s on average "
            f"({min(seconds):.2f}-{max(seconds):.2f} s over {len(seconds)} labels, {r['watch_seconds']:.2f} s of it "
            f"watching): at most {3600 / mean:,.0f} labels an hour, and 1,000 labels in no less than "
            f"{1000 * mean / 60:.0f} minutes. Each second a person thinks adds to every label "
            f"(`benchmarks/experiments/web_labelling_pace.py`, {r['date']}).")


def reward_terms_table(root: Path = RESULTS, columns: tuple[int, ...] = tuple(range(40_000, 300_001, 40_000))) -> str:
    """What each SAC run's kept reward models paid for, step by step, against the env's reward
    (``benchmarks/experiments/reward_terms.py``): per run, its models' correlation with the env's reward and, on
    Hopper, the upright share and the upright-minus-fallen gaps, at the first model in each 20k steps from each of
    ``columns``; then, where the log has them, the share of the run's labelled pairs (40 at a time, in the order
    asked) with an upright frame; with the command and commit each log names."""
    names = {"corr": "correlation with the env's reward", "upright_share": "share of steps upright",
             "upright_gap_model": "upright minus fallen: the model's", "upright_gap_env": "upright minus fallen: the "
             "env's"}
    lines = ["| task | run | per step | " + " | ".join(thousands(c) for c in columns) + " |",
             "|---|---|---|" + "---|" * len(columns)]
    labelled: dict[str, list[str]] = {}  # "task | run" -> the share of pairs with an upright frame, by 40 labels
    sources = []
    for log in sorted(root.glob("*/reward_terms_*.log")):
        title, run = TASKS[log.parent.name].title, log.stem.removeprefix("reward_terms_")
        text = log.read_text().splitlines()
        sources.append(f"`{text[0][2:]}` ({text[1][2:].split(';')[0]})")
        models, _, labels = "\n".join(text[2:]).partition("\n#")
        header, *body = models.splitlines()
        rows = [dict(zip(header.split(), line.split())) for line in body]
        for column in header.split()[1:]:
            cells = [next((r[column] for r in rows if c <= int(r["model_step"]) < c + 20_000), "—") for c in columns]
            lines.append(f"| {title} | {run} | {names[column]} | " + " | ".join(cells) + " |")
        if labels:
            labelled[f"{title} | {run}"] = [line.split()[1] for line in labels.splitlines()[2:]]
    if labelled:
        most = max(len(cells) for cells in labelled.values())
        lines += ["", "| task | run | " + " | ".join(f"labels {40 * i + 1}-{40 * i + 40}" for i in range(most)) + " |",
                  "|---|---|" + "---|" * most]
        lines += [f"| {run} | " + " | ".join(cells + ["—"] * (most - len(cells))) + " |"
                  for run, cells in labelled.items()]
    return with_sources(lines, sources)
