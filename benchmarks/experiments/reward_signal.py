"""How well a reward checkpoint's predicted reward tracks the true one where the agent will be: an offline
measure of the reward *signal* (not of the labels' accuracy), minutes instead of an hour of RL.

Three steps, each a subcommand. The recordings of step 1 are committed (``benchmarks/results/pong/policies/``:
six agents of a true-reward PPO run at seed 0, from 50k to 1M agent steps), so steps 2 and 3 need no RL:

    # 1. play saved agents of different skill (an examples run with --keep-agents) and keep what they saw
    python examples/pong_ppo.py --true-reward --total-timesteps 1000000 --save-every 50000 --keep-agents \
        --log-dir lc_pong/true_reward
    AGENTS="50000 400000 550000 700000 850000 1000000"
    python -m benchmarks.experiments.reward_signal record lc_pong/true_reward/agent --agents $AGENTS --steps 5000 \
        --seed 100 --out benchmarks/results/pong/policies/eval
    python -m benchmarks.experiments.reward_signal record lc_pong/true_reward/agent --agents $AGENTS --steps 10000 \
        --seed 200 --out benchmarks/results/pong/policies/labels
    # 2. synthetic labels of clips of the label recordings (a database drlhp train-reward reads); --weights: how
    #    often each policy's clips are drawn (here: two thirds from the early one, as in a run that loses for long)
    python -m benchmarks.experiments.reward_signal labels benchmarks/results/pong/policies/labels --out lab6_early \
        --labels 3000 --weights 4 1 1 0.5 0.5 0.5
    # 3. train reward networks on them the way you want to compare, then score each checkpoint
    drlhp train-reward lab6_early --log-dir rs_atari_bn --reward-net-arch atari --reward-predictor-batchnorm \
        --ensemble-size 1 --steps 1000
    python -m benchmarks.experiments.reward_signal measure rs_atari_bn rs_other \\
        --policies benchmarks/results/pong/policies/eval

Also committed: the last reward checkpoints of four Pong runs with the defaults (``reward_predictor.ckpt`` in
their run records: ``benchmarks/results/pong/drlhp_seed0_3000labels``, ``_2``, ``_3`` and
``drlhp_seed0_1000labels_250-initial``) and their final agents' play (``policies/drlhp_final/``, recorded as in
step 1, each run's ``agent/agent.pt`` copied as ``agent_1000000.pt``), to measure rewards where those agents
stopped, beyond the best agent of ``policies/eval``:

    python -m benchmarks.experiments.reward_signal measure benchmarks/results/pong/*/reward_predictor.ckpt \
        --policies benchmarks/results/pong/policies/drlhp_final --blank-rows 9 --per-policy

``measure`` plays nothing: it predicts the reward of every recorded step and compares it with the true
reward, per policy and over all of them:

- ``rho_1``: Spearman's rank correlation per step (how the old reports measured it; Pong's true reward is a
  single +-1 step per point, so this is low even for a good shaping);
- ``r_25``, ``r_100``: Pearson correlation of the predicted and true return over windows of 25 and 100 steps
  (100 is PPO's horizon at gamma 0.99);
- ``r_episode``: of whole episodes' returns;
- ``r_disc``: of the discounted returns-to-go at gamma 0.99 at every step: what the agent's critic learns, so
  the figure most directly about learning speed;
- ``policy_rho``: how the mean predicted reward per step orders the policies, against the true reward's order;
- ``scale_disc``: the standard deviation of the predicted discounted return-to-go over the true one's: the
  scale of what the critic learns (PPO normalises advantages, so the reward's scale reaches the agent only
  through its value loss, which SB3's CnnPolicy shares features with);
- ``noise``: the share of the predicted reward's per-step variance that no time-invariant shaping of the true
  reward explains (1 - R^2 of a least-squares fit of the predicted reward on the true reward 50 steps either
  side): credit spread on the frames that earn it is signal, the rest is noise the agent must average away;
- ``typical``: the median predicted reward of the steps whose true reward is 0, in standard deviations of the
  predicted reward: what an ordinary step earns. The windowed correlations do not see an offset; an agent whose
  episodes end early (Breakout's lost lives) does: below 0, a longer episode of ordinary play earns less.
- ``ending``: the mean predicted reward of each ended episode's last 20 steps less that of the other steps, in
  standard deviations of the predicted reward; ``ending_true`` the same of the true reward. The Atari examples end
  the agent's episode at each life lost, and a score never counts one: an ``ending`` far above ``ending_true`` is
  a reward that pays the agent for dying (Seaquest's seed 0: ``benchmarks/results/seaquest/policies/ending.log``).

A flat network (no variation) gets 0 for every correlation and a noise share of 1.

``switch`` measures how far the agent's reward jumps when the trainer writes a checkpoint (every
``reward_predictor_ckpt_interval`` steps; the env then rewards with it at once), in the unit the critic
feels: the RMS change of the discounted return-to-go (gamma 0.99) on the recorded steps, divided by its
standard deviation. Two parts, from a run's database and its last checkpoint:

- ``refit``: the same network, its normaliser fitted on another random sample of ``n`` of the database's
  clips, for each ``--fit-clips`` size (the trainer fitted it on 32 until 2026-11-25, on 512 since), against
  a fit on 2,048: pure sampling noise;
- ``train``: the network after ``--interval`` more training steps on the run's labels, both normalised on
  the same large sample: the change the labels ask for.

    python -m benchmarks.experiments.reward_signal switch lc_pong_kp/drlhp \\
        --policies benchmarks/results/pong/policies/eval

``score`` measures how much of a checkpoint's reward is read off the score on the screen: every recorded stack's
top rows (Pong's score) replaced by those of a stack showing 0 : 0, the RMS change of the reward over its
standard deviation per policy. The Atari examples blank those rows since 2026-11-26; for a network trained so,
pass ``--blank-rows 9`` to ``labels``, ``measure`` and ``switch`` (the committed recordings show the score).

    python -m benchmarks.experiments.reward_signal score lc_pong_1k/drlhp \\
        --policies benchmarks/results/pong/policies/eval

``centres`` needs no recordings: for a run's last checkpoint, on 512 of its training clips (as the trainer fits
the normaliser), each member's (mean - median) / std of the raw reward. Above 0, a reward centred on its mean
(the default) charges the typical frame that much; below 0, it pays it.

    python -m benchmarks.experiments.reward_signal centres lc_breakout_defaults/drlhp lc_pong_defaults/drlhp
"""
from __future__ import annotations

import argparse
import glob
import importlib
import os
import random
import re
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from benchmarks.examples_path import with_examples
from benchmarks.report.run_records import save_arrays
from drlhp.cli.setting_flags import add_setting_flag

if TYPE_CHECKING:
    from drlhp.reward.predictor import RewardPredictor

GAMMA = 0.99  # the examples' PPO discount
WINDOWS = (25, 100)
SHAPING_LAGS = 50  # steps either side of a point that a shaping of the true reward may spread credit over
ENDING_STEPS = 20  # an episode's last steps that ``ending`` compares: a Seaquest collision to the life lost
MUJOCO_EXAMPLES = ("halfcheetah_sac", "hopper_sac")


# -- record ------------------------------------------------------------------------------------------------------

def record(agent_dir: str, out: str, agents: list[int] | None, steps: int, seed: int, example: str = "pong") -> None:
    """Play each saved agent for ``steps`` agent steps in one env of an Atari example (``examples/<example>_ppo.py``:
    its score blanked as the run had it) or a MuJoCo one (``examples/<example>.py``); save its observations and
    rewards. The examples' modules must be importable (``examples_path.with_examples``)."""
    if example in MUJOCO_EXAMPLES:
        record_mujoco(agent_dir, out, agents, steps, seed, example)
        return
    from agent_checkpoint import load_agent_state, restore_agent
    from atari_recipe import make_agent, make_atari

    env_id = importlib.import_module(f"{example}_ppo").ENV_ID

    os.makedirs(out, exist_ok=True)
    for step, path in kept_agents(agent_dir, agents):
        venv = make_atari(env_id, 1, seed)
        with warnings.catch_warnings():  # PPO's batch size does not fit one env's rollout: it is never trained here
            warnings.simplefilter("ignore", UserWarning)
            agent = make_agent(venv, seed)
        restore_agent(agent, load_agent_state(path), path)
        stacks, rewards, episode_of, episode = play(agent, venv, steps)
        name = os.path.join(out, f"agent_{step}.npz")
        starts = np.flatnonzero(np.r_[True, np.diff(episode_of) != 0])
        # A step's stack is the one before it shifted by one frame, except at an episode's start: keeping the
        # newest frames and the episodes' first stacks keeps everything in a fifth of the bytes.
        save_arrays(name, newest=stacks[..., -1], first_stacks=stacks[starts], episode_starts=starts,
                    rewards=np.array(rewards, np.float32), episodes=episode_of, agent_steps=step, seed=seed)
        print(f"{name}: {steps} steps, {episode} complete episodes, true return per 1k steps "
              f"{1000 * np.sum(rewards) / steps:+.1f}, {os.path.getsize(name) / 1e6:.1f} MB", flush=True)


def play(agent, venv, steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``agent`` acting in the one-env ``venv`` (closed after) for ``steps`` steps: each step's observation, true
    reward and episode number, and how many episodes ended."""
    obs = venv.reset()
    observations, rewards, episodes = [], [], []
    episode = 0
    for _ in range(steps):
        action, _ = agent.predict(obs, deterministic=False)
        obs, reward, done, info = venv.step(action)
        # drlhp rewards a step by the observation it led to: at an episode's end, the terminal one.
        observations.append(info[0]["terminal_observation"] if done[0] else obs[0])
        rewards.append(float(reward[0]))
        episodes.append(episode)
        episode += int(done[0])
    venv.close()
    return np.stack(observations), np.array(rewards, np.float32), np.array(episodes, np.int32), episode


def record_mujoco(agent_dir: str, out: str, agents: list[int] | None, steps: int, seed: int, example: str) -> None:
    """``record`` for a MuJoCo example's SAC agents: the observations are flat vectors, kept as they are."""
    from agent_checkpoint import load_agent_state
    from mujoco_recipe import make_mujoco, make_sac_agent

    module = importlib.import_module(example)
    os.makedirs(out, exist_ok=True)
    for step, path in kept_agents(agent_dir, agents):
        venv = make_mujoco(module.ENV_ID, 1, seed, **getattr(module, "ENV_KWARGS", {}))
        agent = make_sac_agent(venv, seed)
        agent.policy.load_state_dict(load_agent_state(path)["policy"])  # the policy is all that plays
        observations, rewards, episodes, episode = play(agent, venv, steps)
        name = os.path.join(out, f"agent_{step}.npz")
        save_arrays(name, observations=observations.astype(np.float32), rewards=rewards, episodes=episodes,
                    agent_steps=step, seed=seed)
        print(f"{name}: {steps} steps, {episode} complete episodes, true return per 1k steps "
              f"{1000 * np.sum(rewards) / steps:+.1f}", flush=True)


def kept_agents(agent_dir: str, wanted: list[int] | None) -> list[tuple[int, str]]:
    """``(agent steps, path)`` of the ``agent_<steps>.pt`` files in ``agent_dir``: those nearest ``wanted``."""
    found = {int(m.group(1)): p for p in glob.glob(os.path.join(agent_dir, "agent_*.pt"))
             if (m := re.search(r"agent_(\d+)\.pt$", p))}
    if not found:
        sys.exit(f"error: no agent_<steps>.pt in {agent_dir}: train with an example's --keep-agents")
    if wanted is None:
        return sorted(found.items())
    chosen = {min(found, key=lambda s: abs(s - w)) for w in wanted}
    return [(s, found[s]) for s in sorted(chosen)]


# -- recordings --------------------------------------------------------------------------------------------------

class Recording:
    """One policy's recorded steps: frames ``(N, *frame_shape)``, true rewards ``(N,)``, episode numbers ``(N,)``."""

    def __init__(self, path: str, blank_rows: int = 0) -> None:
        try:
            with np.load(path, allow_pickle=False) as data:  # plain arrays: an array of objects is refused, not run
                self.rewards, self.episodes = data["rewards"], data["episodes"]
                self.agent_steps = int(data["agent_steps"])
                self.frames = (data["observations"] if "observations" in data.files else
                               frame_stacks(data["newest"], data["first_stacks"], data["episode_starts"]))
        except ValueError as e:  # which of the recordings measured it is
            raise ValueError(f"{path} is not a recording of plain arrays: {e}") from e
        self.frames[:, :blank_rows] = 0  # as the examples' BlankScore does to what a run's network sees
        self.name = os.path.basename(path)[:-len(".npz")]

    def clips(self, length: int) -> list[tuple[int, int]]:
        """``(start, end)`` of every clip of ``length`` consecutive steps within one episode, back to back."""
        out = []
        for e in np.unique(self.episodes):
            idx = np.flatnonzero(self.episodes == e)
            out += [(int(s), int(s) + length) for s in range(idx[0], idx[-1] + 2 - length, length)]
        return out


def frame_stacks(newest: np.ndarray, first_stacks: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Every step's frame stack ``(N, H, W, S)`` from its newest frames and each episode's first stack."""
    stacks = np.empty((*newest.shape, first_stacks.shape[-1]), newest.dtype)
    is_start = np.zeros(len(newest), bool)
    is_start[starts] = True
    stacks[starts] = first_stacks
    for t in np.flatnonzero(~is_start):
        stacks[t, ..., :-1] = stacks[t - 1, ..., 1:]
        stacks[t, ..., -1] = newest[t]
    return stacks


def load_recordings(directory: str, blank_rows: int = 0) -> list[Recording]:
    paths = sorted(glob.glob(os.path.join(directory, "*.npz")))
    if not paths:
        sys.exit(f"error: no recordings (*.npz) in {directory}: make them with the record subcommand")
    return sorted((Recording(p, blank_rows) for p in paths), key=lambda r: r.agent_steps)


# -- labels ------------------------------------------------------------------------------------------------------

def make_labels(policies: str, out: str, n_labels: int, length: int, weights: list[float] | None, seed: int,
                drop_ties: bool = False, blank_rows: int = 0, mistake_rate: float = 0.0) -> None:
    """Pairs of clips from the recordings (policy ``i`` drawn with probability ``weights[i]``), labelled by a
    synthetic teacher who answers ``mistake_rate`` of them the wrong way round (``drop_ties``: pairs it calls
    equally good are not kept), saved as a database ``drlhp train-reward`` reads."""
    from drlhp.clips.clip import Clip
    from drlhp.label_store.database import PrefBuffer
    from drlhp.labelling.protocols import SyntheticTeacher

    recordings = load_recordings(policies, blank_rows)
    weights = weights or [1.0] * len(recordings)
    if len(weights) != len(recordings):
        sys.exit(f"error: {len(weights)} weights for {len(recordings)} recordings")
    rng, teacher = random.Random(seed), SyntheticTeacher(mistake_rate=mistake_rate)
    clips = [(r, c) for r in recordings for c in r.clips(length)]
    by_policy = [[c for c in clips if c[0] is r] for r in recordings]
    buffer = PrefBuffer(n_labels, 0.2)
    segments: dict[tuple[str, int], Clip] = {}

    def segment(rec: Recording, span: tuple[int, int]) -> Clip:
        key = (rec.name, span[0])
        if key not in segments:
            segments[key] = Clip(len(segments), rec.frames[span[0]:span[1]],
                                    rec.rewards[span[0]:span[1]].astype(np.float64))
        return segments[key]

    while buffer.n_received < n_labels:
        a, b = (rng.choice(by_policy[rng.choices(range(len(recordings)), weights)[0]]) for _ in range(2))
        if a == b:
            continue
        label = teacher.answer(a[0].rewards[a[1][0]:a[1][1]], b[0].rewards[b[1][0]:b[1][1]], rng)
        if label is not None and not (drop_ties and label == 0.5):
            buffer.add(segment(*a), segment(*b), label)
    os.makedirs(out, exist_ok=True)
    buffer.save(out)
    labels = np.array([label for _, _, label in buffer.train_db.prefs])
    print(f"{out}: {n_labels} labels of {len(segments)} clips from {len(recordings)} policies; "
          f"{np.mean(labels == 0.5):.0%} ties", flush=True)


# -- measure -----------------------------------------------------------------------------------------------------

def pearson(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r; 0 where either side does not vary (a flat reward carries no signal)."""
    if len(x) < 2 or np.std(x) == 0 or np.std(y) == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    return pearson(ranks(np.asarray(x)), ranks(np.asarray(y)))


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (Pong's true reward is mostly 0)."""
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_x)) + 1]
    ends = np.r_[starts[1:], len(x)]
    r = np.empty(len(x))
    for s, e in zip(starts, ends):
        r[order[s:e]] = (s + e - 1) / 2
    return r


def window_sums(values: np.ndarray, episodes: np.ndarray, width: int) -> np.ndarray:
    """Sums over consecutive windows of ``width`` steps that lie within one episode."""
    sums = []
    for e in np.unique(episodes):
        v = values[episodes == e]
        n = len(v) // width * width
        sums.append(v[:n].reshape(-1, width).sum(axis=1))
    return np.concatenate(sums) if sums else np.zeros(0)


def discounted_to_go(values: np.ndarray, episodes: np.ndarray, gamma: float) -> np.ndarray:
    out = np.empty(len(values))
    for e in np.unique(episodes):
        idx = np.flatnonzero(episodes == e)
        acc = 0.0
        for i in idx[::-1]:
            acc = values[i] + gamma * acc
            out[i] = acc
    return out


def complete_episode_returns(values: np.ndarray, episodes: np.ndarray) -> np.ndarray:
    """Returns of the episodes that ended in the recording (its last one may have been cut off)."""
    return np.array([values[episodes == e].sum() for e in np.unique(episodes)[:-1]])


def noise_share(predicted: np.ndarray, true: np.ndarray, episodes: np.ndarray, lags: int = SHAPING_LAGS) -> float:
    """1 - R^2 of the best least-squares fit of ``predicted`` by the true reward ``lags`` steps either side."""
    if np.std(predicted) == 0:
        return 1.0
    columns = []
    for k in range(-lags, lags + 1):
        shifted = np.zeros(len(true))
        for e in np.unique(episodes):  # no credit across an episode's end
            idx = np.flatnonzero(episodes == e)
            src = idx + k
            ok = (src >= idx[0]) & (src <= idx[-1])
            shifted[idx[ok]] = true[src[ok]]
        columns.append(shifted)
    x = np.column_stack([np.ones(len(true)), *columns])
    coef, *_ = np.linalg.lstsq(x, predicted, rcond=None)
    residual = predicted - x @ coef
    return float(residual.var() / predicted.var())


def signal_metrics(predicted: np.ndarray, true: np.ndarray, episodes: np.ndarray) -> dict[str, float]:
    predicted_to_go, true_to_go = discounted_to_go(predicted, episodes, GAMMA), discounted_to_go(true, episodes, GAMMA)
    return {
        "rho_1": spearman(predicted, true),
        **{f"r_{w}": pearson(window_sums(predicted, episodes, w), window_sums(true, episodes, w)) for w in WINDOWS},
        "r_episode": pearson(complete_episode_returns(predicted, episodes), complete_episode_returns(true, episodes)),
        "r_disc": pearson(predicted_to_go, true_to_go),
        "scale_disc": float(predicted_to_go.std() / true_to_go.std()),
        "noise": noise_share(predicted, true, episodes),
        "typical": typical_reward(predicted, true),
        "ending": ending(predicted, episodes),
        "ending_true": ending(true, episodes),
    }


def typical_reward(predicted: np.ndarray, true: np.ndarray) -> float:
    """The median predicted reward of the steps the true reward gives 0, in standard deviations of the predicted
    reward. The windowed correlations cannot see it (an offset moves none of them; r_disc moves only near episodes'
    ends), the agent can: below 0, every ordinary step costs, so where an episode ends early (a life lost in
    Breakout) the agent is paid to end it sooner."""
    sd = np.std(predicted)
    return float(np.median(predicted[true == 0]) / sd) if sd > 0 and (true == 0).any() else 0.0


def ending(values: np.ndarray, episodes: np.ndarray, steps: int = ENDING_STEPS) -> float:
    """The mean of ``values`` over the last ``steps`` steps of each episode that ended (not the recording's last,
    cut short) less their mean over the other steps, in standard deviations of ``values``. The Atari examples end
    the agent's episode at each life lost (SB3's AtariWrapper): above 0, what dying pays it. No correlation sees it
    where the true reward is 0 at deaths (a score never counts a life lost)."""
    last = np.zeros(len(values), bool)
    for end in np.flatnonzero(np.diff(episodes) != 0):
        last[max(0, end + 1 - steps):end + 1] = True
    sd = np.std(values)
    if sd == 0 or last.all() or not last.any():
        return 0.0
    return float((values[last].mean() - values[~last].mean()) / sd)


def load_predictor(checkpoint: str) -> RewardPredictor:
    """A checkpoint file, the directory of checkpoints or a run's log_dir: the newest checkpoint there."""
    from drlhp.reward.predictor import RewardPredictor
    from drlhp.storage.layout import LogDir, checkpoint_path

    if os.path.isdir(LogDir(checkpoint).checkpoint_dir):
        checkpoint = LogDir(checkpoint).checkpoint_dir
    return RewardPredictor.load(checkpoint_path(checkpoint) if os.path.isdir(checkpoint) else checkpoint)


def measure(checkpoint: str, recordings: list[Recording]) -> dict[str, float]:
    """The metrics over all recordings together (episodes kept apart), plus how the policies are ordered."""
    predictor = load_predictor(checkpoint)
    predicted, true, episodes, rates = [], [], [], []
    for i, rec in enumerate(recordings):
        p = predictor.normalised_rewards(rec.frames)
        predicted.append(p)
        true.append(rec.rewards.astype(np.float64))
        episodes.append(rec.episodes + 1_000_000 * i)  # one policy's episodes never join another's
        rates.append((p.mean(), rec.rewards.mean()))
    metrics = signal_metrics(np.concatenate(predicted), np.concatenate(true), np.concatenate(episodes))
    metrics["policy_rho"] = spearman(np.array([r[0] for r in rates]), np.array([r[1] for r in rates]))
    return metrics


def score_reading(checkpoint: str, recordings: list[Recording], rows: int) -> None:
    """How much of the predicted reward is read off the score: every stack's top ``rows`` (Pong's score: 9)
    replaced by those of a stack of four frames showing 0 : 0, per policy: the RMS change of the reward over
    its standard deviation, and the critic's signal (``r_disc``) before and after."""
    predictor = load_predictor(checkpoint)
    first = recordings[0]
    # Not an episode's first stacks: the frame stack pads them with black frames, which a network may
    # reward in its own way; the fourth step of the first episode, before its first point.
    step = 3
    if first.episodes[step] != first.episodes[0] or first.rewards[:step + 1].any():
        sys.exit(f"error: {first.name} does not start with four steps of one episode at 0 : 0")
    zero_zero = first.frames[step, :rows].copy()
    print(f"{'policy':<16} {'change/sd':>10} {'mean change/sd':>15} {'r_disc':>7} {'r_disc 0:0':>11}")
    for rec in recordings:
        shown = predictor.normalised_rewards(rec.frames)
        frames = rec.frames.copy()
        frames[:, :rows] = zero_zero
        swapped = predictor.normalised_rewards(frames)
        true = rec.rewards.astype(np.float64)
        sd = max(float(shown.std()), 1e-12)
        print(f"{rec.name:<16} {np.sqrt(np.mean((swapped - shown) ** 2)) / sd:>10.2f} "
              f"{np.mean(swapped - shown) / sd:>+15.2f} {signal_metrics(shown, true, rec.episodes)['r_disc']:>7.2f} "
              f"{signal_metrics(swapped, true, rec.episodes)['r_disc']:>11.2f}", flush=True)


def normalised_to_go(normaliser: Callable[[np.ndarray], np.ndarray], raw_to_go: np.ndarray,
                     ones_to_go: np.ndarray) -> np.ndarray:
    """The discounted to go of the normalised reward, from each member's raw one ``(N, M)`` and that of a reward
    of 1 ``(N,)``: the normaliser is affine (``raw @ w - offset``), so no refit needs another pass over the steps."""
    offset = -normaliser(np.zeros(raw_to_go.shape[1]))
    return normaliser(raw_to_go) + offset - offset * ones_to_go


# -- switch -----------------------------------------------------------------------------------------------------

def switch(run_dir: str, recordings: list[Recording], fit_clips: list[int], n_refits: int, interval: int,
           n_switches: int, seed: int) -> None:
    """Print how much the critic's target moves per checkpoint: from refitting the normaliser, and from training."""
    import tempfile

    from drlhp.clips.frames import infer_frame_spec
    from drlhp.config import PreferenceConfig
    from drlhp.label_store.database import PrefBuffer, clip_format
    from drlhp.reward.learner import Learner, fit_normaliser
    from drlhp.reward.torch_setup import set_up_torch
    from drlhp.runtime.settings import learner_config
    from drlhp.storage.layout import LogDir

    set_up_torch(1, seed)
    rng = np.random.default_rng(seed)
    labels = PrefBuffer.load_all(run_dir)
    true = np.concatenate([r.rewards.astype(np.float64) for r in recordings])
    episodes = np.concatenate([r.episodes + 1_000_000 * i for i, r in enumerate(recordings)])
    frames = np.concatenate([r.frames for r in recordings])
    ones_to_go = discounted_to_go(np.ones(len(true)), episodes, GAMMA)

    shape, dtype = clip_format(run_dir)
    with tempfile.TemporaryDirectory() as log_dir:
        config = PreferenceConfig(log_dir=log_dir, prefs_dir=run_dir, collect_prefs=False, seed=seed)
        learner = Learner(learner_config(config, infer_frame_spec(np.zeros(shape[1:], dtype))), log_dir,
                          pretrained_ckpt=LogDir(run_dir).checkpoint)
        predictor, scale = learner.predictor, learner.config.reward_scale

        def target(n_clips: int, fit_rng: np.random.Generator) -> np.ndarray:
            """The agent's discounted reward to go on the recordings, normalised as fitted on ``n_clips`` clips."""
            normaliser, _ = fit_normaliser(predictor, labels.train_db, n_clips, scale, fit_rng)
            return normalised_to_go(normaliser, raw_to_go, ones_to_go)

        def moved(a: np.ndarray, b: np.ndarray) -> float:
            return float(np.sqrt(np.mean((a - b) ** 2)) / a.std())

        raw_to_go = np.column_stack([discounted_to_go(m, episodes, GAMMA) for m in predictor.member_rewards(frames).T])
        reference = target(2048, np.random.default_rng(seed))
        r_disc = pearson(reference, discounted_to_go(true, episodes, GAMMA))
        print(f"the run's last checkpoint (step {learner.step}): r_disc {r_disc:.3f}; against a fit on 2,048 clips:")
        for n in fit_clips:
            change = np.mean([moved(reference, target(n, rng)) for _ in range(n_refits)])
            print(f"refit on {n:>4} clips: the target moves {change:.3f} sd (mean of {n_refits} refits)", flush=True)
        changes = []
        for _ in range(n_switches):
            learner.train(interval, labels.train_db, labels.val_db)
            raw_to_go = np.column_stack([discounted_to_go(m, episodes, GAMMA)
                                         for m in predictor.member_rewards(frames).T])
            after = target(2048, np.random.default_rng(seed))  # the same clips as before training
            changes.append(moved(reference, after))
            reference = after
            print(f"train {interval} steps (to {learner.step}): the target moves {changes[-1]:.3f} sd", flush=True)
        print(f"train {interval} steps: the target moves {np.mean(changes):.3f} sd (mean of {n_switches})")


def centres(run_dir: str, n_clips: int, seed: int) -> None:
    """Print where a run's last checkpoint's mean lies against its median, on ``n_clips`` of its training clips."""
    from drlhp.label_store.database import PrefBuffer
    from drlhp.reward.learner import sample_member_rewards
    from drlhp.reward.normaliser import centre_gap

    raw = sample_member_rewards(load_predictor(run_dir), PrefBuffer.load_all(run_dir).train_db, n_clips,
                                np.random.default_rng(seed))
    gaps = ", ".join(f"{gap:+.3f}" for gap in centre_gap(raw))
    print(f"{run_dir}: (mean - median) / sd of the raw reward, per member: {gaps}", flush=True)


COLUMNS = ("r_disc", "r_100", "r_25", "rho_1", "r_episode", "policy_rho", "noise", "scale_disc", "typical", "ending",
           "ending_true")


def measure_rows(checkpoints: list[str], recordings: list[Recording],
                 per_policy: bool) -> list[tuple[str, dict[str, float]]]:
    """A row per checkpoint, each followed by its rows per policy if ``per_policy``. A list: the rows per policy
    have the same names under every checkpoint."""
    rows = []
    for ckpt in checkpoints:
        rows.append((ckpt, measure(ckpt, recordings)))
        if per_policy:
            rows += [(f"  {rec.name}", {**measure(ckpt, [rec]), "policy_rho": float("nan")}) for rec in recordings]
    return rows


def print_table(rows: list[tuple[str, dict[str, float]]]) -> None:
    width = max(len(name) for name, _ in rows)
    print(f"{'checkpoint':<{width}}  " + "  ".join(f"{c:>10}" for c in COLUMNS))
    for name, metrics in rows:
        print(f"{name:<{width}}  " + "  ".join(f"{metrics[c]:>10.3f}" for c in COLUMNS), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="play saved agents and keep what they saw")
    rec.add_argument("agent_dir", help="an examples run's agent/ directory with agent_<steps>.pt (--keep-agents)")
    rec.add_argument("--out", required=True)
    rec.add_argument("--agents", type=int, nargs="*", help="agent steps of the agents to play (nearest kept)")
    rec.add_argument("--steps", type=int, default=3000, help="agent steps to play each (default: 3000)")
    rec.add_argument("--seed", type=int, default=100, help="env and policy seed (default: 100, not a run's)")
    rec.add_argument("--example", choices=("pong", "breakout", "seaquest", *MUJOCO_EXAMPLES), default="pong",
                     help="the example the agents were trained with (default: pong)")
    lab = sub.add_parser("labels", help="synthetic labels of clips of the recordings")
    lab.add_argument("policies", help="a directory of recordings")
    lab.add_argument("--out", required=True)
    lab.add_argument("--labels", type=int, default=3000)
    add_setting_flag(lab, "segment_length")
    lab.add_argument("--weights", type=float, nargs="*",
                     help="how often each policy's clips are drawn, in the order of their agent steps (default: even)")
    lab.add_argument("--seed", type=int, default=0)
    lab.add_argument("--drop-ties", action="store_true", help="keep only pairs with a better clip")
    lab.add_argument("--mistake-rate", type=float, default=0.0,
                     help="the teacher answers this share of the pairs the wrong way round (default: 0, perfect)")
    mea = sub.add_parser("measure", help="score reward checkpoints on the recordings")
    mea.add_argument("checkpoints", nargs="+", help="reward_predictor.ckpt files, their directories or log_dirs")
    mea.add_argument("--policies", required=True, help="a directory of recordings")
    mea.add_argument("--per-policy", action="store_true", help="also a row per checkpoint and policy")
    swi = sub.add_parser("switch", help="how far the reward jumps at a checkpoint: normaliser refit and training")
    swi.add_argument("run_dir", help="a run's log_dir: its labels and its last checkpoint (one network)")
    swi.add_argument("--policies", required=True, help="a directory of recordings")
    swi.add_argument("--fit-clips", type=int, nargs="+", default=[32, 128, 512],
                     help="normaliser sample sizes to compare (default: 32 128 512; the trainer fits on 512)")
    swi.add_argument("--refits", type=int, default=20, help="refits per sample size (default: 20)")
    swi.add_argument("--interval", type=int, default=100, help="training steps between checkpoints (default: 100)")
    swi.add_argument("--switches", type=int, default=5, help="checkpoints to train through (default: 5)")
    swi.add_argument("--seed", type=int, default=0)
    sco = sub.add_parser("score", help="how much of a checkpoint's reward is read off the score on the screen")
    sco.add_argument("checkpoint", help="a reward_predictor.ckpt file, its directory or a log_dir")
    sco.add_argument("--policies", required=True, help="a directory of recordings")
    sco.add_argument("--rows", type=int, default=9, help="the frame's rows that show the score (Pong's: 9)")
    cen = sub.add_parser("centres", help="how far a run's reward mean lies from its median (the typical frame)")
    cen.add_argument("run_dirs", nargs="+", help="runs' log_dirs: their training labels and last checkpoint")
    cen.add_argument("--clips", type=int, default=512, help="training clips to fit on (default: 512, the trainer's)")
    cen.add_argument("--seed", type=int, default=0)
    for p in (lab, mea, swi):
        p.add_argument("--blank-rows", type=int, default=0,
                       help="black out the recorded frames' top rows, as the Atari examples do since 2026-11-26 "
                            "(Pong: 9; default: 0, the recordings as they are)")
    args = parser.parse_args()
    if args.command == "record":
        with_examples()  # the examples' recipes and agent checkpoint: examples/ on this Python's path
        record(args.agent_dir, args.out, args.agents, args.steps, args.seed, args.example)
    elif args.command == "switch":
        switch(args.run_dir, load_recordings(args.policies, args.blank_rows), args.fit_clips, args.refits,
               args.interval, args.switches, args.seed)
    elif args.command == "labels":
        make_labels(args.policies, args.out, args.labels, args.segment_length, args.weights, args.seed, args.drop_ties,
                    args.blank_rows, args.mistake_rate)
    elif args.command == "centres":
        for run_dir in args.run_dirs:
            centres(run_dir, args.clips, args.seed)
    elif args.command == "score":
        score_reading(args.checkpoint, load_recordings(args.policies), args.rows)
    else:
        recordings = load_recordings(args.policies, args.blank_rows)
        print("recordings:", ", ".join(f"{r.name} ({r.rewards.sum():+.0f} in {len(r.rewards)} steps)"
                                       for r in recordings))
        print_table(measure_rows(args.checkpoints, recordings, args.per_policy))


if __name__ == "__main__":
    main()
