"""The Atari examples' env: the score is blanked, the play is not, and the true return is still recorded."""
import os
import sys

import numpy as np
import pytest

pytest.importorskip("ale_py")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
from pong_ppo import SCORE_ROWS, make_atari  # noqa: E402  (the examples' own module, from examples/)


@pytest.mark.parametrize("env_id", sorted(SCORE_ROWS))
def test_the_score_rows_are_black_and_the_play_is_not(env_id):
    venv = make_atari(env_id, n_envs=1, seed=0)
    try:
        frames = [venv.reset()]
        rng = np.random.default_rng(0)
        for _ in range(200):
            frames.append(venv.step(rng.integers(venv.action_space.n, size=1))[0])
        frames = np.concatenate(frames)
        rows = SCORE_ROWS[env_id]
        assert frames.shape[1:] == (84, 84, 4)
        assert not frames[:, :rows].any(), "the score rows are shown"
        assert frames[:, rows:].std(axis=0).max() > 0, "the play below them does not move"
    finally:
        venv.close()
