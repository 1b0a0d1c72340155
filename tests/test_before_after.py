"""Before/after tables in the docs are what their committed benchmark logs give."""
from __future__ import annotations

import re
from pathlib import Path

from benchmarks.speed import before_after

ROOT = Path(__file__).resolve().parent.parent

LOG = """=== round 1 before wrapper_overhead moving_dot (abc1234)
moving_dot: raw 50000 steps/s
  predicted reward only       2000 steps/s (0.04x raw) | wrapper adds 0.4 ms/step
  collecting + predicted      1000 steps/s (0.03x raw) | wrapper adds 0.7 ms/step
=== round 1 after wrapper_overhead moving_dot (def5678)
  predicted reward only       2200 steps/s (0.06x raw)
  collecting + predicted       900 steps/s (0.04x raw)
=== round 2 after wrapper_overhead moving_dot (def5678)
  predicted reward only       2400 steps/s (0.06x raw)
=== round 2 before wrapper_overhead moving_dot (abc1234)
  predicted reward only       2000 steps/s (0.06x raw)
=== after vector_overhead pong
  collecting + predicted     4449 env steps/s (0.13x raw) | wrapper adds 1.567 ms per vector step
"""


def test_runs_are_gathered_by_side_and_paired_by_round(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(LOG)
    rows = before_after.table(before_after.read([str(log)])).splitlines()[2:]
    assert rows == [
        "| `wrapper_overhead.py` moving_dot, predicted reward only | 2 / 2 | 2,000–2,000 (median 2,000) "
        "| 2,200–2,400 (median 2,300) | 1.15 (1.10, 1.20) |",
        "| `wrapper_overhead.py` moving_dot, collecting + predicted | 1 / 1 | 1,000 | 900 | 0.90 (0.90) |",
        "| `vector_overhead.py` pong, collecting + predicted | 0 / 1 | — | 4,449 | — |",
    ]


def test_the_docs_before_after_tables_are_their_records():
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    found = re.findall(r"<!-- before-after(-suite)?: (.+?) -->\n(.*?)\n\n", text, re.S)
    assert {suite for suite, _, _ in found} == {"", "-suite"}, "docs/benchmarks.md names no before/after records"
    for suite, records, in_docs in found:
        paths = [str(ROOT / p) for p in records.split()]
        generated = before_after.suite_table(*paths) if suite else before_after.table(before_after.read(paths))
        assert in_docs == generated, \
            f"regenerate: python -m benchmarks.speed.before_after {'--suite ' if suite else ''}{records}"
