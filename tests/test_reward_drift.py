"""benchmarks.experiments.reward_drift: checkpoints of a training on a run's labels, kept after a warm-up, scored on
the run's own states."""
import numpy as np

from benchmarks.experiments.reward_drift import measure
from drlhp.clips.clip import Clip
from drlhp.label_store.database import PrefBuffer
from drlhp.storage.curve_csv import COLUMNS


def a_run(folder, n_episodes=6, length=10):
    """A run's folder: labelled pairs of 3-number clips (the reward: the first number), the replay buffer of its steps
    and its learning curve."""
    rng = np.random.default_rng(0)
    log_dir = folder / "drlhp"
    buffer = PrefBuffer(100, 0.2)
    for i in range(20):
        a, b = (Clip(2 * i + k, frames := rng.normal(size=(5, 3)).astype(np.float32), frames[:, 0]) for k in (0, 1))
        buffer.add(a, b, float(a.true_return > b.true_return))
    buffer.save(str(log_dir))
    observations = rng.normal(size=(n_episodes * length, 1, 3)).astype(np.float32)
    (log_dir / "agent").mkdir()
    np.savez(log_dir / "agent" / "replay_buffer.npz", next_observations=observations,
             pos=np.int64(len(observations)), full=np.bool_(False))
    returns = observations[:, 0, 0].reshape(n_episodes, length).sum(1)
    rows = [",".join(map(str, ["drlhp", 0, 0, (i + 1) * length, r, length, 0, 0.0])) for i, r in enumerate(returns)]
    (log_dir / "learning_curve.csv").write_text("\n".join([",".join(COLUMNS), *rows]) + "\n")


def test_the_kept_checkpoints_are_scored_and_a_fixed_penalty_stays_fixed(tmp_path):
    a_run(tmp_path / "run")
    often = {"reward_predictor_ckpt_interval": 5}
    adaptive = measure(tmp_path / "run", tmp_path / "adaptive", often, steps=40, every=10, warm_up=10, seed=0)
    assert len(adaptive["rho"]) == 3 and len(adaptive["change"]) == 2  # checkpoints at steps 20, 30 and 40
    assert all(c > 0 for c in adaptive["change"])  # training moves the reward between checkpoints
    assert np.median(adaptive["rho"]) > 0.5  # the reward is the first number: episodes ranked by it
    fixed = measure(tmp_path / "run", tmp_path / "fixed", {**often, "adaptive_l2": False,
                                                           "reward_predictor_weight_decay": 0.5},
                    steps=40, every=10, warm_up=10, seed=0)
    assert fixed["l2"] == (0.5, 0.5)
