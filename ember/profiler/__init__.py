"""ember.profiler: PyTorch's profiler API over the dispatcher's Profiler key (see profiler.py).

``ember.autograd.profiler`` is provided as an alias with the legacy ``profile(enabled=True, ...)``
and ``record_function``.
"""
from __future__ import annotations

import sys as _sys
import types as _types

from .profiler import (profile, record_function, schedule, ProfilerActivity, ProfilerAction,  # noqa: F401
                       tensorboard_trace_handler, is_profiler_enabled, legacy_profile as _legacy_profile)
from .table import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401

__all__ = ["profile", "record_function", "schedule", "ProfilerActivity", "ProfilerAction",
           "tensorboard_trace_handler", "EventList", "FunctionEvent", "FunctionEventAvg"]


def _install_autograd_alias() -> None:
    """``ember.autograd.profiler`` (torch.autograd.profiler's legacy names)."""
    from .. import autograd
    mod = _types.ModuleType("ember.autograd.profiler", "torch.autograd.profiler's names, over ember.profiler")
    mod.profile = _legacy_profile
    mod.record_function = record_function
    mod.EventList, mod.FunctionEvent, mod.FunctionEventAvg = EventList, FunctionEvent, FunctionEventAvg
    autograd.profiler = mod
    _sys.modules["ember.autograd.profiler"] = mod


_install_autograd_alias()
