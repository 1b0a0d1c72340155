"""Recorded datasets (Minari's format) as a source of clips, and relabelled with a reward model.

``drlhp.DatasetReplayEnv`` and ``drlhp.relabel_dataset`` are the package's; here are the parts to write a dataset
of your own. Minari is an optional dependency (``drlhp[datasets]``): it is imported only when a dataset is opened
or written.
"""
from drlhp.datasets.minari_source import Episode
from drlhp.datasets.writing import write_dataset

__all__ = ["Episode", "write_dataset"]
