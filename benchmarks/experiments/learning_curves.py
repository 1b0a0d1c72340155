"""Learning curves: an example learning from preferences (drlhp, synthetic labels) against the same example
learning from the env's own reward (``--true-reward``), at the same settings and seed.

The two runs go one after the other (each wants the CPU cores to itself), as subprocesses, each into its own
log_dir: ``<out>/drlhp`` and ``<out>/true_reward``; ``--side-by-side`` runs them at the same time instead
(slower each, but a stop leaves both curves at about the same agent step). Both write ``learning_curve.csv``
(a row per finished
episode: agent steps, the env's true return, labels used, wall time) and save their agent as they go, so
``--resume`` continues both after a stop (a finished run is skipped; SIGTERM to this script stops both
cleanly, each saving its agent first). Then the two curves are merged into
``<out>/learning_curves.csv`` (run, agent_steps, true_episode_return, labels, wall_time_s, ...) and drawn into
``<out>/learning_curves.png``: the true episode return (mean of the last ``--smooth`` episodes) against agent
steps, with the labels the drlhp run had used by then on a twin axis. drlhp's warm-up (a random policy plays
until the reward predictor is ready) is not counted in agent steps, but it is in its wall time.

    python -m benchmarks.experiments.learning_curves --example moving_dot --total-timesteps 30000 --out lc_dot \\
        [--seed 1]
    python -m benchmarks.experiments.learning_curves --example pong --out lc_pong            # hours: 10M steps each
    python -m benchmarks.experiments.learning_curves --example pong --out lc_pong --resume   # after a stop
    python -m benchmarks.experiments.learning_curves --out lc_pong --plot-only               # redraw from what is there
    python -m benchmarks.experiments.learning_curves --example pong --out lc_pong_new \
        --baseline benchmarks/results/pong/learning_curves.csv                     # only drlhp, against a kept curve

``--record benchmarks/results`` writes a run record for each finished run (``benchmarks/report/run_records.py``):
``benchmarks/results/<example>/<arm>_seed<seed>[_<labels>labels][_<what the command changed>]/`` with the run's
curve, its reward-training metrics and ``run.json`` (the command and commit from ``<out>/launch.json``, which this
script writes when it starts the runs, drlhp's settings from the agent checkpoint, the wall time, the labels).
A run is recorded once (``<log_dir>/recorded_as`` remembers where); ``--plot-only --record`` records runs after
the fact.

``--baseline`` takes the true-reward curve from a merged CSV this script wrote before (same example, seed and
settings) instead of running it again: a new drlhp setting is compared with the same baseline, an hour sooner.

Any argument this script does not know goes to the example (e.g. ``--seed 1 --n-envs 4 --label-budget 100``).
The synthetic teacher's (``--teacher-mistake-rate 0.1``, ``--teacher-equal-threshold``, ``--teacher-beta``,
``--life-loss-penalty``) go to the drlhp run only, and a record names them under ``"teacher"``, not as a lever: the
teacher is who labels, not how drlhp learns.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.examples_path import with_examples
from benchmarks.report.run_records import free_folder, git_commit, record_name, write_record
from drlhp.learning_curve import current_rows, curve_from_rows, read_learning_curve, read_rows

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = {"moving_dot": "moving_dot_ppo.py", "moving_dot_random_target": "moving_dot_random_target_ppo.py",
            "pong": "pong_ppo.py", "breakout": "breakout_ppo.py", "seaquest": "seaquest_ppo.py",
            "halfcheetah_sac": "halfcheetah_sac.py", "hopper_sac": "hopper_sac.py",
            "halfcheetah_ppo": "halfcheetah_ppo.py"}
TASKS = {"moving_dot": "MovingDot", "moving_dot_random_target": "MovingDot, target at random", "pong": "Pong",
         "breakout": "Breakout", "seaquest": "Seaquest", "halfcheetah_sac": "HalfCheetah (SAC)",
         "hopper_sac": "Hopper (SAC)", "halfcheetah_ppo": "HalfCheetah (PPO)"}
RUNS = ("drlhp", "true_reward")
MERGED_COLUMNS = ("run", "agent_steps", "true_episode_return", "labels", "wall_time_s", "episode_length", "session")
CONTROLLED = ("--log-dir", "--true-reward", "--resume")  # this script sets them per run
#: The synthetic teacher's arguments, by the name run.json's "teacher" gives each: who labels, not how drlhp learns.
TEACHER_ARGS = {"--teacher-mistake-rate": "mistake_rate", "--teacher-equal-threshold": "equal_threshold",
                "--teacher-beta": "beta", "--life-loss-penalty": "life_loss_penalty"}
#: Example arguments that leave a run on drlhp's defaults: how many labels, which seed, how often to print and save,
#: and the teacher.
DEFAULTS_KEEP = ("--label-budget", "--seed", "--log-every", "--save-every", "--keep-agents", "--keep-reward-models",
                 *TEACHER_ARGS)
LAUNCH_FILE = "launch.json"
RECORDED_AS = "recorded_as"


def parse_args() -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--example", choices=sorted(EXAMPLES),
                        help="the example to run (with --plot-only: only names the task in the title)")
    parser.add_argument("--out", required=True, help="directory of the two runs, the merged CSV and the PNG")
    parser.add_argument("--total-timesteps", type=int, help="agent steps of each run (default: the example's)")
    parser.add_argument("--resume", action="store_true", help="continue both runs in --out; skip a finished one")
    parser.add_argument("--side-by-side", action="store_true",
                        help="run the two at the same time (a stop leaves both at about the same step)")
    parser.add_argument("--plot-only", action="store_true", help="only merge and draw the runs already in --out")
    parser.add_argument("--baseline", help="a merged learning_curves.csv: take the true-reward run from it, run "
                                           "only drlhp")
    parser.add_argument("--arm", choices=RUNS, help="run (and draw, and record) only this arm, e.g. the true-reward "
                                                   "run on a core the other leaves free; the other can follow "
                                                   "later with its own --arm")
    parser.add_argument("--smooth", type=int, default=20, help="episodes in the moving mean drawn (default: 20)")
    parser.add_argument("--record", metavar="RESULTS",
                        help="write a run record of each finished run under RESULTS/<example>/ (e.g. "
                             "benchmarks/results)")
    parser.add_argument("--random-return", type=float,
                        help="a random policy's return (Pong: -21): also print drlhp's improvement over it as a "
                             "share of the true-reward run's, at the last step both runs reached")
    args, example_args = parser.parse_known_args()
    controlled = [a for a in example_args if a.split("=")[0] in CONTROLLED]
    if controlled:
        parser.error(f"{' '.join(controlled)}: this script sets these for each run (see --out, --resume)")
    if args.baseline and not os.path.isfile(args.baseline):
        parser.error(f"--baseline {args.baseline}: no such file (a learning_curves.csv this script wrote)")
    if not args.plot_only and args.example is None:
        parser.error("--example is needed to run (or pass --plot-only to draw runs already in --out)")
    if args.record and args.example is None:
        parser.error("--record needs --example: the record names the example that ran")
    return args, example_args


def main() -> None:
    args, example_args = parse_args()
    runs = ("drlhp",) if args.baseline else (args.arm,) if args.arm else RUNS
    log_dirs = {run: os.path.join(args.out, run) for run in runs}
    if not args.plot_only:
        existing = [d for d in log_dirs.values() if os.path.exists(d)]
        if existing and not args.resume:
            sys.exit(f"error: {', '.join(existing)} already exist: --resume to continue them, --plot-only to "
                     "redraw them, or choose a new --out")
        commands = {run: example_command(args, example_args, run, log_dir) for run, log_dir in log_dirs.items()}
        commands = {run: cmd for run, cmd in commands.items() if cmd is not None}
        if commands:
            note_launch(args.out, list(commands))
        if args.side_by_side:
            run_commands(commands)
        else:
            for run, cmd in commands.items():
                run_commands({run: cmd})
    curves = {run: read_learning_curve(log_dir) for run, log_dir in log_dirs.items()}
    curves = {run: curve for run, curve in curves.items() if curve is not None}
    if not curves:
        sys.exit(f"error: no learning_curve.csv with rows in {' or '.join(log_dirs.values())}")
    if args.baseline:
        curves["true_reward"] = read_baseline(args.baseline)
    summarise(curves, args.smooth, args.random_return)
    print(f"wrote {write_merged(curves, os.path.join(args.out, 'learning_curves.csv'))}")
    task = TASKS.get(args.example, os.path.basename(os.path.normpath(args.out)))
    print(f"wrote {draw(curves, os.path.join(args.out, 'learning_curves.png'), args.smooth, task)}")
    if args.record:
        for run, log_dir in log_dirs.items():
            record(args, example_args, run, log_dir)


def example_command(args: argparse.Namespace, example_args: list[str], run: str, log_dir: str) -> list | None:
    """The command that runs (or resumes) the example as ``run`` into ``log_dir``; None if that run is finished."""
    if args.resume and finished(log_dir, args.total_timesteps):
        print(f"== {run}: finished in {log_dir}, skipped", flush=True)
        return None
    own_args = without_teacher(example_args) if run == "true_reward" else example_args
    cmd = [sys.executable, os.path.join(ROOT, "examples", EXAMPLES[args.example]), *own_args, "--log-dir", log_dir]
    if args.total_timesteps is not None:
        cmd += ["--total-timesteps", str(args.total_timesteps)]
    if run == "true_reward":
        cmd.append("--true-reward")
    if args.resume and os.path.isdir(log_dir):
        cmd.append("--resume")
    return cmd


def without_teacher(example_args: list[str]) -> list[str]:
    """``example_args`` less the synthetic teacher's: the true-reward run of a pair has no teacher."""
    kept, i = [], 0
    while i < len(example_args):
        arg = example_args[i]
        if arg.split("=")[0] in TEACHER_ARGS:
            i += 1 if "=" in arg else 2
        else:
            kept.append(arg)
            i += 1
    return kept


def run_commands(commands: dict[str, list]) -> None:
    """Run the commands at the same time, print each one's wall time as it ends; exit if one failed.
    A SIGTERM goes on to the runs, which stop cleanly (their agent saved) for ``--resume``."""
    start = time.monotonic()
    runs = {}

    def forward(signum: int, frame) -> None:
        for pid in list(runs):
            with contextlib.suppress(ProcessLookupError):  # it ended just now
                os.kill(pid, signum)

    signal.signal(signal.SIGTERM, forward)
    for run, cmd in commands.items():
        print(f"== {run}: {' '.join(cmd)}", flush=True)
        runs[subprocess.Popen(cmd).pid] = run
    failed, stopped = [], []
    while runs:
        pid, status = os.wait()
        if pid not in runs:
            continue
        run, returncode = runs.pop(pid), os.waitstatus_to_exitcode(status)
        print(f"== {run}: wall time {time.monotonic() - start:.0f} s (exit code {returncode})", flush=True)
        if returncode == 128 + signal.SIGTERM:
            stopped.append(f"the {run} run was stopped by SIGTERM, its agent saved")
        elif returncode != 0:
            failed.append(f"the {run} run failed (exit code {returncode})")
    if failed:
        sys.exit(f"error: {'; '.join(failed + stopped)}; fix the cause, then go on with --resume")
    if stopped:
        sys.exit(f"{'; '.join(stopped)}: go on with --resume")


def finished(log_dir: str, total_timesteps: int | None) -> bool:
    """Whether the run's saved agent has its ``total_timesteps`` (None: the total the run was started with)."""
    from agent_checkpoint import agent_checkpoint_path, load_agent_state

    path = agent_checkpoint_path(log_dir)
    if not os.path.exists(path):
        return False
    state = load_agent_state(path)
    return state["num_timesteps"] >= (total_timesteps or state["total_timesteps"])


def summarise(curves: dict, window: int, random_return: float | None) -> None:
    """Each run at its end, then both at the last agent step both reached, with drlhp's improvement over a
    random policy as a share of the true-reward run's (given the random policy's return)."""
    for run, curve in curves.items():
        returns = curve["true_episode_return"]
        print(f"{run:>11}: {len(returns)} episodes, {int(curve['agent_steps'][-1])} agent steps, true return of the "
              f"last {min(window, len(returns))} episodes {np.mean(returns[-window:]):.2f}, labels "
              f"{int(curve['labels'][-1])}, wall time {curve['wall_time_s'][-1]:.0f} s (all sessions)")
    if len(curves) < 2:
        return
    common = min(int(curve["agent_steps"][-1]) for curve in curves.values())
    at = {}
    for run, curve in curves.items():
        upto = curve["agent_steps"] <= common
        at[run] = float(np.mean(curve["true_episode_return"][upto][-window:]))
        print(f"{run:>11} at {common} agent steps: true return {at[run]:.2f} (last {window} episodes), labels "
              f"{int(curve['labels'][upto][-1])}, wall time {curve['wall_time_s'][upto][-1]:.0f} s")
    if random_return is not None:
        ratio = (at["drlhp"] - random_return) / (at["true_reward"] - random_return)
        print(f"drlhp's improvement over the random policy's {random_return:g}, as a share of the true-reward "
              f"run's, at {common} agent steps: {ratio:.2f}")


def note_launch(out: str, runs: list[str], module: str = "benchmarks.experiments.learning_curves") -> None:
    """Keep in ``<out>/launch.json`` each command (``python -m module`` and this process's arguments) and commit that
    started or resumed runs there, and which runs: what a run record says made it (the arms of one --out may be
    launched apart, each with its own --arm)."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, LAUNCH_FILE)
    launches = json.loads(Path(path).read_text())["launches"] if os.path.exists(path) else []
    launches.append({"command": shlex.join(["python", "-m", module, *sys.argv[1:]]),
                     "commit": git_commit(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "runs": runs})
    Path(path).write_text(json.dumps({"launches": launches}, indent=1) + "\n")


def launches_of(launches: list[dict], run: str) -> list[dict]:
    """The launches that ran ``run``: the one that started it, then each that resumed it."""
    return [launch for launch in launches if run in launched_runs(launch)]


def launched_runs(launch: dict) -> list[str] | tuple[str, ...]:
    """The runs a launch ran. One noted before launch.json named them ran its command's ``--arm``, or both."""
    if "runs" in launch:
        return launch["runs"]
    words = shlex.split(launch["command"])
    arms = [word.split("=", 1)[1] for word in words if word.startswith("--arm=")]
    arms += [after for word, after in zip(words, words[1:]) if word == "--arm"]
    return arms or RUNS


def record(args: argparse.Namespace, example_args: list[str], run: str, log_dir: str) -> None:
    """Write ``log_dir``'s run record under ``args.record`` if the run is finished and not recorded yet."""
    marker = os.path.join(log_dir, RECORDED_AS)
    if os.path.exists(marker):
        print(f"== {run}: recorded before, in {Path(marker).read_text().strip()}")
        return
    if not finished(log_dir, args.total_timesteps):
        print(f"== {run}: not finished, not recorded")
        return
    from agent_checkpoint import agent_checkpoint_path, load_agent_state

    state = load_agent_state(agent_checkpoint_path(log_dir))
    launch_path = os.path.join(args.out, LAUNCH_FILE)
    if not os.path.exists(launch_path):
        sys.exit(f"error: {launch_path} is missing: without it the record cannot say which command and commit "
                 "made the run")
    launches = launches_of(json.loads(Path(launch_path).read_text())["launches"], run)
    if not launches:
        sys.exit(f"error: {launch_path} names no launch of the {run} run: the record cannot say which command and "
                 "commit made it")
    rows = current_rows(read_rows(os.path.join(log_dir, "learning_curve.csv")))
    changes = changed_defaults(example_args)
    variant = "-".join(c.lstrip("-").replace("=", "-").replace(" ", "-") for c in changes) or "defaults"
    drlhp = run == "drlhp"
    example = json_safe(state["args"])
    taught = teacher_of(example) if drlhp else None
    name = record_name(run, state["args"]["seed"], state["args"]["label_budget"], variant, taught)
    folder = write_record(free_folder(Path(args.record) / args.example, name), {
        "game": state["settings"]["env"], "task": args.example, "arm": run, "seed": state["args"]["seed"],
        "label_budget": state["args"]["label_budget"] if drlhp else None,
        "labels": int(rows[-1]["labels"]) if drlhp else None, "agent_steps": state["num_timesteps"],
        "defaults": not changes, "variant": variant, "teacher": taught,
        "description": f"the command adds {' '.join(changes)}" if changes else
        "today's defaults: the command sets only the label budget, the seed and the length",
        "commit": launches[0]["commit"], "command": launches[0]["command"],
        "settings": {"example": example, "env_kwargs": state["settings"].get("env_kwargs", {}),
                     "drlhp": drlhp_settings(state) if drlhp else None},
        "wall_time_s": float(rows[-1]["wall_time_s"]), "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "reconstructed": False,
        "notes": "; ".join(f"resumed at {la['started']} by {la['command']} (commit {la['commit']})"
                           for la in launches[1:]),
    }, rows, os.path.join(log_dir, "reward_training_metrics.csv") if drlhp else None)
    Path(marker).write_text(f"{folder}\n")
    print(f"== {run}: recorded in {folder}")


def json_safe(values: dict) -> dict:
    """``values`` as strict JSON has them: an infinite float (a perfectly rational teacher's beta) as "inf"."""
    return json.loads(json.dumps(values), parse_constant=lambda name: name.lower().replace("infinity", "inf"))


def teacher_of(example_args: dict) -> dict:
    """The synthetic teacher a run's (JSON-safe) example arguments set, by what differs from the perfect teacher
    ({}: perfect; a run from before the teacher had flags had the perfect one)."""
    perfect = {"mistake_rate": 0.0, "equal_threshold": 0.0, "beta": "inf", "life_loss_penalty": 0.0}
    values = {name: example_args.get(flag[2:].replace("-", "_"), perfect[name]) for flag, name in TEACHER_ARGS.items()}
    return {name: value for name, value in values.items() if value != perfect[name]}


def drlhp_settings(agent_state: dict) -> dict:
    """drlhp's resolved settings, as the agent checkpoint keeps them; for one written before it kept them,
    resolved from its arguments by today's code (the examples' ``common``)."""
    if "drlhp_settings" in agent_state:
        return agent_state["drlhp_settings"]
    from common import Args, resolved_drlhp_settings

    return resolved_drlhp_settings(Args(**agent_state["args"]))


def changed_defaults(example_args: list[str]) -> list[str]:
    """The example arguments that change a default of drlhp or of the example, each with its value
    (``--reward-centre median``)."""
    changes, i = [], 0
    while i < len(example_args):
        arg = example_args[i]
        takes_value = "=" not in arg and i + 1 < len(example_args) and not example_args[i + 1].startswith("--")
        if arg.split("=")[0] not in DEFAULTS_KEEP:
            changes.append(f"{arg} {example_args[i + 1]}" if takes_value else arg)
        i += 2 if takes_value else 1
    return changes


def read_baseline(path: str) -> dict[str, np.ndarray]:
    """The true-reward run's rows of a merged learning_curves.csv, as arrays by column."""
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == "true_reward"]
    if not rows:
        sys.exit(f"error: --baseline {path} has no true_reward rows (a learning_curves.csv this script wrote)")
    return curve_from_rows(rows, MERGED_COLUMNS)


def write_merged(curves: dict, path: str) -> str:
    """Both runs' current rows in one CSV, run by run."""
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(MERGED_COLUMNS)
        for curve in curves.values():
            for i in range(len(curve["agent_steps"])):
                writer.writerow([curve["run"][i], int(curve["agent_steps"][i]),
                                 f"{curve['true_episode_return'][i]:.6g}", int(curve["labels"][i]),
                                 f"{curve['wall_time_s'][i]:.1f}", int(curve["episode_length"][i]),
                                 int(curve["session"][i])])
    return path


def draw(curves: dict, path: str, window: int, task: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from drlhp.cli.plot import plot_learning_curve

    fig, ax = plt.subplots(figsize=(10, 5.5))
    handles, labels_ax = [], None
    names = {"drlhp": "drlhp (synthetic labels)", "true_reward": "the agent on the true reward"}
    for (run, curve), color in zip(curves.items(), ("C0", "C1")):
        run_handles, labels_ax = plot_learning_curve(ax, curve, names[run], color, window, labels_ax, legend=False)
        handles += run_handles
    ax.legend(handles=handles, loc="lower right", fontsize=8)
    ax.set_title(f"{task}: true episode return by agent step", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


if __name__ == "__main__":
    with_examples()  # the examples' agent checkpoint and arguments: examples/ on this Python's path
    main()
