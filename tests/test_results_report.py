"""The results page's tables are the run records', computed as documented: scores, normalisation, IQM."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rliable")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import results_report  # noqa: E402  (the benchmarks' own module, from benchmarks/)
from run_records import KEYS, read_records, write_record  # noqa: E402


def test_the_results_pages_tables_are_what_the_records_give():
    in_docs = results_report.docs_blocks()
    generated = results_report.tables(read_records())
    assert set(in_docs) == set(generated)
    for name, body in generated.items():
        assert in_docs[name] == body, f"the pages' {name} block is not the records': run " \
                                      "python benchmarks/results_report.py --write-docs"


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
    assert "**0.83** [" in blocks["atari"] and "| 5 (0, 1, 2, 3, 4) |" in blocks["atari"]
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
    assert "drlhp with `--no-relabel`, ≤ 700 labels | 3 (0, 1, 2) |" in row and "**0.25** [" in row
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
    assert ("HalfCheetah (SAC) ≤ 200 labels, teacher: mistake rate 0.1: **0.80** [" in sentence
            and "(3 runs)" in sentence and "mistake rate 0.3: **0.50**" in sentence)
    assert "no run taught by a fallible one" in results_report.tables(records[:3])["fallible"]


def test_the_offline_label_noise_table_is_each_logs_summary(tmp_path):
    log = tmp_path / "hopper_sac" / "label_noise" / "label_noise.log"
    log.parent.mkdir(parents=True)
    log.write_text("       teacher seed  variant  r_disc\n       0.3:700    0  defaults  0.5\n\n"
                   "mean over the seeds [lowest, highest]\n"
                   "       0.3:700             defaults r_disc 0.931 [0.916, 0.945]  r_100 0.917 [0.906, 0.928]\n")
    rows = results_report.label_noise_table(tmp_path).splitlines()[2:]
    assert rows == ["| Hopper (SAC) | 0.3 | 700 | defaults | 0.931 [0.916, 0.945] | 0.917 [0.906, 0.928] |"]
    assert results_report.label_noise_table(tmp_path / "none") == "Not measured yet."
