"""The reward network label by label when the trainer pauses at K training steps per label, offline, per K.

A run's trainer trains without pause by default: at the examples' 200-label budget on SAC, about 6,500 steps per
label over a run, on labels that do not change between them. ``training_steps_per_label`` pauses it. This replays a
SAC run's labels in the order they came (their numbers) into a network that trains as the run's trainer would with
``training_steps_per_label=K`` (from the first ``n_initial_prefs`` labels on, to ``pause_step`` after each label),
and scores it every ``--every`` labels on the run's own states (its saved replay buffer, as
``benchmarks.experiments.reward_over_run`` reads them):

- rho: Spearman's rank correlation of its episode scores with the true returns, over all episodes and the last 20;
- change: the std of the change of a step's reward since the last scoring, in this one's reward std;
- accuracy on all the run's validation labels (also those that came later).

    python -m benchmarks.experiments.steps_per_label /work/runs/hop_m01_s1 --out /work/runs/spl \\
        --per-label 50 200 1000 --log benchmarks/results/hopper_sac/steps_per_label.log
"""
from __future__ import annotations

import argparse
import shlex
import shutil
import sys
from pathlib import Path

import numpy as np

from benchmarks.experiments.reward_drift import spread
from benchmarks.experiments.reward_over_run import episode_scores, run_episodes
from benchmarks.report.run_records import git_commit
from drlhp.cli.offline import evaluate_reward, spearman
from drlhp.clips.frames import infer_frame_spec
from drlhp.config import PreferenceConfig
from drlhp.label_store.database import PrefBuffer, clip_format
from drlhp.reward.learner import Learner
from drlhp.reward.predictor import RewardPredictor
from drlhp.reward.torch_setup import set_up_torch
from drlhp.runtime.settings import learner_config
from drlhp.runtime.trainer_process import pause_step
from drlhp.storage.layout import LogDir

#: Episodes the "last" columns rank among themselves (as reward_over_run's).
LAST = 20


def labels_in_order(prefs_dir: str, config: PreferenceConfig) -> list[tuple]:
    """The run's labels as ``PrefBuffer.add``'s arguments (a, b, label, seq, labeller), in the order they came."""
    held = PrefBuffer.load(prefs_dir, 10**9, config.val_fraction)
    return sorted(((db.segments[a], db.segments[b], label, seq, who)
                   for db in (held.train_db, held.val_db)
                   for seq, (a, b, label), who in zip(db.seqs, db.prefs, db.labellers)), key=lambda x: x[3])


def replay(run: Path, out: Path, per_label: int, every: int, seed: int) -> list[tuple[int, int, Path]]:
    """Train on ``run``'s labels as they came, pausing at ``per_label`` steps per label; (labels, training step,
    checkpoint) every ``every`` labels and at the last."""
    prefs_dir = str(run / "drlhp")
    config = PreferenceConfig(prefs_dir=prefs_dir, log_dir=str(out / "log"), collect_prefs=False, train_reward=True,
                              training_steps_per_label=per_label, seed=seed)
    shape, dtype = clip_format(prefs_dir)
    shutil.rmtree(out, ignore_errors=True)
    (out / "kept").mkdir(parents=True)
    set_up_torch(1, seed)
    learner = Learner(learner_config(config, infer_frame_spec(np.zeros(shape[1:], dtype))), config.log_dir)
    labels = labels_in_order(prefs_dir, config)
    growing, kept = PrefBuffer(config.max_prefs_in_db, config.val_fraction), []
    for n, label in enumerate(labels, start=1):
        growing.add(*label)
        if n < config.n_initial_prefs or not len(growing.train_db):
            continue
        pause = pause_step(per_label, n, 0, config.reward_predictor_ckpt_interval)
        if learner.step < pause:
            learner.train(pause - learner.step, growing.train_db, growing.val_db)
        if n % every == 0 or n == len(labels):
            kept.append((n, learner.step, out / "kept" / f"labels_{n}.ckpt"))
            shutil.copy(LogDir(config.log_dir).checkpoint, kept[-1][2])
    return kept


def measure(run: Path, out: Path, per_label: int, every: int, seed: int) -> list[dict]:
    """Each kept network's figures (see the module's docstring)."""
    kept = replay(run, out, per_label, every, seed)
    observations, ends, lengths, returns = run_episodes(run)
    rows, previous = [], None
    for n, step, path in kept:
        rewards = RewardPredictor.load(str(path)).normalised_rewards(observations)
        scores = episode_scores(rewards, ends, lengths)
        rows.append({"labels": n, "training_step": step, "rho": spearman(scores, returns),
                     "rho_last": spearman(scores[-LAST:], returns[-LAST:]),
                     "change": np.nan if previous is None else np.std(rewards - previous) / np.std(rewards),
                     "val_accuracy": evaluate_reward(str(path), str(run / "drlhp")).accuracy})
        previous = rewards
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a learning_curves --out folder of a SAC run (labels, replay buffer)")
    parser.add_argument("--out", type=Path, required=True, help="the trainings' checkpoints go here")
    parser.add_argument("--per-label", type=int, nargs="+", required=True, help="training steps per label, each a row")
    parser.add_argument("--every", type=int, default=40, help="labels between scorings")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", type=Path, help="also write the table here, with the command and commit")
    args = parser.parse_args()
    lines = [f"# python -m benchmarks.experiments.steps_per_label {shlex.join(sys.argv[1:])}",
             f"# commit {git_commit()}; scored every {args.every} labels; change: since the scoring before",
             "per_label labels training_step episode_rho last_rho change val_accuracy"]
    print("\n".join(lines), flush=True)
    summary = []
    for k in args.per_label:
        rows = measure(args.run, args.out / f"per_label_{k}", k, args.every, args.seed)
        for r in rows:
            lines.append(f"{k} {r['labels']} {r['training_step']} {r['rho']:.3f} {r['rho_last']:.3f} "
                         f"{r['change']:.3f} {r['val_accuracy']:.3f}")
            print(lines[-1], flush=True)
        summary.append(f"# {k}: episode_rho {spread([r['rho'] for r in rows])}, change "
                       f"{spread([r['change'] for r in rows[1:]])}, val_accuracy at the end "
                       f"{rows[-1]['val_accuracy']:.3f}")
    lines += summary
    print("\n".join(summary))
    if args.log:
        args.log.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
