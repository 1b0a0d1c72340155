"""benchmarks.experiments.reward_terms: a run's kept reward models against the env's own reward terms, step by step,
over the steps before each model's step."""
import subprocess
import sys

import numpy as np
import pytest

from benchmarks.experiments.reward_terms import TASKS, every, hopper_upright, rebuilt_reward_check, upright_gap
from drlhp.clips.clip import Clip
from drlhp.clips.frames import infer_frame_spec
from drlhp.label_store.database import PrefDB
from drlhp.reward.predictor import NetConfig, RewardPredictor


@pytest.mark.parametrize("task", sorted(TASKS))
def test_the_rebuilt_reward_is_the_envs_own(task):
    # Rebuilt from the stored observation and action: gymnasium's terms, the velocity read from the observation
    # (HalfCheetah's is the last frame's, the env's an average over its frame skip: close, not equal).
    assert rebuilt_reward_check(TASKS[task], steps=500) > 0.9


def test_upright_is_gymnasiums_health_and_its_gap_is_in_the_rewards_std():
    obs = np.zeros((4, 11), np.float32)
    obs[:, 0] = [1.2, 1.2, 0.5, 1.2]  # height
    obs[:, 1] = [0.0, 0.3, 0.0, 0.0]  # angle
    obs[3, 7] = 150.0  # a velocity out of range
    assert hopper_upright(obs).tolist() == [True, False, False, False]
    reward, upright = np.array([3.0, 1.0, 1.0, 1.0]), np.array([True, False, False, False])
    assert upright_gap(reward, upright) == pytest.approx(2.0 / reward.std())
    assert np.isnan(upright_gap(reward, np.zeros(4, bool)))


def test_the_first_model_kept_in_each_interval_is_scored():
    kept = [(5_000, "a"), (20_000, "b"), (21_491, "c"), (41_491, "d"), (43_491, "e")]
    assert every(kept, 20_000) == [(5_000, "a"), (20_000, "b"), (41_491, "d")]


def test_the_table_gives_each_model_over_the_steps_before_it(tmp_path):
    log_dir = tmp_path / "drlhp"
    (log_dir / "agent").mkdir(parents=True)
    (log_dir / "reward_history").mkdir()
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(400, 1, 11)).astype(np.float32)
    observations[:, 0, 0] = 0.1  # fallen
    observations[::4, 0, :2] = (1.2, 0.0)  # but one step in four upright
    np.savez(log_dir / "agent" / "replay_buffer.npz", next_observations=observations,
             actions=rng.uniform(-1, 1, (400, 1, 3)).astype(np.float32), pos=np.int64(400), full=np.bool_(False))
    predictor = RewardPredictor(NetConfig(infer_frame_spec(observations[0, 0])))
    for step in (100, 150, 300):
        predictor.save(str(log_dir / "reward_history" / f"step_{step}.ckpt"))
    # The run's labels: of the first 40 pairs asked, one in four shows an upright frame; of the 12 after, none.
    fallen = np.zeros((25, 11), np.float32)
    standing = fallen.copy()
    standing[0, 0] = 1.2
    dbs = {"train": PrefDB(100), "val": PrefDB(100)}
    for seq in range(52):
        a = Clip(2 * seq, standing if seq < 40 and seq % 4 == 0 else fallen, np.zeros(25))
        dbs["val" if seq % 5 == 0 else "train"].append(a, Clip(2 * seq + 1, fallen, np.zeros(25)), 1.0, seq=seq)
    for name, db in dbs.items():
        db.save(str(log_dir / f"{name}.pkl.gz"))
    out = subprocess.run([sys.executable, "-m", "benchmarks.experiments.reward_terms", str(tmp_path), "--task",
                          "hopper_sac", "--window", "100", "--every", "100"],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    models = out.index("model_step corr upright_share upright_gap_model upright_gap_env")
    labels = out.index("labels pairs_with_upright frames_upright")
    table = [line.split() for line in out[models + 1:labels - 1]]
    assert [row[0] for row in table] == ["100", "300"]  # 150: not the first in its 100 steps
    assert [row[2] for row in table] == ["0.25", "0.25"]
    # The env pays an upright step its health bonus: about 1 more, in its std over the window.
    assert all(float(row[4]) > 0.5 for row in table) and all(-1 <= float(row[1]) <= 1 for row in table)
    assert out[labels + 1:] == ["0-39 0.25 0.005", "40-51 0.00 0.000"]  # 1 frame in 50 in a pair in four
