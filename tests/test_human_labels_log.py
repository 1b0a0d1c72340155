"""human_labels.csv: one schema whichever labeller writes it, and an older file is set aside, not mixed into."""
import csv
import os
from types import SimpleNamespace

import numpy as np
import pytest

from drlhp.clips.clip import Clip
from drlhp.labelling.answers import Answer
from drlhp.labelling.human import TERMINAL_LABELLER, HumanLabeller
from drlhp.labelling.web.labeller import WebLabeller
from drlhp.storage.layout import HUMAN_LABELS_FILENAME
from drlhp.storage.run_dir import HUMAN_LABEL_COLUMNS, log_human_label


def clip(clip_id: int) -> Clip:
    return Clip(clip_id, np.zeros((3, 8, 8, 1), np.uint8), np.zeros(3))


def test_a_run_labelled_in_the_terminal_then_resumed_in_a_browser_writes_one_csv_schema(tmp_path):
    path = str(tmp_path / HUMAN_LABELS_FILENAME)
    # The labellers' own recording code, without their window, terminal and server.
    terminal = SimpleNamespace(config=SimpleNamespace(log_path=path), n_asked=1, last_seconds=None)
    HumanLabeller._record(terminal, clip(0), clip(1), 1.0, 2.5, 19.7, 0.25)
    HumanLabeller._record(terminal, clip(2), clip(3), None, 1.0, 20.0, 0.5)  # "can't compare"
    web = SimpleNamespace(config=SimpleNamespace(log_path=path), pool=SimpleNamespace(recorded=lambda answer: None))
    answer = Answer(clip(4), clip(5), 0.0, "alice", 3.0, 7)
    WebLabeller.acknowledge(web, answer)
    assert answer.done.result(timeout=0)

    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    assert tuple(reader.fieldnames) == HUMAN_LABEL_COLUMNS
    assert all(None not in row and None not in row.values() for row in rows)  # no row longer or shorter
    assert [(r["clip_left"], r["label"], r["labeller"]) for r in rows] == \
        [("0", "1.0", TERMINAL_LABELLER), ("2", "", TERMINAL_LABELLER), ("4", "0.0", "alice")]
    assert [r["display_fps"] for r in rows] == ["19.7", "20.0", ""]  # the page measures no display rate
    assert [r["seconds_to_answer"] for r in rows] == ["2.500", "1.000", "3.000"]


def test_a_file_with_other_columns_is_set_aside_not_mixed_into(tmp_path):
    path = tmp_path / HUMAN_LABELS_FILENAME
    path.write_text("pair,clip_left,clip_right,label,seconds_to_answer\n1,0,1,1.0,2.000\n")  # an older drlhp's
    log_human_label(str(path), pair=2, clip_left=2, clip_right=3, label=0.5, labeller="bob")
    aside = [name for name in os.listdir(tmp_path) if name != HUMAN_LABELS_FILENAME]
    assert len(aside) == 1 and aside[0].startswith("human_labels.") and aside[0].endswith(".csv")
    assert (tmp_path / aside[0]).read_text().endswith("1,0,1,1.0,2.000\n")  # kept as it was
    with open(path, newline="") as f:
        assert [r["labeller"] for r in csv.DictReader(f)] == ["bob"]


def test_an_unknown_column_is_refused():
    with pytest.raises(ValueError, match="not columns of human_labels.csv: \\['mood'\\]"):
        log_human_label("unused.csv", pair=1, mood="fine")
