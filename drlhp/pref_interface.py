"""The preference interface's old import path (the original drlhp's name), kept so old imports still work.

The interface is defined in ``drlhp.labelling.interface``; the process that runs it, and its settings, in
``drlhp.runtime``.
"""
from drlhp.labelling.interface import EpisodeTracker, PrefInterface
from drlhp.runtime.interface_process import run_pref_interface
from drlhp.runtime.settings import InterfaceConfig

__all__ = [
    "EpisodeTracker", "InterfaceConfig", "PrefInterface", "run_pref_interface",
]
