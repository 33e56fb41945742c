"""TracerWarnings for Tensor -> Python conversions made while tracing.

The tracer only sees ops; a tensor turned into a Python value (``.item()``, ``bool(t)``,
``int(t)``, ``len(t)``, ``.tolist()``, ``.numpy()``, an ``if`` on a tensor) is baked into the
trace as a constant. PyTorch warns then, with the messages below. Those Tensor methods are not
ops in ember, so while a trace runs (and only then) they are wrapped on the Tensor class; the
wrappers warn only for calls from user code (not from inside an op's kernel, where the Tracer
key is excluded) and run the original with the Tracer key excluded, so a conversion built on
another (``__bool__`` calls ``item``) warns once. The wrapping is reference-counted so nested
or concurrent traces restore the class exactly once, at the end.
"""
from __future__ import annotations

import functools
import threading

from .._core.dispatch import DispatchKey, _ExcludeDispatchKeyGuard
from .._core.tensor import Tensor
from ._recorder import is_recording, warn_at_user_frame

_CONSTANT_TAIL = (" might cause the trace to be incorrect. We can't record the data flow of Python values, "
                  "so this value will be treated as a constant in the future. This means that the trace "
                  "might not generalize to other inputs!")
_LEN = ("Using len to get tensor shape might cause the trace to be incorrect. Recommended usage would be "
        "tensor.shape[0]. Passing a tensor of different shape might lead to errors or silently give "
        "incorrect results.")
_ITER = ("Iterating over a tensor might cause the trace to be incorrect. Passing a tensor of different "
         "shape won't change the number of iterations executed (and might lead to errors or silently give "
         "incorrect results).")

# method name -> (warning text, run the original untraced?)
CONVERSIONS = {
    "item": ("Converting a tensor to a Python number" + _CONSTANT_TAIL, True),
    "__bool__": ("Converting a tensor to a Python boolean" + _CONSTANT_TAIL, True),
    "__int__": ("Converting a tensor to a Python integer" + _CONSTANT_TAIL, True),
    "__float__": ("Converting a tensor to a Python float" + _CONSTANT_TAIL, True),
    "__index__": ("Converting a tensor to a Python index" + _CONSTANT_TAIL, True),
    "tolist": ("Converting a tensor to a Python list" + _CONSTANT_TAIL, True),
    "numpy": ("Converting a tensor to a NumPy array" + _CONSTANT_TAIL, True),
    "__len__": (_LEN, True),
    "__iter__": (_ITER, False),      # iterating runs unbind: that op is recorded
}

_lock = threading.Lock()
_installed = 0
_originals: dict = {}


def _wrap(name, original, message, untraced):
    @functools.wraps(original)
    def converting(self, *args, **kwargs):
        if not is_recording():
            return original(self, *args, **kwargs)
        warn_at_user_frame(message)
        if untraced:
            with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
                return original(self, *args, **kwargs)
        return original(self, *args, **kwargs)
    converting._ember_trace_wrapper = True
    return converting


def install() -> None:
    """Wrap the conversions on Tensor (first caller only)."""
    global _installed
    with _lock:
        _installed += 1
        if _installed > 1:
            return
        for name, (message, untraced) in CONVERSIONS.items():
            original = Tensor.__dict__.get(name)
            if original is None:
                continue
            _originals[name] = original
            setattr(Tensor, name, _wrap(name, original, message, untraced))


def uninstall() -> None:
    """Restore the original methods (last caller only)."""
    global _installed
    with _lock:
        _installed -= 1
        if _installed > 0:
            return
        for name, original in _originals.items():
            setattr(Tensor, name, original)
        _originals.clear()
