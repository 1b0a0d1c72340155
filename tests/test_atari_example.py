"""The Atari examples' env: the score is blanked, the play is not, and the true return is still recorded."""

import numpy as np
import pytest

pytest.importorskip("ale_py")
from atari_recipe import SCORE_ROWS, make_atari  # examples/' own module (pytest's pythonpath, pyproject.toml)


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


def test_each_life_lost_costs_the_teachers_reward_the_penalty_and_the_recorded_score_nothing():
    actions = np.random.default_rng(0).integers(18, size=(3_000, 1))
    runs = {}
    for penalty in (0.0, 2.5):
        venv = make_atari("SeaquestNoFrameskip-v4", n_envs=1, seed=0, life_loss_penalty=penalty)
        try:
            venv.reset()
            steps = [venv.step(action) for action in actions]
        finally:
            venv.close()
        runs[penalty] = (np.array([float(s[1][0]) for s in steps]), np.array([bool(s[2][0]) for s in steps]),
                         [(s[3][0]["episode"]["r"], s[3][0]["episode"]["l"]) for s in steps if "episode" in s[3][0]])
    (score, lives_ended, games), (teachers, lives_ended_too, games_too) = runs[0.0], runs[2.5]
    assert np.array_equal(lives_ended, lives_ended_too)  # the same play
    assert lives_ended.sum() >= 4, "too few lives lost to tell"  # AtariWrapper ends an episode at each life lost
    assert np.array_equal(teachers - score, np.where(lives_ended, -2.5, 0.0))
    assert games and games_too == games  # SB3's Monitor, inside: the game's own score and length, unchanged


def test_a_death_is_in_a_clip_only_when_a_life_lost_does_not_end_the_episode():
    """With SB3's recipe a life lost ends the episode, and the clip being cut is dropped with it: the teacher and the
    reward network almost never see a death. With life_ends_episode=False the clips hold them."""
    from benchmarks.experiments.lives_in_clips import lives_in_clips

    lost, seen = lives_in_clips("BreakoutNoFrameskip-v4", 1_600, life_ends_episode=True)
    lost_spanned, seen_spanned = lives_in_clips("BreakoutNoFrameskip-v4", 1_600, life_ends_episode=False)
    assert lost >= 10 and lost_spanned >= 10  # a random policy loses lives quickly
    assert seen <= lost // 5  # only a life that lasted a whole number of clips
    assert seen_spanned >= lost_spanned // 2


@pytest.mark.parametrize("span", [False, True])
def test_with_clips_span_lives_a_clip_ends_at_the_games_end_only(span):
    """The SB3 front-end passes the pipeline the episode ends of the game, not of each life, when clips span lives."""
    from test_pipeline_contract import Recording

    from drlhp import PreferenceConfig
    from drlhp.sb3 import HumanPreferencesVecEnvWrapper

    def recording(n_envs: int) -> Recording:
        pipeline = Recording(n_envs, np.zeros((84, 84, 4), np.uint8))
        pipeline.config = PreferenceConfig(obs_transform_func=None, clips_span_lives=span)
        return pipeline

    venv = HumanPreferencesVecEnvWrapper(make_atari("BreakoutNoFrameskip-v4", 1, 0), pipeline_factory=recording)
    try:
        venv.reset()
        rng = np.random.default_rng(0)
        lives_lost = games = 0
        while not games:
            _, _, dones, infos = venv.step(rng.integers(venv.action_space.n, size=1))
            ended = venv.pipeline.steps[-1][2]
            if dones[0] and "episode" in infos[0]:
                games += 1
                assert ended[0]
            elif dones[0]:
                lives_lost += 1
                assert ended[0] != span
        assert lives_lost >= 3
    finally:
        venv.close()


def test_clips_span_lives_is_refused_by_a_front_end_that_cannot_tell_a_life_from_the_game():
    import gymnasium

    from drlhp import ConfigError, HumanPreferencesEnvWrapper

    with pytest.raises(ConfigError, match="clips_span_lives is for an SB3 VecEnv"):
        HumanPreferencesEnvWrapper(gymnasium.make("drlhp/MovingDot-v0"), clips_span_lives=True)
