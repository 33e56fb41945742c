"""Refuse data-dependent Python while AOT autograd traces.

make_fx on real tensors records ops, not Python: ``if t.sum() > 0`` or ``x * t.item()`` bakes this
run's value into the graph (jit.trace warns about it). A compiled program must not replay that
value on other inputs, so while `forbidden(tracer)` is active, converting a tensor that `tracer`
traces to a Python value raises `DataDependentTrace` (aot_autograd then runs the program eagerly).
A fake tensor the trace did not make (a constant the program builds) has no values for NumPy: its
``numpy()`` / ``__array__`` raise `DataDependentOutputException`, so the trace is made on real inputs.

The wrappers are on Tensor only while an AOT trace runs (reference-counted across threads, as
jit.trace's conversion warnings are), so eager code never pays for them.
"""
from __future__ import annotations

import contextlib
import functools
import threading

from .._core.tensor import Tensor
from .fake_tensor import DataDependentOutputException, FakeTensor
from .functional_tensor import FunctionalTensor, current
from .make_fx import SharedPatches

CONVERSIONS = ("__bool__", "item", "tolist", "__int__", "__float__", "__index__", "numpy", "__array__")


class DataDependentTrace(RuntimeError):
    """A traced tensor's value was read as a Python value during an AOT trace."""


class _State(threading.local):
    tracer = None


_state = _State()


def _guarded(name, original):
    @functools.wraps(original)
    def conversion(self, *args, **kwargs):
        tracer = _state.tracer
        if tracer is not None:
            probe = current(self) if isinstance(self, FunctionalTensor) else self     # a functionalised trace
            entry = tracer.values.get(id(probe))
            if entry is not None and entry[0] is probe:
                raise DataDependentTrace(f"Tensor.{name}() of a traced tensor: the program's Python depends on "
                                         f"tensor values ({entry[1].name}), which a graph cannot replay")
            if name in ("numpy", "__array__") and isinstance(probe, FakeTensor):
                raise DataDependentOutputException(f"Tensor.{name}")
        return original(self, *args, **kwargs)
    return conversion


# every conversion of Tensor and FakeTensor (which defines item, tolist, numpy of its own), guarded
_PATCHES = SharedPatches(lambda: [(cls, name, _guarded(name, cls.__dict__[name]))
                                  for cls in (Tensor, FakeTensor) for name in CONVERSIONS if name in cls.__dict__])


@contextlib.contextmanager
def forbidden(tracer):
    """Within the block, converting a tensor `tracer` traces raises DataDependentTrace."""
    with _PATCHES.installed():
        previous, _state.tracer = _state.tracer, tracer
        try:
            yield
        finally:
            _state.tracer = previous
