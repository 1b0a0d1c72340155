"""``KeepRewardModels``: the reward model an SB3 agent was learning from, kept every so many agent steps.

The trainer keeps only its newest checkpoint, so the reward an agent had at a given step is gone with the next one.
Asking why a run fell or stalled at some step, or whether the reward rated the agent's new behaviour well before
the agent found it, needs the model of that moment: this callback saves the wrapper's reward predictor (the one the
agent's rewards come from, normaliser included) every ``every`` agent steps, as
``<log_dir>/reward_history/step_<agent steps>.ckpt``. Each loads with ``RewardPredictor.load``;
``reward_history(log_dir)`` lists them by step.
"""
from __future__ import annotations

import os
import re

from drlhp.errors import ConfigError
from drlhp.frontends.sb3 import HumanPreferencesVecEnvWrapper, wrapper_in
from drlhp.storage.layout import LogDir

from stable_baselines3.common.callbacks import BaseCallback  # isort: skip  (after the wrapper's import)

HISTORY_FILE = re.compile(r"step_(\d+)\.ckpt")


class KeepRewardModels(BaseCallback):
    """Saves the reward predictor a ``HumanPreferencesVecEnvWrapper`` uses every ``every`` agent steps (all envs
    counted, as ``model.num_timesteps`` counts them), while the agent's rewards are predicted ones.

    ``model.learn(..., callback=KeepRewardModels(10_000))``. A resumed run adds to the models already kept; a model
    kept at a step is replaced if the step comes again (a run resumed from an earlier save).
    """

    def __init__(self, every: int, verbose: int = 0) -> None:
        super().__init__(verbose)
        if every < 1:
            raise ConfigError(f"KeepRewardModels(every={every}): keep a reward model every this many agent steps, "
                              "at least 1")
        self.every = every
        self.kept: list[str] = []  # the files this callback wrote, in order

    def _init_callback(self) -> None:
        self.wrapper: HumanPreferencesVecEnvWrapper = wrapper_in(self.training_env, "KeepRewardModels")
        self._next = (self.num_timesteps // self.every + 1) * self.every

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next:
            self._next = (self.num_timesteps // self.every + 1) * self.every
            predictor = self.wrapper.pipeline.predictor
            if predictor is not None and self.wrapper.using_reward_from_predictor:
                log_dir = LogDir(self.wrapper.log_dir)
                os.makedirs(log_dir.reward_history_dir, exist_ok=True)
                path = log_dir.reward_history(self.num_timesteps)
                predictor.save(path)
                self.kept.append(path)
        return True


def reward_history(log_dir: str) -> list[tuple[int, str]]:
    """The reward models ``KeepRewardModels`` kept in ``log_dir``: ``(agent steps, path)`` in step order."""
    folder = LogDir(log_dir).reward_history_dir
    names = os.listdir(folder) if os.path.isdir(folder) else []
    kept = [(int(m.group(1)), os.path.join(folder, name)) for name in names if (m := HISTORY_FILE.fullmatch(name))]
    return sorted(kept)
