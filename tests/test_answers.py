"""One map from a person's answer to its label, shared by the terminal, the web page (its server and its
keys) and ``drlhp show-prefs``; the modes are ``Literal`` types whose plain strings keep working."""
import re
from pathlib import Path

import pytest

import drlhp
from drlhp.labelling import answers, terminal
from drlhp.labelling.answers import CHOICE_VALUES, LABEL_NAMES, LABELS, Choice, parse_typed
from drlhp.labelling.pair_selection import SELECTIONS
from drlhp.labelling.schedule import SCHEDULES
from drlhp.reward.predictor import ARCHS

STATIC = Path(answers.__file__).parent / "web" / "static"  # the page sends a Choice's value


def test_each_choice_has_one_label_and_every_stored_label_a_name():
    assert {c.label for c in Choice} == {1.0, 0.0, 0.5, None}
    assert set(LABEL_NAMES) == {label for label in LABELS.values() if label is not None}
    assert Choice("L") is Choice.LEFT and Choice.SKIP == "skip"  # a str: it travels as JSON as it is


@pytest.mark.parametrize("typed, choice", [("L", Choice.LEFT), (" right ", Choice.RIGHT), ("e", Choice.EQUAL),
                                           ("", Choice.SKIP)])
def test_the_terminal_reads_the_same_map(typed, choice):
    assert parse_typed(typed) is choice
    assert terminal.parse_answer(typed) == choice.label
    assert all(terminal.ANSWERS[word] == LABELS[c] for word, c in answers.TYPED.items() if c is not Choice.SKIP)


def test_the_web_pages_keys_and_buttons_send_exactly_the_choices():
    app = (STATIC / "app.js").read_text()
    keys = re.search(r"const label = (\{[^}]*\})\[key\]", app)
    assert keys is not None, "app.js's key map moved: update this test"
    assert set(re.findall(r'"([^"]+)"', keys.group(1))) == CHOICE_VALUES
    assert set(re.findall(r'data-label="([^"]+)"', (STATIC / "index.html").read_text())) == CHOICE_VALUES
    assert 'key === "u"' in app and 'id="undo"' in (STATIC / "index.html").read_text()  # U takes back, not answers


def test_the_modes_are_literal_types_and_plain_strings_still_work():
    assert ARCHS == ("atari", "keypoints") and SELECTIONS == ("coverage", "disagreement", "random")
    assert SCHEDULES == ("constant", "hyperbolic", "inverse_quadratic")
    assert drlhp.config.LABELLING == ("terminal", "web")
    chosen: dict[str, str] = {"reward_net_arch": "atari", "pair_selection": "random", "label_schedule": "constant"}
    config = drlhp.PreferenceConfig(**chosen)  # what a user reads from a file or the command line
    assert (config.reward_net_arch, config.pair_selection, config.label_schedule) == ("atari", "random", "constant")
    with pytest.raises(drlhp.ConfigError, match="pair_selection must be one of"):
        drlhp.PreferenceConfig(pair_selection="disagrement")  # type: ignore[arg-type]  # mypy finds this typo
