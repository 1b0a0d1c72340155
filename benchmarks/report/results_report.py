"""The results page's tables and figures, from the run records (``benchmarks/report/run_records.py``) alone.

Each run's score is the mean true return of its last 20 episodes at or before the task's step (Atari: 1M agent
steps), normalised per task as (score - random) / (mean true-reward score over that task's runs - random): 1.0 is
the true reward's mean, 0.0 a random policy. Per task and arm: the interquartile mean (IQM) of the runs' normalised
scores and its 95 % stratified bootstrap interval (Agarwal et al., NeurIPS 2021, with their ``rliable``); over the
Atari games the same, with each game's runs of one seed averaged (a seed is a row, a game a column: the bootstrap
resamples seeds within each game) over the seeds that every game in it has in both arms, the games chosen to give
the most cells (a game with fewer seeds than the others waits until it has enough).

Over 4 runs or fewer that interval is the runs' range, exactly: a resample made of the lowest (or highest) run alone,
or of it 3 times in 4, has that run's score as its IQM, and such resamples come up in more than 2.5 % of the draws
(1 in 27 of 3 runs, 1 in 20 of 4). The tables say so (``fmt_iqm``: "range" where the bootstrap's bounds are the
lowest and highest run, "95 % CI" where they lie inside, as from 5 runs on).

Beside the tables, the page's other figures are generated too: each run's curve in figures of its own (when its
20-episode mean first reached each of the task's milestones, with the labels it had then; its best 20-episode mean;
its mean over the last fifth of the steps; on Atari its episodes' length early and late; on SAC relabelling's share
of its wall time, from the record's notes), each task's IQM against the issue's target, and the README's
sentences; and, from the offline measures' logs rather than run records, the blocks of ``measure_logs.py``.

    pip install -e ".[benchmarks]"
    python -m benchmarks.report.results_report               # print the tables
    python -m benchmarks.report.results_report --write-docs  # into docs/results.md, docs/history.md (the levers'
                                                             # table) and the README; docs/images/results-*
    python -m benchmarks.report.results_report --check       # exit 1 if the pages' tables are not the records'

Only runs with today's defaults (``defaults`` in run.json) and at most the task's label budget enter the first
tables, beside, on a task that names one, the lever it is there to compare (SAC's ``--no-relabel``: the A/B of
relabelling), an arm of its own; every other run is a lever tried, listed in the levers table (on docs/history.md,
as it is of other settings than today's) with its normalised score.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
import textwrap
import warnings
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from benchmarks.report.formatting import and_list, hours, thousands
from benchmarks.report.measure_logs import (
    drift_table,
    ending_table,
    label_noise_table,
    lives_sentence,
    pace_sentence,
    reward_terms_table,
    steps_per_label_table,
)
from benchmarks.report.run_records import ROOT, Record, read_csv, read_records, teacher_name
from benchmarks.report.tasks import REACHED, TASKS, WINDOW, Task

DOCS = ROOT / "docs" / "results.md"
HISTORY = ROOT / "docs" / "history.md"
#: The pages with generated blocks: <!-- report:NAME --> ... <!-- /report -->.
PAGES = (DOCS, HISTORY, ROOT / "README.md", ROOT / "docs" / "labelling.md", ROOT / "docs" / "datasets.md",
         ROOT / "docs" / "getting-started.md", ROOT / "docs" / "examples.md", ROOT / "docs" / "reward-model.md",
         ROOT / "docs" / "off-policy.md")
IMAGES = ROOT / "docs" / "images"
REPS = 2000  # bootstrap resamples: the intervals' second decimal is stable at this many
SEED = 0  # of the bootstrap: the same records print the same intervals
CONFIDENCE = 0.95  # the bootstrap interval's coverage
CI = f"{CONFIDENCE * 100:g} % CI"


def score(record: Record, step: int) -> float:
    """The mean true return of the run's last ``WINDOW`` episodes at or before ``step``."""
    curve = record.curve()
    returns = curve["true_episode_return"][curve["agent_steps"] <= step]
    return float(np.mean(returns[-WINDOW:]))


@dataclass
class Arm:
    records: list[Record]
    scores: np.ndarray  # raw
    normalised: np.ndarray
    iqm: float
    interval: tuple[float, float]


def iqm_with_interval(matrix: np.ndarray) -> tuple[float, tuple[float, float]]:
    """IQM of a (runs x tasks) matrix of normalised scores and its stratified bootstrap interval (``CONFIDENCE``)."""
    from rliable import library as rly
    from rliable import metrics

    def iqm(scores: np.ndarray) -> np.ndarray:
        return np.array([metrics.aggregate_iqm(scores)])

    # rliable's StratifiedBootstrap draws its resamples from numpy's global generator, whatever random_state says
    # (rliable 1.2): seed that one, and give it back as it was.
    state = np.random.get_state()
    np.random.seed(SEED)
    try:
        with warnings.catch_warnings():  # arch's notice that RandomState will give way to Generator
            warnings.simplefilter("ignore", FutureWarning)
            point, interval = rly.get_interval_estimates({"arm": matrix}, iqm, reps=REPS,
                                                         confidence_interval_size=CONFIDENCE,
                                                         random_state=np.random.RandomState(SEED))
    finally:
        np.random.set_state(state)
    return float(point["arm"][0]), (float(interval["arm"][0, 0]), float(interval["arm"][1, 0]))


def arm_of(record: Record, spec: Task) -> str | None:
    """Which arm of the main table a run is in (None: a lever tried, for the levers table). The true reward, and
    drlhp's defaults taught perfectly with the task's labels, are ``true_reward`` and ``drlhp``; drlhp's defaults
    with another teacher or label budget an arm per pair (``200labels_mistake-rate-0.1``); a lever the task names
    an arm named by its variant."""
    if not record["defaults"]:
        perfect = not record["teacher"] and record["label_budget"] in (None, spec.label_budget)
        return record["variant"] if record["variant"] in spec.ab and perfect else None
    if record["arm"] == "true_reward":
        return "true_reward"
    if record["label_budget"] == spec.label_budget and not record["teacher"]:
        return "drlhp"
    return "_".join([f"{record['label_budget']}labels", *([teacher_name(record["teacher"])] * bool(record["teacher"]))])


def main_runs(records: list[Record], task: str) -> dict[str, list[Record]]:
    """The task's runs that reached its step, by arm (``arm_of``), in seed then folder order: ``drlhp`` and
    ``true_reward`` first (empty if none), the task's levers next, the other teachers and budgets last."""
    spec = TASKS[task]
    runs: dict[str, list[Record]] = {"drlhp": [], "true_reward": [], **{variant: [] for variant in spec.ab}}
    for r in records:
        if r["task"] == task and r["agent_steps"] >= REACHED * spec.step and (arm := arm_of(r, spec)) is not None:
            runs.setdefault(arm, []).append(r)
    levers = {arm: runs.pop(arm) for arm in spec.ab}
    others = sorted(set(runs) - {"drlhp", "true_reward"}, key=lambda arm: (int(arm.split("labels")[0]), arm))
    ordered = {**{arm: runs[arm] for arm in ("drlhp", "true_reward")}, **levers, **{arm: runs[arm] for arm in others}}
    return {arm: sorted(rs, key=lambda r: (r["seed"], r.name)) for arm, rs in ordered.items()}


def arm_title(arm: str, records: list[Record], spec: Task) -> str:
    """An arm as the tables and figures name it."""
    if arm == "true_reward":
        return "true reward"
    if arm in spec.ab:
        if records[0]["arm"] == "true_reward":
            return f"true reward with `--{arm}`"
        return f"drlhp with `--{arm}`, ≤ {spec.label_budget:,} labels"
    budget, teacher = records[0]["label_budget"], records[0]["teacher"]
    taught = ", teacher: " + ", ".join(f"{name.replace('_', ' ')} {value}" for name, value in teacher.items())
    return f"drlhp, ≤ {budget:,} labels{taught if teacher else ''}"


def baseline(task: str, true_runs: list[Record]) -> float:
    """The mean true-reward score over the task's runs: 1.0 on the normalised scale."""
    return float(np.mean([score(r, TASKS[task].step) for r in true_runs]))


def normalise(value: float, task: str, base: float) -> float:
    random = TASKS[task].random_return
    return (value - random) / (base - random)


def results(records: list[Record], task: str) -> dict[str, Arm] | None:
    """The task's main runs scored, by arm (an arm without runs left out); None without a true-reward run to
    normalise by."""
    runs = main_runs(records, task)
    if not runs["true_reward"]:
        return None
    base, step = baseline(task, runs["true_reward"]), TASKS[task].step
    out = {}
    for arm, rs in runs.items():
        if not rs:
            continue
        scores = np.array([score(r, step) for r in rs])
        normalised = np.array([normalise(s, task, base) for s in scores])
        iqm, interval = iqm_with_interval(normalised[:, None])
        out[arm] = Arm(rs, scores, normalised, iqm, interval)
    return out


def atari_games_with_both_arms(per_task: dict[str, dict[str, Arm]]) -> list[str]:
    return [t for t, arms in per_task.items() if TASKS[t].family == "atari" and {"drlhp", "true_reward"} <= arms.keys()]


def over_games(per_task: dict[str, dict[str, Arm]]) -> tuple[list[str], list[int], dict[str, tuple]] | None:
    """The Atari aggregate: per arm, IQM and interval of the (seeds x games) matrix of seed-mean normalised
    scores. A seed enters only where every game of the matrix has it in both arms, so a game that has fewer seeds
    than the others would shrink the matrix to its seeds: of the sets of at least two games, the one whose shared
    seeds give the most cells is taken (on a tie, the more games). None where no two games share a seed."""
    games = atari_games_with_both_arms(per_task)
    seeds_of = {t: set.intersection(*({r["seed"] for r in per_task[t][arm].records}
                                      for arm in ("drlhp", "true_reward"))) for t in games}
    candidates = [(list(chosen), sorted(seeds)) for n in range(2, len(games) + 1)
                  for chosen in combinations(games, n) if (seeds := set.intersection(*(seeds_of[t] for t in chosen)))]
    if not candidates:
        return None
    chosen, seeds = max(candidates, key=lambda c: (len(c[0]) * len(c[1]), len(c[0])))
    out = {}
    for arm in ("drlhp", "true_reward"):
        matrix = np.array([[np.mean([n for r, n in zip(per_task[t][arm].records, per_task[t][arm].normalised)
                                     if r["seed"] == seed]) for t in chosen] for seed in seeds])
        out[arm] = iqm_with_interval(matrix)
    return chosen, seeds, out


def is_range(arm: Arm) -> bool:
    """Whether the arm's bootstrap interval is its runs' range, as it is for 4 runs or fewer (the module's
    docstring says why)."""
    return bool(np.allclose(arm.interval, (arm.normalised.min(), arm.normalised.max())))


def fmt_iqm(arm: Arm | tuple) -> str:
    """The IQM in bold and what its bracket is: the runs' range where the bootstrap gives no more (4 runs or fewer),
    the 95 % stratified bootstrap interval otherwise (an ``Arm``); an aggregate's (a tuple) is the interval."""
    iqm, (low, high) = (arm.iqm, arm.interval) if isinstance(arm, Arm) else arm
    if isinstance(arm, Arm) and len(arm.records) == 1:
        return f"**{iqm:.2f}** (one run)"
    what = "range" if isinstance(arm, Arm) and is_range(arm) else CI
    return f"**{iqm:.2f}**, {what} [{low:.2f}, {high:.2f}]"


#: What a main table's IQM column holds, in its caption.
INTERVAL_NOTE = ("IQM: the interquartile mean of the runs' normalised scores. \"range\": the lowest and highest run, "
                 f"which is all that the {CONFIDENCE * 100:g} % stratified bootstrap interval comes to over 4 runs or "
                 "fewer (the page's \"How to read the tables\" says why): the spread of these runs, not a confidence "
                 f"interval. \"{CI}\": from 5 runs on, the bootstrap's interval, inside the runs' range.")


def main_table(per_task: dict[str, dict[str, Arm]], family: str, note: bool = False) -> str:
    """The family's main table, a row per task and arm; ``note``: with what its IQM column holds (the page's
    first table has it, the others point at it by their column's header)."""
    if not any(TASKS[t].family == family and "drlhp" in arms for t, arms in per_task.items()):
        return "No run with today's defaults recorded yet."
    lines = [f"| task | arm | runs (seeds) | return at the step, each run | normalised, each run | IQM [range or {CI}] "
             "| median wall time |", "|---|---|---|---|---|---|---|"]
    for task, by_arm in per_task.items():
        spec = TASKS[task]
        if spec.family != family:
            continue
        for arm_name, arm in by_arm.items():
            seeds = ", ".join(str(r["seed"]) for r in arm.records)
            what = arm_title(arm_name, arm.records, spec)
            lines.append(f"| {spec.title} at {spec.step // 1000:,}k steps | {what} | {len(arm.records)} ({seeds}) | "
                         f"{', '.join(f'{s:.2f}' for s in arm.scores)} | "
                         f"{', '.join(f'{n:.2f}' for n in arm.normalised)} | {fmt_iqm(arm)} | "
                         f"{hours([r['wall_time_s'] for r in arm.records])} |")
    return "\n".join(lines) + ("\n\n" + INTERVAL_NOTE if note else "")


def aggregate_table(aggregate: tuple[list[str], list[int], dict[str, tuple]] | None, per_task: dict) -> str:
    both_arms = atari_games_with_both_arms(per_task)
    if aggregate is None:
        return (f"Over the games ({', '.join(TASKS[t].title for t in both_arms)}): not yet (it needs two games with a "
                "seed in common in both arms).")
    games, seeds, by_arm = aggregate
    text = (f"Over the games ({', '.join(TASKS[t].title for t in games)}; seeds {', '.join(map(str, seeds))}, each "
            f"seed's runs averaged; the bootstrap resamples the {len(seeds)} seeds within each game): drlhp "
            f"{fmt_iqm(by_arm['drlhp'])}, the true reward {fmt_iqm(by_arm['true_reward'])}.")
    left_out = [t for t in both_arms if t not in games]
    if left_out:
        text += (f" Not yet in it: {', '.join(TASKS[t].title for t in left_out)} (fewer seeds in both arms than the "
                 "others; a game enters when the matrix it makes has at least as many cells).")
    return text


def levers_table(records: list[Record], per_task: dict[str, dict[str, Arm]]) -> str:
    """Every other run of a task with a true-reward baseline: what it changed, its score (at the task's step, or
    at its end if it ended before or began after it), its reward model's last validation accuracy (the offline
    measure every drlhp run has)."""
    lines = ["| task | arm | lever (what the run changed) | labels | seed | return | normalised | reward model's "
             "val. accuracy at the end | date | record |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        task = r["task"]
        if task not in per_task or any(r in arm.records for arm in per_task[task].values()):
            continue
        spec = TASKS[task]
        base = baseline(task, per_task[task]["true_reward"].records)
        began_after = r.curve()["agent_steps"][0] > spec.step  # a run continued from another's end
        step = spec.step if r["agent_steps"] >= REACHED * spec.step and not began_after else r["agent_steps"]
        value = score(r, step)
        at = "" if step == spec.step else f" (at {step // 1000:,}k)"
        labels = f"{r['labels']:,}" if r["labels"] is not None else "—"
        lines.append(f"| {spec.title} | {r['arm'].replace('_', ' ')} | {r['description']} | {labels} | {r['seed']} | "
                     f"{value:.2f}{at} | {normalise(value, task, base):.2f} | {final_val_accuracy(r)} | {r['date']} | "
                     f"`{r.name}` |")
    return "\n".join(lines)


def readme_sentence(per_task: dict[str, dict[str, Arm]]) -> str:
    """The README's result: each game's IQM over its runs with today's defaults, never a best run."""
    games = [(TASKS[t], arms) for t, arms in per_task.items() if TASKS[t].family == "atari" and "drlhp" in arms]
    parts = [f"{spec.title} {fmt_iqm(arms['drlhp'])} ({len(arms['drlhp'].records)} run"
             f"{'s' * (len(arms['drlhp'].records) > 1)}, {len(arms['true_reward'].records)} on the true reward)"
             for spec, arms in games]
    budgets = sorted({spec.label_budget for spec, _ in games})
    steps = sorted({spec.step for spec, _ in games})
    return (f"On Atari, with the defaults and {' or '.join(f'{b:,}' for b in budgets)} synthetic labels, the "
            "interquartile mean of drlhp's improvement over a random policy at "
            f"{' or '.join(f'{n // 1_000_000}M' for n in steps)} agent steps, as a share of the true reward's (a "
            f"range is the lowest and highest run: all that a {CONFIDENCE * 100:g} % bootstrap interval over 4 runs "
            f"or fewer comes to): {'; '.join(parts)} ([Results](docs/results.md#atari-with-todays-defaults): every "
            "run, and the seeds still to run).")


def fallible_sentence(per_task: dict[str, dict[str, Arm]]) -> str:
    """The README's result for a fallible teacher: each task's IQM of each arm whose teacher errs."""
    parts = [f"{spec.title} {arm_title(name, arm.records, spec).removeprefix('drlhp, ')}: {fmt_iqm(arm)}"
             + (f" ({len(arm.records)} runs)" if len(arm.records) > 1 else "")
             for task, arms in per_task.items() for name, arm in arms.items()
             if (spec := TASKS[task]) and name not in ("drlhp", "true_reward", *spec.ab) and arm.records[0]["teacher"]]
    if not parts:
        return ("Every figure above comes from a perfect teacher: no run taught by a fallible one is recorded yet "
                "([Results](docs/results.md#a-fallible-teacher)).")
    return ("Taught by a fallible synthetic teacher (a share of its answers the wrong way round), drlhp's share of "
            "the true reward's improvement, as an interquartile mean over runs: "
            f"{'; '.join(parts)} ([Results](docs/results.md#a-fallible-teacher)).")


def scale_sentence(per_task: dict[str, dict[str, Arm]], task: str = "halfcheetah_sac") -> str:
    """The scale question: drlhp's runs (defaults, perfect teacher) against SAC on the true reward standardised as
    drlhp's reward is, seed by seed over the seeds both have (a seed's runs averaged), and what that says of drlhp's
    lead over the raw true reward."""
    arms = per_task.get(task, {})
    if "standardised-reward" not in arms or "drlhp" not in arms:
        return "Not run yet."

    def by_seed(arm: Arm) -> dict[int, float]:
        seeds = sorted({r["seed"] for r in arm.records})
        return {s: float(np.mean([v for r, v in zip(arm.records, arm.normalised) if r["seed"] == s])) for s in seeds}

    control, learned = by_seed(arms["standardised-reward"]), by_seed(arms["drlhp"])
    seeds = sorted(set(control) & set(learned))
    if not seeds:
        return "Not run on a seed that drlhp's runs have yet."
    above = [s for s in seeds if learned[s] > control[s]]
    lifted = sum(control[s] > 1 for s in seeds)
    over_raw = float(np.mean([learned[s] - 1 for s in seeds]))  # 1: the raw true reward's mean
    over_control = float(np.mean([learned[s] - control[s] for s in seeds]))
    if not above:
        verdict = "drlhp's lead over the raw true reward is the scale's: standardised, the true reward does as well"
    elif len(above) == len(seeds) and min(learned[s] for s in seeds) > max(control[s] for s in seeds):
        verdict = "the learned reward itself, not only its scale, gives SAC more than the true reward does"
    else:
        verdict = (f"drlhp's mean lead shrinks from {over_raw:+.2f} over the raw true reward to {over_control:+.2f} "
                   "over the control: the scale accounts for part of it, and these seeds do not tell the rest from "
                   "their spread")
    return (f"Seed by seed ({and_list([str(s) for s in seeds])}), as shares of the raw true reward's improvement: "
            f"drlhp with {TASKS[task].label_budget:,} perfect labels {and_list([f'{learned[s]:.2f}' for s in seeds])}, "
            f"the standardised true reward {and_list([f'{control[s]:.2f}' for s in seeds])}. Standardising alone "
            f"lifts SAC above its raw true reward on {lifted} of {len(seeds)} seeds; drlhp ends above the "
            f"standardised control on {len(above)} of {len(seeds)} (drlhp's minus the control's: "
            f"{and_list([f'{learned[s] - control[s]:+.2f}' for s in seeds])}). Read "
            f"against the control, {verdict}.")


#: The curves table's late window: the episodes in the last fifth of the task's steps.
LATE = 0.2
#: The curves table's episode lengths (Atari): the episodes in the first and in the last tenth of the steps.
EARLY_LATE_LENGTH = 0.1
RELABELLED = re.compile(r"relabelled the replay buffer (\d+) times in (\d+) s, +([\d.]+)% of this session's learning")


@dataclass
class Course:
    """What a run's curve did up to its task's step: the first agent step (and the labels used by then) at which its
    20-episode mean reached each of the task's milestones (None: never), its best 20-episode mean and where, the
    mean of its episodes in the last ``LATE`` of the steps, and its episodes' mean length in the first and last
    ``EARLY_LATE_LENGTH`` of them (None where the curve has no lengths), and the agent step of each episode that
    fell below the first milestone after the 20-episode mean had reached the second (a fall from a level held)."""
    reached: list[tuple[float, int | None, int | None]]
    best: float
    best_at: int
    late_mean: float
    lengths: tuple[float, float] | None
    falls: list[int]


def course(record: Record, spec: Task) -> Course:
    curve = record.curve()
    within = curve["agent_steps"] <= spec.step
    steps, returns, labels = (curve[k][within] for k in ("agent_steps", "true_episode_return", "labels"))
    window = min(WINDOW, len(returns))
    means = np.convolve(returns, np.ones(window) / window, mode="valid")  # the mean of each 20 episodes in a row
    ends = steps[window - 1:]  # ... at the step of the last of them
    reached = []
    for milestone in spec.milestones:
        hit = np.flatnonzero(means >= milestone)
        i = hit[0] + window - 1 if hit.size else None
        reached.append((milestone, None if i is None else int(steps[i]), None if i is None else int(labels[i])))
    best = int(np.argmax(means))
    late = returns[steps > (1 - LATE) * spec.step]
    rows = read_csv(record.folder / record["curve"])
    lengths = None
    if all(row.get("episode_length") for row in rows):
        length_steps = np.array([int(row["agent_steps"]) for row in rows])
        length = np.array([float(row["episode_length"]) for row in rows])
        early_cut, late_cut = EARLY_LATE_LENGTH * spec.step, (1 - EARLY_LATE_LENGTH) * spec.step
        lengths = (float(np.mean(length[length_steps <= early_cut])),
                   float(np.mean(length[(length_steps > late_cut) & (length_steps <= spec.step)])))
    falls = fall_steps(steps, returns, spec.milestones) if len(spec.milestones) > 1 else []
    return Course(reached, float(means[best]), int(ends[best]), float(np.mean(late)), lengths, falls)


def fall_steps(steps: np.ndarray, returns: np.ndarray, milestones: tuple[float, ...]) -> list[int]:
    """The agent step of each episode below the first milestone once the 20-episode mean had reached the second."""
    window = min(WINDOW, len(returns))
    means = np.convolve(returns, np.ones(window) / window, mode="valid")
    held = np.flatnonzero(means >= milestones[1])
    if not held.size:
        return []
    after = held[0] + window  # the episodes after the 20 whose mean first reached the level
    return [int(s) for s in steps[after:][returns[after:] < milestones[0]]]


def falls_cell(falls: list[int]) -> str:
    """A run's falls as the curve table gives them: ``0``, or ``12 (281k-292k)``."""
    if not falls:
        return "0"
    span = thousands(falls[0]) if len(falls) == 1 else f"{thousands(falls[0])}-{thousands(falls[-1])}"
    return f"{len(falls)} ({span})"


def relabelling(record: Record) -> str:
    """Relabelling's share of the run's learning, from the record's notes (the example's last line): the last
    session's only, where the run was resumed."""
    m = RELABELLED.search(record["notes"] or "")
    if m is None:
        return "—"
    times, seconds, share = m.groups()
    sessions = {row.get("session") for row in read_csv(record.folder / record["curve"])}
    last = f", its last of {len(sessions)} sessions" if len(sessions) > 1 else ""
    return f"{share} % ({int(times):,} in {int(seconds):,} s{last})"


def curves_table(per_task: dict[str, dict[str, Arm]], family: str) -> str:
    """Each main run's curve in figures, a row per arm and its runs in the main table's order: when each first
    reached each milestone (with its labels then), its best 20-episode mean, its mean over the last fifth of the
    steps; on Atari its episodes' length early and late, on SAC relabelling's share of its wall time."""
    tasks = [t for t, arms in per_task.items() if TASKS[t].family == family and "drlhp" in arms]
    if not tasks:
        return "No run with today's defaults recorded yet."
    show_lengths = family == "atari"
    show_relabelling = any(RELABELLED.search(r["notes"] or "") for t in tasks for arm in per_task[t].values()
                           for r in arm.records)
    header = ["task", "arm", "runs (seeds)", f"{WINDOW}-episode mean first at or above each milestone: agent step "
              "(labels used), each run", f"best {WINDOW}-episode mean (at), each run",
              f"mean of the episodes in the last {LATE * 100:g} % of the steps, each run"]
    if show_lengths:
        header.append(f"episode length in agent steps, first → last {EARLY_LATE_LENGTH * 100:g} % of the steps, "
                      "each run")
    if show_relabelling:
        header.append("relabelling's share of learning's wall time, each run (the record's notes)")
    if family == "mujoco":
        header.append("falls: episodes below the first milestone once the 20-episode mean had reached the second "
                      "(agent steps), each run")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for task in tasks:
        spec = TASKS[task]
        for name, arm in per_task[task].items():
            courses = [course(r, spec) for r in arm.records]
            drlhp = arm.records[0]["arm"] == "drlhp"
            reached = "<br>".join(
                f"{milestone:,g}: " + "; ".join(
                    "never" if at is None else thousands(at) + (f" ({labels:,})" if drlhp else "")
                    for _, at, labels in (c.reached[i] for c in courses))
                for i, milestone in enumerate(spec.milestones))
            cells = [spec.title, arm_title(name, arm.records, spec),
                     f"{len(arm.records)} ({', '.join(str(r['seed']) for r in arm.records)})", reached,
                     "; ".join(f"{c.best:,.2f} ({thousands(c.best_at)})" for c in courses),
                     "; ".join(f"{c.late_mean:,.2f}" for c in courses)]
            if show_lengths:
                cells.append("; ".join("—" if c.lengths is None else f"{c.lengths[0]:,.0f} → {c.lengths[1]:,.0f}"
                                       for c in courses))
            if show_relabelling:
                shares = [relabelling(r) for r in arm.records]
                cells.append("—" if set(shares) == {"—"} else "; ".join(shares))
            if family == "mujoco":
                cells.append("; ".join(falls_cell(c.falls) for c in courses))
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets_sentence(per_task: dict[str, dict[str, Arm]], family: str) -> str:
    """Each task's IQM of drlhp's defaults against the target its issue set."""
    parts = []
    for task, arms in per_task.items():
        spec = TASKS[task]
        if spec.family != family or spec.target is None or "drlhp" not in arms:
            continue
        target, issue = spec.target
        iqm = arms["drlhp"].iqm
        verdict = "at or above" if round(iqm, 2) >= target else "below"
        parts.append(f"{spec.title} {iqm:.2f}, {verdict} {target:g} ({issue})")
    return f"drlhp's IQM against its target: {'; '.join(parts)}." if parts else ""


def movingdot_sentence(records: list[Record], per_task: dict[str, dict[str, Arm]], link: str) -> str:
    """The random-target MovingDot's result in words: today's defaults' runs if any are recorded, else the latest
    recorded drlhp runs, named by record, with what they changed against today's defaults (``link``: where the
    page sends the reader for more)."""
    task, spec = "moving_dot_random_target", TASKS["moving_dot_random_target"]
    arms = per_task.get(task, {})

    def runs_in_words(rs: list[Record], scores: list[float]) -> str:
        return (f"{and_list([f'{v:.2f}' for v in scores])} (seed{'s' * (len(rs) > 1)} "
                f"{and_list([str(r['seed']) for r in rs])}: {', '.join(f'`{r.name}`' for r in rs)})")

    against = ("" if "true_reward" not in arms else
               f", against {runs_in_words(arms['true_reward'].records, list(arms['true_reward'].scores))} on the "
               "true reward")
    ended = f"after {spec.step // 1000:,}k agent steps (the mean of the last {WINDOW} episodes)"
    if "drlhp" in arms:
        drlhp = arms["drlhp"]
        return (f"With today's defaults and {spec.label_budget:,} synthetic labels, PPO ended at "
                f"{runs_in_words(drlhp.records, list(drlhp.scores))} {ended}{against}; a median of "
                f"{hours([r['wall_time_s'] for r in drlhp.records])} a run ({link}).")
    runs = [r for r in records if r["task"] == task and r["arm"] == "drlhp" and r["agent_steps"] >= REACHED * spec.step]
    if not runs:
        return f"No drlhp run of it is recorded yet ({link})."
    latest = max(r["date"] for r in runs)
    runs = sorted((r for r in runs if r["date"] == latest), key=lambda r: r["seed"])
    changed = " ".join(sorted({r["description"].rstrip(".") for r in runs}))
    return (f"No run of today's defaults is recorded yet. The latest drlhp runs ({latest}, {spec.label_budget:,} "
            f"synthetic labels) ended at {runs_in_words(runs, [score(r, spec.step) for r in runs])} {ended}"
            f"{against}; but they ran the settings of their day, not today's defaults: {changed[0].lower()}"
            f"{changed[1:]} ({link}).")


def mainjob_sentence(records: list[Record]) -> str:
    """What the README's main job (``examples/moving_dot_ppo.py``, as it is run: no arguments but the seed) takes and
    prints, from its drlhp records with today's defaults: the minutes, and the true episode return of the first and
    the last ``WINDOW`` episodes, as means over the runs."""
    runs = sorted((r for r in records if r["task"] == "moving_dot" and r["arm"] == "drlhp" and r["defaults"]),
                  key=lambda r: r["seed"])
    if not runs:
        return "No run of the main job is recorded yet."
    first = np.mean([r.curve()["true_episode_return"][:WINDOW].mean() for r in runs])
    last = np.mean([r.curve()["true_episode_return"][-WINDOW:].mean() for r in runs])
    seconds = [r["wall_time_s"] for r in runs]
    minutes = f"{math.floor(min(seconds) / 60)}–{math.ceil(max(seconds) / 60)}"
    return (f"After the install it takes about {minutes.removeprefix('0–')} minutes on 2 CPU cores and prints the "
            f"true episode return rising from about {first:.0f} to about {last:.0f} (its first and last {WINDOW} "
            f"episodes; seed{'s' * (len(runs) > 1)} {and_list([str(r['seed']) for r in runs])}, "
            f"{and_list([f'{s:.0f} s' for s in seconds])}: {', '.join(f'`{r.name}`' for r in runs)}), and the "
            "labels it used.")


def final_val_accuracy(record: Record) -> str:
    rows = record.metrics()
    return f"{float(rows[-1]['val_accuracy']):.3f}" if rows else "—"


def tables(records: list[Record]) -> dict[str, str]:
    """The generated blocks of the pages (``PAGES``), by marker name."""
    per_task = {t: a for t in TASKS if (a := results(records, t)) is not None}
    randoms = "; ".join(f"{s.title} {s.random_return:g} ({s.random_source})" for t, s in TASKS.items()
                        if t in per_task)
    return {
        # README.md's
        "readme": readme_sentence(per_task),
        "fallible": fallible_sentence(per_task),
        "mainjob": mainjob_sentence(records),  # and docs/getting-started.md's
        "readmemovingdot": movingdot_sentence(records, per_task,
                                              "[Results](docs/results.md#movingdot-with-the-target-at-random)"),
        # docs/results.md's
        "atari": "\n\n".join(filter(None, [main_table(per_task, "atari", note=True),
                                            aggregate_table(over_games(per_task), per_task),
                                            targets_sentence(per_task, "atari")])),
        "ataricurves": curves_table(per_task, "atari"),
        "ending": ending_table(),
        "movingdot": "\n\n".join(filter(None, [
            main_table(per_task, "movingdot") if "drlhp" in per_task.get("moving_dot_random_target", {}) else "",
            movingdot_sentence(records, per_task,
                               "its runs with other settings are in [the levers' table]"
                               "(history.md#every-lever-run-by-run)")])),
        "mujoco": "\n\n".join(filter(None, [main_table(per_task, "mujoco"), targets_sentence(per_task, "mujoco")])),
        "mujococurves": curves_table(per_task, "mujoco"),
        "scale": scale_sentence(per_task),
        # docs/datasets.md's
        "offline": "\n\n".join(filter(None, [main_table(per_task, "offline"), targets_sentence(per_task, "offline")])),
        "levers": levers_table(records, per_task),  # docs/history.md's
        "labelnoise": label_noise_table(),
        "drift": drift_table(),  # docs/reward-model.md's
        "perlabel": steps_per_label_table(),  # docs/reward-model.md's
        "terms": reward_terms_table(),  # docs/off-policy.md's
        "lives": lives_sentence(),  # docs/examples.md's
        # docs/labelling.md's
        "pace": pace_sentence(),
        "random": f"Random policies' returns (0 on the normalised scale): {randoms}.",
    }


BLOCK = re.compile(r"(<!-- report:(?P<name>[a-z]+) -->\n)(?P<body>.*?)(<!-- /report -->)", re.S)


def blocks_in(text: str) -> dict[str, str]:
    return {m.group("name"): m.group("body").rstrip("\n") for m in BLOCK.finditer(text)}


def docs_blocks() -> dict[str, str]:
    """The generated blocks as the pages have them now."""
    return {name: body for page in PAGES for name, body in blocks_in(page.read_text()).items()}


def write_blocks(blocks: dict[str, str]) -> None:
    missing = set(blocks) - set(docs_blocks())
    if missing:
        raise SystemExit(f"error: no page has a <!-- report:NAME --> ... <!-- /report --> block for {sorted(missing)}")
    for page in PAGES:
        text = page.read_text()
        page.write_text(BLOCK.sub(lambda m: m.group(1) + blocks[m.group("name")] + "\n" + m.group(4), text))
        print(f"wrote {page.relative_to(ROOT)}")


def draw(records: list[Record]) -> list[Path]:
    """Per task: each arm's curves, every run thin, their mean bold (the 20-episode mean at each step)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for task, spec in TASKS.items():
        runs = main_runs(records, task)
        if not runs["drlhp"] or not runs["true_reward"]:
            continue
        steps = np.linspace(spec.step / 200, spec.step, 200)
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for (arm, rs), color in zip(runs.items(), [f"C{i}" for i in range(10)]):
            if not rs:
                continue
            curves = np.array([smoothed_at(r, steps) for r in rs])
            for curve in curves:
                ax.plot(steps, curve, color=color, lw=0.7, alpha=0.45)
            name = {"drlhp": "drlhp (synthetic labels)", "true_reward": "the true reward"}.get(  # the same agent
                arm, arm_title(arm, rs, spec).replace("`", ""))
            runs_ = f"{len(rs)} run{'s' * (len(rs) > 1)}"
            with warnings.catch_warnings():  # steps before every run's first episode: NaN, drawn as a gap
                warnings.simplefilter("ignore", RuntimeWarning)
                mean = np.nanmean(curves, axis=0)
            ax.plot(steps, mean, color=color, lw=2.2, label=f"{name}: mean of {runs_}")
        ax.axhline(spec.random_return, color="grey", lw=0.8, ls=":", label="random policy")
        ax.set_xlabel("IQL's gradient steps" if spec.family == "offline" else "agent steps")
        ax.set_ylabel(f"true episode return (mean of the last {WINDOW} episodes)")
        levers = "".join(f" and --{variant}" for variant in spec.ab if runs[variant])
        others = " and other teachers or budgets" if len(runs) > 2 + len(spec.ab) else ""
        title = f"{spec.title}: today's defaults{levers}{others}, every run thin, the mean bold"
        ax.set_title(textwrap.fill(title, 90), fontsize=10)
        ax.legend(loc="upper left", fontsize=8)
        fig.tight_layout()
        path = IMAGES / f"results-{task.replace('_', '-')}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    return paths


def smoothed_at(record: Record, steps: np.ndarray) -> np.ndarray:
    """The run's 20-episode mean true return at each of ``steps`` (NaN before its first episodes)."""
    curve = record.curve()
    ends = np.searchsorted(curve["agent_steps"], steps, side="right")
    returns = curve["true_episode_return"]
    return np.array([np.mean(returns[max(0, e - WINDOW):e]) if e else np.nan for e in ends])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write-docs", action="store_true", help="write the tables into docs/results.md, "
                                                                 "docs/history.md and the README, and draw the "
                                                                 "figures into docs/images/")
    group.add_argument("--check", action="store_true", help="exit 1 if the pages' tables are not the records'")
    args = parser.parse_args()
    records = read_records()
    blocks = tables(records)
    if args.check:
        stale = sorted(name for name, body in blocks.items() if docs_blocks().get(name) != body)
        if stale:
            sys.exit(f"the generated blocks {stale} are not what the records give: run python "
                     "benchmarks/report/results_report.py --write-docs")
        print("the pages' tables are the records'")
        return
    for name, body in blocks.items():
        print(f"## {name}\n\n{body}\n")
    if args.write_docs:
        write_blocks(blocks)
        for path in draw(records):
            print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
