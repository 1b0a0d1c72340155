"""benchmarks.experiments.reward_over_run: episodes scored from a run's replay buffer by each kept reward model, and
each fall judged by the model the agent had when it fell."""
import subprocess
import sys

import numpy as np

from benchmarks.experiments.reward_over_run import episode_scores, fall_episodes, ranked_right
from drlhp.clips.frames import infer_frame_spec
from drlhp.reward.predictor import NetConfig, RewardPredictor
from drlhp.storage.curve_csv import COLUMNS


def test_an_episodes_score_sums_the_rewards_of_its_own_steps():
    rewards = np.arange(1.0, 11.0)  # steps 1..10 in slots 0..9
    # Episodes ending at steps 3 (3 long), 5 (2 long) and 10 (5 long): a resumed run's episode may start anywhere.
    assert episode_scores(rewards, np.array([3, 5, 10]), np.array([3, 2, 5])).tolist() == [6.0, 9.0, 40.0]


def test_falling_episodes_in_a_row_make_one_fall_and_the_ranking_counts_pairs():
    ends = np.arange(10, 110, 10)
    assert [g.tolist() for g in fall_episodes([30, 40, 80], ends)] == [[2, 3], [7]]
    scores = np.array([5.0, 4.0, 1.0, 4.0])
    # Episodes 0 and 1 before, 2 and 3 fallen: of the four pairs, 0>2, 0>3, 1>2 and a tie 1=3 (half).
    assert ranked_right(scores, np.array([2, 3]), np.array([0, 1])) == 3.5 / 4


def test_the_table_gives_each_kept_model_and_the_fall_with_the_model_in_use_then(tmp_path):
    log_dir = tmp_path / "drlhp"
    (log_dir / "agent").mkdir(parents=True)
    (log_dir / "reward_history").mkdir()
    length, returns = 10, [2000.0] * 20 + [-50.0] * 3 + [2000.0] * 7  # a fall at episodes 21-23 (steps 201-230)
    observations = np.random.default_rng(0).normal(size=(len(returns) * length, 1, 3)).astype(np.float32)
    np.savez(log_dir / "agent" / "replay_buffer.npz", next_observations=observations, pos=np.int64(len(observations)),
             full=np.bool_(False))
    rows = [",".join(map(str, ["drlhp", 0, 0, (i + 1) * length, r, length, 0, 0.0])) for i, r in enumerate(returns)]
    (log_dir / "learning_curve.csv").write_text("\n".join([",".join(COLUMNS), *rows]) + "\n")
    predictor = RewardPredictor(NetConfig(infer_frame_spec(observations[0, 0])))
    for step in (100, 200, 250):
        predictor.save(str(log_dir / "reward_history" / f"step_{step}.ckpt"))
    out = subprocess.run([sys.executable, "-m", "benchmarks.experiments.reward_over_run", str(tmp_path), "--task",
                          "hopper_sac"], capture_output=True, text=True, check=True).stdout.splitlines()
    table = out[out.index("model_step rho_all_episodes rho_last_20_episodes change") + 1:]
    assert [line.split()[0] for line in table[:3]] == ["100", "200", "250"]
    fall = out[-1].split()
    # The fall's first step and last, its episodes, the model kept last before it began, the returns around it.
    assert fall[:4] == ["201", "230", "3", "200"] and fall[5:] == ["2000", "-50"]
    assert 0.0 <= float(fall[4]) <= 1.0
