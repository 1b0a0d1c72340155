"""The results page's tables are the run records', computed as documented: scores, normalisation, IQM."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.report import measure_logs, results_report
from benchmarks.report.run_records import KEYS, RESULTS, read_records, write_record

pytest.importorskip("rliable")
ROOT = Path(__file__).resolve().parent.parent


def test_the_results_pages_tables_are_what_the_records_give():
    in_docs = results_report.docs_blocks()
    generated = results_report.tables(read_records())
    assert set(in_docs) == set(generated)
    for name, body in generated.items():
        assert in_docs[name] == body, f"the pages' {name} block is not the records': run " \
                                      "python -m benchmarks.report.results_report --write-docs"


def test_the_same_scores_give_the_same_interval_whatever_numpys_global_generator_has_done():
    scores = np.array([[0.73], [0.67], [1.26], [1.10], [1.05]])
    intervals = set()
    for seed in range(4):  # other code drew from the global generator before the report: each its own way
        np.random.seed(seed)
        np.random.random(seed)
        before = np.random.get_state()[1].copy(), np.random.get_state()[2]
        intervals.add(results_report.iqm_with_interval(scores)[1])
        after = np.random.get_state()
        assert (after[1] == before[0]).all() and after[2] == before[1]  # ... and the report gives it back as it was
    assert len(intervals) == 1


def test_every_run_folder_the_docs_name_has_a_record_and_its_curve():
    named = set()
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        named |= set(re.findall(r"benchmarks/results/([a-z_]+)/([A-Za-z0-9_.-]+)/", page.read_text()))
    named = {(task, folder) for task, folder in named if folder not in ("policies", "label_noise", "*")}  # measures
    assert len(named) >= 10
    for task, folder in sorted(named):
        assert (ROOT / "benchmarks" / "results" / task / folder / "run.json").is_file(), f"{task}/{folder}"
    records = read_records()  # checks that each names a curve that is there
    assert {r.name for r in records} >= {f"{t}/{f}" for t, f in named}


def record(root: Path, name: str, arm: str, seed: int, returns: list[float], steps: int = 1_000_000,
           task: str = "pong", **changes):
    """A record of ``task`` whose episodes end at even steps with ``returns`` (the last ones at the end)."""
    data = {**{key: None for key in KEYS}, "game": task, "task": task, "arm": arm, "seed": seed,
            "label_budget": 3000 if arm == "drlhp" else None, "labels": 3000 if arm == "drlhp" else None,
            "agent_steps": steps, "defaults": True, "variant": "defaults", "description": "", "date": "2026-11-27",
            "wall_time_s": 60.0, "teacher": {} if arm == "drlhp" else None, **changes}
    at = np.linspace(steps / len(returns), steps, len(returns)).astype(int)
    rows = [{"run": arm, "agent_steps": s, "true_episode_return": r, "labels": 0, "wall_time_s": 1.0,
             "episode_length": 1, "session": 0} for s, r in zip(at, returns)]
    write_record(root / task / name, data, rows)


def test_scores_are_normalised_by_the_true_rewards_mean_and_aggregated_as_an_iqm(tmp_path):
    # The true reward's runs end at 7 and 11 (mean 9: 1.0); random is -21 (0.0). drlhp's last 20 episodes: 5 runs.
    record(tmp_path, "true_reward_seed0", "true_reward", 0, [-21.0] * 30 + [7.0] * 20)
    record(tmp_path, "true_reward_seed1", "true_reward", 1, [-21.0] * 30 + [11.0] * 20)
    ends = [-21.0, -6.0, 9.0, 9.0, 39.0]  # normalised 0, 0.5, 1, 1, 2
    for seed, end in enumerate(ends):
        record(tmp_path, f"drlhp_seed{seed}_3000labels", "drlhp", seed, [-21.0] * 30 + [end] * 20)
    # Not in the main table: a lever, and a run that stopped at half the steps.
    record(tmp_path, "drlhp_seed0_3000labels_median-centre", "drlhp", 0, [0.0] * 50, defaults=False,
           variant="median-centre", description="the reward centred on its median")
    record(tmp_path, "drlhp_seed9_3000labels", "drlhp", 9, [30.0] * 50, steps=500_000)
    records = read_records(tmp_path)

    arms = results_report.results(records, "pong")
    assert [r["seed"] for r in arms["drlhp"].records] == [0, 1, 2, 3, 4]
    np.testing.assert_allclose(arms["drlhp"].normalised, [0.0, 0.5, 1.0, 1.0, 2.0])
    np.testing.assert_allclose(arms["true_reward"].normalised, [28 / 30, 32 / 30])
    assert arms["drlhp"].iqm == pytest.approx((0.5 + 1.0 + 1.0) / 3)  # the middle half of five runs
    low, high = arms["drlhp"].interval
    assert 0.0 <= low < arms["drlhp"].iqm < high <= 2.0

    blocks = results_report.tables(records)
    assert "**0.83**, 95 % CI [" in blocks["atari"] and "| 5 (0, 1, 2, 3, 4) |" in blocks["atari"]
    levers = blocks["levers"].splitlines()[2:]
    assert len(levers) == 2 and "the reward centred on its median" in levers[0]
    assert "| 0.00 | 0.70 |" in levers[0]  # 0 against random -21 and the mean 9
    assert "30.00 (at 500k) | 1.70 |" in levers[1]


def test_a_game_with_fewer_seeds_waits_out_of_the_aggregate_until_its_seeds_make_a_matrix_as_large(tmp_path):
    def pair(task: str, seed: int, drlhp_end: float) -> None:  # the true reward's runs end at 100: 1.0
        record(tmp_path, f"true_reward_seed{seed}", "true_reward", seed, [0.0] * 30 + [100.0] * 20, task=task)
        record(tmp_path, f"drlhp_seed{seed}_3000labels", "drlhp", seed, [0.0] * 30 + [drlhp_end] * 20, task=task)

    def aggregate() -> tuple[list[str], list[int], dict[str, tuple], str]:
        records = read_records(tmp_path)
        per_task = {t: arms for t in ("pong", "breakout", "seaquest") if (arms := results_report.results(records, t))}
        aggregate = results_report.over_games(per_task)
        assert aggregate is not None
        return *aggregate, results_report.aggregate_table(aggregate, per_task)

    for seed in range(3):
        pair("pong", seed, 100.0)  # 1.0
        pair("breakout", seed, 100.0)
    pair("seaquest", 0, results_report.TASKS["seaquest"].random_return)  # 0.0

    games, seeds, by_arm, text = aggregate()  # 2 games x 3 seeds, not 3 games x seed 0
    assert (games, seeds) == (["pong", "breakout"], [0, 1, 2])
    assert by_arm["drlhp"][0] == pytest.approx(1.0)
    assert text.startswith("Over the games (Pong, Breakout; seeds 0, 1, 2,") and "Not yet in it: Seaquest" in text

    pair("seaquest", 1, results_report.TASKS["seaquest"].random_return)  # 3 games x 2 seeds: as many cells
    games, seeds, by_arm, text = aggregate()
    assert (games, seeds) == (["pong", "breakout", "seaquest"], [0, 1])
    assert by_arm["drlhp"][0] == pytest.approx(0.75)  # 1, 1, 0 per seed: the middle half of six is 0, 1, 1, 1
    assert "Not yet" not in text


def test_a_tasks_ab_lever_is_an_arm_of_its_own_beside_the_defaults_and_leaves_the_levers_table(tmp_path):
    task, random = "hopper_sac", results_report.TASKS["hopper_sac"].random_return
    assert "no-relabel" in results_report.TASKS[task].ab
    sac = {"task": task, "steps": 300_000, "label_budget": 700, "labels": 700}
    record(tmp_path, "true_reward_seed0", "true_reward", 0, [random] * 30 + [1000.0] * 20, **{**sac,
           "label_budget": None, "labels": None})
    record(tmp_path, "drlhp_seed0_700labels", "drlhp", 0, [random] * 30 + [1000.0] * 20, **sac)
    for seed, end in enumerate([0.0, 0.5, 0.25]):  # normalised
        record(tmp_path, f"drlhp_seed{seed}_700labels_no-relabel", "drlhp", seed,
               [random] * 30 + [random + end * (1000.0 - random)] * 20, defaults=False, variant="no-relabel",
               description="the command adds --no-relabel", **sac)
    record(tmp_path, "drlhp_seed0_700labels_no-ensemble", "drlhp", 0, [0.0] * 50, defaults=False,
           variant="no-ensemble", description="the command adds --no-ensemble", **sac)
    records = read_records(tmp_path)

    arms = results_report.results(records, task)
    assert list(arms) == ["drlhp", "true_reward", "no-relabel"]  # a lever without runs has no arm
    assert [r["seed"] for r in arms["no-relabel"].records] == [0, 1, 2]
    np.testing.assert_allclose(arms["no-relabel"].normalised, [0.0, 0.5, 0.25])
    assert arms["no-relabel"].iqm == pytest.approx(0.25)
    blocks = results_report.tables(records)
    row = next(line for line in blocks["mujoco"].splitlines() if "no-relabel" in line)
    assert "drlhp with `--no-relabel`, ≤ 700 labels | 3 (0, 1, 2) |" in row and "**0.25**, range [0.00, 0.50]" in row
    levers = blocks["levers"].splitlines()[2:]
    assert len(levers) == 1 and "--no-ensemble" in levers[0]  # another lever stays a lever


def test_each_teacher_and_label_budget_is_an_arm_of_its_own_and_the_readme_says_what_a_fallible_one_gives(tmp_path):
    task, random = "halfcheetah_sac", results_report.TASKS["halfcheetah_sac"].random_return
    sac = {"task": task, "steps": 300_000}
    true = {**sac, "label_budget": None, "labels": None}

    def ends(normalised: float) -> list[float]:
        return [random] * 30 + [random + normalised * (1000.0 - random)] * 20

    record(tmp_path, "true_reward_seed0", "true_reward", 0, ends(1.0), **true)
    record(tmp_path, "true_reward_seed0_standardised-reward", "true_reward", 0, ends(1.5), defaults=False,
           variant="standardised-reward", **true)
    record(tmp_path, "drlhp_seed0_700labels", "drlhp", 0, ends(1.2), **sac, label_budget=700, labels=700)
    for seed, end in enumerate([0.8, 0.9, 0.7]):
        record(tmp_path, f"drlhp_seed{seed}_200labels_mistake-rate-0.1", "drlhp", seed, ends(end), **sac,
               label_budget=200, labels=200, teacher={"mistake_rate": 0.1})
    record(tmp_path, "drlhp_seed0_700labels_mistake-rate-0.3", "drlhp", 0, ends(0.5), **sac, label_budget=700,
           labels=700, teacher={"mistake_rate": 0.3})
    # A lever taught by the fallible teacher is a lever, not the A/B arm of the perfect one.
    record(tmp_path, "drlhp_seed0_200labels_mistake-rate-0.1_no-relabel", "drlhp", 0, ends(0.1), **sac,
           label_budget=200, labels=200, teacher={"mistake_rate": 0.1}, defaults=False, variant="no-relabel")
    records = read_records(tmp_path)

    arms = results_report.results(records, task)
    assert list(arms) == ["drlhp", "true_reward", "standardised-reward", "200labels_mistake-rate-0.1",
                          "700labels_mistake-rate-0.3"]
    np.testing.assert_allclose(arms["200labels_mistake-rate-0.1"].normalised, [0.8, 0.9, 0.7])
    np.testing.assert_allclose(arms["standardised-reward"].normalised, [1.5])  # scored against the true reward's
    np.testing.assert_allclose(arms["drlhp"].normalised, [1.2])
    blocks = results_report.tables(records)
    rows = blocks["mujoco"].splitlines()
    assert any("| drlhp, ≤ 200 labels, teacher: mistake rate 0.1 | 3 (0, 1, 2) |" in row for row in rows)
    assert any("| true reward with `--standardised-reward` | 1 (0) |" in row and "1.50" in row for row in rows)
    levers = blocks["levers"].splitlines()[2:]
    assert len(levers) == 1 and "mistake-rate-0.1_no-relabel" in levers[0]
    sentence = blocks["fallible"]
    assert ("HalfCheetah (SAC) ≤ 200 labels, teacher: mistake rate 0.1: **0.80**, range [0.70, 0.90] (3 runs)"
            in sentence and "mistake rate 0.3: **0.50** (one run)" in sentence)
    assert "no run taught by a fallible one" in results_report.tables(records[:3])["fallible"]


@pytest.mark.parametrize("learned, control, verdict", [
    ([1.3, 1.1], [1.1, 1.2], "drlhp ends above the standardised control on 1 of 2 (drlhp's minus the control's: "
                             "+0.20 and -0.10). Read against the control, drlhp's mean lead shrinks from +0.20 over "
                             "the raw true reward to +0.05 over the control"),
    ([1.3, 1.4], [1.1, 1.2], "the learned reward itself, not only its scale"),
    ([1.1, 1.0], [1.2, 1.3], "drlhp's lead over the raw true reward is the scale's"),
])
def test_the_scale_sentence_reads_drlhp_against_the_standardised_true_reward_seed_by_seed(tmp_path, learned, control,
                                                                                        verdict):
    task, random = "halfcheetah_sac", results_report.TASKS["halfcheetah_sac"].random_return
    sac, true = {"task": task, "steps": 300_000}, {"task": task, "steps": 300_000, "label_budget": None, "labels": None}

    def ends(normalised: float) -> list[float]:
        return [random] * 30 + [random + normalised * (1000.0 - random)] * 20

    for seed in (0, 1):
        record(tmp_path, f"true_reward_seed{seed}", "true_reward", seed, ends(1.0), **true)
        record(tmp_path, f"drlhp_seed{seed}_700labels", "drlhp", seed, ends(learned[seed]), **sac, label_budget=700,
               labels=700)
        record(tmp_path, f"true_reward_seed{seed}_standardised-reward", "true_reward", seed, ends(control[seed]),
               defaults=False, variant="standardised-reward", **true)
    record(tmp_path, "drlhp_seed2_700labels", "drlhp", 2, ends(2.0), **sac, label_budget=700, labels=700)
    records = read_records(tmp_path)
    sentence = results_report.tables(records)["scale"]
    assert sentence.startswith("Seed by seed (0 and 1)")  # seed 2 has no control run: left out
    assert f"700 perfect labels {learned[0]:.2f} and {learned[1]:.2f}" in sentence
    assert f"the standardised true reward {control[0]:.2f} and {control[1]:.2f}" in sentence
    assert verdict in sentence
    without_control = [r for r in records if r["variant"] != "standardised-reward"]
    assert results_report.tables(without_control)["scale"] == "Not run yet."


def test_the_offline_label_noise_table_is_each_logs_summary(tmp_path):
    log = tmp_path / "hopper_sac" / "label_noise" / "label_noise.log"
    log.parent.mkdir(parents=True)
    log.write_text("       teacher seed  variant  r_disc\n       0.3:700    0  defaults  0.5\n\n"
                   "mean over the seeds [lowest, highest]\n"
                   "       0.3:700             defaults r_disc 0.931 [0.916, 0.945]  r_100 0.917 [0.906, 0.928]\n")
    rows = measure_logs.label_noise_table(tmp_path).splitlines()[2:]
    assert rows == ["| Hopper (SAC) | 0.3 | 700 | defaults | 0.931 [0.916, 0.945] | 0.917 [0.906, 0.928] | — | — | — "
                    "| — |"]
    assert measure_logs.label_noise_table(tmp_path / "none") == "Not measured yet."


def test_the_offline_label_noise_table_counts_the_seeds_a_lever_beat_the_defaults_on(tmp_path):
    log = tmp_path / "hopper_sac" / "label_noise" / "label_noise.log"
    log.parent.mkdir(parents=True)
    log.write_text("       teacher seed              variant     r_disc  noise_p left_out  flipped\n"
                   "       0.3:700    0             defaults      0.90    0.100        0        0\n"
                   "       0.3:700    1             defaults      0.95    0.100        0        0\n"
                   "       0.3:700    0     label-filter-0.1      0.93    0.100      102        0\n"
                   "       0.3:700    1     label-filter-0.1      0.94    0.100      152        0\n\n"
                   "mean over the seeds [lowest, highest]\n"
                   "       0.3:700     label-filter-0.1 r_disc 0.935 [0.930, 0.940]  r_100 0.9 [0.9, 0.9]\n")
    rows = measure_logs.label_noise_table(tmp_path).splitlines()[2:]
    assert rows == ["| Hopper (SAC) | 0.3 | 700 | label-filter-0.1 | 0.935 [0.930, 0.940] | 0.9 [0.9, 0.9] | 1 of 2 | "
                    "0.1 | 102-152 | 0 |"]


def test_the_drift_table_is_each_logs_rows_with_its_command_and_commit(tmp_path):
    log = tmp_path / "hopper_sac" / "reward_drift.log"
    log.parent.mkdir(parents=True)
    log.write_text("# python -m benchmarks.experiments.reward_drift RUN --out X\n# commit abc; checkpoints every 1500\n"
                   "variant change_per_checkpoint episode_rho l2_lowest l2_highest val_accuracy_at_end\n"
                   "defaults 0.152 [0.092, 0.208] 0.985 [0.981, 0.989] 0.0438 0.333 0.800\n")
    table, _, source = measure_logs.drift_table(tmp_path).partition("\n\n")
    assert table.splitlines()[2:] == ["| Hopper (SAC) | defaults | 0.152 [0.092, 0.208] | 0.985 [0.981, 0.989] | "
                                      "0.0438-0.333 | 0.800 |"]
    assert source == ("Hopper (SAC): `python -m benchmarks.experiments.reward_drift RUN --out X` (commit abc; "
                      "checkpoints every 1500).")
    assert measure_logs.drift_table(tmp_path / "none") == "Not measured yet."


def test_the_reward_model_pages_words_on_the_drift_hold_for_the_log():
    page = " ".join((ROOT / "docs" / "reward-model.md").read_text().split())
    rows = {line.split()[0]: line.replace(", ", ",").split() for line in
            (RESULTS / "hopper_sac" / "reward_drift.log").read_text().splitlines()[3:]}

    def change(variant: str) -> tuple[float, float, float]:
        low, high = rows[variant][2].strip("[]").split(",")
        return float(rows[variant][1]), float(low), float(high)

    both, alone = "adaptive-l2-factor-1.05-weight-average-0.9999", ["adaptive-l2-factor-1.05", "weight-average-0.9999"]
    assert "moved a step's reward less than the defaults at every checkpoint kept" in page
    assert change(both)[2] < change("defaults")[1]
    assert [v for v in rows if v != "defaults" and change(v)[2] < change("defaults")[1]] == [both]
    assert "either alone moved it less in the median" in page
    assert all(change(v)[0] < change("defaults")[0] for v in alone)


@pytest.mark.parametrize("runs", [1, 2, 3, 4, 5, 6])
def test_over_4_runs_or_fewer_the_bracket_is_the_runs_range_and_is_called_so(runs):
    """What the page's "How to read the tables" says: a 95 % bootstrap interval over 4 runs or fewer is exactly their
    range, so the tables call it one; from 5 runs on it lies inside it."""
    rng = np.random.default_rng(runs)
    for _ in range(3):
        normalised = rng.normal(1.0, 0.3, runs)
        iqm, interval = results_report.iqm_with_interval(normalised[:, None])
        arm = results_report.Arm([None] * runs, normalised, normalised, iqm, interval)  # type: ignore[list-item]
        assert results_report.is_range(arm) == (runs <= 4)
        text = results_report.fmt_iqm(arm)
        if runs == 1:
            assert text == f"**{iqm:.2f}** (one run)"
        else:
            what = "range" if runs <= 4 else "95 % CI"
            assert text == f"**{iqm:.2f}**, {what} [{interval[0]:.2f}, {interval[1]:.2f}]"
    assert 1 / 3**3 > (1 - results_report.CONFIDENCE) / 2  # the page's "1 in 27 of 3 runs"


def test_the_curves_table_gives_each_runs_milestones_best_and_late_mean(tmp_path):
    # Episodes every 10k steps, 100 in all; returns rise by 1 an episode from -21: the 20-episode mean reaches -20
    # at the 20th episode (mean -11.5 there), 0 at the 31st (mean -0.5: no; the 32nd: 0.5), 10 at the 42nd.
    returns = [-21.0 + i for i in range(100)]
    record(tmp_path, "true_reward_seed0", "true_reward", 0, returns)
    record(tmp_path, "drlhp_seed0_3000labels", "drlhp", 0, [-21.0] * 100)
    records = read_records(tmp_path)
    per_task = {"pong": results_report.results(records, "pong")}
    spec = results_report.TASKS["pong"]
    c = results_report.course(per_task["pong"]["true_reward"].records[0], spec)
    steps = np.linspace(10_000, 1_000_000, 100).astype(int)
    assert [m for m, _, _ in c.reached] == list(spec.milestones) == [-20, 0, 10]
    assert [at for _, at, _ in c.reached] == [steps[19], steps[31], steps[41]]
    assert c.best == pytest.approx(np.mean(returns[-20:])) and c.best_at == steps[-1]
    assert c.late_mean == pytest.approx(np.mean(returns[80:]))  # the episodes after 800k
    rows = results_report.curves_table(per_task, "atari").splitlines()
    assert rows[2].startswith("| Pong | drlhp, ≤ 3,000 labels | 1 (0) | -20: never<br>0: never<br>10: never |")
    assert "| -20: 200k<br>0: 320k<br>10: 420k |" in rows[3]


def test_the_ending_table_reads_the_log_and_the_recordings_it_names(tmp_path):
    from benchmarks.report.run_records import save_arrays

    policies = tmp_path / "benchmarks" / "results" / "seaquest" / "policies" / "drlhp_seed0"
    policies.mkdir(parents=True)
    episodes = np.repeat(np.arange(4), 25)  # 100 steps, 3 episodes ended
    save_arrays(policies / "agent_1000000.npz", rewards=np.ones(100, np.float32), episodes=episodes)
    log = policies.parent / "ending.log"
    log.write_text(
        "$ python -m benchmarks.experiments.reward_signal measure "
        "benchmarks/results/seaquest/run/reward_predictor.ckpt "
        "--policies benchmarks/results/seaquest/policies/drlhp_seed0 --per-policy\n"
        "checkpoint      r_disc  typical  ending  ending_true\n"
        "benchmarks/results/seaquest/run/reward_predictor.ckpt  0.1  0.0  0.6  -0.1\n"
        "  agent_1000000                                         0.2  0.001  0.584  -0.138\n")
    rows = measure_logs.ending_table(log, tmp_path).splitlines()[2:]
    assert rows == ["| `seaquest/run/reward_predictor.ckpt` | drlhp_seed0 at 1,000k | 100 | 3 | 100 | 0.2 | 0.001 | "
                    "0.584 | -0.138 |"]
    assert measure_logs.ending_table(tmp_path / "none.log") == "Not measured yet."


def test_the_random_target_sentence_says_whether_its_runs_are_of_todays_defaults(tmp_path):
    task = "moving_dot_random_target"
    kw = {"task": task, "steps": 300_000, "label_budget": 1000, "labels": 1000}
    record(tmp_path, "true_reward_seed0", "true_reward", 0, [49.0] * 50, **{**kw, "label_budget": None,
                                                                          "labels": None})
    record(tmp_path, "drlhp_seed0_1000labels_hyperbolic", "drlhp", 0, [48.0] * 50, defaults=False,
           variant="hyperbolic", description="Labels on the hyperbolic schedule.", date="2026-11-24", **kw)
    records = read_records(tmp_path)
    per_task = {task: results_report.results(records, task)}
    text = results_report.movingdot_sentence(records, per_task, "LINK")
    assert text.startswith("No run of today's defaults is recorded yet. The latest drlhp runs (2026-11-24")
    assert "`moving_dot_random_target/drlhp_seed0_1000labels_hyperbolic`" in text
    assert "not today's defaults: labels on the hyperbolic schedule (LINK)." in text

    record(tmp_path, "drlhp_seed0_1000labels", "drlhp", 0, [47.0] * 50, **kw)
    records = read_records(tmp_path)
    per_task = {task: results_report.results(records, task)}
    text = results_report.movingdot_sentence(records, per_task, "LINK")
    assert text.startswith("With today's defaults and 1,000 synthetic labels, PPO ended at 47.00 (seed 0: "
                           "`moving_dot_random_target/drlhp_seed0_1000labels`)")
    assert "against 49.00 (seed 0: `moving_dot_random_target/true_reward_seed0`) on the true reward" in text


# -- every number in the results page's prose --------------------------------------------------------------------

NUMBER = re.compile(r"(?<![\w.#/])-?\d[\d,]*(?:\.\d+)?(?:[kM](?![A-Za-z]))?(?!\w)")
CITATION = re.compile(r"(?:et al\.,?|NeurIPS) (?:19|20)\d\d\b")  # a year that names a paper, not a figure


def prose_numbers(text: str) -> list[tuple[str, str, str]]:
    """(section, number, its line) for every number in a page's prose: not in a generated block, a code block or
    span, a comment, a link's target or a citation's year."""
    text = re.sub(r"<!-- report:[a-z]+ -->\n.*?<!-- /report -->", "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"`[^`]*`", "", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = CITATION.sub("", text)
    found, section = [], ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:]
        found += [(section, m.group(0).rstrip(","), line) for m in NUMBER.finditer(line)]
    return found


def steps(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000:,}k"


def checked_numbers() -> dict[str, dict[str, str]]:
    """By section of docs/results.md (the page-wide ones under ""): each number its prose may name, computed from the
    run records, their settings and the report's own definitions, with where it comes from."""
    tasks, records = results_report.TASKS, read_records()
    per_task = {t: a for t in tasks if (a := results_report.results(records, t)) is not None}

    def settings(task: str, key: str) -> set:
        """An example argument of the task's drlhp runs with today's defaults: one value for all of them."""
        values = {r["settings"]["example"][key] for r in per_task[task]["drlhp"].records}
        assert len(values) == 1, (task, key, values)
        return values

    def seeds(*names: str) -> set[str]:
        return {str(r["seed"]) for r in records if r["task"] in names}

    window, confidence = results_report.WINDOW, results_report.CONFIDENCE
    largest_range = max(n for n in range(1, 7) if all(results_report.is_range(results_report.Arm(
        [None] * n, x, x, *results_report.iqm_with_interval(x[:, None])))  # type: ignore[list-item]
        for x in (np.random.default_rng(n + i).normal(size=n) for i in range(3))))
    pong = tasks["pong"]
    base = per_task["pong"]["true_reward"]
    atari = [t for t in per_task if tasks[t].family == "atari"]
    [n_envs] = set.union(*(settings(t, "n_envs") for t in atari))
    [initial] = set.union(*(settings(t, "n_initial_prefs") for t in atari))
    [budget] = {tasks[t].label_budget for t in atari} | set.union(*(settings(t, "label_budget") for t in atari))
    [atari_steps] = {tasks[t].step for t in atari} | set.union(*(settings(t, "total_timesteps") for t in atari))
    rt = "moving_dot_random_target"
    rt_envs = {r["settings"]["example"]["n_envs"] for r in records if r["task"] == rt}
    sac = ["halfcheetah_sac", "hopper_sac"]
    fallible = per_task["halfcheetah_sac"]["200labels_mistake-rate-0.1"]
    scales = {r["settings"]["drlhp"]["reward_scale"] for t in sac for r in per_task[t]["drlhp"].records}
    noise_log = (RESULTS / "halfcheetah_sac" / "label_noise" / "label_noise.log").read_text()
    recordings = {p.stem.split("_")[1]
                  for p in (RESULTS / "seaquest" / "policies").glob("*/agent_*.npz")}
    return {
        "": {str(window): "WINDOW, the episodes in a score and in a curve's mean",
             steps(pong.step): "the Atari tasks' step",
             f"{results_report.normalise(base.scores.mean(), 'pong', base.scores.mean()):.1f}":
                 "the true reward's mean",
             f"{results_report.normalise(pong.random_return, 'pong', 9.0):.1f}": "a random policy",
             f"{confidence * 100:g}": "CONFIDENCE", f"{(1 - confidence) * 100 / 2:g}": "the interval's tails",
             str(largest_range): "the most runs whose interval is their range",
             str(largest_range + 1): "the fewest runs whose interval is inside their range",
             **({"1": "1 in 27", "27": "1 in 27: a resample of 3 runs all one run", "3": "3 runs; 3 times in 4"}
                if 1 / 3**3 > (1 - confidence) / 2 and 13 / 4**4 > (1 - confidence) / 2 else {})},
        "Atari with today's defaults": {str(n_envs): "the Atari records' n_envs",
                                        f"{initial:,}": "the Atari records' n_initial_prefs",
                                        f"{budget:,}": "the Atari label budget", steps(atari_steps): "their steps",
                                        **{s: "a seed of an Atari record" for s in seeds(*atari)},
                                        **{f"{r}k": "a Seaquest recording's agent steps"
                                           for r in (str(int(x) // 1000) for x in recordings)}},
        "Levers tried": {},
        "MovingDot with the target at random": {str(n): "the random-target records' n_envs" for n in rt_envs} | {
            steps(tasks[rt].step): "the random-target step", f"{tasks[rt].label_budget:,}": "its label budget"},
        "Continuous control from state (MuJoCo)": {f"{tasks[t].label_budget:,}": "the MuJoCo label budget"
                                                   for t in per_task if tasks[t].family == "mujoco"} | {
            steps(tasks[t].step): "a MuJoCo step" for t in per_task if tasks[t].family == "mujoco"},
        "A fallible teacher": {f"{fallible.records[0]['label_budget']:,}": "the fallible teacher's label budget",
                               f"{tasks['halfcheetah_sac'].label_budget:,}": "the perfect teacher's",
                               **{str(s): "a seed the fallible teacher has not run yet"
                                  for s in {r["seed"] for r in per_task["halfcheetah_sac"]["drlhp"].records}
                                  - {r["seed"] for r in fallible.records}},
                               **({"100": "r_100's horizon"} if " r_100 " in noise_log else {}),
                               **{labels: "a label count of label_noise.log"
                                  for labels in re.findall(r"^\s*[\d.]+:(\d+)\s", noise_log, re.M)},
                               **{f"{s:g}": "the SAC records' reward_scale" for s in scales}},
    }


def test_every_number_in_the_results_pages_prose_is_generated_or_checked_against_the_records():
    known = checked_numbers()
    found = prose_numbers(results_report.DOCS.read_text())
    assert len(found) >= 20  # the check sees the prose
    unchecked = [(section, number, line.strip()) for section, number, line in found
                 if number not in known[""] and number not in known.get(section, {})]
    assert not unchecked, (
        "numbers in docs/results.md's prose that no record or setting gives (generate them in "
        f"benchmarks/report/results_report.py, or check them in checked_numbers()): {unchecked}")
    headings = {line[3:] for line in results_report.DOCS.read_text().splitlines() if line.startswith("## ")}
    assert set(known) - {""} <= headings, "a section was renamed: follow it in checked_numbers()"


def test_every_script_the_records_modules_name_is_there():
    """run_records.py once named a report script that was not (atari_report.py): what they name, they have."""
    ours = {p.name for folder in ("benchmarks", "examples") for p in (ROOT / folder).rglob("*.py")}
    for module in ("run_records.py", "results_report.py"):
        text = (ROOT / "benchmarks" / "report" / module).read_text()
        named = set(re.findall(r"\b([a-z_]+\.py)\b", text))
        assert named, module
        assert not named - ours, f"{module} names {sorted(named - ours)}, which are not in benchmarks/ or examples/"
        modules = set(re.findall(r"\bbenchmarks(?:\.[a-z_]+)+", text))
        assert modules, module
        missing = sorted(m for m in modules if not (ROOT / (m.replace(".", "/") + ".py")).is_file())
        assert not missing, f"{module} names {missing}, which are not modules of benchmarks/"


def test_the_results_page_stays_under_300_lines():
    """A page a reviewer reads through: what is history goes to docs/history.md, what repeats a table goes."""
    n_lines = len(results_report.DOCS.read_text().splitlines())
    assert n_lines < 300, (f"docs/results.md has {n_lines} lines: move what is dated to docs/history.md, or let a "
                           "generated table say what prose repeats")


def test_the_pace_sentence_is_the_records_mean_and_spread_as_labels_an_hour(tmp_path):
    path = tmp_path / "pong_web.json"
    path.write_text(json.dumps({"clip": {"frames": 25, "fps": 20.0, "zoom": None}, "watch_seconds": 2.5,
                                "label_seconds": [2.5, 3.0, 3.5], "date": "2026-12-02"}))
    sentence = measure_logs.pace_sentence(path)
    assert "every 3.00 s on average (2.50-3.50 s over 3 labels, 2.50 s of it watching)" in sentence
    assert "at most 1,200 labels an hour, and 1,000 labels in no less than 50 minutes" in sentence
    assert measure_logs.pace_sentence(tmp_path / "none.json") == "Not measured yet."


def test_the_sac_sentences_in_words_hold_for_the_records():
    """What docs/results.md says in words of the SAC runs (no digits for the numbers' test to check), against the
    records: if a new record breaks a claim, the page must change with it."""
    text = " ".join(results_report.DOCS.read_text().split())
    records = read_records()
    arms = {t: results_report.results(records, t) for t in ("halfcheetah_sac", "hopper_sac")}

    def by_seed(task: str, arm: str) -> dict[int, float]:
        return {r["seed"]: float(s) for r, s in zip(arms[task][arm].records, arms[task][arm].scores)}

    assert "every drlhp run ended above every true-reward run" in text
    cheetah = arms["halfcheetah_sac"]
    assert min(cheetah["drlhp"].scores) > max(cheetah["true_reward"].scores)
    assert ("without it (`--no-relabel`), each seed of both tasks scored lower than the same seed relabelled, the "
            "arms' ranges do not overlap") in text
    for task in arms:
        relabelled, not_relabelled = by_seed(task, "drlhp"), by_seed(task, "no-relabel")
        assert set(not_relabelled) <= set(relabelled) and len(not_relabelled) >= 3
        assert all(not_relabelled[s] < relabelled[s] for s in not_relabelled)
        assert max(not_relabelled.values()) < min(relabelled.values())
    assert ("the relabelled runs' episodes fell from a level held (the falls column) more often than SAC's on the true "
            "reward, and the runs without relabelling least") in text
    spec = results_report.TASKS["hopper_sac"]
    falls = {arm: sum(len(results_report.course(r, spec).falls) for r in arms["hopper_sac"][arm].records)
             for arm in ("drlhp", "true_reward", "no-relabel")}
    assert falls["drlhp"] > falls["true_reward"] > falls["no-relabel"]


def test_a_fall_counts_the_episodes_below_the_first_milestone_after_the_mean_reached_the_second(tmp_path):
    # Pong's milestones are -20, 0, 10. Episodes every 10k steps: 20 at 5 (the mean reaches 0 at the 20th of them),
    # then 5 at -21 (falls: below -20), 70 at 5, 2 at -20.5. The dip before the mean first reached 0 is no fall.
    returns = [-21.0] * 3 + [5.0] * 20 + [-21.0] * 5 + [5.0] * 70 + [-20.5] * 2
    record(tmp_path, "true_reward_seed0", "true_reward", 0, returns)
    c = results_report.course(read_records(tmp_path)[0], results_report.TASKS["pong"])
    after = 3 + 20
    expected = [(i + 1) * 10_000 for i in [*range(after, after + 5), len(returns) - 2, len(returns) - 1]]
    assert c.falls == expected
    assert results_report.falls_cell(c.falls) == "7 (240k-1,000k)"
    assert results_report.falls_cell([]) == "0" and results_report.falls_cell([281_000]) == "1 (281k)"


def test_the_fallible_teacher_sentences_in_words_hold_for_the_records():
    """docs/results.md's words on the runs with one answer in ten wrong and 200 labels, against the records."""
    text = " ".join(results_report.DOCS.read_text().split())
    records = read_records()

    def courses(task: str, arm: str) -> dict[int, results_report.Course]:
        spec = results_report.TASKS[task]
        return {r["seed"]: results_report.course(r, spec) for r in results_report.results(records, task)[arm].records}

    def at(c: results_report.Course) -> list[float]:
        return [float("inf") if step is None else step for _, step, _ in c.reached]

    fallible = "200labels_mistake-rate-0.1"
    assert "HalfCheetah passed each milestone later on every seed" in text
    cheetah, cheetah_700 = courses("halfcheetah_sac", fallible), courses("halfcheetah_sac", "drlhp")
    assert len(cheetah) >= 3
    assert all(a > b for s in cheetah for a, b in zip(at(cheetah[s]), at(cheetah_700[s])))
    assert ("On Hopper the first seed passed the first milestone sooner but never the last; the second passed each "
            "later, then fell in one episode below zero for a dozen episodes") in text
    hopper, hopper_700 = courses("hopper_sac", fallible), courses("hopper_sac", "drlhp")
    first, second = at(hopper[0]), at(hopper[1])
    assert first[0] < at(hopper_700[0])[0] and first[-1] == float("inf")
    assert all(a > b for a, b in zip(second, at(hopper_700[1])))
    assert len(hopper[1].falls) == 12
    curve = next(r for r in results_report.results(records, "hopper_sac")[fallible].records if r["seed"] == 1).curve()
    fell = np.isin(curve["agent_steps"], hopper[1].falls)
    assert (curve["true_episode_return"][fell] < 0).all()
    assert "The third stalled far below the first milestone for half the run and never reached it" in text
    assert at(hopper[2])[0] == float("inf")
    assert ("ranked its latest 20 episodes among themselves no better than at random in the middle of the stall, for a "
            "while the wrong way round, and right later, as it rose slowly") in text
    log = RESULTS / "hopper_sac" / f"reward_over_run_seed2_{fallible}.log"
    kept = np.array([[float(v) for v in line.split()[:3]] for line in log.read_text().splitlines()
                     if line[:1].isdigit() and len(line.split()) == 4])  # model_step, rho_all, rho_last_20
    stall = kept[(kept[:, 0] >= 100_000) & (kept[:, 0] < 140_000), 2]  # its 20-episode mean was below 400 then
    assert abs(np.median(stall)) < 0.2 and stall.min() < -0.5
    assert np.median(kept[kept[:, 0] >= 160_000, 2]) > 0.8


def test_the_steps_per_label_table_is_each_ks_scorings_with_the_command_and_commit(tmp_path):
    log = tmp_path / "hopper_sac" / "steps_per_label.log"
    log.parent.mkdir(parents=True)
    log.write_text("# python -m benchmarks.experiments.steps_per_label RUN --per-label 5\n"
                   "# commit abc; scored every 20\n"
                   "per_label labels training_step episode_rho last_rho change val_accuracy\n"
                   "5 40 200 0.253 0.460 nan 0.575\n5 60 300 0.352 0.556 0.233 0.600\n"
                   "# 5: episode_rho 0.3 [0.253, 0.352], change 0.233 [0.233, 0.233], val_accuracy at the end 0.600\n")
    table, _, source = measure_logs.steps_per_label_table(tmp_path).partition("\n\n")
    assert table.splitlines()[2:] == ["| Hopper (SAC) | 5 | 40, 60 | 0.253, 0.352 | 0.575, 0.600 | 300 |"]
    assert source == ("Hopper (SAC): `python -m benchmarks.experiments.steps_per_label RUN --per-label 5` (commit abc; "
                      "scored every 20).")
    assert measure_logs.steps_per_label_table(tmp_path / "none") == "Not measured yet."


def test_the_reward_model_pages_words_on_steps_per_label_hold_for_the_log():
    page = " ".join((ROOT / "docs" / "reward-model.md").read_text().split())
    rho: dict[int, dict[int, float]] = {}
    for line in (RESULTS / "hopper_sac" / "steps_per_label.log").read_text().splitlines()[3:]:
        if not line.startswith("#"):
            k, labels, _, episode_rho = line.split()[:4]
            rho.setdefault(int(k), {})[int(labels)] = float(episode_rho)
    assert "With 5 or 25 steps per label the network learned the first labels poorly" in page
    assert "below 0.6 at 40 labels, and above 0.9 from 100 labels on" in page
    assert all(rho[k][40] < 0.6 and min(r for n, r in rho[k].items() if n >= 100) > 0.9 for k in (5, 25))
    assert "With 100 or 400 it ranked them at 0.9 or above at every scoring" in page
    assert all(min(rho[k].values()) >= 0.9 for k in (100, 400))
    assert "every setting ended within 0.02 of the others" in page
    ends = [scored[max(scored)] for scored in rho.values()]
    assert max(ends) - min(ends) <= 0.02


def test_the_reward_terms_table_is_each_runs_models_by_step_and_its_labels(tmp_path):
    log = tmp_path / "hopper_sac" / "reward_terms_seed2_x.log"
    log.parent.mkdir(parents=True)
    log.write_text("# python -m benchmarks.experiments.reward_terms RUN --task hopper_sac\n"
                   "# commit abc; each model over the 10,000 agent steps before its step\n"
                   "model_step corr upright_share upright_gap_model upright_gap_env\n"
                   "40000 0.42 0.04 +0.13 +2.22\n45000 0.50 0.05 +0.20 +2.00\n121491 0.70 0.08 +0.80 +2.11\n"
                   "# the run's labels in the order asked, by 40\nlabels pairs_with_upright frames_upright\n"
                   "0-39 0.12 0.033\n40-59 0.07 0.010\n")
    table, _, source = measure_logs.reward_terms_table(tmp_path, columns=(40_000, 80_000, 120_000)).partition("\n\n")
    rows = table.splitlines()
    # The first model in each 20k steps from the column's step: 40k's is 40000 (not 45000), 80k has none.
    assert rows[2] == "| Hopper (SAC) | seed2_x | correlation with the env's reward | 0.42 | — | 0.70 |"
    assert rows[5] == "| Hopper (SAC) | seed2_x | upright minus fallen: the env's | +2.22 | — | +2.11 |"
    labels = source.split("\n\n")[0].splitlines()
    assert labels[0] == "| task | run | labels 1-40 | labels 41-80 |"
    assert labels[2] == "| Hopper (SAC) | seed2_x | 0.12 | 0.07 |"
    assert source.endswith("`python -m benchmarks.experiments.reward_terms RUN --task hopper_sac` (commit abc).")
    assert measure_logs.reward_terms_table(tmp_path / "none") == "Not measured yet."


def test_the_off_policy_pages_words_on_standing_hold_for_the_logs():
    page = " ".join((ROOT / "docs" / "off-policy.md").read_text().split())
    for words in ("In the stalled runs with the defaults' trainer (seed 2's, and seed 1's with the damped reward), up "
                  "to 160k agent steps, under one step in ten was upright",
                  "the env paid an upright step more than one standard deviation of its reward above a fallen one",
                  "the models paid it about a third of that, the median over their scorings",
                  "Under one labelled pair in five showed a step upright at all",
                  "while its correlation with the env's reward per step rose all the same"):
        assert words in page
    def terms(run: str) -> tuple[np.ndarray, list[str]]:  # the models' rows, the labels' rows
        log = RESULTS / "hopper_sac" / f"reward_terms_seed{run}.log"
        models, _, labels = log.read_text().partition("\n#")[2].partition("\n#")  # after the header's first line
        return (np.array([[float(v) for v in line.split()] for line in models.splitlines()[2:]]),
                labels.splitlines()[2:])

    for run in ("2_200labels_mistake-rate-0.1", "1_200labels_mistake-rate-0.1_damped"):
        rows, labels = terms(run)
        early = rows[rows[:, 0] <= 160_000]
        assert early[:, 2].max() < 0.1  # upright share
        assert early[:, 4].min() > 1.0  # the env's gap
        assert 0.25 <= np.median(early[:, 3] / early[:, 4]) <= 0.4  # the model's over the env's
        assert all(float(line.split()[1]) < 0.2 for line in labels)
        assert rows[-1, 1] > rows[0, 1] + 0.3  # the correlation rose
    assert ("With the trainer pausing at 100 steps per label (`training_steps_per_label`, seed 1), the models paid an "
            "upright step less than a fallen one at every scoring from 80k to 200k agent steps") in page
    rows, _ = terms("1_200labels_mistake-rate-0.1_training-steps-per-label-100")
    assert (rows[(rows[:, 0] >= 80_000) & (rows[:, 0] <= 200_000), 3] < 0).all()
    assert ("With the paper's three-member ensemble choosing pairs by its disagreement (seed 2), the models paid an "
            "upright step about half of what the env paid, the median over their scorings up to 160k agent steps; but "
            "no more labelled pairs showed a step upright (at most one in six in any forty labels), under one step in "
            "ten was upright at every scoring, and the run's 20-episode mean stayed below 550 from 140k agent steps to "
            "its end") in page
    disagreement = "2_200labels_mistake-rate-0.1_ensemble-size-3-pair-selection-disagreement"
    rows, labels = terms(disagreement)
    early = rows[rows[:, 0] <= 160_000]
    assert 0.4 <= np.median(early[:, 3] / early[:, 4]) <= 0.6
    assert all(float(line.split()[1]) <= 1 / 6 for line in labels) and rows[:, 2].max() < 0.1
    curve = pd.read_csv(RESULTS / "hopper_sac" / f"drlhp_seed{disagreement}" / "curve.csv")
    late = curve.true_episode_return.rolling(20).mean()[curve.agent_steps >= 140_000]
    assert late.max() < 550
