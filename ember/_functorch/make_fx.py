"""make_fx: run a program once and record the dispatcher-level ops it ran into an fx GraphModule.

    gm = make_fx(fn)(x, y)            # x, y: real tensors, or meta tensors (then no data is computed)
    print(gm.code)                    # add = ember.ops.aten.add.Tensor(x_1, y_1) ...
    gm(x2, y2)                        # replays the recorded ops on new inputs
    node.meta["val"]                  # every node: a meta tensor (shape, dtype, strides, requires_grad)

PyTorch's ``torch.fx.experimental.proxy_tensor.make_fx`` on ember's Tracer dispatch key. While a
`Tracer` records, the Tracer key is in this thread's include set, so every op call (factory
functions included) reaches `_tracer_fallback`, the key's boxed fallback. It runs the op below the
key with the Tracer key *excluded*, so ops called from inside a kernel or an autograd formula are
not recorded a second time, and appends one ``call_function`` node whose target is the op's
`OperatorHandle`:

    x + 1   ─►  add = ember.ops.aten.add.Tensor(x_1, 1)

Two exceptions run an op's decomposition *with* the key on, so that its parts are recorded
instead: an op in ``decomposition_table`` (``{ember.ops.aten.op.overload: fn}``, as in PyTorch),
and, for make_fx (not for jit.trace, which records what the program called), an op whose row is
a composite (CompositeImplicitAutograd in PyTorch: ``linear`` becomes ``t`` + ``addmm``).

Tensors are mapped to nodes *by identity*: an in-place op returns its input, which from then on
stands for the new node; a view is a new tensor and a new node. A tensor argument that is no
traced value is a constant: a ``get_attr`` of ``_param_constant<N>`` (a Parameter) or
``_tensor_constant<N>`` (anything else), held by the GraphModule (jit.trace names module
parameters by their qualified names instead). Python numbers, lists and control flow are
specialised to what happened in this run. Arguments equal to their schema default are left out
of the node, as PyTorch's dispatcher leaves them out (jit.trace keeps them: TorchScript prints them).

`ember.jit.trace` is this tracer plus TorchScript naming, traced sizes and TracerWarnings
(ember/jit/_trace.py, _tracing.py, _sizes.py): the hooks are `Tracer.on_use`, `locate` and
`constant_prefix`.
"""
from __future__ import annotations

import contextlib
import inspect
import operator
import os
import sys
import threading
import traceback
import types

from .._core.dispatch import (DispatchKey, register_fallback, tls, _ExcludeDispatchKeyGuard,
                              _IncludeDispatchKeyGuard)
from .._core.schema import NO_DEFAULT
from .._core.tensor import Tensor
from .._core.tensor_spec import meta_like

TRACER_BIT = 1 << DispatchKey.Tracer
EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# The dispatcher, the bindings and the frontends: skipped when looking for "who called the op".
MACHINERY_DIRS = tuple(EMBER_DIR + d + os.sep for d in ("_core", "ops", "jit", "_functorch"))


class _ThreadState(threading.local):
    tracer = None      # the Tracer recording on this thread, or None


_thread = _ThreadState()


def current_tracer():
    """The tracer recording on this thread (None when none is)."""
    return _thread.tracer


def is_tracing() -> bool:
    """True when a tracer records on this thread and the call is user-level (not inside an op)."""
    return _thread.tracer is not None and not tls.exclude & TRACER_BIT


# ---------------------------------------------------------------------------------------
# frames: where an op was called from
# ---------------------------------------------------------------------------------------
def _first_frame_outside(frame, dirs: tuple):
    while frame is not None:
        name = frame.f_code.co_filename
        if not (name.startswith(dirs) or name.startswith("<ember")):   # <ember...>: generated code
            return frame
        frame = frame.f_back
    return None


def caller_frame(depth: int = 1):
    """The innermost frame outside ember's dispatcher, bindings and frontends (it may be in
    ember.nn: PyTorch also reports torch/nn/functional.py there)."""
    return _first_frame_outside(sys._getframe(depth), MACHINERY_DIRS)


def user_frame(frame):
    """The innermost frame, from `frame` outwards, that is not ember's own code."""
    return _first_frame_outside(frame, (EMBER_DIR,))


def format_stack_trace(frame) -> str:
    """PyTorch's node.meta["stack_trace"] form for one frame:
    '  File "/path/x.py", line 9, in fn\\n    return a + b\\n'."""
    if frame is None:
        return ""
    summary = traceback.FrameSummary(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    return "".join(traceback.format_list([summary]))


def val_of(value):
    """``node.meta["val"]`` of a value: tensors as meta tensors (inside tuples/lists too), the rest as is."""
    if isinstance(value, Tensor):
        return meta_like(value)
    if isinstance(value, (tuple, list)) and any(isinstance(v, Tensor) for v in value):
        vals = [val_of(v) for v in value]
        return vals if isinstance(value, list) else tuple(vals)
    return value


def _is_default(value, arg) -> bool:
    default = arg.default
    if default is NO_DEFAULT:
        return False
    if value is default:
        return True
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return list(value) == list(default) and all(type(a) is type(b) for a, b in zip(value, default))
    return type(value) is type(default) and value == default


# ---------------------------------------------------------------------------------------
# the tracer
# ---------------------------------------------------------------------------------------
class Tracer:
    """The state of one trace: the graph, the tensor -> node map and the constants.

    `decompositions`: {OperatorHandle: fn} run instead of recording the op; `decompose_composites`:
    composite ops are recorded as their parts; `keep_defaults`: arguments equal to their schema
    default stay in the node (jit.trace); `attr_names`: {id(tensor): qualified name} for constants."""

    def __init__(self, *, decompositions=None, decompose_composites: bool = True, keep_defaults: bool = False,
                 attr_names: dict | None = None):
        from ..fx import Graph
        self.graph = Graph()
        self.values: dict = {}          # id(value) -> (value, node): traced tensors (and jit's traced ints)
        # id(tensor._data) -> (tensor, node): another Tensor object over the very same array and
        # metadata is the same value (the alias autograd saves an op's output as, `detach`)
        self.by_data: dict = {}
        self.attr_names = attr_names or {}
        self.attrs: dict = {}           # get_attr target -> tensor (the GraphModule's root)
        self.attr_nodes: dict = {}      # id(tensor) -> (tensor, its get_attr node)
        self.decompositions = dict(decompositions or {})
        self.decompose_composites = decompose_composites
        self.keep_defaults = keep_defaults

    # -- hooks (jit.trace overrides them) -----------------------------------------------------
    def on_use(self, node, value, frame) -> None:
        """`value` (traced by `node`) is passed to an op called from `frame`."""

    def locate(self, node, frame) -> None:
        """Record where `node`'s op was called (PyTorch's meta["stack_trace"])."""
        node.meta["stack_trace"] = format_stack_trace(user_frame(frame))

    def constant_prefix(self, t) -> str:
        """The name stem of a tensor constant's get_attr (PyTorch's make_fx: by Parameter-ness)."""
        from ..nn.parameter import Parameter
        return "_param_constant" if isinstance(t, Parameter) else "_tensor_constant"

    # -- inputs and outputs ---------------------------------------------------------------
    def add_input(self, name: str, value):
        node = self.graph.placeholder(name)
        node.meta["val"] = val_of(value)
        if isinstance(value, Tensor):
            self._bind(value, node)
        return node

    def set_output(self, result):
        self.graph.output(self.graph_arg(result, None, output=True))

    def graph_module(self):
        from ..fx import GraphModule
        self.graph.lint()
        return GraphModule(dict(self.attrs), self.graph)

    # -- arguments ------------------------------------------------------------------------
    def graph_arg(self, value, frame, output=False):
        """The graph form of one argument: traced values -> their nodes, other tensors ->
        get_attr constants, containers mapped element-wise, anything else as it is."""
        entry = self.values.get(id(value))
        if entry is not None and entry[0] is value and (isinstance(value, Tensor) or not output):
            self.on_use(entry[1], value, frame)
            return entry[1]
        if isinstance(value, Tensor):
            entry = self.by_data.get(id(value._data))
            if entry is not None and _same_tensor(entry[0], value):
                self.on_use(entry[1], value, frame)
                return entry[1]
            return self._constant(value)
        if isinstance(value, (list, tuple)) and not isinstance(value, str):
            mapped = [self.graph_arg(v, frame, output) for v in value]
            if isinstance(value, tuple) and hasattr(value, "_fields") and not output:
                return type(value)(*mapped)
            return type(value)(mapped) if isinstance(value, list) else tuple(mapped)
        if isinstance(value, dict):
            return {k: self.graph_arg(v, frame, output) for k, v in value.items()}
        return value

    def _constant(self, t: Tensor):
        entry = self.attr_nodes.get(id(t))
        if entry is not None and entry[0] is t:     # (t is held: a freed constant's id is reused)
            return entry[1]
        name = self.attr_names.get(id(t))
        if name is None:
            prefix = self.constant_prefix(t)
            name = f"{prefix}{sum(1 for k in self.attrs if k.startswith(prefix))}"
            if prefix == "_param_constant":
                self.attrs[name] = t
            else:
                # shares t's data: in-place changes show, as in PyTorch. Tracing with fake tensors, a
                # real constant stays real, and a fake made from one (ember.tensor) is that real one.
                real = getattr(t, "constant", None)
                with _ExcludeDispatchKeyGuard((DispatchKey.Tracer, DispatchKey.Fake)):
                    self.attrs[name] = (t if real is None else real).detach()
        else:
            self.attrs[name] = t
        node = self.graph.get_attr(name)
        node.meta["val"] = meta_like(t)
        self.attr_nodes[id(t)] = (t, node)
        return node

    # -- results --------------------------------------------------------------------------
    def bind_result(self, node, result) -> None:
        """Map the op's result tensors to `node` (or, for several results, to getitem nodes)."""
        node.meta["val"] = val_of(result)
        if isinstance(result, Tensor):
            self._bind(result, node)
        elif isinstance(result, (tuple, list)) and result and all(isinstance(r, Tensor) for r in result):
            for i, r in enumerate(result):
                item = self.graph.call_function(operator.getitem, (node, i))
                item.meta["val"] = node.meta["val"][i]
                item.meta["stack_trace"] = node.meta.get("stack_trace", "")
                self._bind(r, item)

    def _bind(self, t, node) -> None:
        self.values[id(t)] = (t, node)
        self.by_data[id(t._data)] = (t, node)

    def record(self, op, args, result, frame) -> None:
        """Append the node for one op call (its arguments split as the op's binding takes them:
        positional ones in args, keyword-only ones in kwargs)."""
        node_args, node_kwargs = [], {}
        schema_args = op.schema.arguments
        for arg, value in zip(schema_args, args):
            if not self.keep_defaults and arg.kwarg_only and _is_default(value, arg):
                continue
            mapped = self.graph_arg(value, frame)
            if arg.kwarg_only:
                node_kwargs[arg.name] = mapped
            else:
                node_args.append(mapped)
        if not self.keep_defaults:
            while node_args and _is_default(args[len(node_args) - 1], schema_args[len(node_args) - 1]):
                node_args.pop()
        # named after the op, not the overload (``add``, not ``add_tensor``), as PyTorch's make_fx names it
        name = op.name.split("::", 1)[1].split(".", 1)[0]
        node = self.graph.create_node("call_function", op, tuple(node_args), node_kwargs, name=name)
        self.locate(node, frame)
        self.bind_result(node, result)

    def decomposition_of(self, op):
        """The function to run instead of recording `op` (None: record it)."""
        fn = self.decompositions.get(op)
        if fn is not None:
            return _keyword_call(op, fn)
        return op.composite if self.decompose_composites else None


def _same_tensor(a, b) -> bool:
    """`b` is another Tensor object for `a`'s value: the same array object, shape, strides, dtype."""
    return a._data is b._data and a.shape == b.shape and a.stride() == b.stride() and a.dtype == b.dtype


def _keyword_call(op, fn):
    """`fn` called as PyTorch calls a decomposition: positional arguments, keyword-only ones by name."""
    def call(*args):
        positional = [a for a, arg in zip(args, op.schema.arguments) if not arg.kwarg_only]
        kwargs = {arg.name: a for a, arg in zip(args, op.schema.arguments) if arg.kwarg_only}
        return fn(*positional, **kwargs)
    return call


def _tracer_fallback(op, keys, *args):
    """The Tracer key's boxed kernel: decompose the op, or run it below the key and record it."""
    tracer = _thread.tracer
    if tracer is None:
        return op.redispatch(keys, *args)
    decomposition = tracer.decomposition_of(op)
    if decomposition is not None:
        result = decomposition(*args)   # the Tracer key stays on: its ops are recorded
        if result is not NotImplemented:    # NotImplemented: record the op itself (PyTorch's convention)
            return result
    with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
        result = op.redispatch(keys, *args)
        # recorded untraced too: reading a shape while recording must not record anything
        tracer.record(op, args, result, caller_frame())
    return result


register_fallback(DispatchKey.Tracer, _tracer_fallback)


class tracing:
    """Context manager: record this thread's ops into `tracer` (the Tracer key included)."""

    def __init__(self, tracer: Tracer):
        self.tracer = tracer

    def __enter__(self):
        if _thread.tracer is not None:
            raise RuntimeError("cannot trace while another trace (make_fx or ember.jit.trace) is running on "
                               "this thread")
        _thread.tracer = self.tracer
        self._include = _IncludeDispatchKeyGuard(DispatchKey.Tracer)
        self._include.__enter__()
        return self.tracer

    def __exit__(self, *exc):
        self._include.__exit__(*exc)
        _thread.tracer = None
        return False


class SharedPatches:
    """Class attributes a kind of trace replaces while it runs (`make()` gives the (owner, name,
    replacement) triples): installed by the first trace entering `installed()` and restored by the
    last to leave, so traces on other threads may overlap and eager code never pays for them.
    jit.trace's conversion warnings and traced sizes, and AOT autograd's data-dependence refusals
    are two of these.

        with SharedPatches(lambda: [(Tensor, "item", checked_item)]).installed(): ...
    """

    def __init__(self, make):
        self.make, self.lock, self.users, self.originals = make, threading.Lock(), 0, []

    @contextlib.contextmanager
    def installed(self):
        with self.lock:
            self.users += 1
            if self.users == 1:
                for owner, name, replacement in self.make():
                    self.originals.append((owner, name, owner.__dict__[name]))
                    setattr(owner, name, replacement)
        try:
            yield
        finally:
            with self.lock:
                self.users -= 1
                if self.users == 0:
                    for owner, name, original in reversed(self.originals):
                        setattr(owner, name, original)
                    self.originals.clear()


# ---------------------------------------------------------------------------------------
# make_fx
# ---------------------------------------------------------------------------------------
def _placeholder_names(f, count: int) -> list:
    """PyTorch's names: a function's parameter names + ``_1``; ``arg<i>_1`` for *args and modules."""
    names = []
    if isinstance(f, (types.FunctionType, types.MethodType)):
        params = inspect.signature(f).parameters.values()
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return [f"{names[i]}_1" if i < len(names) else f"arg{i}_1" for i in range(count)]


def make_fx(f, decomposition_table=None, tracing_mode: str = "real", _allow_non_fake_inputs: bool = False):
    """``make_fx(f)(*args)``: the GraphModule of the ops ``f(*args)`` ran (see the module docstring).

        gm = make_fx(lambda x: x.relu() * 2)(ember.randn(3))
        gm = make_fx(f, {ember.ops.aten.relu.default: lambda x: ember.where(x > 0, x, 0.0)})(x)

    ``tracing_mode="fake"`` traces on fake tensors (ember/_functorch/fake_tensor.py) made from the
    inputs: nothing is computed, devices are kept; tensors the function reaches other than its
    inputs (a module's parameters) need ``_allow_non_fake_inputs=True``, as in PyTorch, and become
    constants of the graph. "symbolic" needs symbolic shapes, which ember does not have."""
    if tracing_mode not in ("real", "fake"):
        raise NotImplementedError(f"make_fx: tracing_mode={tracing_mode!r} is not supported (ember has no symbolic "
                                  f"shapes); use 'real' or 'fake'")
    if not callable(f):
        raise TypeError(f"make_fx: expected a callable, got {type(f).__name__}")

    def wrapped(*args):
        for i, a in enumerate(args):
            if isinstance(a, (list, tuple, dict)) and _holds_tensor(a):
                raise NotImplementedError(f"make_fx: argument {i} is a {type(a).__name__} holding tensors; "
                                          f"pass the tensors as separate arguments")
        fake_mode = _fake_mode_for(args, _allow_non_fake_inputs) if tracing_mode == "fake" else None
        if fake_mode is not None:
            args = tuple(fake_mode.from_tensor(a) if isinstance(a, Tensor) else a for a in args)
        tracer = Tracer(decompositions=decomposition_table)
        for name, a in zip(_placeholder_names(f, len(args)), args):
            tracer.add_input(name, a)
        with fake_mode if fake_mode is not None else _no_mode(), tracing(tracer):
            result = f(*args)
        tracer.set_output(result)
        return tracer.graph_module()
    return wrapped


def _fake_mode_for(args, allow_non_fake_inputs):
    """The mode of fake inputs, or a new one for real inputs."""
    from .fake_tensor import FakeTensor, FakeTensorMode
    for a in args:
        if isinstance(a, FakeTensor):
            return a.fake_mode
    return FakeTensorMode(allow_non_fake_inputs=allow_non_fake_inputs)


class _no_mode:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _holds_tensor(value) -> bool:
    if isinstance(value, Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return False
