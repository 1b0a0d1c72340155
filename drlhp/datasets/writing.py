"""Writing Minari datasets: episodes held as arrays, and a dataset relabelled with a reward model."""
from __future__ import annotations

import dataclasses
import json
import os
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

from drlhp.clips.frames import infer_frame_spec
from drlhp.datasets.minari_source import Episode, import_minari, open_dataset, read_episode
from drlhp.errors import ConfigError
from drlhp.reward.predictor import RewardPredictor, reward_model_for
from drlhp.storage.layout import checkpoint_path
from drlhp.version import __version__

if TYPE_CHECKING:
    from minari import MinariDataset

#: The metadata key of a relabelled dataset that says how it was made (JSON).
PROVENANCE_KEY = "drlhp"


def write_dataset(dataset_id: str, episodes: Iterable[Episode], observation_space: gymnasium.spaces.Space,
                  action_space: gymnasium.spaces.Space, env_spec: gymnasium.envs.registration.EnvSpec | None,
                  metadata: dict[str, Any] | None = None, **minari_fields: Any) -> MinariDataset:
    """A new Minari dataset ``dataset_id`` of ``episodes``, numbered from 0 in order (nothing is overwritten: an id
    in use is a ``ConfigError``); ``metadata`` joins Minari's own; ``minari_fields``: ``algorithm_name``,
    ``description``, ... as ``minari.create_dataset_from_buffers`` takes them."""
    minari = import_minari()
    from minari.data_collector import EpisodeBuffer

    try:
        minari.dataset.minari_dataset.parse_dataset_id(dataset_id)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{dataset_id!r} is not a Minari dataset id: write (namespace/)name-v<version>, e.g. "
                          "hopper/relabelled-v0") from e
    if dataset_id in minari.list_local_datasets():
        raise ConfigError(f"a Minari dataset {dataset_id!r} exists already; choose another id (or delete it first "
                          "with minari.delete_dataset)")
    buffers = [EpisodeBuffer(observations=e.observations, actions=e.actions, rewards=list(e.rewards),
                             terminations=list(e.terminations), truncations=list(e.truncations),
                             infos=e.infos or None) for e in episodes]
    with warnings.catch_warnings():  # Minari's advice to name an author, a code link, an evaluation env
        warnings.filterwarnings("ignore", category=UserWarning, module="minari")
        made = minari.create_dataset_from_buffers(dataset_id, buffers, env=env_spec,
                                                  observation_space=observation_space, action_space=action_space,
                                                  **minari_fields)
    if metadata:
        made.storage.update_metadata(metadata)
    return made


def registered(spec: gymnasium.envs.registration.EnvSpec | None) -> gymnasium.envs.registration.EnvSpec | None:
    """The env a dataset names, as gymnasium registers it here with the dataset's arguments and episode limit; None
    where gymnasium does not know it. Minari makes the env of the spec it is given, and a spec read from a file
    names an entry point (and wrappers) the file chose: those come from gymnasium's registry instead."""
    if spec is None or spec.id not in gymnasium.registry:
        return None
    return dataclasses.replace(gymnasium.spec(spec.id), kwargs=dict(spec.kwargs),
                               max_episode_steps=spec.max_episode_steps)


def relabel_dataset(source: str, reward_model: str | RewardPredictor, dataset_id: str,
                    obs_transform_func: Callable[[Any], np.ndarray] | None = None) -> MinariDataset:
    """A new Minari dataset ``dataset_id``: ``source``'s episodes, each step's reward replaced by ``reward_model``'s.

    A step's reward is the predicted, normalised reward of the observation it ends in, as drlhp's wrappers return
    it. The new dataset's metadata says how it was made (``PROVENANCE_KEY``): the source, the reward model's file,
    digest and what it was trained on, and the drlhp version. A model for other observations is refused
    (``ObservationError``) before anything is written.
    """
    dataset = open_dataset(source)
    frame = (lambda obs: obs) if obs_transform_func is None else obs_transform_func
    first = read_episode(dataset, int(dataset.episode_indices[0]), repr(source))
    predictor = reward_model_for(reward_model, infer_frame_spec(frame(first.observations[0])))
    path = None if isinstance(reward_model, RewardPredictor) else checkpoint_path(reward_model)

    def relabelled() -> Iterable[Episode]:
        for index in dataset.episode_indices:
            e = read_episode(dataset, int(index), repr(source))
            frames = np.stack([frame(o) for o in e.observations[1:]])
            yield Episode(e.id, e.observations, e.actions, predictor.rewards(frames).astype(np.float64),
                          e.terminations, e.truncations, e.infos)

    provenance = {"relabelled_from": dataset.spec.dataset_id, "reward_model": {
        "file": os.path.abspath(path) if path else None, "provenance": predictor.provenance},
        "drlhp_version": __version__}
    recorded_by = dataset.storage.metadata.get("algorithm_name") or "unknown"
    return write_dataset(dataset_id, relabelled(), dataset.observation_space, dataset.action_space,
                         registered(dataset.spec.env_spec), {PROVENANCE_KEY: json.dumps(provenance)},
                         algorithm_name=f"{recorded_by}, rewards relabelled by drlhp",
                         description=f"{dataset.spec.dataset_id} with each step's reward replaced by the predicted, "
                                     "normalised reward of a drlhp reward model")
