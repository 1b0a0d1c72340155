"""How good a reward model is after 100 / 250 / 500 / 1,000 labels: random vs disagreement
pair selection, 1 vs 3 ensemble members, the reward network and its training levers
(``--variants``: network, random shifts, temporal crops, pseudo-labels), on MovingDot (fixed
and random target), with clips of a random policy and of a policy that is learning,
perfect and noisy teachers.

Each run labels in rounds of 50 as a drlhp run would: candidate pairs come from the 200
most recent clips of a stream (about two new clips per label, so a learning policy's clips
improve as labels accumulate); "random" asks random pairs, "disagreement" scores 64
random candidates per label with the ensemble's members and asks the most disputed.
After each round the network trains ``--steps-per-label`` x 50 steps with drlhp's trainer
(bootstrap batches of 8 pairs per member, noise_prob; every fifth label held out for
validation, which steers adaptive L2 every 4 rounds); the seconds it trained are summed
(on one torch thread, as a run's trainer process). At each milestone it is
scored on 1,000 fresh pairs of fresh clips of the same policy: held-out accuracy (sign of
the predicted vs true return difference; pairs of equal true return left out), and the
Spearman rho of per-frame predicted vs true reward on 100 of those clips spread over the stream. Mean +- sd
over ``--seeds`` seeds.

    python -m benchmarks.experiments.label_efficiency [--seeds 3] [--workers 2] [--steps-per-label 1] [--quick]
        [--targets fixed random] [--policies random learning] [--teachers perfect noisy]
        [--methods "random, 1 net" ...] [--variants default atari keypoints ...]
"""
from __future__ import annotations

import argparse
import itertools
import multiprocessing
import random
import time

import numpy as np
import torch

from benchmarks.dot_clips import clip_stream, random_pairs
from drlhp import SyntheticTeacher
from drlhp.cli.offline import spearman
from drlhp.clips.frames import infer_frame_spec
from drlhp.config import PreferenceConfig
from drlhp.labelling.pair_selection import preference_disagreement
from drlhp.reward.augment import Augmentation
from drlhp.reward.bootstrap import member_batches
from drlhp.reward.normaliser import RewardNormaliser
from drlhp.reward.optimiser import RewardOptimiser, adapted_l2
from drlhp.reward.predictor import DEFAULT_KEYPOINT_TEMPERATURE, NetConfig, RewardPredictor

DEFAULTS = PreferenceConfig()
MILESTONES = (100, 250, 500, 1000)
ROUND, WINDOW, CANDIDATES = 50, 200, 64
METHODS = {"random, 1 net": ("random", 1), "random, 3 nets": ("random", 3), "disagreement, 3 nets": ("disagreement", 3)}
TEACHERS = {"perfect": SyntheticTeacher(), "noisy (beta=1, 10% mistakes)": SyntheticTeacher(beta=1.0, mistake_rate=0.1)}
SHIFT, CROP, PSEUDO = Augmentation(shift=4), Augmentation(crop_min_length=15), Augmentation(pseudo_label_threshold=0.95)
#: The levers, alone and together: (network, augmentation, keypoint softmax temperature). "default" is what
#: PreferenceConfig() trains.
T = DEFAULT_KEYPOINT_TEMPERATURE
VARIANTS = {
    "default": (DEFAULTS.reward_net_arch, DEFAULTS.augmentation, T),
    "atari": ("atari", Augmentation(), T),
    "atari + shift + crop": ("atari", Augmentation(shift=4, crop_min_length=15), T),
    "keypoints": ("keypoints", Augmentation(), T),
    "keypoints, temperature 1": ("keypoints", Augmentation(), 1.0),
    "keypoints + shift": ("keypoints", SHIFT, T),
    "keypoints + crop": ("keypoints", CROP, T),
    "keypoints + pseudo-labels": ("keypoints", PSEUDO, T),
    "keypoints + shift + crop": ("keypoints", Augmentation(shift=4, crop_min_length=15), T),
    "keypoints + shift + crop + pseudo-labels": ("keypoints", Augmentation(4, 15, 0.95), T),
}


def train(optimiser, pairs, clips, steps, rng) -> float:
    """``steps`` training steps on ``pairs`` [(a, b, label)] (indices into ``clips``), bootstrap batches of
    ``DEFAULTS.reward_predictor_batch_size``; returns the seconds they took."""
    size = DEFAULTS.reward_predictor_batch_size
    labelled = np.unique([p[:2] for p in pairs])
    start = time.perf_counter()
    for _ in range(steps):
        idx = member_batches(pairs, optimiser.n_members, size, rng)
        fa = np.stack([[clips[pairs[i][0]].frames for i in row] for row in idx])
        fb = np.stack([[clips[pairs[i][1]].frames for i in row] for row in idx])
        labels = np.array([[pairs[i][2] for i in row] for row in idx], np.float32)
        unlabelled = None
        if optimiser.augmentation.pseudo_label_threshold is not None:  # as the trainer does: new pairings of its clips
            pick = labelled[rng.integers(0, len(labelled), (optimiser.n_members, size, 2))]
            unlabelled = tuple(np.stack([[clips[i].frames for i in row] for row in pick[..., side]]) for side in (0, 1))
        optimiser.train_step(fa, fb, labels, unlabelled)
    return time.perf_counter() - start


def clip_returns(predictor, clips):
    """Per-member predicted returns ``(n_clips, M)``."""
    frames = np.concatenate([c.frames for c in clips])
    return predictor.member_rewards(frames).reshape(len(clips), -1, predictor.n_members).sum(1)


def choose(method, predictor, stream, window, asked, n, rng):
    """``n`` new pairs (indices into the stream) among ``window`` (stream indices of recent clips)."""
    want = n * (CANDIDATES if method == "disagreement" else 1)
    cand = [tuple(sorted(p)) for p in window[random_pairs(len(window), 4 * want, rng)]]
    cand = list(dict.fromkeys(p for p in cand if p not in asked))[:want]
    if method == "random" or predictor.n_members == 1:
        return cand[:n]
    returns = {i: r for i, r in zip(window, clip_returns(predictor, [stream[i] for i in window]))}
    scores = preference_disagreement(np.stack([returns[a] for a, _ in cand]), np.stack([returns[b] for _, b in cand]))
    return [cand[i] for i in np.argsort(-scores)[:n]]


def run(task):
    """One (env, policy, teacher, seed, method, variant) run: {milestone: (accuracy, rho, training seconds)}."""
    random_target, policy, teacher_name, seed, method_name, variant, steps_per_label = task
    torch.set_num_threads(1)
    torch.manual_seed(seed)
    method, members = METHODS[method_name]
    arch, augmentation, temperature = VARIANTS[variant]
    stream = clip_stream(2 * MILESTONES[-1] + WINDOW, policy, random_target, seed)
    fresh = clip_stream(2 * MILESTONES[-1] + WINDOW, policy, random_target, seed + 10_000)
    eval_pairs = random_pairs(len(fresh), 1000, np.random.default_rng(seed))
    true = np.array([c.true_return for c in fresh])
    strict = true[eval_pairs[:, 0]] != true[eval_pairs[:, 1]]
    eval_pairs, wanted = eval_pairs[strict], np.sign(true[eval_pairs[strict, 0]] - true[eval_pairs[strict, 1]])
    used = np.unique(eval_pairs)
    spec = infer_frame_spec(stream[0].frames[0])
    predictor = RewardPredictor(NetConfig(spec, dropout=DEFAULTS.reward_predictor_dropout, n_members=members,
                                          arch=arch, keypoint_temperature=temperature))
    optimiser = RewardOptimiser(predictor, lr=DEFAULTS.reward_predictor_lr, noise_prob=DEFAULTS.noise_prob,
                            weight_decay=DEFAULTS.reward_predictor_weight_decay, augmentation=augmentation, seed=seed)
    rng, answer_rng = np.random.default_rng(seed), random.Random(seed)
    teacher, pairs, asked, results, seconds = TEACHERS[teacher_name], [], set(), {}, 0.0
    while len(pairs) < MILESTONES[-1]:
        end = min(len(stream), 2 * len(pairs) + 2 * ROUND)
        window = np.arange(max(0, end - WINDOW), end)
        for a, b in choose(method, predictor, stream, window, asked, ROUND, rng):
            asked.add((a, b))
            label = teacher.answer(stream[a].rewards, stream[b].rewards, answer_rng)
            if label is not None:
                pairs.append((a, b, label))
        # As drlhp's trainer does: every fifth label is held out for validation, which steers adaptive L2.
        held_out, rest = pairs[4::5], [p for i, p in enumerate(pairs) if i % 5 != 4]
        seconds += train(optimiser, rest, stream, round(steps_per_label * ROUND), rng)
        if len(pairs) % (4 * ROUND) == 0:
            optimiser.weight_decay = adapted_l2(optimiser.weight_decay, loss(optimiser, stream, held_out),
                                              loss(optimiser, stream, rest), PreferenceConfig.adaptive_l2_factor)
        if len(pairs) in MILESTONES:
            returns = clip_returns(predictor, [fresh[i] for i in used])
            predictor.normaliser = RewardNormaliser.fit(returns, 1.0)  # weights the members as the agent's reward does
            combined = dict(zip(used, predictor.normaliser(returns)))
            predicted = np.array([combined[a] - combined[b] for a, b in eval_pairs])
            # 100 of the scored clips, spread over the stream: a learning policy's clips change along it.
            sample = used[np.linspace(0, len(used) - 1, 100).astype(int)]
            frames = np.concatenate([fresh[i].frames for i in sample])
            rho = spearman(predictor.normalised_rewards(frames), np.concatenate([fresh[i].rewards for i in sample]))
            results[len(pairs)] = (float(np.mean(np.sign(predicted) == wanted)), rho, seconds)
    return task, results


def loss(optimiser, clips, pairs):
    fa = np.stack([clips[a].frames for a, _, _ in pairs])
    fb = np.stack([clips[b].frames for _, b, _ in pairs])
    return optimiser.evaluate([(fa, fb, np.array([lab for _, _, lab in pairs], np.float32))])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps-per-label", type=float, default=1.0,
                        help="training steps per label (each round of 50 labels trains 50 x this)")
    parser.add_argument("--methods", nargs="+", choices=list(METHODS), default=list(METHODS))
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=["default"])
    parser.add_argument("--targets", nargs="+", choices=("fixed", "random"), default=["fixed", "random"])
    parser.add_argument("--policies", nargs="+", choices=("random", "learning"), default=["random", "learning"])
    parser.add_argument("--teachers", nargs="+", choices=("perfect", "noisy"), default=["perfect", "noisy"])
    parser.add_argument("--quick", action="store_true",
                        help="one seed, random target, random policy, perfect teacher, one network")
    args = parser.parse_args()
    if args.quick:
        args.seeds, args.targets, args.policies, args.teachers = 1, ["random"], ["random"], ["perfect"]
        args.methods = ["random, 1 net"]
    envs = [t == "random" for t in args.targets]
    policies = args.policies
    teachers = [name for name in TEACHERS if name.split()[0] in args.teachers]
    seeds = range(args.seeds)
    tasks = [(rt, pol, t, s, m, v, args.steps_per_label)
             for t, rt, pol, s, m, v in itertools.product(teachers, envs, policies, seeds, args.methods, args.variants)]
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        done = dict(pool.imap_unordered(run, tasks))
    print(f"{len(tasks)} runs in {time.perf_counter() - start:.0f} s\n")
    print(f"{args.steps_per_label:g} training steps per label\n")
    for teacher in teachers:
        print(f"## Teacher: {teacher}\n")
        print("| env | clips | selection | network and levers | "
              + " | ".join(f"{m} labels: acc / rho" for m in MILESTONES) + " | training s |")
        print("|---|---|---|---|" + "---|" * (len(MILESTONES) + 1))
        for rt, pol, m, v in itertools.product(envs, policies, args.methods, args.variants):
            runs = [done[(rt, pol, teacher, s, m, v, args.steps_per_label)] for s in seeds]
            cells = []
            for milestone in MILESTONES:
                acc, rho = [r[milestone][0] for r in runs], [r[milestone][1] for r in runs]
                cells.append(f"{np.mean(acc):.3f} ± {np.std(acc):.3f} / {np.mean(rho):.2f} ± {np.std(rho):.2f}")
            env = "random target" if rt else "fixed target"
            seconds = np.mean([r[MILESTONES[-1]][2] for r in runs])
            print(f"| {env} | {pol} | {m} | {v} | " + " | ".join(cells) + f" | {seconds:.0f} |")
        print()


if __name__ == "__main__":
    main()
