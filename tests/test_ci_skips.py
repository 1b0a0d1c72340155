"""Skips are loud: every run lists them with their reasons, and on CI (CI=true) a skip not in conftest.py's
CI_ALLOWED_SKIPS fails the run. Run here on a small suite, with this project's conftest.py and pytest settings
and the README's ``-n 2 --dist loadfile``."""
from pathlib import Path

from conftest import CI_ALLOWED_SKIPS

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent

ALLOWED_NODE_ID, ALLOWED_REASON = next(iter(CI_ALLOWED_SKIPS.items()))
ALLOWED_FILE, ALLOWED_TEST = ALLOWED_NODE_ID.split("::")


def small_suite(pytester) -> None:
    """A passing test, two skips CI does not allow (in a test's body; a whole module at its import) and one it
    does (a test of CI_ALLOWED_SKIPS, skipped with its reason), under tests/ beside a copy of our conftest.py."""
    files = {
        "tests/conftest.py": (TESTS / "conftest.py").read_text(),
        "tests/test_passes.py": "def test_passes():\n    pass\n",
        "tests/test_needs_a_tool.py": "import pytest\n\n\ndef test_needs_a_tool():\n"
                                      "    pytest.skip('needs a tool CI lacks')\n",
        "tests/test_needs_a_module.py": "import pytest\n\npytest.importorskip('no_such_module_anywhere')\n\n\n"
                                        "def test_uses_it():\n    pass\n",
        ALLOWED_FILE: f"import pytest\n\n\n@pytest.mark.skipif(True, reason={ALLOWED_REASON!r})\n"
                      f"def {ALLOWED_TEST}():\n    pass\n",
    }
    for name, text in files.items():
        (pytester.path / name).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / name).write_text(text)


def run(pytester):
    # This project's pytest settings (its addopts among them), node ids relative to the small suite's root.
    return pytester.runpytest_subprocess("-c", str(TESTS.parent / "pyproject.toml"), "--rootdir", str(pytester.path),
                                         "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile", "tests")


def test_on_ci_a_skip_not_allowed_fails_the_run_saying_how_to_allow_it(pytester, monkeypatch):
    small_suite(pytester)
    monkeypatch.setenv("CI", "True")  # as CI systems spell it, in any case
    result = run(pytester)
    out = result.stdout.str()
    assert result.ret == 1, out
    assert "skipped on CI (needs a tool CI lacks)" in out
    assert "add 'tests/test_needs_a_tool.py::test_needs_a_tool': 'needs a tool CI lacks'" in out
    assert "skipped on CI (could not import 'no_such_module_anywhere'" in out
    # The skip in a test's body fails it; the module's fails its collection; the allowed skip stays a skip.
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "errors": 1, "skipped": 1}, out
    assert f"SKIPPED [1] {ALLOWED_FILE}:4: {ALLOWED_REASON}" in out


def test_off_ci_a_skip_passes_with_its_reason_listed(pytester, monkeypatch):
    small_suite(pytester)
    monkeypatch.delenv("CI", raising=False)
    result = run(pytester)
    out = result.stdout.str()
    assert result.ret == 0, out
    assert result.parseoutcomes() == {"passed": 1, "skipped": 3}, out
    assert "SKIPPED [1] tests/test_needs_a_tool.py:5: needs a tool CI lacks" in out
    assert "SKIPPED [1] tests/test_needs_a_module.py:3: could not import 'no_such_module_anywhere'" in out
