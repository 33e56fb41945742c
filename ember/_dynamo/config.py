"""ember._dynamo.config: knobs of the compile entry, read on every compile (not on cache hits).

    import ember._dynamo.config as config
    config.cache_size_limit = 2                 # entries per code object before running eagerly
    with config.patch(suppress_errors=False):   # also a decorator
        ...

Differs from torch where noted: `suppress_errors` defaults to True, because ember's rule is that a
capture error never breaks the user's program (torch runs the frame eagerly for graph breaks but
raises for internal errors unless suppress_errors is set).
"""
from __future__ import annotations

import contextlib
import sys

# cache entries (guarded compiled versions) kept per code object; past it the frame runs eagerly
cache_size_limit = 8
recompile_limit = 8          # torch 2.13's newer name: either one lowered applies
# a capture error runs the frame eagerly with a warning (False: raise it)
suppress_errors = True
# include the translator's traceback in the warning when capture fails
verbose = False
# static shapes by default (TENSOR_MATCH checks sizes and strides); dynamic=True is not supported
assume_static_by_default = True
# Tensor.item() and similar create graph breaks (no symbolic scalars)
capture_scalar_outputs = False
# a graph captured inside DistributedDataParallel's forward is cut at its gradient buckets, each
# piece compiled alone, so buckets all-reduce during backward (backends/distributed.py)
optimize_ddp = True
# ints read from the frame are specialised (CONSTANT_MATCH), as torch 2.13 does for ints by default
specialize_int = True
# mode="reduce-overhead" also replays the AOT forward and backward graphs of training steps from
# CUDA graphs (backends/cudagraphs.aot_backend). (GPT-2 small's losses once left eager's under it:
# the flash-attention kernels went through Triton's own launcher, which launched on PyTorch's
# stream, outside the capture; _cuda/triton_stream.py.) False: training steps run as in default mode
cudagraph_training = True

_DEFAULTS = {name: value for name, value in dict(globals()).items()
             if not name.startswith("_") and isinstance(value, (bool, int, float, str))}


def limit() -> int:
    """The effective per-code cache size (the smaller of cache_size_limit and recompile_limit)."""
    return min(cache_size_limit, recompile_limit)


class patch(contextlib.ContextDecorator):
    """Temporarily set config values: ``with config.patch(cache_size_limit=1): ...`` or as a decorator."""

    def __init__(self, arg=None, **changes):
        if isinstance(arg, dict):
            changes = {**arg, **changes}
        elif isinstance(arg, str):
            raise TypeError("config.patch: pass settings as keywords, e.g. patch(cache_size_limit=1)")
        module = sys.modules[__name__]
        for name in changes:
            if name not in _DEFAULTS:
                raise AttributeError(f"ember._dynamo.config has no setting {name!r}")
        self._module = module
        self._changes = changes
        self._saved = []

    def __enter__(self):
        self._saved.append({name: getattr(self._module, name) for name in self._changes})
        for name, value in self._changes.items():
            setattr(self._module, name, value)
        return self

    def __exit__(self, *exc):
        for name, value in self._saved.pop().items():
            setattr(self._module, name, value)
        return False


def reset_to_defaults() -> None:
    """Restore every setting to its default value."""
    module = sys.modules[__name__]
    for name, value in _DEFAULTS.items():
        setattr(module, name, value)


def to_dict() -> dict:
    """The current settings, by name."""
    module = sys.modules[__name__]
    return {name: getattr(module, name) for name in _DEFAULTS}


