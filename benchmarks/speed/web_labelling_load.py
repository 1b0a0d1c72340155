"""The labelling page under load: 20 simulated labellers answering as fast as they can.

A live wrapper (MovingDot or Pong, ``labelling="web"``, no label budget; the reward
trainer receives and stores every label but does not train, so that the phases with
and without load compare like with like: training takes a core of its own either
way) steps random actions in this process's main thread. A second process runs the
labellers (aiohttp client tasks, each with its own name): ask for a pair, fetch both
clips' PNGs, answer L / R / E at random (after ``--think-seconds``: 0, as fast as they can, by default), repeat.
Figures:

- labels lost or duplicated: every answer the page acknowledged (not as a
  duplicate) against the run's database after ``close()`` (snapshot + journal);
  each one must be there exactly once, with its labeller's name;
- time from sending an answer to holding the next pair (the answer's reply carries
  it; if none was free, polling until one is): median and p95;
- clip PNG fetch time: first, with no load, each new clip of a few pairs fetched
  once (encoding included: each clip is encoded on its first request, then cached);
  then under load;
- env steps/s with the page under load ÷ without it, the two measured in turn in
  the same run (target >= 0.9). The labellers run at the lowest CPU priority: on a
  real run they are people's browsers on other machines, and the 2 cores here are
  shared by the env, the interface (which serves the page), the trainer and them.

    python -m benchmarks.speed.web_labelling_load [--env moving_dot|pong] [--labellers 20] [--seconds 60]
        [--quiet-seconds 20] [--think-seconds 0]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import statistics
import tempfile
import threading
import time

import drlhp  # noqa: F401
from benchmarks.measured_envs import make_env
from drlhp import HumanPreferencesEnvWrapper, PrefBuffer


async def labeller(session, base: str, name: str, deadline: float, think: float, out: dict) -> None:
    rng = random.Random(name)
    pair = None
    while time.monotonic() < deadline:
        if pair is None or pair.get("pair") is None:
            async with session.get(f"{base}/api/next", params={"name": name}) as r:
                pair = await r.json()
            if pair["pair"] is None:
                await asyncio.sleep(0.05)
                continue
        for side in ("left", "right"):
            start = time.perf_counter()
            async with session.get(f"{base}/clip/{pair[side]}.png") as r:
                await r.read()
                assert r.status == 200, r.status
            out["clip_s"].append(time.perf_counter() - start)
        await asyncio.sleep(think * rng.uniform(0.5, 1.5))
        label = rng.choice("LRE")
        answered = (pair["left"], pair["right"], {"L": 1.0, "R": 0.0, "E": 0.5}[label], f"web:{name}")
        start = time.perf_counter()
        async with session.post(f"{base}/api/answer", json={"pair": pair["pair"], "label": label, "name": name}) as r:
            reply = await r.json() if r.status == 200 else None
        if reply is None:
            out["errors"] += 1
            pair = None
            continue
        if not reply["duplicate"]:
            out["acknowledged"].append(answered)
        pair = reply
        while pair["pair"] is None and time.monotonic() < deadline:  # none free: poll, as the page does
            await asyncio.sleep(0.05)
            async with session.get(f"{base}/api/next", params={"name": name}) as r:
                pair = await r.json()
        out["next_pair_s"].append(time.perf_counter() - start)


def first_fetches(url: str, n_pairs: int = 10) -> list:
    """Seconds to fetch each clip of ``n_pairs`` pairs the first time (one labeller, nothing else going on)."""
    import urllib.request

    base, token = url.split("/?token=")
    headers = {"X-Drlhp-Token": token}

    def get(path):
        with urllib.request.urlopen(urllib.request.Request(base + path, headers=headers), timeout=30) as r:
            return r.read()

    times = []
    while len(times) < 2 * n_pairs:
        pair = json.loads(get("/api/next?name=quiet"))
        if pair["pair"] is None:
            time.sleep(0.05)
            continue
        for side in ("left", "right"):
            start = time.perf_counter()
            get(f"/clip/{pair[side]}.png")
            times.append(time.perf_counter() - start)
        answer = json.dumps({"pair": pair["pair"], "label": "E", "name": "quiet"}).encode()
        request = urllib.request.Request(base + "/api/answer", data=answer,
                                         headers={**headers, "Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=30).read()
    return times


def run_labellers(url: str, n: int, seconds: float, think: float, result_queue) -> None:
    import aiohttp

    os.nice(19)
    base, token = url.split("/?token=")

    async def main():
        out = {"acknowledged": [], "next_pair_s": [], "clip_s": [], "errors": 0}
        deadline = time.monotonic() + seconds
        async with aiohttp.ClientSession(headers={"X-Drlhp-Token": token}) as session:
            await asyncio.gather(*(labeller(session, base, f"labeller {i}", deadline, think, out) for i in range(n)))
        return out

    result_queue.put(asyncio.run(main()))


def steps_per_second(env, seconds: float, stop: threading.Event = None) -> float:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds and not (stop and stop.is_set()):
        for _ in range(100):
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset()
        n += 100
    return n / (time.perf_counter() - start)


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", choices=("moving_dot", "pong"), default="moving_dot")
    parser.add_argument("--labellers", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--quiet-seconds", type=float, default=20.0)
    parser.add_argument("--think-seconds", type=float, default=0.0, help="each labeller's mean time per answer")
    args = parser.parse_args()
    log_dir = os.path.join(tempfile.mkdtemp(), "run")
    env = HumanPreferencesEnvWrapper(make_env(args.env), synthetic_preferences=False, labelling="web",
                                     web_port=0, log_dir=log_dir, train_reward=False, label_budget=None,
                                     max_prefs_in_db=10 ** 7, log_level=30)
    env.reset(seed=0)
    stop = threading.Event()
    stepping = threading.Thread(target=steps_per_second, args=(env, 600.0, stop))  # clips to label
    stepping.start()
    first = first_fetches(env.labelling_url)
    stop.set()
    stepping.join()
    quiet_before = steps_per_second(env, args.quiet_seconds)
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    load = ctx.Process(target=run_labellers,
                       args=(env.labelling_url, args.labellers, args.seconds, args.think_seconds, results))
    load.start()
    time.sleep(2.0)  # let the labellers connect before timing
    loaded = steps_per_second(env, args.seconds - 4.0)
    out = results.get(timeout=args.seconds + 120)
    load.join()
    quiet_after = steps_per_second(env, args.quiet_seconds)
    stats = env.stats()
    env.close()

    buffer = PrefBuffer.load_all(log_dir)
    stored = [(a, b, label, who) for db in (buffer.train_db, buffer.val_db)
              for (a, b, label), who in zip(db.prefs, db.labellers) if who != "web:quiet"]
    acknowledged = out["acknowledged"]
    missing = len(set(acknowledged) - set(stored))
    duplicated = len(stored) - len(set(stored))
    unexpected = len(set(stored) - set(acknowledged))
    quiet = (quiet_before + quiet_after) / 2
    print(f"{args.env}, {args.labellers} labellers, think {args.think_seconds} s, {args.seconds:.0f} s: "
          f"{len(acknowledged)} answers acknowledged "
          f"({len(acknowledged) / args.seconds:.0f}/s), {len(stored)} labels in the database "
          f"(lost {missing}, duplicated {duplicated}, not acknowledged {unexpected}); {out['errors']} failed requests")
    print(f"answer -> next pair: median {statistics.median(out['next_pair_s']) * 1e3:.1f} ms, "
          f"p95 {percentile(out['next_pair_s'], 0.95) * 1e3:.1f} ms, max {max(out['next_pair_s']) * 1e3:.1f} ms")
    print(f"clip PNG fetch ({args.env}): first fetch of {len(first)} clips, no load: median "
          f"{statistics.median(first) * 1e3:.1f} ms, max {max(first) * 1e3:.1f} ms; under load: median "
          f"{statistics.median(out['clip_s']) * 1e3:.1f} ms, p95 {percentile(out['clip_s'], 0.95) * 1e3:.1f} ms")
    print(f"env steps/s: {quiet_before:.0f} before, {loaded:.0f} under load, {quiet_after:.0f} after: "
          f"{loaded / quiet:.2f}x (target >= 0.9); clips dropped {stats.clips_dropped} of "
          f"{stats.clips_sent + stats.clips_dropped}")


if __name__ == "__main__":
    main()
