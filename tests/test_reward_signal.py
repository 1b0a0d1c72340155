"""The offline measure of a reward signal (benchmarks/experiments/reward_signal.py) on rewards whose signal is known."""

import numpy as np
import pytest

from benchmarks.experiments.reward_signal import (
    GAMMA,
    Recording,
    discounted_to_go,
    ending,
    measure_rows,
    normalised_to_go,
    ranks,
    signal_metrics,
)

RNG = np.random.default_rng(0)
EPISODES = np.repeat(np.arange(4), 2000)
TRUE = np.where(RNG.random(len(EPISODES)) < 1 / 40, RNG.choice([-1.0, 1.0], len(EPISODES)), 0.0)  # a point now and then


def shaped(true: np.ndarray, spread: int = 20) -> np.ndarray:
    """Credit for each point spread evenly over the ``spread`` steps before it (within the episode)."""
    out = np.zeros(len(true))
    for i in np.flatnonzero(true):
        start = max(i - spread + 1, np.flatnonzero(EPISODES == EPISODES[i])[0])
        out[start:i + 1] += true[i] / (i + 1 - start)
    return out


def test_a_shaping_of_the_true_reward_is_all_signal_however_low_its_per_step_rank_correlation():
    m = signal_metrics(shaped(TRUE), TRUE, EPISODES)
    # (not exactly 0: credit cut off at an episode's start is not the same shaping everywhere)
    assert m["noise"] < 0.05 and m["r_100"] > 0.9 and m["r_disc"] > 0.9 and m["r_episode"] > 0.99
    assert m["rho_1"] < 0.3  # credit on the frames before a point: per step it ranks poorly (Pong's run: 0.22)
    # The critic's targets have the true reward's scale (credit moved a few steps earlier is discounted a little
    # less), and three times that when the reward is.
    assert 0.9 < m["scale_disc"] < 1.2
    assert signal_metrics(3 * shaped(TRUE), TRUE, EPISODES)["scale_disc"] == pytest.approx(3 * m["scale_disc"])


def test_noise_is_counted_as_noise_and_a_flat_reward_carries_no_signal():
    noisy = shaped(TRUE) + RNG.normal(0, 0.05, len(TRUE))  # the shaping's own std is ~0.03
    m = signal_metrics(noisy, TRUE, EPISODES)
    assert 0.6 < m["noise"] < 0.9 and m["r_100"] > 0.5
    pure_noise = signal_metrics(RNG.normal(0, 1, len(TRUE)), TRUE, EPISODES)
    # Discounted returns-to-go at gamma 0.99 move together over ~100 steps: 8,000 steps are ~80 independent
    # samples, so a correlation by chance has sd ~0.11; 0.35 is over 3 sd.
    assert pure_noise["noise"] > 0.95 and abs(pure_noise["r_disc"]) < 0.35
    flat = signal_metrics(np.zeros(len(TRUE)), TRUE, EPISODES)
    assert flat["noise"] == 1.0 and all(flat[k] == 0.0 for k in ("rho_1", "r_25", "r_100", "r_episode", "r_disc",
                                                                  "scale_disc", "typical"))


def test_the_typical_step_sees_an_offset_that_the_windowed_correlations_do_not():
    points = np.abs(TRUE)  # Breakout's shape: only gains
    centred = shaped(points) - shaped(points).mean()  # mean 0: the many ordinary steps below 0
    plain, offset = signal_metrics(shaped(points), points, EPISODES), signal_metrics(centred, points, EPISODES)
    assert plain["typical"] == 0.0 and offset["typical"] < -0.1
    assert all(offset[k] == pytest.approx(plain[k]) for k in ("rho_1", "r_25", "r_100", "noise"))


def test_a_reward_paid_at_episodes_ends_is_seen_where_the_true_reward_pays_nothing_there():
    last_steps = np.zeros(len(TRUE), bool)
    for end in np.flatnonzero(np.diff(EPISODES)):  # the three episodes that end; the fourth is cut short
        last_steps[end - 9:end + 1] = True
    paid_to_die = shaped(TRUE) + np.where(last_steps, 0.5, 0.0)
    m = signal_metrics(paid_to_die, TRUE, EPISODES)
    assert m["ending"] > 1.0 and abs(m["ending_true"]) < 0.2
    assert m["r_100"] > 0.1  # ... while the windows still see the points
    # The recording's last episode did not end: its last steps are ordinary ones.
    cut_short = np.zeros(len(TRUE))
    cut_short[-10:] = 1.0
    assert ending(cut_short, EPISODES) < 0
    assert ending(np.zeros(len(TRUE)), EPISODES) == 0.0 and ending(TRUE, np.zeros(len(TRUE), int)) == 0.0


def test_the_centre_gap_is_positive_where_rare_gains_lift_the_mean_and_negative_where_rare_losses_lower_it():
    from drlhp.reward.normaliser import RewardNormaliser, centre_gap

    def gap(reward: np.ndarray) -> float:
        by_mean, by_median = (RewardNormaliser.fit(reward, 1.0, centre) for centre in ("mean", "median"))
        assert centre_gap(reward) == pytest.approx((by_mean.centre[0] - by_median.centre[0]) / by_mean.std[0])
        return float(centre_gap(reward)[0])

    gains, losses = shaped(np.abs(TRUE)), shaped(-np.abs(TRUE))  # Breakout's shape; a game of lost points only
    assert gap(gains) > 0.1 and gap(losses) < -0.1
    assert gap(gains) == pytest.approx(-gap(losses))
    symmetric = np.random.default_rng(1).normal(size=10_000)
    assert gap(symmetric) == pytest.approx(0, abs=0.05)  # the two centres agree
    assert centre_gap(np.full((10, 2), 0.5)).tolist() == [0.0, 0.0]  # a flat member: no gap, no division by 0


def test_ranks_average_ties():
    assert ranks(np.array([0.0, 1.0, 0.0, -1.0])).tolist() == pytest.approx([1.5, 3.0, 1.5, 0.0])


def test_the_switch_measure_discounts_the_normalised_reward_as_if_step_by_step():
    from drlhp.reward.normaliser import RewardNormaliser

    rng = np.random.default_rng(0)
    raw = rng.normal(1.0, 3.0, size=(300, 2))
    episodes = np.repeat([0, 1, 2], 100)
    normaliser = RewardNormaliser.fit(raw[:50], scale=0.05)
    step_by_step = discounted_to_go(normaliser(raw), episodes, GAMMA)

    raw_to_go = np.column_stack([discounted_to_go(m, episodes, GAMMA) for m in raw.T])
    ones_to_go = discounted_to_go(np.ones(len(raw)), episodes, GAMMA)
    assert np.allclose(normalised_to_go(normaliser, raw_to_go, ones_to_go), step_by_step)


def save_recording(path: str, agent_steps: int = 7) -> np.ndarray:
    """A 6-step recording of 8x8 frames stacked by 2, as ``record`` writes it; returns its newest frames."""
    rng = np.random.default_rng(agent_steps)
    newest = rng.integers(1, 256, size=(6, 8, 8), dtype=np.uint8)
    first = rng.integers(1, 256, size=(1, 8, 8, 2), dtype=np.uint8)
    np.savez_compressed(path, newest=newest, first_stacks=first, episode_starts=np.array([0]),
                        rewards=np.zeros(6, np.float32), episodes=np.zeros(6, np.int32), agent_steps=agent_steps,
                        seed=0)
    return newest


def test_a_recording_loads_with_its_top_rows_blanked_and_the_rest_as_recorded(tmp_path):
    path = str(tmp_path / "agent_7.npz")
    newest = save_recording(path)
    as_recorded, blanked = Recording(path), Recording(path, blank_rows=3)
    assert as_recorded.frames[:, :3].all() and not blanked.frames[:, :3].any()
    np.testing.assert_array_equal(blanked.frames[:, 3:], as_recorded.frames[:, 3:])
    np.testing.assert_array_equal(as_recorded.frames[1:, ..., -1], newest[1:])


def test_each_checkpoints_rows_per_policy_follow_it_with_its_own_figures(tmp_path, monkeypatch):
    from benchmarks.experiments import reward_signal

    paths = [str(tmp_path / f"agent_{steps}.npz") for steps in (1, 2)]
    for steps, path in enumerate(paths, 1):
        save_recording(path, steps)
    recordings = [Recording(path) for path in paths]
    # Each "measure" says which checkpoint and recordings it saw: the rows must show where each figure came from.
    monkeypatch.setattr(reward_signal, "measure", lambda ckpt, recs: {
        "r_disc": float(ckpt == "b"), "r_episode": float(sum(r.agent_steps for r in recs)), "policy_rho": 1.0})
    rows = measure_rows(["a", "b"], recordings, per_policy=True)
    assert [name for name, _ in rows] == ["a", "  agent_1", "  agent_2", "b", "  agent_1", "  agent_2"]
    assert [m["r_disc"] for _, m in rows] == [0, 0, 0, 1, 1, 1]
    assert [m["r_episode"] for _, m in rows] == [3, 1, 2, 3, 1, 2]
    assert [name for name, _ in measure_rows(["a", "b"], recordings, per_policy=False)] == ["a", "b"]


def test_a_state_recording_keeps_its_observations_and_a_fallible_teacher_labels_its_clips(tmp_path):
    from benchmarks.experiments.reward_signal import make_labels
    from drlhp.label_store.database import PrefBuffer

    rng = np.random.default_rng(3)
    for steps in (1, 2):
        observations = rng.normal(size=(200, 3)).astype(np.float32)
        np.savez_compressed(tmp_path / f"agent_{steps}.npz", observations=observations,
                            rewards=observations[:, 0] * steps, episodes=np.zeros(200, np.int32),
                            agent_steps=steps, seed=0)
    recording = Recording(str(tmp_path / "agent_2.npz"))
    assert recording.frames.shape == (200, 3) and np.allclose(recording.rewards, 2 * recording.frames[:, 0])

    def wrong_share(mistake_rate: float) -> float:
        out = tmp_path / f"labels_{mistake_rate}"
        make_labels(str(tmp_path), str(out), 300, 10, None, seed=0, mistake_rate=mistake_rate)
        db = PrefBuffer.load_all(str(out)).train_db
        wrong = [label != float(db.segments[a].rewards.sum() > db.segments[b].rewards.sum())
                 for a, b, label in db.prefs]
        return float(np.mean(wrong))

    assert wrong_share(0.0) == 0.0
    assert 0.2 < wrong_share(0.3) < 0.4  # about 0.3 of 240 training labels
