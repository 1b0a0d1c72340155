"""The ``drlhp`` command, run as a user runs it: each subcommand as a subprocess, on MovingDot."""
import os
import re
import subprocess
import sys
import threading

import gymnasium
import numpy as np
import pytest
from scipy.stats import spearmanr
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from drlhp import HumanPreferencesEnvWrapper, PrefBuffer
from drlhp.cli.offline import spearman

DRLHP = os.path.join(os.path.dirname(sys.executable), "drlhp")  # the console script the package installs


def drlhp(*args, cwd, check=True):
    proc = subprocess.run([DRLHP, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=240)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_collect_train_eval_plot_and_the_wrapper_loads_the_result(tmp_path):
    out = drlhp("collect", "drlhp/MovingDot-v0", "--synthetic", "--labels", 200, "--segment-length", 10,
                "--seed", 0, "--log-dir", "prefs", cwd=tmp_path).stdout
    assert "saved prefs/train.pkl.gz and prefs/val.pkl.gz" in out
    out = drlhp("show-prefs", "prefs", "--summary", cwd=tmp_path).stdout
    assert sum(int(n) for n in re.findall(r"(\d+) preferences", out)) >= 200

    # One torch thread: on a machine whose cores are busy, two threads that wait on each other take many times longer.
    # 100 steps: the checkpoint holds the weights' moving average, which trails the trained weights early; at 60
    # steps one run of the whole suite on a busy machine scored 0.659 on held-out labels (alone: about 0.86).
    out = drlhp("train-reward", "prefs", "--steps", 100, "--reward-predictor-ckpt-interval", 20, "--seed", 0,
                "--log-dir", "reward",
                "--tensorboard-log", "tb", "--threads", 1, cwd=tmp_path).stdout
    assert re.search(r"step 100: validation accuracy", out), out
    events = EventAccumulator(str(tmp_path / "tb" / "drlhp_reward_1"))
    events.Reload()
    # Every 20 steps, and at step 50 (n_initial_training_steps: the step a wrapper starts using the network at).
    assert [e.step for e in events.Scalars("reward/val_accuracy")] == [20, 40, 50, 60, 80, 100]

    out = drlhp("eval-reward", "reward", "prefs", cwd=tmp_path).stdout
    accuracy, rho = re.search(r"accuracy ([\d.]+) .*Spearman rho .*: ([\d.-]+)", out).groups()
    assert float(accuracy) > 0.7 and float(rho) > 0.5, out  # well above chance (0.5, 0)

    png = tmp_path / "run.png"
    drlhp("plot", "reward", "--prefs-dir", "prefs", "--out", png, cwd=tmp_path)
    import matplotlib.image

    assert matplotlib.image.imread(str(png)).shape[:2] == (800, 1100)

    # The checkpoint is what the wrappers' pretrained_reward_predictor_dir loads.
    checkpoints = tmp_path / "reward" / "reward_predictor_checkpoints"
    env = HumanPreferencesEnvWrapper(gymnasium.make("drlhp/MovingDot-v0"), collect_prefs=False, train_reward=False,
                                     pretrained_reward_predictor_dir=str(checkpoints))
    with env:
        env.reset(seed=0)
        _, reward, *_ = env.step(0)
        assert env.using_reward_from_predictor and np.isfinite(reward)


@pytest.mark.parametrize("args, message", [
    (("collect", "NoSuchEnv-v0", "--synthetic", "--labels", 3), "cannot make env 'NoSuchEnv-v0'"),
    (("train-reward", "."), "holds no labelled clips"),
    (("eval-reward", "nowhere", "."), "no checkpoint at nowhere/reward_predictor.ckpt"),
    (("plot", "."), "reward_training_metrics.csv does not exist"),
])
def test_bad_input_gets_a_clear_error_and_exit_code_2(tmp_path, args, message):
    proc = drlhp(*args, cwd=tmp_path, check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_spearman_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 5, 200).astype(float), rng.normal(size=200)
    y[:50] = x[:50]
    assert spearman(x, y) == pytest.approx(spearmanr(x, y).statistic)
    assert np.isnan(spearman(x, np.ones(200)))


def test_collect_with_a_saved_sb3_policy_on_an_env_from_the_users_own_module(tmp_path):
    (tmp_path / "my_envs.py").write_text(
        "import gymnasium\nfrom drlhp.envs.moving_dot import MovingDotEnv\n"
        "gymnasium.register('MyDot-v0', entry_point=MovingDotEnv)\n")
    from stable_baselines3 import PPO

    PPO("MlpPolicy", gymnasium.make("drlhp/MovingDot-v0"), n_steps=64, batch_size=64, seed=0).learn(64).save(
        str(tmp_path / "agent.zip"))
    out = drlhp("collect", "my_envs:MyDot-v0", "--synthetic", "--labels", 20, "--segment-length", 5,
                "--policy", "agent.zip", "--log-dir", "prefs", cwd=tmp_path).stdout
    assert "saved prefs/train.pkl.gz" in out
    proc = drlhp("collect", "my_envs:MyDot-v0", "--synthetic", "--labels", 5, "--policy", "agent.zip",
                 "--algo", "nope", "--log-dir", "other", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "--algo must be one of" in proc.stderr


def test_collect_on_the_web_page_saves_what_the_labeller_answered(tmp_path):
    import json
    import urllib.request

    proc = subprocess.Popen([DRLHP, "collect", "drlhp/MovingDot-v0", "--web", "--web-port", "0", "--labels", "4",
                             "--segment-length", "5", "--log-dir", "prefs"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:  # the address is printed before the first pair
        if match := re.search(r"label at (http://\S+)", line):
            break
    assert match, proc.communicate(timeout=30)
    err = []
    drain = threading.Thread(target=lambda: err.extend(proc.stderr))  # the progress bar must not fill the pipe
    drain.start()
    base, token = match.group(1).split("/?token=")
    headers = {"X-Drlhp-Token": token}
    answered = []
    while len(answered) < 4:
        with urllib.request.urlopen(urllib.request.Request(base + "/api/next?name=cli", headers=headers)) as r:
            pair = json.loads(r.read())
        if pair["pair"] is None:
            continue
        body = json.dumps({"pair": pair["pair"], "label": "R", "name": "cli"}).encode()
        urllib.request.urlopen(urllib.request.Request(base + "/api/answer", data=body,
                                                      headers={**headers, "Content-Type": "application/json"})).read()
        answered.append((pair["left"], pair["right"], 0.0, "web:cli"))
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 0 and "saved prefs/train.pkl.gz and prefs/val.pkl.gz" in out, err
    drain.join()
    buffer = PrefBuffer.load_all(str(tmp_path / "prefs"))
    stored = [(a, b, label, who) for db in (buffer.train_db, buffer.val_db)
              for (a, b, label), who in zip(db.prefs, db.labellers)]
    assert sorted(stored) == sorted(answered)


def test_show_prefs_summary_names_the_instructions_retractions_and_agreement(tmp_path):
    from drlhp.cli.show_prefs import answers, load, summary
    from drlhp.clips.clip import Clip

    segs = [Clip(i, np.full((3, 8, 8), 40 * i, np.uint8), np.zeros(3)) for i in range(6)]
    buffer = PrefBuffer(100, 0.2)
    buffer.instructions = "Which dot gets nearer the target?"
    for i in range(5):
        buffer.add(segs[i], segs[i + 1], 1.0, labeller="web:al")
    assert buffer.add_second(0, "web:bo", 1.0) and buffer.add_second(1, "web:bo", 0.0)
    assert buffer.add_second(2, "web:cy", 1.0) and buffer.retract(3, "web:al")
    buffer.save(str(tmp_path))
    labels = load(str(tmp_path))
    assert summary(labels) == "\n".join([
        "labellers were asked: Which dot gets nearer the target?",
        "train.pkl.gz: 3 preferences over 4 clips — LEFT better: 2, RIGHT better: 0, equally good: 1",
        "val.pkl.gz: 1 preferences over 2 clips — LEFT better: 1, RIGHT better: 0, equally good: 0",
        "labels retracted by their labeller: 1",
        "  labellers        pairs answered twice  same answer  agreement",
        "  web:al & web:bo                     2            1        50%",
        "  web:al & web:cy                     1            1       100%",
        "  all                                 3            2        67%"])
    train = labels.dbs[0][1]
    assert answers(train, 0) == "LEFT better (web:al: LEFT better, web:bo: LEFT better)"
    assert answers(train, 1) == "equally good (web:al: LEFT better, web:bo: RIGHT better)"
    one_file = summary(load(str(tmp_path / "val.pkl.gz")))  # a file alone says the same of its own labels
    assert one_file.splitlines()[0] == "labellers were asked: Which dot gets nearer the target?"
    assert one_file.splitlines()[2:] == ["labels retracted by their labeller: 1", "pairs answered twice: none"]
