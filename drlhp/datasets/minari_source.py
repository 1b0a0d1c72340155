"""Opening a Minari dataset with clear errors, and reading its episodes as drlhp needs them.

Minari is an optional dependency (``drlhp[datasets]``): nothing here imports it at module level.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

from drlhp.errors import DatasetFormatError, MissingExtraError, MissingFileError

if TYPE_CHECKING:
    from minari import MinariDataset

#: What every episode must hold for its clips and labels.
NEEDED_FIELDS = ("observations", "rewards", "terminations", "truncations")


def import_minari():
    try:
        import minari
    except ImportError as e:
        raise MissingExtraError('datasets are read and written with Minari: pip install "drlhp[datasets]"') from e
    return minari


def open_dataset(dataset: str) -> MinariDataset:
    """The Minari dataset ``dataset``: an id in Minari's local datasets (``MINARI_DATASETS_PATH``), or a dataset's
    folder (the one holding ``data/``). Reading it runs no code from it."""
    minari = import_minari()
    folder = os.path.join(dataset, "data")
    try:
        opened = minari.MinariDataset(folder) if os.path.isdir(folder) else minari.load_dataset(dataset)
    except FileNotFoundError as e:
        local = sorted(minari.list_local_datasets())
        raise MissingFileError(
            f"no Minari dataset {dataset!r}: neither a dataset id in {_datasets_path()} (it holds "
            f"{', '.join(local) if local else 'none'}) nor a dataset's folder. Pass one of those ids, a folder holding "
            "data/, or set MINARI_DATASETS_PATH to where your datasets are") from e
    except Exception as e:  # h5py, json and Minari raise many kinds for a foreign or corrupt dataset
        raise DatasetFormatError(f"{dataset!r} is not a Minari dataset drlhp can read: {type(e).__name__}: "
                                 f"{str(e)[:200]}") from e
    if not isinstance(opened.observation_space, gymnasium.spaces.Box):
        raise DatasetFormatError(f"dataset {dataset!r} has {type(opened.observation_space).__name__} observations; "
                                 "drlhp cuts clips from arrays (a Box space: state vectors or images)")
    if opened.total_episodes == 0:
        raise DatasetFormatError(f"dataset {dataset!r} holds no episodes")
    return opened


def _datasets_path() -> str:
    from minari.storage.datasets_root_dir import get_dataset_path

    return str(get_dataset_path())


@dataclass(frozen=True)
class Episode:
    """One episode of a dataset: ``observations`` has one more entry than the steps (the first is the reset's)."""

    id: int
    observations: np.ndarray
    actions: Any
    rewards: np.ndarray
    terminations: np.ndarray
    truncations: np.ndarray
    infos: dict

    def __len__(self) -> int:
        return len(self.rewards)


def read_episode(dataset: MinariDataset, index: int, name: str = "the dataset") -> Episode:
    """Episode ``index`` of ``dataset``, checked: a missing field or lengths that do not fit is a
    ``DatasetFormatError`` naming the field."""
    try:
        data = next(iter(dataset.iterate_episodes([index])))
    except KeyError as e:  # h5py's message names the missing field among its own words
        field = next((repr(f) for f in (*NEEDED_FIELDS, "actions") if f"'{f}'" in str(e)), str(e))
        raise DatasetFormatError(f"episode {index} of {name} lacks the field {field}: drlhp reads each episode's "
                                 f"{', '.join(NEEDED_FIELDS)}") from e
    fields: dict[str, np.ndarray] = {f: v for f in NEEDED_FIELDS if isinstance(v := getattr(data, f, None), np.ndarray)}
    missing = [f for f in NEEDED_FIELDS if f not in fields]
    if missing:
        raise DatasetFormatError(f"episode {index} of {name} lacks {', '.join(missing)}: drlhp reads each episode's "
                                 f"{', '.join(NEEDED_FIELDS)}")
    n = len(fields["rewards"])
    if n == 0 or len(fields["observations"]) != n + 1 or any(len(fields[f]) != n for f in NEEDED_FIELDS[2:]):
        raise DatasetFormatError(
            f"episode {index} of {name} has {len(fields['observations'])} observations, {n} rewards, "
            f"{len(fields['terminations'])} terminations and {len(fields['truncations'])} truncations: an episode of "
            "N >= 1 steps holds N + 1 observations (the reset's first) and N of each of the others")
    return Episode(int(data.id), fields["observations"], data.actions, fields["rewards"].astype(np.float64),
                   fields["terminations"].astype(bool), fields["truncations"].astype(bool), dict(data.infos or {}))
