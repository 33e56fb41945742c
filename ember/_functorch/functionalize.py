"""Functionalisation: run a program with every in-place and ``out=`` op replaced by its
functional form (PyTorch's ``torch.func.functionalize``, on ember's Functionalize dispatch key).

    from ember._functorch.functionalize import functionalize, trace_functional

    def f(x):
        x[0].mul_(2)                      # a write through a view of an input
        return x.sum()

    functionalize(f)(x)                   # f's values and side effects: x[0] is doubled
    make_fx(functionalize(f))(x).code     # select, mul, select_scatter, select, sum, copy_(x_1, ...)

``functionalize(fn, remove="mutations")`` wraps fn's tensor inputs in `FunctionalTensor`s
(ember/_functorch/functional_tensor.py: the wrappers, view replay and the key's kernel), runs fn,
then writes every input whose data fn changed back with one ``copy_`` (the *epilogue*: the only
writing op a traced graph then holds) and returns the outputs' values. ``remove=
"mutations_and_views"`` also runs ``<view>_copy`` ops (``view_copy``, ``select_copy.int`` ...)
instead of views, so the graph holds no aliasing either.

For AOT autograd, `trace_functional` traces fn functionally *without* the epilogue and says what
the runtime must do around the graph (PyTorch's "input mutations as outputs" metadata):

    gm, meta = trace_functional(fn, args, remove="mutations", decomposition_table=None)
    outs = gm(*args)                      # (*new values of meta.mutated_inputs, *fn's outputs)
    for i, v in zip(meta.mutated_inputs, outs): args[i].copy_(v)     # the write-back
    meta.output_aliases[k]                # fn's output k: the index of the input it is a view of
                                          # (eager returns a view of that input: regenerate it
                                          # from the input after write-back), or None

`FunctionalMeta` fields: ``mutated_inputs`` (input indices whose data changed, in input order),
``num_mutated_outputs`` (their count, the graph's leading outputs), ``num_user_outputs``,
``output_aliases`` (per user output: aliased input index or None), ``output_is_input`` (per user
output: it is that input itself, unchanged: eager returns the very object). Tracing never
changes the inputs. Inputs whose *metadata* fn changed in place (``x.t_()``) and ``set_``/
``resize_``/``.data =`` raise NotImplementedError.
"""
from __future__ import annotations

import dataclasses
import functools

from .._core.dispatch import DispatchKey, _IncludeDispatchKeyGuard
from .._core.tensor import Tensor
from . import functional_tensor as ft

_MODES = ("mutations", "mutations_and_views")


class _Session:
    """One functionalised run on this thread: the Functionalize key included, the view mode."""

    def __init__(self, remove_views: bool):
        self.remove_views = remove_views

    # AOT autograd replays an input's in-place metadata changes (t_, unsqueeze_ ...) after the call
    input_metadata_writes_allowed = False

    def leaf_write_allowed(self, value) -> bool:
        """Whether a write to `value`, a leaf that requires grad, is let through (eager refuses it;
        AOT autograd's trace, whose inputs stand for the caller's, lets the runtime decide)."""
        return False

    def __enter__(self):
        if ft.state.session is not None:
            raise NotImplementedError("functionalize: nested functionalize() calls are not supported")
        ft.state.session = self
        self._include = _IncludeDispatchKeyGuard(DispatchKey.Functionalize)
        self._include.__enter__()
        return self

    def __exit__(self, *exc):
        self._include.__exit__(*exc)
        ft.state.session = None
        return False


@dataclasses.dataclass
class FunctionalMeta:
    """What a functional trace of fn needs around it (see the module docstring)."""
    mutated_inputs: list = dataclasses.field(default_factory=list)
    num_user_outputs: int = 0
    output_aliases: list = dataclasses.field(default_factory=list)
    output_is_input: list = dataclasses.field(default_factory=list)

    @property
    def num_mutated_outputs(self) -> int:
        return len(self.mutated_inputs)


def _check_remove(remove):
    if remove not in _MODES:
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove!r}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators {view} "
                           "will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    return remove == "mutations_and_views"


def _map(fn, value):
    """`fn` on every tensor inside tuples, lists and dicts."""
    if isinstance(value, Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        items = [_map(fn, v) for v in value]
        return type(value)._make(items) if hasattr(type(value), "_make") else type(value)(items)
    if isinstance(value, dict):
        return {k: _map(fn, v) for k, v in value.items()}
    return value


def _run(fn, args, kwargs, remove_views):
    """fn on wrapped inputs: (input wrappers, fn's result as wrappers). Call inside a session."""
    wrappers = []

    def wrap_input(t):
        w = ft.fresh(t)
        wrappers.append((t, w))
        return w
    wrapped_args = _map(wrap_input, tuple(args))
    wrapped_kwargs = _map(wrap_input, dict(kwargs))
    result = fn(*wrapped_args, **wrapped_kwargs)
    for t, w in wrappers:
        if w._metas and not ft.state.session.input_metadata_writes_allowed:
            raise NotImplementedError("functionalize: the function changed the metadata of an input in place "
                                      "(t_, transpose_, squeeze_, unsqueeze_ ...); ember cannot functionalize that")
        if w._storage.mutated and _shares_memory_with_another(t, wrappers):
            raise NotImplementedError("functionalize: the function wrote an input that shares memory with another "
                                      "input; ember cannot functionalize aliased inputs (pass one of them)")
        if w._storage.mutated and tuple(w._storage.base.shape) != tuple(t.shape):
            raise NotImplementedError(f"functionalize: an out= op resized an input from {list(t.shape)} to "
                                      f"{list(w._storage.base.shape)}; ember cannot write that back (no resize_)")
    return wrappers, result


def _root(t):
    arr = t._data
    while getattr(arr, "base", None) is not None:
        arr = arr.base
    return arr


def _shares_memory_with_another(t, wrappers) -> bool:
    """Whether input `t` may share memory with another input (each input is its own alias group
    here: a write to one would not show through the other, as it does in eager)."""
    import numpy as np
    root = _root(t)
    return any(other is not t and _root(other) is root and
               (not isinstance(root, np.ndarray) or np.may_share_memory(other._data, t._data))
               for other, _ in wrappers)


def _unwrap_grads(wrappers):
    """A ``.backward()`` inside fn accumulated gradients computed from wrappers into the inputs:
    they get the values."""
    for t, _ in wrappers:
        grad = t._autograd.grad if t._autograd is not None else None
        if isinstance(grad, ft.FunctionalTensor):
            t._autograd.grad = ft.current(grad)


def _unwrap_output(value):
    return _map(lambda t: ft.current(t) if isinstance(t, ft.FunctionalTensor) else t, value)


def functionalize(func, *, remove: str = "mutations"):
    """``functionalize(fn)(*args)``: fn's result, computed without in-place ops; inputs fn wrote
    are written back at the end with ``copy_`` (see the module docstring)."""
    remove_views = _check_remove(remove)

    @functools.wraps(func)
    def functionalized(*args, **kwargs):
        with _Session(remove_views):
            wrappers, result = _run(func, args, kwargs, remove_views)
            out = _unwrap_output(result)
            _unwrap_grads(wrappers)
            written = [(t, w._storage.base) for t, w in wrappers if w._storage.mutated]
        for t, value in written:
            _write_back(t, value)
        return out
    return functionalized


def _write_back(t, value):
    """The epilogue: input `t` gets fn's last value of it. A leaf that requires grad could only
    have been written under no_grad (the write was refused otherwise, as in eager): so is this."""
    if t.requires_grad and t.grad_fn is None:
        from ..autograd.grad_mode import no_grad
        with no_grad():
            t.copy_(value)
    else:
        t.copy_(value)


def _flat_tensors(value, out):
    if isinstance(value, Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _flat_tensors(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _flat_tensors(v, out)
    return out


def trace_functional(fn, args, *, remove: str = "mutations", decomposition_table=None):
    """``(gm, FunctionalMeta)``: the make_fx graph of fn functionalised, returning the new values of
    the inputs fn wrote followed by fn's (flattened) tensor outputs; no write-back op."""
    from .make_fx import make_fx
    remove_views = _check_remove(remove)
    args = tuple(args)
    if not all(isinstance(a, Tensor) for a in args):
        raise TypeError("trace_functional: every argument must be a tensor (close over the other values)")
    meta = FunctionalMeta()

    def flat_fn(*inputs):
        with _Session(remove_views):
            wrappers, result = _run(fn, inputs, {}, remove_views)
            user = _flat_tensors(result, [])
            meta.mutated_inputs = [i for i, (_, w) in enumerate(wrappers) if w._storage.mutated]
            by_storage = {id(w._storage): i for i, (_, w) in enumerate(wrappers)}
            meta.num_user_outputs = len(user)
            meta.output_aliases = [by_storage.get(id(o._storage)) if isinstance(o, ft.FunctionalTensor) else None
                                   for o in user]
            meta.output_is_input = [isinstance(o, ft.FunctionalTensor) and any(o is w for _, w in wrappers)
                                    and not o._storage.mutated for o in user]
            new_values = [wrappers[i][1]._storage.base for i in meta.mutated_inputs]
            return (*new_values, *[ft.current(o) if isinstance(o, ft.FunctionalTensor) else o for o in user])
    gm = make_fx(flat_fn, decomposition_table=decomposition_table)(*args)
    return gm, meta
