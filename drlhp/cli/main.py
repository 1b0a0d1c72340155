"""The ``drlhp`` command: the common jobs from the shell.

    drlhp collect drlhp/MovingDot-v0 --synthetic --labels 500 --log-dir prefs
    drlhp collect --dataset hopper/replay-v0 --web --labels 500 --log-dir prefs
    drlhp train-reward prefs --steps 1000 --log-dir reward
    drlhp eval-reward reward/reward_predictor_checkpoints prefs
    drlhp show-prefs prefs
    drlhp plot reward
    drlhp relabel-dataset hopper/replay-v0 reward/reward_predictor_checkpoints --out hopper/relabelled-v0

``drlhp <command> --help`` says more. The checkpoint ``train-reward`` writes is
what the wrappers' ``pretrained_reward_predictor_dir=`` loads.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time

from tqdm import tqdm

from drlhp.cli.setting_flags import add_setting_flag, add_setting_flags, settings_from
from drlhp.errors import ConfigError
from drlhp.storage.layout import LogDir

#: The settings ``collect`` takes besides its own flags.
COLLECT_SETTINGS = ("web_port", "segment_length", "seed")


class _TqdmHandler(logging.Handler):
    """Log lines above the progress bar instead of through it."""

    def emit(self, record: logging.LogRecord) -> None:
        tqdm.write(self.format(record), file=sys.stderr)


class _LazyBar:
    """A progress bar that appears with the first progress, so an early error prints alone."""

    def __init__(self, **kwargs) -> None:
        self.kwargs, self.bar = kwargs, None

    def get(self) -> tqdm:
        if self.bar is None:
            self.bar = tqdm(**self.kwargs)
        return self.bar

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _log_through_tqdm() -> None:
    handler = _TqdmHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("drlhp")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False


def cmd_collect(args) -> None:
    from drlhp.cli.collect import collect

    bar = _LazyBar(total=args.labels, unit="label", desc="labels")

    def on_label(n: int) -> None:
        bar.get().update(min(n, args.labels) - bar.get().n)

    if args.synthetic and args.web:
        raise ConfigError("choose one of --synthetic and --web")
    # A person answering in this terminal: the questions count the pairs, a bar would overwrite them.
    in_terminal = not (args.synthetic or args.web)
    paths = collect(args.env_id, args.log_dir, args.labels, args.policy, args.algo,
                    on_label=None if in_terminal else on_label, dataset=args.dataset,
                    synthetic_preferences=args.synthetic,
                    labelling="web" if args.web else "terminal", resume=args.resume, log_level=logging.WARNING,
                    **settings_from(args, COLLECT_SETTINGS))
    bar.close()
    print(f"{chr(10) if in_terminal else ''}saved {' and '.join(paths)}")  # after an unanswered question


def cmd_relabel_dataset(args) -> None:
    from drlhp.datasets.writing import relabel_dataset

    made = relabel_dataset(args.dataset, args.checkpoint, args.out)
    print(f"wrote the Minari dataset {args.out}: {made.total_episodes} episodes, {made.total_steps} steps, each "
          "reward the reward model's")


def cmd_train_reward(args) -> None:
    from drlhp.cli.offline import train_reward

    _log_through_tqdm()
    bar = _LazyBar(unit="step", desc="reward training")

    def on_step(step: int, total: int) -> None:
        bar.get().total = total
        bar.get().update(step - bar.get().n)

    settings = settings_from(args, TRAIN_REWARD_SETTINGS)
    row = train_reward(args.prefs_dir, args.log_dir, args.steps, args.epochs, on_step=on_step,
                       torch_threads=args.threads, **settings)
    bar.close()
    print(f"step {row['training_step']}: validation accuracy {row['val_accuracy']:.3f}, loss {row['val_loss']:.4f}; "
          f"checkpoint in {LogDir(args.log_dir).checkpoint_dir} (pretrained_reward_predictor_dir= loads it)")


def cmd_eval_reward(args) -> None:
    from drlhp.cli.offline import evaluate_reward

    bar = _LazyBar(unit="item", desc="pairs, then clips")

    def on_progress(done: int, total: int) -> None:
        bar.get().total = total
        bar.get().update(min(done, total) - bar.get().n)

    result = evaluate_reward(args.checkpoint, args.prefs_dir, args.split, on_progress=on_progress)
    bar.close()
    rho = "n/a (the clips carry no true reward)" if result.spearman != result.spearman else f"{result.spearman:.3f}"
    print(f"{result.n_pairs} {args.split} pairs: accuracy {result.accuracy:.3f} (chance 0.5), loss {result.loss:.4f}; "
          f"Spearman rho of per-frame reward vs true reward: {rho}")


def cmd_show_prefs(args) -> int:
    from drlhp.cli.show_prefs import main as show_prefs

    return show_prefs([args.path] + (["--summary"] if args.summary else []))


def cmd_plot(args) -> None:
    from drlhp.cli.plot import plot

    print(f"wrote {plot(args.log_dir, args.out, args.prefs_dir)}")


TRAIN_REWARD_STEPS = 1000  # train-reward's steps when neither --steps nor --epochs is given


#: The settings ``train-reward`` takes, each as its flag (``--reward-predictor-lr``), as the wrappers' trainer would.
TRAIN_REWARD_SETTINGS = (
    "reward_predictor_batch_size", "reward_predictor_lr", "reward_predictor_ckpt_interval", "reward_net_arch",
    "ensemble_size", "reward_predictor_dropout", "reward_predictor_batchnorm", "reward_predictor_frame_norm",
    "reward_predictor_device", "reward_predictor_weight_decay", "adaptive_l2", "adaptive_l2_factor",
    "reward_predictor_weight_average",
    "augment_shift", "temporal_crop_min_length", "pseudo_label_threshold", "noise_prob", "estimate_noise_prob",
    "label_filter", "label_flip", "reward_scale", "reward_centre", "val_fraction", "seed", "tensorboard_log")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="drlhp", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    stamp = time.strftime("%Y%m%d-%H%M%S")

    p = sub.add_parser("collect", help="gather preferences on an env, then save them")
    p.add_argument("env_id", nargs="?", help="anything gymnasium.make accepts: drlhp/MovingDot-v0, ALE/Pong-v5, "
                   "my_module:MyEnv-v0 (or --dataset instead)")
    p.add_argument("--dataset", help="label clips of a recorded Minari dataset instead of an env: its id, or its "
                   "folder (needs drlhp[datasets])")
    p.add_argument("--synthetic", action="store_true", help="label from the env's reward (default: you label, "
                   "in a window and this terminal)")
    p.add_argument("--web", action="store_true", help="people label on a web page (its address is printed; "
                   "needs drlhp[web])")
    p.add_argument("--labels", type=int, default=500, help="labels to gather (default: 500)")
    p.add_argument("--policy", help="an SB3 model .zip to act with, trained on this env's observations "
                   "(default: random actions)")
    p.add_argument("--algo", default="ppo", help="the SB3 algorithm of --policy (default: ppo)")
    add_setting_flag(p, "log_dir", f"drlhp_logs/collect/{stamp}", also="here, where the labels go")
    add_setting_flag(p, "resume", also="here, add to the labels already in --log-dir")
    add_setting_flags(p, COLLECT_SETTINGS)
    p.set_defaults(run=cmd_collect)

    p = sub.add_parser("train-reward", help="train a reward network on saved preferences (no env needed)")
    p.add_argument("prefs_dir", help="a log_dir holding labels (train.pkl.gz / val.pkl.gz, label journal)")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, default=None, help=f"training steps (default: {TRAIN_REWARD_STEPS})")
    length.add_argument("--epochs", type=float, help="passes over the training pairs")
    add_setting_flag(p, "log_dir", f"drlhp_logs/train_reward/{stamp}", also="here, the checkpoints and metrics")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    add_setting_flags(p.add_argument_group("reward-training settings (as the wrappers')"), TRAIN_REWARD_SETTINGS)
    p.set_defaults(run=cmd_train_reward)

    p = sub.add_parser("eval-reward", help="accuracy and loss of a checkpoint on saved preferences")
    p.add_argument("checkpoint", help="a reward_predictor.ckpt, or the directory holding it")
    p.add_argument("prefs_dir")
    p.add_argument("--split", choices=("val", "train", "all"), default="val")
    p.set_defaults(run=cmd_eval_reward)

    p = sub.add_parser("relabel-dataset", help="a new Minari dataset: a dataset's episodes with a reward model's "
                       "rewards")
    p.add_argument("dataset", help="the Minari dataset to relabel: its id, or its folder")
    p.add_argument("checkpoint", help="a reward_predictor.ckpt, or the directory holding it")
    p.add_argument("--out", required=True, help="the new dataset's id (e.g. hopper/relabelled-v0); never overwritten")
    p.set_defaults(run=cmd_relabel_dataset)

    p = sub.add_parser("show-prefs", help="replay saved pairs with their labels in a window")
    p.add_argument("path", help="a log_dir, or a train.pkl.gz / val.pkl.gz file")
    p.add_argument("--summary", action="store_true", help="print counts only; open no window")
    p.set_defaults(run=cmd_show_prefs)

    p = sub.add_parser("plot", help="a PNG of a run: reward-model curves, labels, predicted vs true return")
    p.add_argument("log_dir")
    p.add_argument("--out", help="the PNG to write (default: <log_dir>/drlhp_plot.png)")
    p.add_argument("--prefs-dir", help="labelled clips for the predicted-vs-true panel (default: log_dir)")
    p.set_defaults(run=cmd_plot)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "train-reward" and args.steps is None and args.epochs is None:
        args.steps = TRAIN_REWARD_STEPS
    try:
        return args.run(args) or 0
    except (FileNotFoundError, ValueError, ImportError) as e:
        print(f"drlhp {args.command}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
