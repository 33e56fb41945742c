"""The backward engine: runs the graph's nodes in dependency order.

From the roots it counts, for every reachable node, how many edges lead into it; a node runs
once all of them have delivered their gradient (summed into its input buffer), highest
sequence number first among the ready ones, as PyTorch's engine does on one thread. With
``inputs`` (``autograd.grad``) only the nodes on a path to an input run, and the gradients
arriving at the inputs are returned instead of accumulated into ``.grad`` (a captured node runs
only when another input lies beyond it). Before a node runs, the tensor hooks of its inputs
(a leaf's, for its AccumulateGrad), then retain_grad hooks, then its own prehooks see the grads;
captured gradients are taken after the hooks, as in PyTorch. Without ``retain_graph`` each node
frees its saved tensors once it has run.
"""
from __future__ import annotations

import heapq

from .graph import AccumulateGrad, gradient_edge, meta_of
from .hooks import run_pre_hooks, run_post_hooks
from .grad_mode import set_grad_enabled
from .._core.dispatch import tls, DispatchKey
from .._core.tensor import Tensor

_PROFILER_BIT = 1 << DispatchKey.Profiler

# Hooks that run a node instead of ``node.apply(grads)`` while the Profiler key is included: the
# profiler appends its range-recording evaluator at its import, so autograd never imports it. The
# last one appended wins; the check costs one bit test per node when no profiler records.
node_evaluators: list = []


def _sum(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _collect(roots):
    """Dependency counts of every node reachable from the root edges."""
    deps, seen, stack = {}, set(), [node for node, _ in roots]
    while stack:
        node = stack.pop()
        if node in seen:    # (nodes hash by identity: they are the engine's dict keys too)
            continue
        seen.add(node)
        for edge in node.next_functions:
            if edge is None:
                continue
            nxt = edge[0]
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                stack.append(nxt)
    return deps


def _needed(roots, targets):
    """Nodes that must run to reach a target: those with an edge leading to a target. A target
    itself runs only if another target lies beyond it (as PyTorch, which never computes more
    than the requested gradients need)."""
    reaches = {}   # id(node) -> node is a target or leads to one

    def visit(node):
        key = id(node)
        if key in reaches:
            return reaches[key]
        reaches[key] = node in targets
        hit = False
        for edge in node.next_functions:
            if edge[0] is not None and visit(edge[0]):
                hit = True
        run[key] = hit
        reaches[key] = reaches[key] or hit
        return reaches[key]
    run = {}
    for node, _ in roots:
        visit(node)
    return {k for k, v in run.items() if v}


# One list per running backward (nested backwards from hooks push their own): the callbacks
# ``queue_callback`` installed during it, run in order once its graph has run (DDP waits for its
# gradient all-reduces there). One push and pop per backward call.
_final_callbacks: list = []


def queue_callback(fn) -> None:
    """Run ``fn()`` when the backward now running has finished its graph
    (``Variable._execution_engine.queue_callback``)."""
    if not _final_callbacks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _final_callbacks[-1].append(fn)


def run_backward(tensors, grad_tensors, **kwargs):
    """Backpropagate `grad_tensors` from `tensors`, then run the callbacks queued meanwhile."""
    _final_callbacks.append([])
    try:
        result = _run_graph(tensors, grad_tensors, **kwargs)
        callbacks = _final_callbacks[-1]
        while callbacks:
            callbacks.pop(0)()
    finally:
        _final_callbacks.pop()
    return result


def _run_graph(tensors, grad_tensors, *, retain_graph=False, create_graph=False, inputs=None,
               allow_unused=False, accumulate=True):
    """Backpropagate `grad_tensors` from `tensors`. Returns the input gradients when `inputs`
    is given and ``accumulate`` is False (``autograd.grad``)."""
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        edge = gradient_edge(t)
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        roots.append((edge, g))
    root_edges = [e for e, _ in roots]
    deps = _collect(root_edges)
    buffers = {}
    for (node, nr), g in roots:
        buf = buffers.setdefault(node, {})
        buf[nr] = _sum(buf.get(nr), g)

    capture = {}        # (node, input_nr) -> position in inputs
    needed = None
    if inputs is not None:
        targets = set()
        for i, t in enumerate(inputs):
            edge = gradient_edge(t)
            if edge is None:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture[(edge[0], edge[1])] = i
            targets.add(edge[0])
        needed = _needed(root_edges, targets)
    results = [None] * (len(inputs) if inputs is not None else 0)

    ready = []
    for node, _ in root_edges:
        if deps.get(node, 0) == 0 and all(n is not node for _, _, n in ready):
            heapq.heappush(ready, (-node.sequence_nr, id(node), node))
    heappush, heappop = heapq.heappush, heapq.heappop
    with set_grad_enabled(bool(create_graph)):
        while ready:
            node = heappop(ready)[2]
            buf = buffers.pop(node, None)
            if buf is None:
                grads = []
            elif len(buf) == 1 and 0 in buf:   # the common case: one output, one gradient
                grads = [buf[0]]
            else:
                grads = [buf.get(i) for i in range(max(buf) + 1)]
            buf = None
            is_accumulator = isinstance(node, AccumulateGrad)
            # (hook containers exist only on nodes that were given one; a leaf's tensor hooks live on its meta)
            if node._hooked or is_accumulator and getattr(node.variable._autograd, "hooks", None):
                grads = run_pre_hooks(node, grads)
            if capture:
                for (cnode, nr), pos in capture.items():
                    if cnode is node and nr < len(grads):
                        results[pos] = _sum(results[pos], grads[nr])
            run = (needed is None or id(node) in needed) and (accumulate or not is_accumulator)
            outs = None     # the last node's outputs go: AccumulateGrad counts who holds a gradient
            if run:
                for g in grads:
                    if g is not None:
                        g = None    # (a name holding a gradient would make AccumulateGrad copy it)
                        if tls.include & _PROFILER_BIT and node_evaluators:  # a profiler records: in its ranges
                            outs = node_evaluators[-1](node, grads)
                        else:
                            outs = node.apply(grads)
                        break
                else:
                    outs = [None] * len(node.next_functions)
                if node._hooked and node.hooks:
                    outs = run_post_hooks(node, outs, grads)
                if not retain_graph and not is_accumulator:     # (an AccumulateGrad saves nothing)
                    node.release()
            else:
                outs = [None] * len(node.next_functions)
            for edge, g in zip(node.next_functions, outs):
                if edge is None or edge[0] is None:
                    continue
                nxt = edge[0]
                if g is not None:
                    b = buffers.get(nxt)
                    if b is None:
                        buffers[nxt] = {edge[1]: g}
                    else:
                        nr = edge[1]
                        b[nr] = _sum(b.get(nr), g)
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    heappush(ready, (-nxt.sequence_nr, id(nxt), nxt))
            g = nxt = edge = b = None
    if inputs is not None and not allow_unused:
        for i, r in enumerate(results):
            if r is None:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
    return results


def _make_grads(tensors, grad_tensors, create_graph):
    out = []
    for t, g in zip(tensors, grad_tensors):
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if not t.is_floating_point() and not t.is_complex():
                raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {t.dtype}")
            from .. import ones_like
            with set_grad_enabled(False):
                g = ones_like(t)
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        elif tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {list(g.shape)} and output[0] has "
                               f"a shape of {list(t.shape)}.")
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """``ember.autograd.backward``: accumulate d(tensors)/d(leaves) into the leaves' ``.grad``."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None:
        grad_tensors = [None] * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors]
    grads = _make_grads(tensors, list(grad_tensors), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        got = run_backward(tensors, grads, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs,
                           allow_unused=True, accumulate=False)
        for t, g in zip(inputs, got):
            if g is not None:
                meta = meta_of(t)
                with set_grad_enabled(bool(create_graph)):
                    meta.grad = (g if create_graph else g.clone()) if meta.grad is None else meta.grad + g
        return
    run_backward(tensors, grads, retain_graph=retain_graph, create_graph=create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         is_grads_batched=False, materialize_grads=False):
    """``ember.autograd.grad``: the gradients of `outputs` with respect to `inputs`, returned
    (``.grad`` is left alone)."""
    single = isinstance(inputs, Tensor)
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    grads = _make_grads(outputs, list(grad_outputs), create_graph)
    if retain_graph is None:
        retain_graph = create_graph
    res = run_backward(outputs, grads, retain_graph=retain_graph, create_graph=create_graph, inputs=inputs,
                       allow_unused=bool(allow_unused or materialize_grads), accumulate=False)
    if materialize_grads:
        from .. import zeros_like
        res = [zeros_like(i) if r is None else r for i, r in zip(inputs, res)]
    return tuple(res)
