"""Each ensemble member's own bootstrap resample of a growing, evicting label database.

A bootstrap sample of n labels holds each label a Poisson(1)-distributed number
of times (the online bootstrap of Oza & Russell 2001, the limit of drawing n
with replacement). A label's count for member ``m`` is a hash of the label's two
clip ids and ``m``: fixed for the label's whole life, with no table to keep in
step with the database as labels arrive and are evicted, and the same after a
resumed run reloads the labels.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

_MASK = (1 << 64) - 1
# Thresholds of the Poisson(1) CDF: a uniform u falls below POISSON_CDF[k] with probability P(count <= k).
POISSON_CDF = np.cumsum([math.exp(-1) / math.factorial(k) for k in range(12)])


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: every input bit affects every output bit."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def bootstrap_counts(pair_ids: np.ndarray, member: int, seed: int = 0) -> np.ndarray:
    """How many times member ``member``'s resample holds each pair; ``pair_ids`` ``(n, 2)`` clip ids -> ``(n,)``."""
    ids = np.asarray(pair_ids, dtype=np.int64).reshape(-1, 2).astype(np.uint64)
    salt = np.uint64((seed * 1_000_003 + member * 7919 + 1) & _MASK)
    with np.errstate(over="ignore"):  # wrapping multiplication is the point
        h = _mix(_mix(ids[:, 0] ^ salt) + ids[:, 1] * np.uint64(0x9E3779B97F4A7C15))
    u = (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return np.searchsorted(POISSON_CDF, u, side="right")


def member_batches(pairs: Sequence[tuple[int, int, float]], n_members: int, batch_size: int,
                   rng: np.random.Generator, seed: int = 0) -> np.ndarray:
    """Indices ``(M, batch)`` into ``pairs`` (a database's ``(a, b, label)``): member m's from its resample.

    With one member there is nothing to resample: a uniform draw (all pairs when
    there are no more than ``batch_size``), as a single network has always trained.
    """
    n = len(pairs)
    if n_members == 1:
        return (rng.integers(0, n, size=batch_size) if n > batch_size else np.arange(n))[None]
    ids = np.array([p[:2] for p in pairs], dtype=np.int64)
    size = min(batch_size, n)
    out = np.empty((n_members, size), dtype=np.int64)
    for m in range(n_members):
        counts = bootstrap_counts(ids, m, seed).astype(np.float64)
        total = counts.sum()
        # A tiny database can leave a member with an empty resample: it then trains on all pairs.
        out[m] = rng.choice(n, size=size, p=counts / total if total else None)
    return out
