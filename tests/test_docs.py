"""The documentation's code runs: every fenced block of README.md and docs/ is executed, or marked not runnable.

A fence's language says what it is: ``python`` and ``bash`` are code, ``text`` is a diagram or
printed output. An HTML comment on the line(s) right before a fence (invisible on the site) can mark it:

    <!-- test: skip: REASON -->
        not runnable; the reason is required and says why (it needs a person, a display, hours...).
    <!-- test: {'replace': [(OLD, NEW), ...], 'before': CODE, 'after': CODE, 'same_as': PAGE, 'why': TEXT} -->
        ``replace``: small settings for the test (each OLD must occur in the block, so the docs and
        the test cannot drift apart), and ``why`` says why they are needed; ``before`` / ``after``:
        hidden Python run just before / after the block, e.g. assertions on what it did;
        ``same_as``: the block is identical to one on PAGE, which runs there.

A page's runnable blocks run in document order in one fresh Python process, sharing one namespace
like a notebook (``__name__ == "__main__"``), in an empty temporary directory; ``bash`` blocks run
there with ``bash -euo pipefail``. Tracebacks name the Markdown file and line. The process must
leave no process behind: it runs in a session of its own, which must be empty when it exits.
"""
from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CODE_LANGUAGES = ("python", "bash")
LANGUAGES = (*CODE_LANGUAGES, "text")
PAGE_TIMEOUT = 240  # seconds for all of a page's blocks; a hung block fails its page, never the run

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
MARKER = re.compile(r"<!--\s*test:\s*(?P<body>.*?)\s*-->", re.S)


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the block's first line of code
    language: str
    source: str
    marker: dict = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def skip_reason(self) -> str | None:
        return self.marker.get("skip")

    def runnable_source(self) -> str:
        """The block with the test's small settings applied."""
        source = self.source
        for old, new in self.marker.get("replace", []):
            if old not in source:
                raise AssertionError(f"{self.where}: the test replaces {old!r}, which the block no longer has")
            source = source.replace(old, new)
        return source


def parse_marker(text: str, where: str) -> dict:
    body = text.strip()
    if body.startswith("skip"):
        reason = body[len("skip"):].lstrip(" :").strip()
        assert reason, f"{where}: 'test: skip' needs a reason"
        return {"skip": reason}
    marker = ast.literal_eval(body)
    unknown = set(marker) - {"replace", "why", "before", "after", "same_as"}
    assert isinstance(marker, dict) and not unknown, f"{where}: unknown test marker keys {unknown}"
    return marker


def preceding_markers(lines: list[str], fence_index: int, where: str) -> dict:
    """The ``test:`` comment among the HTML comments that end right above the fence."""
    i = fence_index - 1
    while i >= 0 and lines[i].strip().endswith("-->"):
        start = i
        while "<!--" not in lines[start]:
            start -= 1
        comment = "\n".join(lines[start:i + 1])
        match = MARKER.search(comment)
        if match:
            return parse_marker(match.group("body"), where)
        i = start - 1
    return {}


def closes(line: str, fence: str) -> bool:
    """Whether ``line`` closes a block opened by ``fence`` (the same character, at least as many)."""
    text = line.strip()
    return len(text) >= len(fence) and set(text) == {fence[0]}


def blocks_of(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence, info = match.group("indent"), match.group("fence"), match.group("info").strip()
        end = i + 1
        while not closes(lines[end], fence):
            end += 1
        where = f"{page.relative_to(ROOT)}:{i + 1}"
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:end]]
        language = info.split()[0] if info else ""
        blocks.append(Block(page, i + 2, language, "\n".join(body) + "\n", preceding_markers(lines, i, where)))
        i = end + 1
    return blocks


ALL_BLOCKS = [block for page in PAGES for block in blocks_of(page)]


def runnable(page: Path) -> list[Block]:
    return [b for b in blocks_of(page) if b.language in CODE_LANGUAGES and not b.skip_reason
            and "same_as" not in b.marker]


# -- what every block must be ------------------------------------------------------------------------------------

def test_the_docs_have_code_and_most_of_it_runs():
    code = [b for b in ALL_BLOCKS if b.language in CODE_LANGUAGES]
    run = [b for b in code if not b.skip_reason]
    assert len(code) >= 20 and len(run) > len(code) / 2, (len(code), len(run))


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: b.where)
def test_every_block_is_code_that_runs_or_is_marked(block):
    assert block.language in LANGUAGES, (
        f"{block.where}: a fence needs a language: python or bash (code, run by this test) or text (not code)")
    if block.language == "text":
        assert not block.marker, f"{block.where}: a text block is not run; it needs no test marker"
        return
    if block.skip_reason:
        assert len(block.skip_reason) > 15, f"{block.where}: say why the block cannot run"
        return
    block.runnable_source()  # every replacement still applies
    if "same_as" in block.marker:
        other = ROOT / block.marker["same_as"]
        twins = [b for b in blocks_of(other) if b.source == block.source]
        assert twins, f"{block.where}: no identical block on {block.marker['same_as']}"
        assert not twins[0].skip_reason and "same_as" not in twins[0].marker, f"{twins[0].where} does not run"
    if block.language == "python":
        compile(block.runnable_source(), block.where, "exec")


# -- running them ------------------------------------------------------------------------------------------------

# Runs in a fresh interpreter (``python -c``: spawned drlhp workers then re-import nothing of it).
RUNNER = r'''
import json, multiprocessing, os, subprocess, sys, traceback
_docs_steps = json.load(open(sys.argv[1]))
_docs_ns = sys.modules["__main__"].__dict__  # the real __main__: what blocks define pickles by reference
for _docs_step in _docs_steps:
    print(f"--- {_docs_step['where']}: {_docs_step['part']}", flush=True)
    try:
        if _docs_step["language"] == "bash":
            subprocess.run(["bash", "-euo", "pipefail", "-c", _docs_step["source"]], check=True)
        else:
            # Padding keeps the Markdown file's line numbers in tracebacks.
            _docs_code = "\n" * (_docs_step["line"] - 1) + _docs_step["source"]
            exec(compile(_docs_code, _docs_step["file"], "exec"), _docs_ns)
    except BaseException:
        traceback.print_exc()
        print(f"FAILED: {_docs_step['where']} ({_docs_step['part']})", flush=True)
        os._exit(1)
left = multiprocessing.active_children()
if left:
    print(f"FAILED: the page's blocks left processes running (a wrapper not closed?): {left}", flush=True)
    for p in left:
        p.kill()
    os._exit(2)
import gc
gc.freeze()  # the interpreter's teardown then skips collecting torch's objects: a few tenths of a second a page
'''


def steps_of(blocks: list[Block]) -> list[dict]:
    steps = []
    for b in blocks:
        common = dict(where=b.where, file=str(b.page))
        if "before" in b.marker:
            steps.append(dict(common, part="test: before", language="python", line=b.line, source=b.marker["before"]))
        steps.append(dict(common, part="the block", language=b.language, line=b.line, source=b.runnable_source()))
        if "after" in b.marker:
            steps.append(dict(common, part="test: after", language="python", line=b.line, source=b.marker["after"]))
    return steps


def session_members(sid: int) -> list[str]:
    """Processes (not zombies) in session ``sid``, as 'pid command'."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{entry} {command[:120]}")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
    return found


def run_page(page: Path, workdir: Path) -> tuple[int, str, float]:
    steps_file = workdir.parent / f"{workdir.name}-steps.json"
    steps_file.write_text(json.dumps(steps_of(runnable(page))))
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
               MPLBACKEND="Agg", PYTHONUNBUFFERED="1")
    env.pop("DISPLAY", None)  # nothing here may open a window
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", RUNNER, str(steps_file)], cwd=workdir, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=PAGE_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        output += f"\nTIMEOUT: the page's blocks did not finish within {PAGE_TIMEOUT} s"
    # The resource tracker (and any worker) notices its parent's exit by itself: give the session a
    # bounded time to empty before calling what is left a leak.
    deadline = time.monotonic() + 15
    while (left := session_members(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:  # a worker outlived its parent: kill it, and fail
        os.killpg(proc.pid, signal.SIGKILL)
        output += "\nFAILED: processes left behind:\n" + "\n".join(left)
        return 3, output, time.monotonic() - start
    return proc.returncode, output, time.monotonic() - start


@pytest.mark.parametrize("page", [p for p in PAGES if runnable(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_pages_code_blocks_run(page, tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    code, output, seconds = run_page(page, workdir)
    print(f"{page.relative_to(ROOT)}: {len(runnable(page))} blocks in {seconds:.1f} s")
    assert code == 0, f"{page.relative_to(ROOT)}'s code blocks failed (exit {code}):\n{output[-6000:]}"
