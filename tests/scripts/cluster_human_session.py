"""Run by the cluster human-labelling test in a tmux pane: a local Ray cluster whose preference
service, on this node, shows clips in a window and asks in the terminal argv[3]; one runner
plays until the file named by argv[2] appears; then the labels are saved and it exits.

argv: LOG_DIR STOP_FILE TERMINAL"""
import os
import sys

import ray
from human_session import SETTINGS, make_env, play_until

from drlhp.cluster import ClusterPreferenceWrapper, PreferenceService


@ray.remote
def play(service_name: str, stop_file: str) -> int:
    env = ClusterPreferenceWrapper(make_env(), service_name, flush_interval=0.05)
    steps = play_until(env, stop_file)
    env.close()
    return steps


if __name__ == "__main__":
    log_dir, stop_file, terminal = sys.argv[1:4]
    here = os.path.dirname(os.path.abspath(__file__))  # the runner imports human_session from here
    # Workers at the test run's priority, not Ray's niceness 15 (see the cluster fixture in test_cluster.py).
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": here}},
             _system_config={"worker_niceness": 0})
    with PreferenceService(make_env().observation_space, log_dir=log_dir, clips_per_second=20.0,
                           human_terminal=terminal, **SETTINGS) as service:
        ray.get(play.remote(service.name, stop_file))
        service.save_prefs()
    print("SAVED", flush=True)
    ray.shutdown()
