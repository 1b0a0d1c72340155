"""Run by the web-labelling crash test: a run labelled on its web page, stepping until it is killed.

argv: LOG_DIR. Prints ``{"main": pid, <worker>: pid, ..., "url": the page's address}`` as JSON."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conftest import FakePixelEnv  # noqa: E402

from drlhp import HumanPreferencesEnvWrapper  # noqa: E402


def main() -> None:
    env = HumanPreferencesEnvWrapper(FakePixelEnv(shape=(8, 8, 3)), log_dir=sys.argv[1], synthetic_preferences=False,
                                     labelling="web", web_port=0, train_reward=False, label_budget=None,
                                     segment_length=5, log_level=30)
    with env:
        pids = {name: p.pid for name, p in env.pipeline.processes.items()}
        print(json.dumps({"main": os.getpid(), **pids, "url": env.labelling_url}), flush=True)
        env.reset(seed=0)
        while True:
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset()


if __name__ == "__main__":
    main()
