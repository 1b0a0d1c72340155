"""Replay saved preferences with their labels, to audit a database.

    python -m drlhp.cli.show_prefs drlhp_logs                 # train then val (snapshot + label journal)
    python -m drlhp.cli.show_prefs drlhp_logs/val.pkl.gz
    python -m drlhp.cli.show_prefs drlhp_logs --summary       # counts only, no window

In the window: n / space / Enter next pair, p previous, q / Esc quit. The
terminal says which clip was preferred (and, for a pair two labellers answered,
who answered what); the clips loop until you move on. The summary names what the
labellers were asked (when recorded), the labels they took back, and how often
two labellers gave a pair the same answer.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from typing import NamedTuple

from drlhp.clips.frames import infer_frame_spec
from drlhp.config import PreferenceConfig
from drlhp.label_store.agreement import Agreement
from drlhp.label_store.database import PrefBuffer, PrefDB
from drlhp.labelling.answers import LABEL_NAMES
from drlhp.labelling.display import auto_zoom, compose_pair, display_problem, displayable
from drlhp.storage.layout import TRAIN_FILE, VAL_FILE

WINDOW = "drlhp: saved preference"


class SavedLabels(NamedTuple):
    """A database read for auditing: (name, database) pairs, what the labellers were asked, the labels taken back."""

    dbs: list[tuple[str, PrefDB]]
    instructions: str | None
    retracted: list[int]


def load(path: str) -> SavedLabels:
    """A file's labels, or the training and validation labels of a log_dir.

    A log_dir's labels are its snapshot plus its label journal: a run still going, or one
    that crashed, shows every label it journaled (and every retraction and second answer).
    """
    if os.path.isdir(path):
        buffer = PrefBuffer.load_all(path)
        return SavedLabels([(TRAIN_FILE, buffer.train_db), (VAL_FILE, buffer.val_db)], buffer.instructions,
                           sorted(buffer.retracted))
    db = PrefDB.load(path)
    return SavedLabels([(os.path.basename(path), db)], db.instructions_when_saved, db.retracted_when_saved)


def summary(labels: SavedLabels) -> str:
    lines = [] if labels.instructions is None else [f"labellers were asked: {labels.instructions}"]
    for name, db in labels.dbs:
        counts = Counter(label for _, _, label in db.prefs)
        lines.append(f"{name}: {len(db)} preferences over {len(db.segments)} clips — "
                     + ", ".join(f"{LABEL_NAMES[k]}: {counts.get(k, 0)}" for k in (1.0, 0.0, 0.5)))
    lines.append(f"labels retracted by their labeller: {len(labels.retracted)}")
    lines.append(agreement_table(Agreement.of(*(db for _, db in labels.dbs))))
    return "\n".join(lines)


def agreement_table(agreement: Agreement) -> str:
    """Per labeller pair: pairs both answered, how many alike, the share; with a total line for several pairs."""
    if not agreement.n_pairs:
        return "pairs answered twice: none"
    rows = [(f"{a} & {b}", str(n), str(same), f"{rate:.0%}") for a, b, n, same, rate in agreement.rows()]
    if len(rows) > 1:
        total_same = sum(same for _, _, _, same, _ in agreement.rows())
        rows.append(("all", str(agreement.n_pairs), str(total_same), f"{agreement.rate():.0%}"))
    table = [("labellers", "pairs answered twice", "same answer", "agreement"), *rows]
    widths = [max(len(row[k]) for row in table) for k in range(4)]
    return "\n".join("  " + "  ".join(cell.ljust(w) if k == 0 else cell.rjust(w)
                                       for k, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in table)


def answers(db: PrefDB, i: int) -> str:
    """The ``i``-th pair's label as the replay names it; a pair answered twice names both answers and who gave them."""
    label = LABEL_NAMES[db.prefs[i][2]]
    if not db.second_labellers[i]:
        return label
    return (f"{label} ({db.labellers[i] or 'first labeller'}: {LABEL_NAMES[db.first_labels[i]]}, "
            f"{db.second_labellers[i]}: {LABEL_NAMES[db.second_labels[i]]})")


def replay(dbs: list[tuple[str, PrefDB]], fps: float = PreferenceConfig.display_fps, zoom: int = 0) -> None:
    from drlhp.labelling.human import import_cv2_gui

    cv2 = import_cv2_gui()
    pairs = [(name, db, k) for name, db in dbs for k in range(len(db))]
    i = 0
    while 0 <= i < len(pairs):
        name, db, k = pairs[i]
        a, b, _ = db.prefs[k]
        frames_a, frames_b = db.segments[a].frames, db.segments[b].frames  # unpacked once per pair
        spec = infer_frame_spec(frames_a[0])
        print(f"{name} pair {i + 1}/{len(pairs)}: clip {a} (L) vs clip {b} (R): {answers(db, k)}", flush=True)
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
    labels = load(args.path)
    print(summary(labels), flush=True)
    if args.summary:
        return 0
    problem = display_problem()
    if problem:
        print(f"Cannot open a window: {problem}. Use --summary, or run under a display.", file=sys.stderr)
        return 2
    replay(labels.dbs, args.fps, args.zoom)
    return 0


if __name__ == "__main__":
    sys.exit(main())
