"""What every front-end (single env, gymnasium vector, SB3 vector) shares: the controls
a user calls, the ``info`` keys, and taking one env's observation out of a batch."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Protocol

import numpy as np

from drlhp.clips.frames import FrameSpec, infer_frame_spec
from drlhp.config import PreferenceConfig
from drlhp.errors import ConfigError, UsageError
from drlhp.labelling.display import DISPLAY_SPEC, fitted_render
from drlhp.runtime.contract import Pipeline, PipelineFactory
from drlhp.runtime.pipeline import PreferencePipeline
from drlhp.runtime.stats import PipelineStats

TRUE_REWARD_KEY = "drlhp_true_reward"
"""``info`` key holding the environment's own reward of every step."""
PREDICTED_REWARD_KEY = "drlhp_predicted_reward"
"""``info`` key holding the predicted, normalised reward (present while it is returned)."""
#: Observations ``predicted_rewards`` turns into frames at a time (each pass of the network takes fewer).
RELABEL_CHUNK = 4096


class _Closable(Protocol):
    def close(self) -> None: ...


class PipelineFrontEnd:
    """The user's handle on the pipeline; a front-end calls ``_start_pipeline`` in its ``__init__``."""

    pipeline: Pipeline
    #: Whether it can tell a life lost from the game's end (``clips_span_lives``): the SB3 front-end, by SB3's Monitor.
    spans_lives = False

    def _start_pipeline(self, single_obs: Any, n_envs: int, config: PreferenceConfig | None, kwargs: dict,
                        factory: PipelineFactory | None, render: Callable[[], Sequence[Any]] | None = None) -> None:
        """Start the local pipeline with these settings, checked against the frame of ``single_obs`` (one env's
        sample observation), or the one ``factory`` makes, which has settings of its own. ``render``: each env's
        render, an RGB image, where the envs render them (``render_mode="rgb_array"``), for ``display_frames``."""
        self._render: Callable[[], Sequence[Any]] | None = None
        if factory is None:
            config = PreferenceConfig.from_kwargs(config, kwargs)
            if config.clips_span_lives and not self.spans_lives:
                raise ConfigError(f"clips_span_lives is for an SB3 VecEnv that ends an episode at each life lost "
                                  f"(drlhp.sb3.HumanPreferencesVecEnvWrapper); {type(self).__name__} ends a clip where "
                                  "its env's episode ends: let that be the game's end (gymnasium's AtariPreprocessing "
                                  "ends it there by default)")
            self._transform = config.obs_transform_func
            spec = infer_frame_spec(self._frame(single_obs))
            if _shows_renders(config, spec, render):
                self._render = render
            self.pipeline = PreferencePipeline(config, spec, n_envs, DISPLAY_SPEC if self._render else None)
            return
        if config is not None or kwargs:
            raise ConfigError("a front-end given a pipeline_factory takes its settings from that pipeline: pass "
                              f"no settings (got {sorted(kwargs) or 'config'})")
        self.pipeline = factory(n_envs)
        self._transform = self.pipeline.config.obs_transform_func
        self._frame(single_obs)  # an observation the pipeline cannot store fails here, not at the first clip

    def _display(self) -> np.ndarray | None:
        """What a person is shown of the step just taken, each env's render (None: the frames)."""
        return None if self._render is None else np.stack([fitted_render(image) for image in self._render()])

    def _frame(self, obs: Any) -> np.ndarray:
        """One env's observation -> the frame stored and rewarded."""
        return self._transform(obs) if self._transform is not None else obs

    def _frames(self, obs: Any, last_obs: dict[int, Any]) -> np.ndarray:
        """The N frames of a vector step; ``last_obs`` maps each env whose episode just ended (and
        whose returned observation is already the next episode's first) to its episode's last one."""
        if self._transform is None and not last_obs:
            return obs  # already the batch of frames: no copy on the common step
        return np.stack([self._frame(last_obs[i] if i in last_obs else unbatch(obs, i))
                         for i in range(self.pipeline.n_envs)])

    @property
    def config(self) -> PreferenceConfig:
        """The run's settings."""
        return self.pipeline.config

    @property
    def frame_spec(self) -> FrameSpec:
        """Shape, dtype and layout of one env's frame."""
        return self.pipeline.frame_spec

    @property
    def log_dir(self) -> str:
        """Where the run's labels, checkpoints and logs go."""
        return self.pipeline.config.log_dir

    @property
    def using_reward_from_predictor(self) -> bool:
        """True while ``step()`` returns the predicted, normalised reward."""
        return self.pipeline.using_reward_from_predictor

    def switch_to_true_reward(self) -> None:
        """Return the environment's reward from now on (until ``switch_to_predicted_reward()``)."""
        self.pipeline.switch_to_true_reward()

    def switch_to_predicted_reward(self) -> None:
        """Return the predicted reward from now on; needs a checkpoint to exist."""
        self.pipeline.switch_to_predicted_reward()

    @property
    def labelling_url(self) -> str | None:
        """The labelling page's address with its token (``labelling="web"``), else None."""
        return self.pipeline.labelling_url

    @property
    def labelling_owner_url(self) -> str | None:
        """The run owner's page (who labels, their pace, how often labellers agree), with its own token
        (``labelling="web"``), else None. Keep it to yourself: labellers get ``labelling_url``."""
        return self.pipeline.labelling_owner_url

    def predicted_rewards(self, observations: Any) -> np.ndarray:
        """The predicted, normalised reward ``step()`` now gives a step that ends in each of ``observations`` (a
        batch along the first axis: an array, or a dict / tuple of arrays as a vector env returns them), from the
        reward predictor the wrapper holds now: what an off-policy agent's stored rewards are relabelled with
        (``drlhp.sb3.RelabelReplayBuffer`` does it for SB3's replay buffers; docs/off-policy.md).

        ``obs_transform_func`` is applied as on a step. Raises ``UsageError`` before the first checkpoint.
        """
        predictor = self.pipeline.predictor
        if predictor is None:
            raise UsageError("no reward predictor yet: there is no predicted reward to relabel with until the "
                             "trainer's first checkpoint (using_reward_from_predictor says when rewards are predicted)")
        n = batch_length(observations)
        rewards = np.empty(n)
        for start in range(0, n, RELABEL_CHUNK):  # one chunk's frames at a time: a replay buffer's may not fit twice
            stop = min(n, start + RELABEL_CHUNK)
            if self._transform is None and isinstance(observations, np.ndarray):
                frames = observations[start:stop]  # a view: no copy
            else:
                frames = np.stack([self._frame(unbatch(observations, i)) for i in range(start, stop)])
            rewards[start:stop] = predictor.normalised_rewards(frames)
        return rewards

    def wait_for_reward_predictor(self, timeout: float | None = None) -> None:
        """Block until the predicted reward is returned; see ``PreferencePipeline.wait_for_reward_predictor``."""
        self.pipeline.wait_for_reward_predictor(timeout)

    def save_prefs(self, timeout: float = 120.0) -> list[str]:
        """Write ``train.pkl.gz`` and ``val.pkl.gz`` into ``log_dir`` (atomically); returns their paths."""
        return self.pipeline.save_prefs(timeout)

    def stats(self) -> PipelineStats:
        """Counters: clips sent/dropped, labels made and received, reward-training steps, predictor's step
        (a ``PipelineStats``: ``stats().run_labels``; ``stats().to_dict()`` for all of them)."""
        return self.pipeline.stats()

    def _close_all(self, close_env) -> None:
        """Stop the pipeline (the trainer saves unsaved labels), then ``close_env()``, even if a worker failed."""
        pipeline = self.__dict__.get("pipeline")
        try:
            if pipeline is not None:
                pipeline.close()
        finally:
            close_env()

    def __enter__(self):
        return self

    def __exit__(self: _Closable, *exc) -> None:  # a front-end is also an env (wrapper): it has close()
        self.close()


def _shows_renders(config: PreferenceConfig, spec: FrameSpec, render: Callable[[], Any] | None) -> bool:
    """Whether a person is shown the env's renders (``display_frames``), or a clear error where they cannot be."""
    if not config.people_label or config.display_frames == "observations":
        return False
    if config.display_frames == "auto":
        return render is not None and not spec.is_image
    if render is None:
        raise ConfigError("display_frames=\"render\" shows a person the env's render(): make the env (each of a "
                          "vector env's) with render_mode=\"rgb_array\", e.g. gymnasium.make(env_id, "
                          "render_mode=\"rgb_array\")")
    return True


def batch_length(obs: Any) -> int:
    """How many observations a batched one holds (arrays, or dicts / tuples of them)."""
    if isinstance(obs, dict):
        return batch_length(next(iter(obs.values())))
    if isinstance(obs, tuple):
        return batch_length(obs[0])
    return len(obs)


def unbatch(obs: Any, i: int) -> Any:
    """Env ``i``'s observation out of a batched one (arrays, or dicts / tuples of them)."""
    if isinstance(obs, dict):
        return {k: unbatch(v, i) for k, v in obs.items()}
    if isinstance(obs, tuple):
        return tuple(unbatch(v, i) for v in obs)
    return obs[i]
