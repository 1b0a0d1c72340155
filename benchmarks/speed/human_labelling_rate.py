"""The human interface's own limits: display frame rate while a question waits, and
how fast pairs follow answers (labels per minute for a person who answers at once).

Drives the real thing as the end-to-end test does: a pixel env with human
preferences in a tmux pane, its window on a private Xvfb, the env stepping at
full speed in the main process. First one question is left waiting for
``--hold`` seconds (frame rate while waiting); then ``--answers`` prompts are
answered the moment they appear. Baseline in the same run: the time to type an
answer and see it echoed (the tmux round trip), which a real person adds too.
Figures from log_dir/human_labels.csv. Targets: >= 20 fps steady; < 0.3 s from
answer to next pair. ``--disagreement``: pairs picked by a 3-member ensemble's
disagreement (an untrained checkpoint: its members disagree as much as trained ones
cost), each question scoring new clips. Needs: apt-get install xvfb tmux xdotool imagemagick.

    python -m benchmarks.speed.human_labelling_rate [--answers 30] [--hold 5] [--disagreement]
"""
from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time

from benchmarks.virtual_desktop import missing_tools, virtual_desktop, wait_for_text

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "scripts", "human_session.py")


def session(tmp: str, n_answers: int, hold: float):
    """Label in a tmux pane on a private Xvfb; returns the human_labels.csv rows, the answering time, the echo time."""
    with virtual_desktop() as (_, _, tmux):
        tmux("new-session", "-d", "-x", "160", "-y", "50", f"{sys.executable} {SCRIPT} {tmp} {tmp}/stop; sleep 600")
        wait_for_text(tmux, "Pair 1:")
        time.sleep(hold)  # a person looking at the clips: measures the frame rate while waiting
        start = time.monotonic()
        for k in range(1, n_answers + 1):
            tmux("send-keys", "lre"[k % 3], "Enter")
            wait_for_text(tmux, f"Pair {k + 1}:")
        elapsed = time.monotonic() - start
        echo_start = time.monotonic()
        tmux("send-keys", "zz")
        wait_for_text(tmux, "zz")
        echo = time.monotonic() - echo_start
        open(f"{tmp}/stop", "w").close()
        wait_for_text(tmux, "SAVED")
        with open(f"{tmp}/human_labels.csv") as f:
            rows = list(csv.DictReader(f))
    return rows, elapsed, echo


def main(n_answers: int, hold: float, disagreement: bool) -> None:
    if missing_tools():
        sys.exit(f"needs {missing_tools()}: apt-get install xvfb tmux xdotool imagemagick")
    with tempfile.TemporaryDirectory() as tmp:
        if disagreement:  # set before the desktop starts: its tmux server passes its environment on
            from benchmarks.measured_envs import make_env, untrained_checkpoint

            os.makedirs(f"{tmp}/ckpt")
            os.environ["DRLHP_SESSION_CHECKPOINT"] = untrained_checkpoint(make_env("moving_dot"), f"{tmp}/ckpt")
        rows, elapsed, echo = session(tmp, n_answers, hold)
    fps = [float(r["display_fps"]) for r in rows]
    gaps = [float(r["seconds_from_last_answer_to_this_pair"]) for r in rows[1:]]
    print(f"display while the first question waited {hold:.0f} s: {fps[0]:.1f} fps (configured 20; aim >= 20 steady)")
    print(f"answer -> next pair shown: median {statistics.median(gaps) * 1e3:.1f} ms, max {max(gaps) * 1e3:.1f} ms "
          f"(aim < 300 ms)")
    print(f"{n_answers} answers in {elapsed:.1f} s = {n_answers / elapsed * 60:.0f} labels/minute for an instant "
          f"answerer; of each {elapsed / n_answers * 1e3:.0f} ms, the terminal round trip alone (type, see the echo) "
          f"is ~{echo * 1e3:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", type=int, default=30)
    parser.add_argument("--hold", type=float, default=5.0)
    parser.add_argument("--disagreement", action="store_true")
    args = parser.parse_args()
    main(args.answers, args.hold, args.disagreement)
