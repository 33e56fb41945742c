"""The Tracer dispatch key: record every op that runs into an ``ember.fx.Graph``.

While `ember.jit.trace` runs a program, the Tracer key is in this thread's include set, so
every op call reaches `_tracer_fallback` (the key's boxed fallback). It runs the op below the
key with the Tracer key *excluded* on this thread — ops called from inside a composite kernel or
an autograd formula are therefore not recorded a second time — and then appends one
``call_function`` node whose target is the op's `OperatorHandle`:

    x + 1   ─►  add_tensor = ember.ops.aten.add.Tensor(x, 1, alpha = 1)

Result tensors are mapped to nodes *by identity*: an in-place op returns its input, which from
then on stands for the new node; a view is a new tensor and a new node. A tensor argument that
is no traced value becomes a constant: a module parameter/buffer is a ``get_attr`` of its
qualified name, any other tensor a ``get_attr`` of ``_tensor_constant<N>`` (like PyTorch).
Python numbers, lists and other values are kept in the node's arguments as they are, so Python
control flow and Python arithmetic are specialised to what happened during the trace; the
exception are sizes of traced tensors (`record_size`, `record_int`; see _sizes.py), which are
nodes of their own.

Each node gets ``meta["val"]`` (a meta tensor with the result's shape, dtype and strides),
``meta["stack_trace"]`` (the user's frame), and, for the TorchScript-style printer,
``meta["jit_loc"]`` (file, line of the frame that called the op) and ``meta["jit_name"]``
(the Python variable that held the value when it was next used, as PyTorch's tracer names it).
"""
from __future__ import annotations

import operator
import os
import sys
import threading
import traceback
import warnings

from .._core.dispatch import (DispatchKey, register_fallback, tls, _ExcludeDispatchKeyGuard,
                              _IncludeDispatchKeyGuard)
from .._core.tensor import Tensor

TRACER_BIT = 1 << DispatchKey.Tracer
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# Frames of the dispatch machinery itself: skipped when looking for "who called the op".
_MACHINERY_DIRS = tuple(_EMBER_DIR + d + os.sep for d in ("_core", "ops", "jit"))


class TracerWarning(Warning):
    """A trace may not generalise: a tensor became a Python value, or check_trace found a
    difference. ``warnings.simplefilter("error", ember.jit.TracerWarning)`` turns it into an error."""


class _ThreadState(threading.local):
    recorder = None      # the _Recorder tracing on this thread, or None


_thread = _ThreadState()


def current_recorder():
    """The recorder tracing on this thread (None when not tracing)."""
    return _thread.recorder


# ---------------------------------------------------------------------------------------
# frames: where an op was called from
# ---------------------------------------------------------------------------------------
def _caller_frame():
    """The innermost frame outside ember's dispatcher, bindings and this package (may be
    inside ember.nn: PyTorch's tracer also reports torch/nn/functional.py there)."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(_MACHINERY_DIRS) or name.startswith("<ember")):
            return frame
        frame = frame.f_back
    return None


def _user_frame(frame):
    """The innermost frame, from `frame` outwards, that is not ember's own code."""
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(_EMBER_DIR) or name.startswith("<ember")):
            return frame
        frame = frame.f_back
    return None


def format_stack_trace(frame) -> str:
    """PyTorch's node.meta["stack_trace"] form for one frame:
    '  File "/path/x.py", line 9, in fn\\n    return a + b\\n'."""
    if frame is None:
        return ""
    summary = traceback.FrameSummary(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    return "".join(traceback.format_list([summary]))


def warn_at_user_frame(message: str, category=TracerWarning) -> None:
    """Warn pointing at the user's line (PyTorch's TracerWarnings point there too)."""
    frame = _user_frame(sys._getframe(1))
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    registry = frame.f_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           frame.f_globals.get("__name__", "<string>"), registry)


_TENSOR_CONSTANT = ("torch.tensor results are registered as constants in the trace. You can safely ignore this "
                    "warning if you use this function to create tensors out of constant variables that would be "
                    "the same every time you call this function. In any other case, this might cause the trace "
                    "to be incorrect.")


def warn_tensor_constant() -> None:
    """``ember.tensor(data)`` while tracing: its values are baked into the trace (PyTorch's warning)."""
    warn_at_user_frame(_TENSOR_CONSTANT)


# ---------------------------------------------------------------------------------------
# the recorder
# ---------------------------------------------------------------------------------------
def meta_like(t: Tensor) -> Tensor:
    """A meta tensor with `t`'s shape, strides, dtype and requires_grad."""
    from .. import empty_strided
    with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
        m = empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="meta")
    if t.requires_grad:
        m.requires_grad_(True)
    return m


class _Recorder:
    """The state of one trace: the graph, the tensor -> node map and the constants."""

    def __init__(self, attr_names: dict | None = None):
        from ..fx import Graph
        self.graph = Graph()
        self.values: dict = {}          # id(tensor) -> (tensor, node): traced values
        self.attr_names = attr_names or {}   # id(tensor) -> qualified name (module params/buffers)
        self.attrs: dict = {}           # get_attr target -> tensor (the GraphModule's root)
        self.attr_nodes: dict = {}      # id(tensor) -> get_attr node
        self.jit_names: dict = {}       # debug name -> node owning it (PyTorch's renaming rule)
        self.name_suffix: dict = {}     # debug name base -> next suffix

    # -- inputs and outputs ---------------------------------------------------------------
    def add_input(self, name: str, t: Tensor):
        node = self.graph.placeholder(name)
        node.meta["val"] = meta_like(t)
        self.set_jit_name(node, name)
        self.values[id(t)] = (t, node)
        return node

    def set_output(self, result):
        self.graph.output(self.graph_arg(result, None, output=True))

    # -- debug names ----------------------------------------------------------------------
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

    def _name_from_frame(self, node, t, frame) -> None:
        if "jit_name" in node.meta or frame is None:
            return
        for name, value in frame.f_locals.items():
            if value is t:
                if name != "self":
                    self.set_jit_name(node, name)
                return

    # -- arguments ------------------------------------------------------------------------
    def graph_arg(self, value, frame, output=False):
        """The graph form of one argument: traced tensors -> their nodes, other tensors ->
        get_attr constants, containers mapped element-wise, anything else as it is."""
        if isinstance(value, Tensor):
            entry = self.values.get(id(value))
            if entry is not None:
                self._name_from_frame(entry[1], value, frame)
                return entry[1]
            return self._constant(value)
        if isinstance(value, int) and getattr(value, "_recorder", None) is self and not output:
            # a TracedInt (see _sizes.py): the node that computes it, not the number
            self._name_from_frame(value._node, value, frame)
            return value._node
        if isinstance(value, (list, tuple)) and not isinstance(value, str):
            mapped = [self.graph_arg(v, frame, output) for v in value]
            if isinstance(value, tuple) and hasattr(value, "_fields") and not output:
                return type(value)(*mapped)
            return type(value)(mapped) if isinstance(value, list) else tuple(mapped)
        if isinstance(value, dict):
            return {k: self.graph_arg(v, frame, output) for k, v in value.items()}
        if output and value is not None:
            raise RuntimeError("Only tensors, lists, tuples of tensors, or dictionary of tensors can be "
                               "output from traced functions")
        return value

    def _constant(self, t: Tensor):
        node = self.attr_nodes.get(id(t))
        if node is not None:
            return node
        name = self.attr_names.get(id(t))
        if name is None:
            name = f"_tensor_constant{sum(1 for k in self.attrs if k.startswith('_tensor_constant'))}"
            with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
                self.attrs[name] = t.detach()   # shares t's data: in-place changes show, as in PyTorch
        else:
            self.attrs[name] = t
        node = self.graph.get_attr(name)
        node.meta["val"] = meta_like(t)
        node.meta["jit_constant"] = self.attrs[name]
        self.attr_nodes[id(t)] = node
        return node

    # -- results --------------------------------------------------------------------------
    def bind_result(self, node, result) -> None:
        """Map the op's result tensors to `node` (or, for several results, to getitem nodes)."""
        if isinstance(result, Tensor):
            node.meta["val"] = meta_like(result)
            self.values[id(result)] = (result, node)
        elif isinstance(result, (tuple, list)) and all(isinstance(r, Tensor) for r in result):
            node.meta["val"] = type(result)(meta_like(r) for r in result) if not hasattr(result, "_fields") \
                else tuple(meta_like(r) for r in result)
            for i, r in enumerate(result):
                item = self.graph.call_function(operator.getitem, (node, i))
                item.meta["val"] = node.meta["val"][i]
                item.meta["stack_trace"] = node.meta.get("stack_trace", "")
                self.values[id(r)] = (r, item)
        else:
            node.meta["val"] = result

    # -- traced sizes (see _sizes.py) ---------------------------------------------------------
    def _locate(self, node, frame) -> None:
        node.meta["stack_trace"] = format_stack_trace(_user_frame(frame))
        if frame is not None:
            node.meta["jit_loc"] = (frame.f_code.co_filename, frame.f_lineno)

    def record_size(self, t: Tensor, dim: int, value: int, frame):
        """``t.size(dim)`` as a ``call_method size`` node and a TracedInt holding it (a plain
        int when `t` is no traced value: sizes of constants are constants)."""
        from ._sizes import TracedInt
        entry = self.values.get(id(t))
        if entry is None:
            return value
        self._name_from_frame(entry[1], t, frame)
        node = self.graph.call_method("size", (entry[1], dim))
        node.meta["val"] = value
        self._locate(node, frame)
        return TracedInt(value, node, self)

    def record_numel(self, t: Tensor, value: int, frame):
        """``t.numel()`` as a ``call_method numel`` node (PyTorch's ``aten::numel``) and its
        TracedInt (a plain int when `t` is no traced value)."""
        from ._sizes import TracedInt
        entry = self.values.get(id(t))
        if entry is None:
            return value
        self._name_from_frame(entry[1], t, frame)
        node = self.graph.call_method("numel", (entry[1],))
        node.meta["val"] = value
        self._locate(node, frame)
        return TracedInt(value, node, self)

    def record_int(self, op, operands: tuple, value: int, frame):
        """``op(*operands)`` on traced ints (an ``operator`` call node) and its TracedInt."""
        from ._sizes import TracedInt
        args = []
        for v in operands:
            if isinstance(v, TracedInt) and v._recorder is self:
                self._name_from_frame(v._node, v, frame)
                args.append(v._node)
            else:
                args.append(int.__int__(v))
        node = self.graph.call_function(op, tuple(args))
        node.meta["val"] = value
        self._locate(node, frame)
        return TracedInt(value, node, self)

    def record(self, op, args, result, frame) -> None:
        """Append the node for one op call (its arguments split as the op's binding takes them:
        positional ones in args, keyword-only ones in kwargs)."""
        node_args, node_kwargs = [], {}
        for arg, value in zip(op.schema.arguments, args):
            mapped = self.graph_arg(value, frame)
            if arg.kwarg_only:
                node_kwargs[arg.name] = mapped
            else:
                node_args.append(mapped)
        node = self.graph.call_function(op, tuple(node_args), node_kwargs)
        self._locate(node, frame)
        self.bind_result(node, result)


def _tracer_fallback(op, keys, *args):
    """The Tracer key's boxed kernel: run the op below the key, untraced, then record it."""
    recorder = _thread.recorder
    if recorder is None:
        return op.redispatch(keys, *args)
    with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
        result = op.redispatch(keys, *args)
        # recorded untraced too: reading a shape while recording must not record a size
        recorder.record(op, args, result, _caller_frame())
    return result


register_fallback(DispatchKey.Tracer, _tracer_fallback)


class recording:
    """Context manager: trace this thread's ops into `recorder` (Tracer key included, the
    Tensor -> Python conversions warned about)."""

    def __init__(self, recorder: _Recorder):
        self.recorder = recorder

    def __enter__(self):
        if _thread.recorder is not None:
            raise RuntimeError("ember.jit.trace: cannot trace while another trace is running on this thread")
        _thread.recorder = self.recorder
        self._include = _IncludeDispatchKeyGuard(DispatchKey.Tracer)
        self._include.__enter__()
        from . import _conversions, _sizes
        _conversions.install()
        _sizes.install()
        return self.recorder

    def __exit__(self, *exc):
        from . import _conversions, _sizes
        _conversions.uninstall()
        _sizes.uninstall()
        self._include.__exit__(*exc)
        _thread.recorder = None
        return False


def is_recording() -> bool:
    """True when a trace records on this thread and we are in user code (not inside an op)."""
    return _thread.recorder is not None and not tls.exclude & TRACER_BIT
