"""KeepRewardModels: the reward model the agent had, kept every so many agent steps, loadable and listed by step."""
import numpy as np
import pytest
from conftest import FAST
from test_relabel import PointEnv, until_predicted

pytest.importorskip("stable_baselines3")
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from drlhp.errors import ConfigError  # noqa: E402
from drlhp.reward.predictor import RewardPredictor  # noqa: E402
from drlhp.sb3 import HumanPreferencesVecEnvWrapper, KeepRewardModels, reward_history  # noqa: E402

PROBE = np.random.default_rng(0).uniform(-2, 2, (16, 3)).astype(np.float32)


class RewardsInUse(BaseCallback):
    """The wrapper's predicted rewards of ``PROBE`` at each step the agent's step count is a multiple of ``every``."""

    def __init__(self, env: HumanPreferencesVecEnvWrapper, every: int) -> None:
        super().__init__()
        self.env, self.every, self.at = env, every, {}

    def _on_step(self) -> bool:
        if self.num_timesteps % self.every == 0:
            self.at[self.num_timesteps] = self.env.predicted_rewards(PROBE)
        return True


def test_the_kept_models_are_the_agents_reward_at_each_step_and_a_continued_run_adds_to_them(tmp_path):
    env = HumanPreferencesVecEnvWrapper(DummyVecEnv([PointEnv] * 2), log_dir=str(tmp_path),
                                        synthetic_preferences=True, **FAST)
    with env:
        until_predicted(env)
        model = PPO("MlpPolicy", env, n_steps=8, batch_size=16, seed=0, policy_kwargs=dict(net_arch=[8]))
        in_use = RewardsInUse(env, 10)
        model.learn(40, callback=[KeepRewardModels(10), in_use])
        model.learn(16, callback=[KeepRewardModels(10), in_use], reset_num_timesteps=False)  # a continued run
    kept = reward_history(str(tmp_path))
    # Steps count both envs (2 a step); PPO's rollouts of 16 overshoot 40 to 48, and the continued run reaches 64.
    assert [step for step, _ in kept] == [10, 20, 30, 40, 50, 60]
    assert sorted(in_use.at) == [10, 20, 30, 40, 50, 60]
    for step, path in kept:
        np.testing.assert_allclose(RewardPredictor.load(path).normalised_rewards(PROBE), in_use.at[step], rtol=1e-5,
                                   atol=1e-6, err_msg=f"the model kept at step {step} is not the one in use then")


def test_nothing_is_kept_while_the_agent_gets_the_envs_reward_and_a_bad_interval_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="every this many agent steps"):
        KeepRewardModels(0)
    env = HumanPreferencesVecEnvWrapper(DummyVecEnv([PointEnv]), log_dir=str(tmp_path), collect_prefs=False,
                                        train_reward=False, **FAST)
    with env:
        keep = KeepRewardModels(4)
        PPO("MlpPolicy", env, n_steps=8, batch_size=8, seed=0, policy_kwargs=dict(net_arch=[8])).learn(16,
                                                                                                        callback=keep)
    assert keep.kept == [] and reward_history(str(tmp_path)) == []
