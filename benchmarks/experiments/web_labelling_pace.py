"""How many labels an hour of a person makes on the labelling page: the seconds a label takes with the default
clip, for a person who watches each clip once before answering.

A live Pong wrapper (``labelling="web"``, drlhp's defaults: 25-frame clips shown at 20 frames a second) steps
random actions in a thread; headless Chromium (Debian's ``chromium``, driven by Playwright) opens the page as a
person would. For each pair it waits until both clips have played ``--loops`` times on the page's own clock (2:
the page plays the two side by side, and a person watches one, then the other), answers L, R or E, and times
from one pair appearing to the next. What is measured is the page's floor for a person who decides at once: the
time to watch, plus the page's own (the answer on disk, the next pair's clips fetched and drawn). A person who
thinks adds their own seconds to each label.

    python -m benchmarks.experiments.web_labelling_pace [--labels 40] [--loops 2] \\
        [--record benchmarks/results/labelling_pace]

``--record DIR`` writes ``DIR/pong_web.json``: every label's seconds, the settings, command and commit.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.measured_envs import make_env
from benchmarks.report.run_records import git_commit
from drlhp import HumanPreferencesEnvWrapper, PreferenceConfig

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Milliseconds since the page drew the pair now shown, and that pair's id (the page's own state, app.js).
PAGE_CLOCK = "() => current ? [performance.now() - current.t0, current.pair] : null"


def label_seconds(url: str, n_labels: int, loops: float, frames: int, fps: float, seed: int) -> list[float]:
    """Seconds from each pair appearing to the next, for ``n_labels`` answers of a person on the page at ``url``."""
    from playwright.sync_api import sync_playwright

    rng = random.Random(seed)
    watch_ms = loops * frames / fps * 1000
    seconds = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url)
        page.fill("#name", "pace")
        page.click("#who button")
        page.wait_for_function(PAGE_CLOCK, timeout=120_000)
        shown_at, pair = time.monotonic(), page.evaluate(PAGE_CLOCK)[1]
        for _ in range(n_labels):
            page.wait_for_function(f"() => current && performance.now() - current.t0 >= {watch_ms}", timeout=60_000)
            page.keyboard.press(rng.choice("lre"))
            page.wait_for_function(f"() => current && current.pair !== {pair}", timeout=60_000)
            now, pair = time.monotonic(), page.evaluate(PAGE_CLOCK)[1]
            seconds.append(now - shown_at)
            shown_at = now
        browser.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", type=int, default=40, help="answers timed (default: 40)")
    parser.add_argument("--loops", type=float, default=2.0,
                        help="times both clips play before each answer (default: 2)")
    parser.add_argument("--seed", type=int, default=0, help="of the answers' sides")
    parser.add_argument("--record", help="write pong_web.json here")
    parser.add_argument("--beside", default="", help="what else ran on the machine meanwhile, for the record")
    args = parser.parse_args()
    if CHROMIUM is None:
        sys.exit("error: needs Debian's chromium (apt-get install chromium) and playwright (pip install playwright)")
    defaults = PreferenceConfig()
    env = HumanPreferencesEnvWrapper(make_env("pong"), synthetic_preferences=False, labelling="web", web_port=0,
                                     log_dir=os.path.join(tempfile.mkdtemp(), "run"), train_reward=False,
                                     label_budget=None, seed=args.seed, log_level=30)
    stop = threading.Event()

    def agent() -> None:  # random actions, so that clips keep coming
        env.reset(seed=args.seed)
        while not stop.is_set():
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset()

    stepping = threading.Thread(target=agent)
    stepping.start()
    try:
        seconds = label_seconds(env.labelling_url, args.labels, args.loops, defaults.segment_length,
                                defaults.display_fps, args.seed)
    finally:
        stop.set()
        stepping.join()
        env.close()
    watch = args.loops * defaults.segment_length / defaults.display_fps
    mean = statistics.mean(seconds)
    print(f"{len(seconds)} labels: {mean:.2f} s each on average (median {statistics.median(seconds):.2f}, lowest "
          f"{min(seconds):.2f}, highest {max(seconds):.2f}); watching takes {watch:.2f} s of it; "
          f"{3600 / mean:.0f} labels an hour")
    if args.record:
        out = Path(args.record) / "pong_web.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({
            "env": "ALE/Pong-v5 (84x84 grayscale, 4-frame stack; the benchmarks' Pong)",
            "clip": {"frames": defaults.segment_length, "fps": defaults.display_fps, "zoom": defaults.display_zoom},
            "person": f"watches both clips {args.loops:g} times on the page's clock, then answers at once",
            "watch_seconds": watch, "label_seconds": [round(s, 3) for s in seconds],
            "command": "python -m benchmarks.experiments.web_labelling_pace " + shlex.join(sys.argv[1:]),
            "commit": git_commit(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "machine": f"{os.cpu_count()} cores, {'beside ' + args.beside if args.beside else 'nothing else running'}",
        }, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
