"""benchmarks.experiments.halfcheetah_posture reads a cheetah's posture from real HalfCheetah observations, in step
order from a saved replay buffer that has wrapped."""
import gymnasium as gym
import numpy as np

from benchmarks.experiments.halfcheetah_posture import posture, stored_observations


def _observation(torso_angle: float, forward_speed: float) -> np.ndarray:
    env = gym.make("HalfCheetah-v5")
    env.reset(seed=0)
    body = env.unwrapped
    qpos, qvel = body.data.qpos.copy(), body.data.qvel.copy()
    qpos[2], qvel[0] = torso_angle, forward_speed
    body.set_state(qpos, qvel)
    obs = body._get_obs()
    env.close()
    return obs


def test_posture_of_upright_and_flipped_cheetahs():
    upright, flipped = _observation(0.3, 2.0), _observation(np.pi - 0.2, -1.0)
    rows = posture(np.stack([upright, upright, upright, flipped, flipped]), window=3)
    assert [(start, round(back, 2)) for start, back, _ in rows] == [(0, 0.0), (3, 1.0)]
    assert np.allclose([speed for *_, speed in rows], [2.0, -1.0])


def _observations(steps: list[int]) -> np.ndarray:
    """A buffer's observations (slots, 1 env, 17) where step i's observation is all i."""
    return np.array(steps, dtype=float)[:, None, None] * np.ones((1, 1, 17))


def test_stored_observations_in_step_order_after_the_buffer_wrapped(tmp_path):
    saved = tmp_path / "drlhp" / "agent" / "replay_buffer.npz"
    saved.parent.mkdir(parents=True)
    # 7 steps in 5 slots: the next is written at slot 2.
    np.savez(saved, observations=_observations([5, 6, 2, 3, 4]), pos=np.int64(2), full=np.bool_(True))
    assert stored_observations(tmp_path)[:, 0].tolist() == [2, 3, 4, 5, 6]
    np.savez(saved, observations=_observations([0, 1, 2, 0, 0]), pos=np.int64(3), full=np.bool_(False))
    assert stored_observations(tmp_path)[:, 0].tolist() == [0, 1, 2]
