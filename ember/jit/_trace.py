"""ember.jit.trace: run a program once, record the ops it ran, replay them as a graph.

    def f(a, b):
        c = a + b
        return c * c
    traced = ember.jit.trace(f, (ember.randn(4), ember.randn(4)))
    print(traced.graph)      # TorchScript-style, like torch.jit.trace(f, ...).graph
    print(traced.code)       # the Python that runs the graph (an ember.fx GraphModule)
    traced(x, y)             # replays the recorded ops on new inputs

Seed 001 "Pytorch Jit trace": the example inputs become the graph's inputs, every op that runs
is recorded (ember._functorch.make_fx's tracer on the Tracer dispatch key, with the TorchScript
naming of _tracing.py), and so are sizes read from traced tensors (``x.size(0)``,
``x.shape[1] * 2``: see _sizes.py); anything else (Python numbers, control flow) is frozen to
what happened in this run. Converting a tensor to a Python value warns (TracerWarning). ``check_trace`` traces again (with copies of the example inputs, and
with every ``check_inputs`` entry) and compares: a different graph raises TracingCheckError,
different values warn.
"""
from __future__ import annotations

import difflib
import inspect
import warnings

from .._core.dispatch import DispatchKey, _ExcludeDispatchKeyGuard
from .._core.tensor import Tensor
from ..nn.modules.module import Module
from .._functorch.make_fx import SharedPatches, tracing
from .ir.printer import ScriptGraph, drop_dead_int_nodes, format_graph, node_lines
from . import _script, _sizes
from ._tracing import TorchScriptTracer, TracerWarning, conversion_patches


class TracingCheckError(Exception):
    """check_trace found that tracing again gives a different graph."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n" + _indent(graph_diff_error) + "\n"
        if tensor_compare_error is not None:
            self.message += ("ERROR: Tensor-valued Constant nodes differed in value across invocations. This "
                             "often indicates that the tracer has encountered untraceable code.\n"
                             + _indent(tensor_compare_error) + "\n")
        super().__init__(self.message)


def _indent(text: str) -> str:
    return "\n".join("\t" + line for line in text.splitlines())


# ---------------------------------------------------------------------------------------
# the traced objects
# ---------------------------------------------------------------------------------------
def _traced_graph(traced) -> ScriptGraph:
    """``.graph`` of a traced function or module: the recorded graph, printed as jit.trace's."""
    return ScriptGraph(traced.graph_module.graph, traced=True, self_type=traced.__dict__.get("_self_type"))


class ScriptFunction(_script.ScriptFunction):
    """A traced function: ``.graph`` (TorchScript-style text), ``.code`` (Python), callable.

    It is an ``ember.jit.ScriptFunction`` as in torch, but runs its recorded GraphModule (no
    control flow, no executor), so it overrides everything that reads a script graph."""

    def __init__(self, name: str, graph_module):
        self.name = self.__name__ = self.__qualname__ = name
        self.graph_module = graph_module

    graph = inlined_graph = property(_traced_graph)
    code = property(lambda self: self.graph_module.code)

    def __call__(self, *args):
        return self.graph_module(*args)

    def __repr__(self):
        return f"<ember.jit.ScriptFunction {self.name}>"


class TopLevelTracedModule(Module):
    """A traced nn.Module: same parameters, buffers and submodules as the original (shared,
    so ``state_dict()`` has the same keys and values); ``forward`` replays the graph."""

    def __init__(self, original: Module, graph_module):
        super().__init__()
        for name, child in original._modules.items():
            self.add_module(name, child)
        for name, param in original._parameters.items():
            self.register_parameter(name, param)
        for name, buf in original._buffers.items():
            self.register_buffer(name, buf, persistent=name not in original._non_persistent_buffers_set)
        self.training = original.training
        # not a submodule: it holds the same tensors under flattened names
        self.__dict__["graph_module"] = graph_module
        self.__dict__["original_name"] = type(original).__name__
        self.__dict__["_self_type"] = f"__torch__.{type(original).__module__}.{type(original).__name__}"

    graph = inlined_graph = ScriptFunction.graph
    code = ScriptFunction.code

    def forward(self, *args):
        return self.graph_module(*args)


# ---------------------------------------------------------------------------------------
# tracing
# ---------------------------------------------------------------------------------------
def _as_tuple(example_inputs) -> tuple:
    if isinstance(example_inputs, Tensor):
        return (example_inputs,)
    if isinstance(example_inputs, (tuple, list)):
        inputs = tuple(example_inputs)
        for i, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise NotImplementedError(f"ember.jit.trace: example_inputs[{i}] is a {type(t).__name__}; "
                                          f"only Tensor inputs are supported")
        return inputs
    raise TypeError(f"ember.jit.trace: example_inputs must be a Tensor or a tuple of Tensors, "
                    f"got {type(example_inputs).__name__}")


def _input_names(fn, count: int, skip_self: bool) -> list:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if skip_self and names[:1] == ["self"]:
        names = names[1:]
    names = names[:count]
    while len(names) < count:
        names.append(f"input_{len(names)}")
    return names


def _check_output(result, strict: bool, top: bool = True) -> None:
    """A trace returns tensors, in lists, tuples and dicts (not None); in strict mode PyTorch rejects
    a dict at the top (a list is accepted)."""
    if top and result is None:
        raise RuntimeError("The traced function didn't return any values! Side-effects are not captured in "
                           "traces, so it would be a no-op.")
    if strict and isinstance(result, dict):
        raise RuntimeError(
            "Encountering a dict at the output of the tracer might cause the trace to be incorrect, this is only "
            "valid if the container structure does not change based on the module's inputs. Consider using a constant "
            "container instead (e.g. for `list`, use a `tuple` instead. for `dict`, use a `NamedTuple` instead). If "
            "you absolutely need this and know the side effects, pass strict=False to trace() to allow this behavior.")
    if isinstance(result, (list, tuple, dict)):
        for value in result.values() if isinstance(result, dict) else result:
            _check_output(value, False, top=False)
    elif not isinstance(result, Tensor):
        raise RuntimeError("Only tensors, lists, tuples of tensors, or dictionary of tensors can be "
                           "output from traced functions")


def _record(fn, module, inputs: tuple, strict: bool) -> TorchScriptTracer:
    """Run fn(*inputs) once with the Tracer key on; the tracer holds the graph."""
    attr_names = {}
    if module is not None:
        for name, t in list(module.named_parameters()) + list(module.named_buffers()):
            attr_names.setdefault(id(t), name)
    recorder = TorchScriptTracer(attr_names)
    names = _input_names(module.forward if module is not None else fn, len(inputs), module is not None)
    inputs = _distinct_inputs(inputs)
    for name, t in zip(names, inputs):
        recorder.add_input(name, t)
    with tracing(recorder), _PATCHES.installed():
        result = fn(*inputs)
    _check_output(result, strict)
    recorder.set_output(result)
    drop_dead_int_nodes(recorder.graph)
    recorder.graph.lint()
    return recorder


# the Tensor methods jit.trace wraps while a trace runs: conversions that warn and sizes that are
# recorded (see _tracing.py and _sizes.py)
_PATCHES = SharedPatches(lambda: conversion_patches() + _sizes.patches())


def _distinct_inputs(inputs: tuple) -> tuple:
    """The example inputs with each repeated tensor (``trace(f, (x, x))``) replaced by a view of
    it, as PyTorch's tracer does: every parameter of the graph needs a tensor of its own, or the
    ops on the second would be recorded as ops on the first (``a * b`` as ``b * b``)."""
    seen, out = set(), []
    for t in inputs:
        if id(t) in seen:
            with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
                t = t.view(t.shape)
        seen.add(id(t))
        out.append(t)
    return tuple(out)


def _clone_inputs(inputs: tuple) -> tuple:
    with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
        out = []
        for t in inputs:
            c = t.detach().clone()
            if t.requires_grad:
                c.requires_grad_(True)
            out.append(c)
        return tuple(out)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """Trace a function or an nn.Module (its ``forward``) on example inputs.

    Returns a `ScriptFunction` (for a function) or a `TopLevelTracedModule` (for a module),
    with ``.graph``, ``.code`` and a call that replays the recorded ops.

        traced = ember.jit.trace(ember.nn.Linear(3, 4), ember.randn(2, 3))
        print(traced.graph)
    """
    if example_kwarg_inputs is not None:
        raise NotImplementedError("ember.jit.trace: example_kwarg_inputs is not supported; pass example_inputs")
    if example_inputs is None:
        raise RuntimeError("ember.jit.trace: example_inputs must be given")
    inputs = _as_tuple(example_inputs)
    module = func if isinstance(func, Module) else None
    if module is None and not callable(func):
        raise TypeError(f"ember.jit.trace: expected a function or an nn.Module, got {type(func).__name__}")
    recorder = _record(func, module, inputs, strict)
    gm = recorder.graph_module()
    if module is not None:
        traced = TopLevelTracedModule(module, gm)
    else:
        traced = ScriptFunction(getattr(func, "__name__", "traced_fn"), gm)
    if check_trace:
        check_list = [inputs] if check_inputs is None else [_as_tuple(c) for c in check_inputs]
        _check_trace(func, module, traced, recorder, check_list, check_tolerance, strict)
    return traced


def trace_module(mod, inputs, **kwargs):
    """``trace_module(mod, {"forward": example_inputs})``: only ``forward`` is supported."""
    if set(inputs) != {"forward"}:
        raise NotImplementedError("ember.jit.trace_module: only the 'forward' method can be traced")
    return trace(mod, inputs["forward"], **kwargs)


# ---------------------------------------------------------------------------------------
# the script form of a trace (scripting a traced submodule, jit.save)
# ---------------------------------------------------------------------------------------
def script_form(gm, module=None, self_type=None, name: str = "forward") -> tuple:
    """A traced program's graph in the script IR's form: (graph, Signature), what scripting a traced
    submodule compiles and what jit.save stores. Values are typed from ``meta["val"]`` (a tensor is
    ``Tensor``, a traced size or other value ``Any``), their names and locations kept; a returned
    tuple or list is a prim::TupleConstruct / ListConstruct. With `module` (a traced module) a
    ``self`` input of `self_type` comes first and ``get_attr "a.b"`` is a prim::GetAttr chain on it;
    a get_attr of no member (a tensor constant of the trace) is a prim::Constant."""
    from ..fx.node import Node, map_arg
    from .ir import call, new_graph, prim
    from .ir.types import AnyType, Argument, ListType, Signature, TensorType, TupleType
    graph, env, chains, args = new_graph(), {}, {}, []
    if module is not None:
        chains[()] = graph.placeholder("self", type_expr=self_type)
        args.append(Argument("self", self_type))
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            new = graph.placeholder(node.target, type_expr=_type_of_val(node.meta.get("val")))
            args.append(Argument(node.target, new.type))
        elif node.op == "get_attr":
            new = _member(graph, gm, module, tuple(node.target.split(".")), chains)
        elif node.op in ("call_function", "call_method"):
            new = call(graph, node.target, map_arg(node.args, env.__getitem__), map_arg(node.kwargs, env.__getitem__),
                       type_=_type_of_val(node.meta.get("val")))
        elif node.op == "output":
            result = map_arg(node.args[0], env.__getitem__)
            if isinstance(result, (tuple, list)) and all(isinstance(r, Node) for r in result):
                types = tuple(r.type for r in result)
                result = call(graph, prim.TupleConstruct, tuple(result), type_=TupleType(types)) \
                    if isinstance(result, tuple) else \
                    call(graph, prim.ListConstruct, tuple(result), type_=ListType(types[0] if types else TensorType()))
            graph.output(result)
            return graph, Signature(name, tuple(args), result.type if isinstance(result, Node) else AnyType())
        else:
            raise RuntimeError(f"a traced graph has a {node.op} node ({node.name})")
        new.meta.update({k: v for k, v in node.meta.items() if k in ("jit_name", "jit_loc")})
        env[node] = new
    raise RuntimeError("a traced graph has no output")


def _member(graph, gm, module, path: tuple, chains: dict):
    """``get_attr`` of `path`: a GetAttr chain from self (each prefix emitted once, where first
    read), or the trace's tensor constant when the module has no such member."""
    from .frontend.modules import qualified_name_of
    from .ir import call, constant, prim
    from .ir.types import ModuleType, TensorType
    owner = module
    for part in path:
        owner = getattr(owner, part, None)
    if owner is None:
        value = gm
        for part in path:
            value = getattr(value, part)
        return constant(graph, value, TensorType())
    value = module
    for k, part in enumerate(path, 1):
        value = getattr(value, part)
        if path[:k] not in chains:
            typ = ModuleType(qualified_name_of(type(value))) if isinstance(value, Module) else TensorType()
            chains[path[:k]] = call(graph, prim.GetAttr, (chains[path[:k - 1]], part), type_=typ)
    return chains[path]


def _type_of_val(val):
    from .ir.types import AnyType, ListType, TensorType, TupleType
    if isinstance(val, Tensor):
        return TensorType()
    if isinstance(val, tuple):
        return TupleType(tuple(_type_of_val(v) for v in val))
    if isinstance(val, list):
        return ListType(_type_of_val(val[0]) if val else TensorType())
    return AnyType()


# ---------------------------------------------------------------------------------------
# check_trace
# ---------------------------------------------------------------------------------------
def _flat_tensors(value) -> list:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flat_tensors(v)]
    return []


def _mismatch_message(actual, expected, tol: float) -> str | None:
    """None when close; else PyTorch's assert_close text ("Tensor-likes are not close!" ...)."""
    import numpy as np
    if tuple(actual.shape) != tuple(expected.shape):
        return f"The values for attribute 'shape' do not match: {actual.shape} != {expected.shape}."
    a = np.asarray(actual.detach().numpy(), dtype=np.float64)
    e = np.asarray(expected.detach().numpy(), dtype=np.float64)
    diff = np.abs(a - e)
    bad = ~(diff <= tol + tol * np.abs(e)) & ~(np.isnan(a) & np.isnan(e))
    if not bad.any():
        return None
    rel = np.where(e != 0, diff / np.where(e != 0, np.abs(e), 1), np.inf)
    ia = np.unravel_index(int(np.nanargmax(np.where(np.isnan(diff), -1, diff))), a.shape) if a.ndim else ()
    ir = np.unravel_index(int(np.nanargmax(np.where(np.isnan(rel), -1, rel))), a.shape) if a.ndim else ()
    n, total = int(bad.sum()), a.size
    return ("Tensor-likes are not close!\n\n"
            f"Mismatched elements: {n} / {total} ({100.0 * n / total:.1f}%)\n"
            f"Greatest absolute difference: {float(diff[ia])} at index {tuple(int(i) for i in ia)} "
            f"(up to {tol} allowed)\n"
            f"Greatest relative difference: {float(rel[ir])} at index {tuple(int(i) for i in ir)} "
            f"(up to {tol} allowed)")


def _check_trace(func, module, traced, recorder, check_list, tolerance, strict) -> None:
    from .. import no_grad
    expected_text = format_graph(recorder.graph, traced=True, with_shapes=False, with_locations=False)
    for inputs in check_list:
        again = _record(func, module, _clone_inputs(inputs), strict)
        check_text = format_graph(again.graph, traced=True, with_shapes=False, with_locations=False)
        if check_text != expected_text:
            diff = "".join(difflib.ndiff(expected_text.splitlines(True), check_text.splitlines(True)))
            raise TracingCheckError("Graph diff:\n" + _indent(diff) + "\n", None)
        with no_grad():
            traced_outs = _flat_tensors(traced(*_clone_inputs(inputs)))
            eager_outs = _flat_tensors(func(*_clone_inputs(inputs)))
        warned_nondeterministic = False
        for i, (got, want) in enumerate(zip(traced_outs, eager_outs)):
            error = _mismatch_message(got, want, tolerance)
            if error is None:
                continue
            if not warned_nondeterministic:
                warned_nondeterministic = True
                nodes = [n for n in recorder.graph.nodes if getattr(n.target, "nondeterministic", False)]
                if nodes:
                    lines = node_lines(recorder.graph)
                    listing = "\n".join("\t" + lines[n] for n in nodes if n in lines)
                    warnings.warn("Trace had nondeterministic nodes. Did you forget call .eval() on your model? "
                                  f"Nodes:\n{listing}\nThis may cause errors in trace checking. To disable trace "
                                  "checking, pass check_trace=False to torch.jit.trace()", TracerWarning, stacklevel=4)
            warnings.warn(f"Output nr {i + 1}. of the traced function does not match the corresponding output of "
                          f"the Python function. Detailed error:\n{error}", TracerWarning, stacklevel=4)
