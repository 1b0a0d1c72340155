"""How each drlhp process sets torch up: its number of threads and its seed."""
from __future__ import annotations


def set_up_torch(threads: int | None, seed: int | None = None) -> None:
    """Use ``threads`` torch threads in this process and seed torch with ``seed``; None (or 0 threads): leave as is.

    Each process sets its own: with 2 cores, one thread for the RL process and one for the trainer
    keep them off each other's core.
    """
    import torch  # here, so that importing this module costs nothing in a process without torch

    if threads:
        torch.set_num_threads(threads)
    if seed is not None:
        torch.manual_seed(seed)
