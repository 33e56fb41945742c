"""The autograd node of an AOT-compiled training graph, recorded without ``autograd.Function.apply``.

A compiled graph whose outputs need gradients runs its forward with grad mode off and records one
node, ``CompiledFunctionBackward`` (PyTorch's name for it), whose ``apply`` runs the compiled
backward. ``Function.apply`` does the same for any Python function and pays for its generality on
every call (a ctx object, the forward under a ``no_grad`` context, sets of marked tensors, a shape
and dtype check per returned gradient: ~60 us of a small training step's ~120 us forward). Here
everything known when the graph was traced is computed once (which outputs are differentiable,
their metadata for materialising missing gradients), and what a call needs is done directly:

    outs = record(compiled, args)     # compiled: aot_autograd.CompiledGraph with tangent outputs

Only "plain" graphs take this path (no input mutation, no output aliasing an input, no grad-mode
change left behind: ``CompiledGraph.plain``); the others keep the autograd.Function, which handles
those cases. Semantics are the Function's: saved tensors are version-checked on use and freed after
a backward without ``retain_graph``; a missing output gradient is zeros; double backward is refused.
"""
from __future__ import annotations

from .._core.dispatch import AUTOGRAD_BIT
from ..autograd.graph import Node, SavedTensor, gradient_edge, meta_of
from ._aot_fast_path import call_with_grad_mode


class CompiledFunctionBackward(Node):
    """Runs the compiled backward on the saved values and the outputs' gradients."""

    def __init__(self, compiled, edges):
        super().__init__(edges)
        self.compiled = compiled
        self.saved = ()

    def apply(self, grads):
        from ..autograd.grad_mode import is_grad_enabled
        if is_grad_enabled():     # create_graph=True: the compiled backward has no derivative
            raise RuntimeError("ember.compile with AOT autograd does not support double backward "
                               "(create_graph=True through a compiled graph)")
        compiled = self.compiled
        tangents = []
        for i in compiled.tangent_outputs:
            g = grads[i] if i < len(grads) else None
            if g is None:        # an output that got no gradient: zeros, as Function materialises them
                from .. import zeros
                shape, dtype, device = compiled.output_meta[i]
                g = zeros(shape, dtype=dtype, device=device)
            tangents.append(g.contiguous())
        name = self.name()
        saved = [None if s is None else s.unpack(name) for s in self.saved]
        out = compiled.run_backward(saved + tangents)
        edges = self.next_functions
        if len(out) != len(edges):
            raise RuntimeError(f"{name}: the compiled backward returned {len(out)} gradients for "
                               f"{len(edges)} inputs")
        return [g if edge[0] is not None else None for g, edge in zip(out, edges)]

    def release(self):
        for s in self.saved:
            if s is not None:
                s.release()


def record(compiled, args):
    """The outputs of `compiled`'s forward on `args`, those that need gradients attached to a new
    CompiledFunctionBackward node (when an input requires grad)."""
    results = call_with_grad_mode(False, compiled.forward, args)
    num_fwd = compiled.num_fwd
    outs = list(results[:num_fwd])
    if not any(a._keys & AUTOGRAD_BIT for a in args):
        return tuple(outs)
    node = CompiledFunctionBackward(
        compiled, [gradient_edge(a) if a._keys & AUTOGRAD_BIT else None for a in args])
    if compiled.output_meta is None:       # what a missing gradient is materialised as (fixed per graph)
        compiled.output_meta = {i: (tuple(outs[i].shape), outs[i].dtype, outs[i].device)
                                for i in compiled.tangent_outputs}
    # (an output that is an input object makes the graph not plain: its alias is replayed instead)
    for i in compiled.tangent_outputs:
        o = outs[i]
        o._keys |= AUTOGRAD_BIT
        meta = meta_of(o)
        meta.grad_fn, meta.output_nr = node, i
    # saved outputs are aliases holding the node weakly (no reference cycle); inputs are saved as is
    out_pos = {id(outs[i]): i for i in compiled.tangent_outputs}
    node.saved = tuple(
        None if t is None else
        SavedTensor(t, node, is_output=True, output_nr=out_pos[id(t)]) if id(t) in out_pos else SavedTensor(t)
        for t in results[num_fwd:])
    return tuple(outs)
