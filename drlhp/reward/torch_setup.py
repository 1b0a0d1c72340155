"""How each drlhp process sets torch up: its number of threads, its seed, and the device it trains on."""
from __future__ import annotations

from typing import TYPE_CHECKING

from drlhp.errors import ConfigError

if TYPE_CHECKING:
    import torch

#: The device setting that picks CUDA where torch finds it, else the CPU.
AUTO_DEVICE = "auto"


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


def check_device_name(name: str) -> None:
    """Raise ``ConfigError`` unless ``name`` is ``"auto"`` or a torch device string (``"cpu"``, ``"cuda:1"``)."""
    import torch

    if name == AUTO_DEVICE:
        return
    try:
        torch.device(name)
    except (RuntimeError, TypeError, ValueError) as e:
        why = str(e).splitlines()[0]
        raise ConfigError(f"reward_predictor_device={name!r} is not a torch device ({why}); pass 'cpu' (the "
                         "default), 'auto' (CUDA where available) or a device such as 'cuda' or 'cuda:1'") from None


def torch_device(name: str) -> torch.device:
    """The device ``name`` (``"auto"``: CUDA where torch finds it, else the CPU), checked to exist here."""
    import torch

    check_device_name(name)
    if name == AUTO_DEVICE:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0 or (device.index or 0) >= n:
            raise ConfigError(f"reward_predictor_device={name!r}, but torch finds {n} CUDA device(s) on this machine; "
                             "pass 'auto' (CUDA where available, else the CPU) or 'cpu'")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"reward_predictor_device={name!r}, but torch finds no MPS device on this machine; pass "
                         "'auto' (CUDA where available, else the CPU) or 'cpu'")
    return device
