"""Run by the end-to-end human-labelling test in a tmux pane: steps a pixel env with
human preferences until the file named by argv[2] appears, then saves and exits."""
import os
import sys

import gymnasium

import drlhp  # noqa: F401
from drlhp import HumanPreferencesEnvWrapper


class Bars(gymnasium.ObservationWrapper):
    """MovingDot, plus a bar whose position follows the step count: clips visibly play."""

    def observation(self, obs):
        obs = obs.copy()
        obs[:4, (self.unwrapped._t * 3) % 64] = 255
        return obs


def main() -> None:
    log_dir, stop_file = sys.argv[1], sys.argv[2]
    env = HumanPreferencesEnvWrapper(Bars(gymnasium.make("drlhp/MovingDot-v0")), synthetic_preferences=False,
                                     collect_prefs=True, train_reward=False, log_dir=log_dir, segment_length=20,
                                     display_fps=20, seed=0, log_level=30)
    env.reset(seed=0)
    steps = 0
    while not os.path.exists(stop_file):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        steps += 1
        if terminated or truncated:
            env.reset()
    env.save_prefs()
    env.close()
    print(f"SAVED after {steps} steps", flush=True)


if __name__ == "__main__":
    main()
