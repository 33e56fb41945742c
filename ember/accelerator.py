"""``ember.accelerator``: the device-agnostic accelerator API, answered as a CPU build of PyTorch does.

ember runs on the CPU (NumPy), so there is no current accelerator: programs that pick their
device with ``torch.accelerator.current_accelerator() if torch.accelerator.is_available() else "cpu"``
choose the CPU. Calls that need a device raise PyTorch's RuntimeError.
"""
from __future__ import annotations

__all__ = ["current_accelerator", "is_available", "device_count", "current_device_index", "set_device_index",
           "synchronize", "empty_cache"]

_NONE = "Cannot access accelerator device when none is available."


def current_accelerator(check_available: bool = False):
    """The accelerator device type, or None: ember has none."""
    return None


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def current_device_index() -> int:
    raise RuntimeError(_NONE)


def set_device_index(device) -> None:
    raise RuntimeError(_NONE)


def synchronize(device=None) -> None:
    raise RuntimeError(_NONE)


def empty_cache() -> None:
    raise RuntimeError(_NONE)


current_device_idx, set_device_idx = current_device_index, set_device_index
