"""The preference interface's old import path (the original drlhp's name), kept so old imports still work.

Everything is defined in ``drlhp.labelling.interface``.
"""
from drlhp.labelling.interface import (
    EpisodeTracker,
    InterfaceConfig,
    PrefInterface,
    run_pref_interface,
)

__all__ = [
    "EpisodeTracker", "InterfaceConfig", "PrefInterface", "run_pref_interface",
]
