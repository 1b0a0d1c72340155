"""The seed's import path of the preference interface (``pref_interface.py`` in the original drlhp's guide), kept
for its users: ``from drlhp.pref_interface import PrefInterface``. Defined in ``drlhp.labelling.interface``.
"""
from drlhp.labelling.interface import PrefInterface

__all__ = ["PrefInterface"]
