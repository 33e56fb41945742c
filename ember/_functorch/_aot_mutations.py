"""Mutation in AOT autograd: a program that writes tensors in place is traced *functionalised*
(functionalize.py's Functionalize key), so its joint graph holds no mutating op, and the runtime
puts eager's side effects back around the compiled graphs (PyTorch's "input mutations as outputs"):

* every graph input the program wrote becomes an extra forward output, its final value (the
  leading outputs of the forward graph: ordinary forward outputs, never saved activations);
* after the compiled forward, an *epilogue* writes each of them into the real input with
  ``copy_``: with grad mode on when the traced new value requires grad (a non-leaf input written
  by a differentiable op: the input's history becomes ``CopyBackwards`` of the compiled output,
  which gets a tangent, as eager's in-place op would rebase it), under ``no_grad`` otherwise
  (BatchNorm's running stats, a parameter updated inside ``no_grad``);
* a leaf input that requires grad, written by a differentiable op, is refused by eager ("a leaf
  Variable that requires grad is being used in an in-place operation"): the call runs eagerly,
  so it raises exactly that;
* outputs that are (views of) an input are regenerated from the real input after the write-back:
  the wrapper's view chain (``ViewMeta``) replayed on it, so they alias it as in eager;
* a saved activation that shares memory with a written input (the input itself, a view of it) is
  cloned before the write-back, so the backward reads the value the forward used.

* an input's in-place metadata change (``x.t_()``, ``unsqueeze_``) is replayed on the real input
  with the same in-place method, after its data is written back (views of it regenerated first:
  their chains start from its old layout).

What still runs eagerly: metadata changes of an input that requires grad, ``set_``/``resize_``/
``.data =`` (functionalize.py refuses them), a write to an input that shares memory with another
input (checked per call), an input that requires grad written under no_grad.
"""
from __future__ import annotations

import dataclasses

from .._core.tensor import Tensor
from ..autograd.grad_mode import no_grad, set_grad_enabled
from . import functional_tensor as ft
from .functionalize import _root, _run, _Session


class _TraceSession(_Session):
    """A functionalised AOT trace: its inputs are leaves standing for the caller's tensors, which
    may not be; writes to them are let through and `runs_eagerly` decides per call."""

    input_metadata_writes_allowed = True

    def __init__(self, traced):
        super().__init__(False)
        self.inputs = {id(t) for t in traced}

    def leaf_write_allowed(self, value) -> bool:
        return id(value) in self.inputs


@dataclasses.dataclass
class InputMutations:
    """What the runtime does around a functionalised graph (module docstring)."""
    inputs: list                 # indices of the written inputs (their new values lead the forward outputs)
    differentiable: list         # per written input: its new value requires grad (copy_ with grad mode on)
    aliases: dict                # user output index -> (input index, [ViewMeta] or None: the input, requires grad)
    metadata: dict               # input index -> [ViewMeta]: its in-place metadata changes (t_ ...), replayed


def run_functionalised(fn, traced):
    """``fn(*traced)`` functionalised (call under the tracer): ``(new values of the written inputs,
    fn's result with plain tensors, InputMutations)``."""
    from .aot_autograd import _flat_outputs
    with _TraceSession(traced):
        wrappers, result = _run(fn, tuple(traced), {}, False)
        for i, (t, w) in enumerate(wrappers):
            if w._storage.mutated and t.requires_grad and not w._storage.base.requires_grad:
                raise NotImplementedError(f"input {i} requires grad and is written under no_grad: eager keeps it "
                                          "a leaf that later ops differentiate, a functional graph cannot")
        metadata = {i: list(w._metas) for i, (t, w) in enumerate(wrappers) if w._metas}
        for i, metas in metadata.items():
            if wrappers[i][0].requires_grad or not all(_metadata_method(m) for m in metas):
                raise NotImplementedError(f"functionalize: input {i}'s metadata changed in place "
                                          f"({', '.join(m.op.schema.name + '_' for m in metas)}) on a tensor that "
                                          "requires grad or through an op without an in-place method")
        outs, _ = _flat_outputs(result)
        written = [i for i, (_, w) in enumerate(wrappers) if w._storage.mutated]
        new_values = [wrappers[i][1]._storage.base for i in written]
        storage_owner = {id(w._storage): i for i, (_, w) in enumerate(wrappers)}
        # the input itself (`is`): returned as the very object; else a view, regenerated from the input
        aliases = {k: (storage_owner[id(o._storage)],
                       None if o is wrappers[storage_owner[id(o._storage)]][1] else list(o._metas),
                       bool(ft.current(o).requires_grad))
                   for k, o in enumerate(outs) if isinstance(o, ft.FunctionalTensor) and id(o._storage) in storage_owner}
        plain = ft.unwrap(result) if isinstance(result, (list, tuple)) else (
            ft.current(result) if isinstance(result, ft.FunctionalTensor) else result)
    mutations = InputMutations(written, [bool(v.requires_grad) for v in new_values], aliases, metadata)
    return new_values, plain, mutations


def runs_eagerly(mutations, args) -> bool:
    """This call must run eagerly: eager refuses it (a differentiable write to a leaf input that
    requires grad), or a written input shares memory with another input (the trace saw them apart:
    eager's write shows through the other, the graph's would not)."""
    return any(d and args[i].requires_grad and args[i].grad_fn is None
               for i, d in zip(mutations.inputs, mutations.differentiable)) or \
        any(_shares_memory(args[i], a) for i in mutations.inputs for j, a in enumerate(args) if j != i)


def _shares_memory(a, b) -> bool:
    import numpy as np
    if _root(a) is not _root(b):
        return False
    return not isinstance(a._data, np.ndarray) or np.may_share_memory(a._data, b._data)


def protect_saved(saved, primals, mutations):
    """Saved activations, with those sharing memory with a written input cloned (the write-back
    would change them under the backward)."""
    roots = [_root(primals[i]) for i in mutations.inputs]
    return [s.clone() if isinstance(s, Tensor) and any(_root(s) is r for r in roots) else s for s in saved]


def write_back(mutations, args, new_values):
    """The epilogue: each written input gets its new value (module docstring)."""
    for i, differentiable, value in zip(mutations.inputs, mutations.differentiable, new_values):
        if differentiable:
            with set_grad_enabled(True):
                args[i].copy_(value)
        else:
            with no_grad():
                args[i].copy_(value)


def regenerate_aliases(mutations, args, outs):
    """Outputs that are (views of) an input, made again from the real input after the write-back
    (views from its layout before its metadata changes, which are replayed last)."""
    for k, (i, metas, requires_grad) in mutations.aliases.items():
        value = args[i]
        with set_grad_enabled(requires_grad):
            for meta in metas or ():
                value = meta.forward(value)
        outs[k] = value
    for i, metas in mutations.metadata.items():
        for meta in metas:
            getattr(args[i], _metadata_method(meta))(*meta.args)
    return outs


def _metadata_method(meta):
    """The in-place method that makes this view of a tensor in place (``transpose`` -> ``transpose_``)."""
    name = meta.op.schema.name + "_"
    return name if meta.index is None and hasattr(Tensor, name) else None
