"""Figures in words, as the generated pages give them."""
from __future__ import annotations

import numpy as np


def thousands(step: int) -> str:
    """An agent step as the tables give it: 1,234,567 -> 1,235k."""
    return f"{round(step / 1000):,}k"


def and_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def hours(seconds: list[float]) -> str:
    return f"{np.median(seconds) / 60:.0f} min"
