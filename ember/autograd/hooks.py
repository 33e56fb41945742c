"""Running autograd hooks, and checking what they return as PyTorch does.

A hook may replace a gradient, but not with something of another kind: a tensor hook (or a
node prehook / post hook, per element of its tuple) that returns a tensor of another dtype,
device or size raises RuntimeError ("hook 'h' has changed the size of value"), a non-tensor
raises TypeError, and so does a tuple hook that returns no tuple or a tuple of the wrong
length. Without these checks a wrong-shaped gradient would be summed or broadcast silently
into ``.grad`` further down the graph.
"""
from __future__ import annotations

from .._core.tensor import Tensor
from .graph import AccumulateGrad


def hook_name(hook) -> str:
    return getattr(hook, "__name__", "<unknown>")


def check_single(hook, original, result):
    """The gradient a hook returned in place of `original`; None keeps (or clears) it."""
    if result is None:
        return None
    if original is None:
        raise RuntimeError("can't replace a None gradient with a non-None value")
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    if result.dtype is not original.dtype or result.device != original.device:
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the type of value (was {original.type()} got "
                           f"{result.type()})")
    if result.shape != original.shape:
        raise RuntimeError(f"hook '{hook_name(hook)}' has changed the size of value")
    return result


def check_tuple(hook, originals, result) -> list:
    """A node prehook's / post hook's returned tuple, checked element by element."""
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(result).__name__}'")
    if len(result) != len(originals):
        raise RuntimeError(f"hook '{hook_name(hook)}' has returned an incorrect number of values (got {len(result)}, "
                           f"but expected {len(originals)})")
    return [check_single(hook, o, r) for o, r in zip(originals, result)]


def run_tensor_hooks(hooks, grad):
    """Tensor hooks, in registration order; each sees the previous one's gradient."""
    for fn in list(hooks):
        out = fn(grad)
        if out is not None:
            grad = check_single(fn, grad, out)
    return grad


def run_pre_hooks(node, grads):
    """PyTorch's order: tensor hooks (a leaf's live on its tensor, a non-leaf's on its grad_fn),
    then retain_grad hooks, then the node's own prehooks."""
    if isinstance(node, AccumulateGrad):
        meta = node.variable._autograd
        if meta is not None and meta.hooks and grads and grads[0] is not None:
            grads[0] = run_tensor_hooks(meta.hooks, grads[0])
    if not node._hooked:    # no hook container was ever made on the node (graph.Node.__getattr__)
        return grads
    hooks = node.pre_hooks
    for nr, fns in hooks.items():
        if 0 <= nr < len(grads) and grads[nr] is not None:
            grads[nr] = run_tensor_hooks(fns, grads[nr])
    for nr, fn in node.retain_hooks.items():
        if nr < len(grads) and grads[nr] is not None:
            fn(grads[nr])
    for fn in list(hooks.get(-1, ())):
        out = fn(tuple(grads))
        if out is not None:
            grads = check_tuple(fn, grads, out)
    return grads


def run_post_hooks(node, outs, grads):
    """``hook(grad_inputs, grad_outputs)``; a returned tuple replaces grad_inputs."""
    for fn in list(node.hooks):
        new = fn(tuple(outs), tuple(grads))
        if new is not None:
            outs = check_tuple(fn, outs, new)
    return outs


def run_post_accumulate_hooks(variable):
    """After AccumulateGrad wrote ``variable.grad``: ``hook(variable)``, which must return None."""
    meta = variable._autograd
    for fn in list(meta.post_accumulate_hooks or ()):
        if fn(variable) is not None:
            raise RuntimeError("Tensor post accumulate grad hooks should return None.")
