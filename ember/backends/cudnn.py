"""``ember.backends.cudnn``: cuDNN switches; there is no cuDNN here, so they only read back."""
from __future__ import annotations

import contextlib

enabled = True
benchmark = False
benchmark_limit = None  # PyTorch reads None without cuDNN
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    return False


def version():
    return None


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags for the block, then restore them."""
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    module = globals()
    saved = {n: module[n] for n in names}
    module.update(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32)))
    try:
        yield
    finally:
        module.update(saved)
