"""``ember.cuda``: what a CPU-only build of PyTorch answers, so device-selection code runs unchanged.

``is_available()`` is False and ``device_count()`` 0; seeding is a silent no-op (PyTorch defers
it until CUDA initialises, which never happens); anything that needs a device raises PyTorch's
``AssertionError("Torch not compiled with CUDA enabled")``. A CUDA backend would fill this in.
"""
from __future__ import annotations

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "synchronize", "current_device", "set_device", "get_device_name", "get_device_capability",
           "empty_cache", "is_bf16_supported", "memory_allocated", "max_memory_allocated"]

_NOT_COMPILED = "Torch not compiled with CUDA enabled"


def _no_cuda(*args, **kwargs):
    raise AssertionError(_NOT_COMPILED)


def _nothing(*args, **kwargs) -> None:
    return None


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


# seeding is queued by PyTorch until CUDA is initialised: without CUDA, it never runs
manual_seed = manual_seed_all = seed = seed_all = _nothing
# PyTorch's CPU build returns quietly from these (there is no cache to empty)
empty_cache = _nothing
synchronize = current_device = set_device = get_device_name = get_device_capability = _no_cuda


def memory_allocated(device=None) -> int:
    return 0


max_memory_allocated = memory_allocated
