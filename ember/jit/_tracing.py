"""What ember.jit.trace adds to make_fx's tracer: TorchScript names and TracerWarnings.

`TorchScriptTracer` is ember._functorch.make_fx's `Tracer` recording what the program called
(composite ops are kept, arguments equal to their defaults too: TorchScript prints them), plus
- ``meta["jit_name"]``: the Python variable that held a value when it was next used, renamed
  ``name.1``, ``name.2`` as PyTorch's tracer renames reassigned variables; module parameters are
  constants named by their qualified names;
- ``meta["jit_loc"]``: (file, line) of the frame that called the op, for ``# file:line:0``.

TracerWarnings: the tracer only sees ops, so a tensor turned into a Python value (``.item()``,
``bool(t)``, ``int(t)``, ``len(t)``, ``.tolist()``, ``.numpy()``, an ``if`` on a tensor) or a
tensor made from Python data (``ember.tensor``) is baked into the trace. PyTorch warns then, with
the messages below. Those Tensor methods are not ops in ember, so while a trace runs (and only
then) they are wrapped on the Tensor class; the wrappers warn only for calls from user code (not
from inside an op's kernel, where the Tracer key is excluded) and run the original with the Tracer
key excluded, so a conversion built on another (``__bool__`` calls ``item``) warns once.
Sizes read from traced tensors are recorded instead of baked in: see _sizes.py.
"""
from __future__ import annotations

import functools
import warnings

from .._core.dispatch import DispatchKey, _ExcludeDispatchKeyGuard
from .._core.tensor import Tensor
from .._functorch.make_fx import Tracer, current_tracer, is_tracing, user_frame
from ..ops.table import creation


class TracerWarning(Warning):
    """A trace may not generalise: a tensor became a Python value, or check_trace found a
    difference. ``warnings.simplefilter("error", ember.jit.TracerWarning)`` turns it into an error."""


def is_recording() -> bool:
    """True when ember.jit.trace records on this thread and we are in user code (not inside an op)."""
    return isinstance(current_tracer(), TorchScriptTracer) and is_tracing()


def warn_at_user_frame(message: str, category=TracerWarning) -> None:
    """Warn pointing at the user's line (PyTorch's TracerWarnings point there too)."""
    import sys
    frame = user_frame(sys._getframe(1))
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           frame.f_globals.get("__name__", "<string>"), registry)


# ---------------------------------------------------------------------------------------
# the tracer: TorchScript names
# ---------------------------------------------------------------------------------------
class TorchScriptTracer(Tracer):
    """make_fx's tracer with TorchScript naming (see the module docstring)."""

    def __init__(self, attr_names: dict):
        super().__init__(decompose_composites=False, keep_defaults=True, attr_names=attr_names)
        self.jit_names: dict = {}       # debug name -> node owning it (PyTorch's renaming rule)
        self.name_suffix: dict = {}     # debug name base -> next suffix

    def add_input(self, name: str, value):
        node = super().add_input(name, value)
        self.set_jit_name(node, name)
        return node

    def on_use(self, node, value, frame) -> None:
        if "jit_name" in node.meta or frame is None:
            return
        for name, local in frame.f_locals.items():
            if local is value:
                if name != "self":
                    self.set_jit_name(node, name)
                return

    def locate(self, node, frame) -> None:
        super().locate(node, frame)
        if frame is not None:
            node.meta["jit_loc"] = (frame.f_code.co_filename, frame.f_lineno)

    def constant_prefix(self, t) -> str:
        return "_tensor_constant"    # printed as prim::Constant, Parameters included

    def _constant(self, t: Tensor):
        node = super()._constant(t)
        node.meta["jit_constant"] = self.attrs[node.target]
        return node

    def set_jit_name(self, node, name: str) -> None:
        """Give `node` the TorchScript debug name `name`; a value already holding it is renamed
        `name.1`, `name.2`, ... (so the newest value of a variable keeps the plain name)."""
        if not name or name.isdigit() or node.meta.get("jit_name") == name:
            return
        old = self.jit_names.get(name)
        if old is not None and old is not node:
            base, suffix = name, 1
            head, dot, tail = name.rpartition(".")
            if dot and tail.isdigit():
                base, suffix = head, int(tail)
            suffix = max(suffix, self.name_suffix.get(base, 0))
            while f"{base}.{suffix}" in self.jit_names:
                suffix += 1
            self.name_suffix[base] = suffix + 1
            self.jit_names[f"{base}.{suffix}"] = old
            old.meta["jit_name"] = f"{base}.{suffix}"
        previous = node.meta.get("jit_name")
        if previous is not None and self.jit_names.get(previous) is node:
            del self.jit_names[previous]
        self.jit_names[name] = node
        node.meta["jit_name"] = name


# ---------------------------------------------------------------------------------------
# TracerWarnings for Tensor -> Python conversions
# ---------------------------------------------------------------------------------------
_CONSTANT_TAIL = (" might cause the trace to be incorrect. We can't record the data flow of Python values, "
                  "so this value will be treated as a constant in the future. This means that the trace "
                  "might not generalize to other inputs!")
_LEN = ("Using len to get tensor shape might cause the trace to be incorrect. Recommended usage would be "
        "tensor.shape[0]. Passing a tensor of different shape might lead to errors or silently give "
        "incorrect results.")
_ITER = ("Iterating over a tensor might cause the trace to be incorrect. Passing a tensor of different "
         "shape won't change the number of iterations executed (and might lead to errors or silently give "
         "incorrect results).")
_TENSOR_CONSTANT = ("torch.tensor results are registered as constants in the trace. You can safely ignore this "
                    "warning if you use this function to create tensors out of constant variables that would be "
                    "the same every time you call this function. In any other case, this might cause the trace "
                    "to be incorrect.")

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


def _warn_tensor_constant() -> None:
    """``ember.tensor(data)`` while jit.trace records: its values are baked into the trace."""
    if is_recording():
        warn_at_user_frame(_TENSOR_CONSTANT)


creation.TENSOR_CONSTANT_HOOKS.append(_warn_tensor_constant)


def _wrap(original, message, untraced):
    @functools.wraps(original)
    def converting(self, *args, **kwargs):
        if not is_recording():
            return original(self, *args, **kwargs)
        warn_at_user_frame(message)
        if untraced:
            with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
                return original(self, *args, **kwargs)
        return original(self, *args, **kwargs)
    return converting


def conversion_patches() -> list:
    """(Tensor, name, wrapper) for each conversion (jit/_trace.py's `_PATCHES` installs them)."""
    return [(Tensor, name, _wrap(Tensor.__dict__[name], message, untraced))
            for name, (message, untraced) in CONVERSIONS.items() if name in Tensor.__dict__]
