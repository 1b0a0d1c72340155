"""The seed's import path of the preference database (``pref_db.py`` in the original drlhp's guide), kept for its
users: ``from drlhp.pref_db import PrefBuffer, PrefDB``. Defined in ``drlhp.label_store.database``; our own code
and docs import them from ``drlhp``.
"""
from drlhp.label_store.database import PrefBuffer, PrefDB

__all__ = ["PrefBuffer", "PrefDB"]
