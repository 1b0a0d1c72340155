"""Run by the kill-and-resume tests: a wrapper whose labels come from the test, over TCP.

argv: LOG_DIR PORT MODE [TARGET]. MODE "collect": a new run; it prints its processes'
pids as JSON and steps until it is killed or a worker fails. MODE "resume": resumes
LOG_DIR, prints the run's label count on resuming, steps until the run has TARGET
labels, then closes normally."""
import json
import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from conftest import FAST, FakePixelEnv  # noqa: E402

from drlhp import HumanPreferencesEnvWrapper  # noqa: E402


class SocketLabeller:
    """Asks the test: sends ``[clip a, clip b]`` as a line, reads the label (a JSON number) back.

    Like a person, it answers at its own pace; an empty line (the test hung up) is "can't compare".
    """

    pairs_per_segment = None

    def __init__(self, port: int) -> None:
        self.port = port
        self._file = None

    def label(self, a, b):
        if self._file is None:
            self._file = socket.create_connection(("127.0.0.1", self.port)).makefile("rw")
        try:
            self._file.write(json.dumps([a.clip_id, b.clip_id]) + "\n")
            self._file.flush()
            answer = self._file.readline()
        except OSError:
            answer = ""
        return json.loads(answer) if answer.strip() else None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def main() -> None:
    log_dir, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=log_dir, labeller=SocketLabeller(port),
                                     train_reward=True, resume=mode == "resume", **FAST)
    with env:
        pids = {name: p.pid for name, p in env.pipeline.processes.items()}
        print(json.dumps({"main": os.getpid(), **pids, "run_labels": env.stats().run_labels}), flush=True)
        target = int(sys.argv[4]) if mode == "resume" else None
        env.reset(seed=0)
        while target is None or env.stats().run_labels < target:
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset()


if __name__ == "__main__":
    main()
