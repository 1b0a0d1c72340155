"""The table of a before/after comparison, from the logs of overhead benchmarks run alternately on one machine.

A log holds sections headed ``=== [round N] before|after SCRIPT ENV ...``, each followed by that script's output
(``benchmarks/results/house/commands.sh`` writes such a log); the steps/s of each mode are gathered by script, env
and side:

    python -m benchmarks.speed.before_after benchmarks/results/house/overhead.log [more logs]

Prints a markdown table: each side's runs (range and median), and the median of the after/before ratios of
the runs of one round (sides run back to back, so a round's ratio is freer of the machine's drift).

    python -m benchmarks.speed.before_after --suite before.xml after.xml

compares two runs of the test suite (``pytest --junitxml``): the wall time, and the test time of the tests both
have apart from the tests only one has (a suite that grew is not slower for it).
"""
from __future__ import annotations

import argparse
import re
import statistics
import xml.etree.ElementTree as ET
from collections import defaultdict

HEADER = re.compile(r"^=== (?:round (\d+) )?(before|after) (\w+) (\w+)")
FIGURE = re.compile(r"^\s+(predicted reward only|collecting \+ predicted)\s+(\d+) (?:env )?steps/s")


def read(paths: list[str]) -> dict[tuple[str, str, str], dict[str, dict[str, float]]]:
    """{(script, env, mode): {side: {round: steps/s}}}, a log without rounds counting as round 0."""
    figures: dict = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        section = None
        with open(path) as f:
            for line in f:
                if (header := HEADER.match(line)) is not None:
                    round_, side, script, env = header.groups()
                    section = (f"{path}:{round_ or 0}", side, script, env)
                elif section is not None and (figure := FIGURE.match(line)) is not None:
                    round_key, side, script, env = section
                    figures[(script, env, figure[1])][side][round_key] = float(figure[2])
    return figures


def span(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:,.0f}"
    return f"{min(values):,.0f}–{max(values):,.0f} (median {statistics.median(values):,.0f})"


def table(figures) -> str:
    rows = ["| benchmark, env, mode (steps/s) | runs | before | after | after ÷ before, same round (median) |",
            "|---|---|---|---|---|"]
    for (script, env, mode), sides in figures.items():
        before, after = sides.get("before", {}), sides.get("after", {})
        paired = [after[r] / before[r] for r in before if r in after]
        ratio = f"{statistics.median(paired):.2f} ({', '.join(f'{p:.2f}' for p in paired)})" if paired else "—"
        rows.append(f"| `{script}.py` {env}, {mode} | {len(before)} / {len(after)} | {span(list(before.values()))} "
                    f"| {span(list(after.values()))} | {ratio} |")
    return "\n".join(rows)


def junit_times(junit_xml: str) -> tuple[float, dict[str, float]]:
    """The suite's wall time and each test's time (s), from pytest's ``--junitxml`` file."""
    suite = ET.parse(junit_xml).getroot().find("testsuite")
    assert suite is not None, f"{junit_xml}: no <testsuite>"
    return float(suite.get("time", "nan")), {f"{case.get('classname')}::{case.get('name')}": float(case.get("time", 0))
                                             for case in suite.iter("testcase")}


def suite_table(before_xml: str, after_xml: str) -> str:
    (wall_before, before), (wall_after, after) = junit_times(before_xml), junit_times(after_xml)
    common = before.keys() & after.keys()
    only_before, only_after = before.keys() - common, after.keys() - common

    def total(times: dict[str, float], names) -> str:
        return f"{sum(times[n] for n in names):,.0f} s"
    return "\n".join([
        "| test suite | before | after |", "|---|---|---|",
        f"| wall time | {wall_before:,.0f} s | {wall_after:,.0f} s |",
        f"| the {len(common)} tests both have, test time | {total(before, common)} | {total(after, common)} |",
        f"| tests only one has, test time | {len(only_before)}: {total(before, only_before)} "
        f"| {len(only_after)}: {total(after, only_after)} |"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", nargs="*")
    parser.add_argument("--suite", nargs=2, metavar=("BEFORE_XML", "AFTER_XML"))
    args = parser.parse_args()
    if args.suite:
        print(suite_table(*args.suite))
    if args.logs:
        print(table(read(args.logs)))


if __name__ == "__main__":
    main()
