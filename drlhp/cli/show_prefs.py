"""Replay saved preferences with their labels, to audit a database.

    python -m drlhp.cli.show_prefs drlhp_logs                 # train then val (snapshot + label journal)
    python -m drlhp.cli.show_prefs drlhp_logs/val.pkl.gz
    python -m drlhp.cli.show_prefs drlhp_logs --summary       # counts only, no window

In the window: n / space / Enter next pair, p previous, q / Esc quit. The
terminal says which clip was preferred; the clips loop until you move on.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

from drlhp.clips.frames import infer_frame_spec
from drlhp.config import PreferenceConfig
from drlhp.labelling.answers import LABEL_NAMES
from drlhp.labelling.display import auto_zoom, compose_pair, display_problem, displayable
from drlhp.labels.pref_db import PrefBuffer, PrefDB
from drlhp.storage.layout import TRAIN_FILE, VAL_FILE

WINDOW = "drlhp: saved preference"


def load(path: str) -> list[tuple[str, PrefDB]]:
    """(name, database) for a file, or the training and validation labels of a log_dir.

    A log_dir's labels are its snapshot plus its label journal: a run still going, or one
    that crashed, shows every label it journaled.
    """
    if os.path.isdir(path):
        buffer = PrefBuffer.load_all(path)
        return [(TRAIN_FILE, buffer.train_db), (VAL_FILE, buffer.val_db)]
    return [(os.path.basename(path), PrefDB.load(path))]


def summary(dbs: list[tuple[str, PrefDB]]) -> str:
    lines = []
    for name, db in dbs:
        counts = Counter(label for _, _, label in db.prefs)
        lines.append(f"{name}: {len(db)} preferences over {len(db.segments)} clips — "
                     + ", ".join(f"{LABEL_NAMES[k]}: {counts.get(k, 0)}" for k in (1.0, 0.0, 0.5)))
    return "\n".join(lines)


def replay(dbs: list[tuple[str, PrefDB]], fps: float = PreferenceConfig.display_fps, zoom: int = 0) -> None:
    from drlhp.labelling.human import import_cv2_gui

    cv2 = import_cv2_gui()
    pairs = [(name, db, p) for name, db in dbs for p in db.prefs]
    i = 0
    while 0 <= i < len(pairs):
        name, db, (a, b, label) = pairs[i]
        frames_a, frames_b = db.segments[a].frames, db.segments[b].frames  # unpacked once per pair
        spec = infer_frame_spec(frames_a[0])
        print(f"{name} pair {i + 1}/{len(pairs)}: clip {a} (L) vs clip {b} (R): {LABEL_NAMES[label]}", flush=True)
        step, t = 0, 0
        while step == 0:
            j = t % len(frames_a)
            cv2.imshow(WINDOW, compose_pair(displayable(frames_a[j], spec), displayable(frames_b[j], spec),
                                            zoom or auto_zoom(spec), (j + 1) / len(frames_a),
                                            f"{i + 1}/{len(pairs)}"))
            t += 1
            key = cv2.waitKey(max(1, int(1000 / fps)))
            ch = chr(key & 0xFF).lower() if key != -1 else ""
            if ch in ("q", "\x1b"):
                cv2.destroyAllWindows()
                return
            step = 1 if ch in ("n", " ", "\r", "\n") else -1 if ch == "p" else 0
        i = max(0, i + step) if step < 0 else i + step
    cv2.destroyAllWindows()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m drlhp.cli.show_prefs", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path", help="a train.pkl.gz / val.pkl.gz file, or the directory holding them")
    parser.add_argument("--summary", action="store_true", help="print counts only; open no window")
    parser.add_argument("--fps", type=float, default=PreferenceConfig.display_fps,
                        help=f"frames a second (default: {PreferenceConfig.display_fps}, as labelling shows them)")
    parser.add_argument("--zoom", type=int, default=0, help="whole-number zoom (0: automatic)")
    args = parser.parse_args(argv)
    dbs = load(args.path)
    print(summary(dbs), flush=True)
    if args.summary:
        return 0
    problem = display_problem()
    if problem:
        print(f"Cannot open a window: {problem}. Use --summary, or run under a display.", file=sys.stderr)
        return 2
    replay(dbs, args.fps, args.zoom)
    return 0


if __name__ == "__main__":
    sys.exit(main())
