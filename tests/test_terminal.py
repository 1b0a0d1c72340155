import os
import select

import pytest

from drlhp.labelling.terminal import InvalidAnswer, TerminalPrompt, parse_answer, terminal_problem


@pytest.mark.parametrize("text, label", [("l", 1.0), ("L", 1.0), (" left\n", 1.0), ("r", 0.0), ("R", 0.0),
                                         ("e", 0.5), ("E", 0.5), ("", None), ("  ", None)])
def test_answers(text, label):
    assert parse_answer(text) == label


@pytest.mark.parametrize("text", ["x", "lr", "1", "yes"])
def test_anything_else_is_invalid(text):
    with pytest.raises(InvalidAnswer):
        parse_answer(text)


def test_prompt_reads_lines_typed_in_a_terminal():
    controller, terminal = os.openpty()
    prompt = TerminalPrompt(os.ttyname(terminal))
    try:
        assert prompt.lines(timeout=0) == []
        os.write(controller, b"l\n")
        assert prompt.lines(timeout=5) == ["l"]
        os.write(controller, b"stale\n")
        prompt.drain()  # typed before the question: ignored
        os.write(controller, b"\n")
        assert prompt.lines(timeout=5) == [""]
        prompt.say("Pair 1? ")
        shown = b""  # the terminal echoes what was typed, then shows the question
        while b"Pair 1? " not in shown and select.select([controller], [], [], 5)[0]:
            shown += os.read(controller, 100)
        assert b"Pair 1? " in shown
    finally:
        prompt.close()
        os.close(controller)
        os.close(terminal)


def test_terminal_problems_are_named(tmp_path):
    plain = tmp_path / "not-a-tty"
    plain.write_text("")
    assert "is not a terminal" in terminal_problem(str(plain))
    assert "cannot open" in terminal_problem(str(tmp_path / "missing"))
