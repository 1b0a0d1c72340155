"""The examples' agent checkpoint and learning curve: a run that stops goes on where it was."""
from __future__ import annotations

import csv
import multiprocessing
import os
import signal

import common  # examples/' own module (pytest's pythonpath, pyproject.toml)
import numpy as np
import pytest
import torch
from agent_checkpoint import AgentCheckpointError, load_agent_state, restore_agent, save_agent
from moving_dot_ppo import ENV_ID, make_agent
from stable_baselines3 import DQN, PPO, SAC
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnvWrapper, VecNormalize

import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0)
from drlhp.learning_curve import LearningCurveWriter, read_learning_curve, read_rows

SETTINGS = {"env": ENV_ID, "n_envs": 2, "run": "true_reward"}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest's: the machine's cores are shared


def small_agent(seed: int = 0) -> PPO:
    """PPO on 2 MovingDot envs, rollouts of 64 steps, the learning rate falling linearly to 0 over the run."""
    return PPO("CnnPolicy", make_vec_env(ENV_ID, n_envs=2, seed=seed), n_steps=32, batch_size=32, n_epochs=1,
               learning_rate=lambda progress_remaining: 1e-3 * progress_remaining, seed=seed)


class LearningRates(BaseCallback):
    """The optimiser's learning rate at each rollout's start, by agent step."""

    def __init__(self) -> None:
        super().__init__()
        self.by_step: dict[int, float] = {}

    def _on_rollout_start(self) -> None:
        self.by_step[self.num_timesteps] = self.model.policy.optimizer.param_groups[0]["lr"]

    def _on_step(self) -> bool:
        return True


def test_a_resumed_agent_has_the_saved_weights_optimiser_state_counters_and_schedule(tmp_path):
    path = str(tmp_path / "agent" / "agent.pt")
    total = 384
    agent = small_agent().learn(192)
    save_agent(agent, path, total, SETTINGS)

    resumed = small_agent(seed=1)  # another seed: everything that matters must come from the file
    restore_agent(resumed, load_agent_state(path, SETTINGS), path)
    assert (resumed.num_timesteps, resumed._n_updates) == (192, agent._n_updates) and agent._n_updates > 0
    saved_policy, policy = agent.policy.state_dict(), resumed.policy.state_dict()
    assert saved_policy.keys() == policy.keys()
    assert all(torch.equal(saved_policy[k], policy[k]) for k in policy)
    saved_opt, opt = agent.policy.optimizer.state_dict(), resumed.policy.optimizer.state_dict()
    assert saved_opt["param_groups"] == opt["param_groups"]
    assert saved_opt["state"].keys() == opt["state"].keys() and opt["state"]
    for i, param_state in opt["state"].items():
        assert all(torch.equal(torch.as_tensor(v), torch.as_tensor(saved_opt["state"][i][k]))
                   for k, v in param_state.items())

    rates = LearningRates()
    resumed.learn(total - resumed.num_timesteps, callback=rates, reset_num_timesteps=False)
    assert resumed.num_timesteps == total and resumed._total_timesteps == total
    # After the first update of the resumed session (at step 256), the schedule is at 1 - 256/384 of the run,
    # as it would be had the run never stopped -- not at 1 - 64/192 of this session.
    assert rates.by_step[256] == pytest.approx(1e-3 * (1 - 256 / total))


@pytest.mark.parametrize("algorithm", [SAC, DQN])
def test_a_resumed_off_policy_agent_has_its_optimisers_entropy_coefficient_and_replay_buffer(tmp_path, algorithm):
    path = str(tmp_path / "agent" / "agent.pt")
    env_id = "Pendulum-v1" if algorithm is SAC else "CartPole-v1"

    def agent(seed: int):
        return algorithm("MlpPolicy", make_vec_env(env_id, n_envs=2, seed=seed), buffer_size=100, learning_starts=20,
                         batch_size=8, seed=seed, policy_kwargs=dict(net_arch=[8]))
    trained = agent(0).learn(130)  # 65 steps of 2 envs: the buffer's 50 slots wrapped round
    save_agent(trained, path, 200, SETTINGS)
    resumed = agent(1)
    restore_agent(resumed, load_agent_state(path, SETTINGS), path)
    saved, restored = trained.replay_buffer, resumed.replay_buffer
    assert (restored.pos, restored.full) == (saved.pos, saved.full) and saved.full
    for name in ("observations", "next_observations", "actions", "rewards", "dones", "timeouts"):
        assert np.array_equal(getattr(restored, name), getattr(saved, name)), name
    modules, tensors = trained._get_torch_save_params()
    assert len(modules) > 1 and (tensors or algorithm is DQN)
    for name in modules[1:]:  # the optimisers
        before = getattr_dotted(trained, name).state_dict()["state"]
        after = getattr_dotted(resumed, name).state_dict()["state"]
        assert before.keys() == after.keys() and before
        assert all(torch.equal(before[i]["exp_avg"], after[i]["exp_avg"]) for i in before)
    for name in tensors:
        assert torch.equal(getattr_dotted(trained, name), getattr_dotted(resumed, name))
    resumed.learn(200 - resumed.num_timesteps, reset_num_timesteps=False)
    assert resumed.num_timesteps >= 200


def test_a_resumed_agent_behind_vec_normalize_has_its_running_statistics(tmp_path):
    path = str(tmp_path / "agent" / "agent.pt")

    def agent(seed: int, normalize: bool = True):
        venv = make_vec_env("Pendulum-v1", n_envs=2, seed=seed)
        return PPO("MlpPolicy", VecNormalize(venv, gamma=0.9) if normalize else venv, n_steps=32, batch_size=32,
                   n_epochs=1, seed=seed, policy_kwargs=dict(net_arch=[8]))
    trained = agent(0).learn(128)
    save_agent(trained, path, 256, SETTINGS)
    resumed = agent(1)
    restore_agent(resumed, load_agent_state(path, SETTINGS), path)
    saved, restored = trained.get_vec_normalize_env(), resumed.get_vec_normalize_env()
    assert saved.obs_rms.count > 100 and np.array_equal(saved.returns, restored.returns)
    for name in ("obs_rms", "ret_rms"):
        before, after = getattr(saved, name), getattr(restored, name)
        assert np.array_equal(before.mean, after.mean) and np.array_equal(before.var, after.var), name
        assert before.count == after.count and after.mean.dtype == np.float64
    obs = np.random.default_rng(0).normal(size=(2, 3))
    assert np.array_equal(saved.normalize_obs(obs), restored.normalize_obs(obs))
    with pytest.raises(AgentCheckpointError, match="VecNormalize statistics saved for an agent without"):
        restore_agent(agent(1, normalize=False), load_agent_state(path, SETTINGS), path)


def getattr_dotted(obj, dotted: str):
    for name in dotted.split("."):
        obj = getattr(obj, name)
    return obj


def test_a_bad_agent_checkpoint_gives_a_clear_error_and_runs_no_code(tmp_path):
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(b"not a checkpoint")
    marker = tmp_path / "code_ran"

    class Payload:  # what a malicious file could hold: unpickling it would run a command
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    code = tmp_path / "code.pt"
    torch.save({"format": "anything", "payload": Payload()}, code)
    unmarked = tmp_path / "unmarked.pt"
    torch.save({"policy": {}}, unmarked)
    for path in (garbage, code, unmarked):
        with pytest.raises(AgentCheckpointError, match="is not an agent checkpoint") as error:
            load_agent_state(str(path), SETTINGS)
        assert str(path) in str(error.value) and "move" in str(error.value)
    assert not marker.exists()

    written = str(tmp_path / "agent.pt")
    save_agent(small_agent(), written, 100, SETTINGS)
    for key, value, flag in (("n_envs", 8, "--n-envs"), ("env", "PongNoFrameskip-v4", "the same example"),
                             ("run", "drlhp", "--true-reward")):
        with pytest.raises(AgentCheckpointError, match=f"written for {key}=") as error:
            load_agent_state(written, {**SETTINGS, key: value})
        assert written in str(error.value) and flag in str(error.value)


def run_example(log_dir, capsys, monkeypatch, venv=None, env_kwargs=None, **args) -> tuple[str, list[int]]:
    """The example's run on 2 MovingDot envs (rollouts of 128 steps; ``venv``: those envs, wrapped; ``env_kwargs``:
    what they were made with); returns its output and the agent steps at which it saved the agent."""
    saved_at = []
    real_save = common.save_agent
    monkeypatch.setattr(common, "save_agent", lambda agent, *a, **kw: (saved_at.append(agent.num_timesteps),
                                                                         real_save(agent, *a, **kw)))
    venv = venv or make_vec_env(ENV_ID, n_envs=2, seed=0, env_kwargs=env_kwargs)
    common.train_from_preferences(venv, common.Args(n_envs=2, log_dir=str(log_dir), log_every=10**9, **args),
                                  make_agent, ENV_ID, env_kwargs)
    return capsys.readouterr().out, saved_at


def test_the_true_reward_baseline_saves_resumes_and_appends_to_its_learning_curve(tmp_path, capsys, monkeypatch):
    log_dir = tmp_path / "run"
    out, saved_at = run_example(log_dir, capsys, monkeypatch, total_timesteps=512, save_every=256, true_reward=True)
    assert f"--resume --log-dir {log_dir}" in out  # how to go on after a kill, printed at the start
    assert saved_at == [256, 512]  # every --save-every steps, at a rollout's start, and at the end
    first = load_agent_state(str(log_dir / "agent" / "agent.pt"), SETTINGS)
    assert (first["num_timesteps"], first["total_timesteps"]) == (512, 512)
    first_text = (log_dir / "learning_curve.csv").read_text()
    first_rows = read_rows(str(log_dir / "learning_curve.csv"))
    # Episodes last 50 steps on each of 2 envs: one row per episode, at agent steps 100, 200, ..., 500.
    assert [int(r["agent_steps"]) for r in first_rows] == [s for s in range(100, 501, 100) for _ in range(2)]
    assert {(r["run"], r["session"], r["labels"]) for r in first_rows} == {("true_reward", "0", "0")}

    out, saved_at = run_example(log_dir, capsys, monkeypatch, total_timesteps=1024, save_every=256, true_reward=True,
                                resume=True)
    assert "resuming the agent at step 512" in out
    assert saved_at == [768, 1024]
    second = load_agent_state(str(log_dir / "agent" / "agent.pt"), SETTINGS)
    assert second["num_timesteps"] == 1024 and second["n_updates"] == 2 * first["n_updates"]
    text = (log_dir / "learning_curve.csv").read_text()
    assert text.startswith(first_text)  # appended, never rewritten
    new_rows = read_rows(str(log_dir / "learning_curve.csv"))[len(first_rows):]
    assert [int(r["agent_steps"]) for r in new_rows] == [s for s in range(612, 1013, 100) for _ in range(2)]
    assert {(r["session"], r["session_start_step"]) for r in new_rows} == {("1", "512")}
    wall = [float(r["wall_time_s"]) for r in first_rows + new_rows]
    assert wall == sorted(wall) and float(new_rows[0]["wall_time_s"]) >= first["wall_time_s"]

    out, _ = run_example(log_dir, capsys, monkeypatch, total_timesteps=1024, true_reward=True, resume=True)
    assert "nothing to do" in out and (log_dir / "learning_curve.csv").read_text() == text


def test_the_agent_checkpoint_says_what_the_env_was_made_with(tmp_path, capsys, monkeypatch):
    """A run's record reads the env's kwargs from here (Hopper without early termination is not Hopper-v5 as
    registered)."""
    run_example(tmp_path / "made", capsys, monkeypatch, env_kwargs={"episode_length": 20}, total_timesteps=256,
                true_reward=True)
    run_example(tmp_path / "registered", capsys, monkeypatch, total_timesteps=256, true_reward=True)
    made, registered = (load_agent_state(str(tmp_path / run / "agent" / "agent.pt"), SETTINGS)
                        for run in ("made", "registered"))
    assert made["settings"]["env_kwargs"] == {"episode_length": 20} and registered["settings"]["env_kwargs"] == {}


def test_resuming_a_run_without_an_agent_checkpoint_starts_the_agent_afresh(tmp_path, capsys):
    args = common.Args(n_envs=2, log_dir=str(tmp_path), true_reward=True, resume=True)
    session = common.start_session(args, ENV_ID)
    assert session.agent_state is None and session.start_step == 0 and session.number == 0
    assert "the agent starts afresh" in capsys.readouterr().out


def test_a_new_run_never_writes_over_an_earlier_one(tmp_path):
    curve = LearningCurveWriter(str(tmp_path), "true_reward", 0, 0)
    curve.add(100, 35.0, 50, 0, 1.0)
    curve.close()
    with pytest.raises(common.RunDirError, match="holds an earlier run"):
        common.start_session(common.Args(n_envs=2, log_dir=str(tmp_path), true_reward=True), ENV_ID)
    with pytest.raises(common.RunDirError, match="not a drlhp run"):  # a baseline's curve is not drlhp's
        common.start_session(common.Args(n_envs=2, log_dir=str(tmp_path), resume=True), ENV_ID)


def test_the_learning_curve_drops_the_steps_a_kill_lost(tmp_path):
    """Killed at step 500 after a checkpoint at 256, the run resumes from 256: the first session's episodes after
    256 belong to a lost stretch; the file keeps them, the curve does not."""
    first = LearningCurveWriter(str(tmp_path), "drlhp", 0, 0)
    for step in (100, 200, 300, 400, 500):
        first.add(step, float(step), 50, step // 10, step / 100)
    first.close()
    second = LearningCurveWriter(str(tmp_path), "drlhp", 1, 256)
    for step in (356, 456):
        second.add(step, -float(step), 50, step // 10, step / 100)
    second.close()
    curve = read_learning_curve(str(tmp_path))
    assert curve["agent_steps"].tolist() == [100, 200, 356, 456]
    assert curve["true_episode_return"].tolist() == [100, 200, -356, -456]
    assert len(read_rows(str(tmp_path / "learning_curve.csv"))) == 7


def test_drlhp_plot_draws_the_learning_curve(tmp_path):
    from drlhp.cli.plot import plot

    matplotlib_image = pytest.importorskip("matplotlib.image")
    curve = LearningCurveWriter(str(tmp_path), "true_reward", 0, 0)
    for step in range(100, 1001, 100):
        curve.add(step, np.sin(step), 50, 0, step / 100)
    curve.close()
    out = plot(str(tmp_path))  # a baseline trains no reward network: the curve alone
    assert matplotlib_image.imread(out).shape[:2] == (450, 1100)

    with open(tmp_path / "reward_training_metrics.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["training_step", "wall_time_s", "n_train_prefs", "n_val_prefs", "train_loss", "val_loss",
                         "train_accuracy", "val_accuracy"])
        writer.writerows([[10, 5, 40, 10, 0.6, 0.65, 0.7, 0.6], [20, 9, 60, 15, 0.5, 0.55, 0.8, 0.7]])
    out = plot(str(tmp_path), str(tmp_path / "all.png"))  # the four reward-model panels, the curve below
    assert matplotlib_image.imread(out).shape[:2] == (1200, 1100)


def test_a_resumed_drlhp_run_skips_the_warm_up_and_goes_on_with_agent_labels_and_curve(tmp_path, capsys,
                                                                                        monkeypatch):
    log_dir = tmp_path / "run"
    tiny = dict(segment_length=5, n_initial_prefs=8, n_initial_training_steps=4, label_budget=40, ensemble_size=1,
                pair_selection="random", save_every=0)
    out, _ = run_example(log_dir, capsys, monkeypatch, total_timesteps=256, **tiny)
    assert "labelling 8 pairs of clips of a random policy" in out
    settings = {**SETTINGS, "run": "drlhp"}
    first = load_agent_state(str(log_dir / "agent" / "agent.pt"), settings)
    first_rows = read_rows(str(log_dir / "learning_curve.csv"))
    assert first["num_timesteps"] == 256 and first_rows and int(first_rows[-1]["labels"]) >= 8

    out, _ = run_example(log_dir, capsys, monkeypatch, total_timesteps=512, resume=True, **tiny)
    assert "no warm-up" in out and "labelling" not in out  # the resumed reward predictor is trained
    assert "resuming the agent at step 256" in out
    second = load_agent_state(str(log_dir / "agent" / "agent.pt"), settings)
    # The label schedule's clock went on from where the saved agent was, not from 0.
    assert second["num_timesteps"] == 512 and second["label_clock_env_steps"] >= first["label_clock_env_steps"] + 256
    new_rows = read_rows(str(log_dir / "learning_curve.csv"))[len(first_rows):]
    assert new_rows and {r["session_start_step"] for r in new_rows} == {"256"}
    assert int(new_rows[0]["labels"]) >= int(first_rows[-1]["labels"])  # the run's labels, the resumed ones too


class SigtermAt(VecEnvWrapper):
    """Sends this process SIGTERM (as ``kill`` or a cluster scheduler would) at its ``at``-th step."""

    def __init__(self, venv, at: int) -> None:
        super().__init__(venv)
        self.at, self.steps = at, 0

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        self.steps += 1
        if self.steps == self.at:
            os.kill(os.getpid(), signal.SIGTERM)
        return self.venv.step_wait()


def test_sigterm_saves_the_agent_at_the_next_rollout_and_the_run_resumes_from_there(tmp_path, capsys, monkeypatch):
    log_dir = tmp_path / "run"
    before = signal.getsignal(signal.SIGTERM)
    # Rollouts of 128 agent steps: SIGTERM at agent step 600, mid-rollout, stops the run at the next rollout's
    # start, 640, with the agent saved there.
    venv = SigtermAt(make_vec_env(ENV_ID, n_envs=2, seed=0), at=300)
    with pytest.raises(SystemExit) as stop:
        run_example(log_dir, capsys, monkeypatch, venv=venv, total_timesteps=1024, save_every=0, true_reward=True)
    out = capsys.readouterr().out
    assert stop.value.code == 128 + signal.SIGTERM
    assert "SIGTERM: stopped with the agent saved at step 640; go on with:" in out
    assert f"--resume --log-dir {log_dir}" in out.split("SIGTERM")[1]
    assert load_agent_state(str(log_dir / "agent" / "agent.pt"), SETTINGS)["num_timesteps"] == 640
    assert signal.getsignal(signal.SIGTERM) is before  # the run's handler went with it

    out, saved_at = run_example(log_dir, capsys, monkeypatch, total_timesteps=1024, save_every=0, true_reward=True,
                                resume=True)
    assert "resuming the agent at step 640" in out and saved_at == [1024]


def test_sigterm_before_the_agent_learns_stops_at_once_and_closes_drlhp(tmp_path, capsys, monkeypatch):
    tiny = dict(segment_length=5, n_initial_prefs=8, n_initial_training_steps=4, label_budget=40, ensemble_size=1,
                pair_selection="random")
    venv = SigtermAt(make_vec_env(ENV_ID, n_envs=2, seed=0), at=3)  # in the random policy's warm-up
    with pytest.raises(SystemExit) as stop:
        run_example(tmp_path / "run", capsys, monkeypatch, venv=venv, total_timesteps=1024, **tiny)
    assert stop.value.code == 128 + signal.SIGTERM
    assert multiprocessing.active_children() == []  # drlhp closed: its processes stopped
