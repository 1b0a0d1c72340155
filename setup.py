"""Kept so that `python setup.py ...` and older tools still work: the package's metadata is in pyproject.toml."""
from setuptools import setup

setup()
