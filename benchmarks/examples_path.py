"""How a benchmark uses the examples' own modules (their recipes, agent checkpoint and arguments; examples/ is no
package): it runs in a Python that has examples/ on its PYTHONPATH, as ``PYTHONPATH=examples python -m
benchmarks.<kind>.<name>`` would, never by editing its own ``sys.path``. No example is named ``benchmarks``
(tests/test_import_paths.py holds it), so neither shadows the other."""
from __future__ import annotations

import os
import sys

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")  # beside benchmarks/


def with_examples() -> None:
    """Unless examples/ is on PYTHONPATH already, run this command again with it there, in this process's place
    (``os.execve``: the same process, so whatever waits for it or signals it reaches the benchmark as before)."""
    python_path = os.environ.get("PYTHONPATH", "")
    if EXAMPLES in python_path.split(os.pathsep):
        return
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (EXAMPLES, python_path) if p))
    argv = getattr(sys, "orig_argv", [sys.executable, *sys.argv])  # Python >= 3.10: with the interpreter's options
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *argv[1:]], env)
