"""drlhp's version: what a reward model file says it was made with (its own module, so that every layer may read it)."""
__version__ = "0.1.0"
