"""Derivatives of indexing ops: gathers send the gradient back with the matching scatter
(index -> index_put accumulate, gather -> scatter_add, index_select -> index_add, take -> put
accumulate), scatters send the written elements' gradient to the source and zero it for self.

In-place overloads (``index_put_``, ``scatter_.src``, ``masked_fill_.Scalar`` ...) reuse these
formulas; so ``y = x.clone(); y[mask] = 0`` (``index_put_`` on a non-view) is differentiable.
"""
from __future__ import annotations


def _zeros_like(t):
    from ... import zeros_like
    return zeros_like(t)


def _index_put_backward(grad, indices, values, accumulate):
    from ..registry import aten
    g_self = grad if accumulate else grad.index_put(indices, _zeros_like(values), False)
    return g_self, None, aten.index.Tensor(grad, indices)


def _index_backward(grad, self_shape, indices):
    return grad.new_zeros(self_shape).index_put(indices, grad, True), None


def _scatter_src(grad, dim, index):
    return grad.scatter(dim, index, 0), None, grad.gather(dim, index)


def _scatter_reduce_backward(grad, self, dim, index, src, reduce, include_self, result):
    if reduce == "sum":
        g_self, g_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        n = _zeros_like(grad) + (1 if include_self else 0)
        n = n.scatter_add(dim, index, _zeros_like(src) + 1)
        n = n.masked_fill(n == 0, 1)
        g_self, g_src = grad / n, grad.gather(dim, index) / n.gather(dim, index)
    elif reduce in ("amax", "amin"):
        value = result.gather(dim, index)
        self_is = (self == result).to(grad.dtype)
        src_is = (src == value).to(grad.dtype)
        count = self_is.scatter_add(dim, index, src_is)
        share = grad / count
        g_self, g_src = self_is * share, src_is * share.gather(dim, index)
    else:
        raise NotImplementedError(f"the derivative of scatter_reduce with reduce='{reduce}' is not implemented")
    if not include_self:
        g_self = g_self.scatter(dim, index, 0)
    return g_self, None, g_src


def _index_fill_tensor(grad, dim, index):
    if grad.ndim == 0:
        return grad * 0, None, grad
    return grad.index_fill(dim, index, 0), None, grad.index_select(dim, index.reshape(-1).unique()).sum()


def _masked_select_backward(grad, self_shape, mask, mask_shape):
    from ... import broadcast_shapes, zeros
    shape = broadcast_shapes(self_shape, mask_shape)
    return zeros(shape, dtype=grad.dtype, device=grad.device).masked_scatter(mask, grad), None


def _masked_scatter_backward(grad, mask, source_shape):
    from ... import cat
    n = 1
    for s in source_shape:
        n *= s
    sel = grad.masked_select(mask)
    if sel.numel() < n:
        sel = cat([sel, grad.new_zeros((n - sel.numel(),))])
    return grad.masked_fill(mask, 0), None, sel.reshape(source_shape)


def _take_along_dim_backward(grad, self_shape, indices, dim):
    if dim is None:
        n = 1
        for s in self_shape:
            n *= s
        flat = grad.new_zeros((n,)).index_add(0, indices.reshape(-1), grad.reshape(-1))
        return flat.reshape(self_shape), None
    from ... import broadcast_shapes
    dim = dim % len(self_shape)
    shape = list(self_shape)
    shape[dim] = indices.shape[dim]
    out_shape = list(broadcast_shapes(tuple(shape), tuple(indices.shape)))
    target = list(out_shape)
    target[dim] = self_shape[dim]
    idx = indices.expand(out_shape)
    g = grad.new_zeros(target).scatter_add(dim, idx, grad.expand(out_shape))
    return g, None  # the engine sums the broadcast dims back to self's shape


def _put_backward(grad, index, source, accumulate, source_shape):
    g_self = grad if accumulate else grad.put(index, _zeros_like(source), False)
    return g_self, None, grad.take(index).reshape(source_shape)


def _index_select_backward(grad, self_shape, dim, index):
    if len(self_shape) == 0:
        return grad.reshape(()).sum() if grad.numel() else grad.new_zeros(()), None
    return grad.new_zeros(self_shape).index_add(dim, index.reshape(-1), grad), None


def _gather_backward(grad, self_shape, dim, index):
    return grad.new_zeros(self_shape).scatter_add(dim, index, grad), None


def _not_implemented_scatter():
    raise RuntimeError("derivative for aten::scatter is not implemented")


FORMULAS = {
    "index.Tensor": _index_backward,
    "index_put": _index_put_backward,
    "index_select": _index_select_backward,
    "gather": _gather_backward,
    "scatter.value": lambda grad, dim, index: (grad.scatter(dim, index, 0), None),
    "scatter.src": _scatter_src,
    "scatter.value_reduce": _not_implemented_scatter,
    "scatter.reduce": _not_implemented_scatter,
    "scatter_add": lambda grad, dim, index: (grad, None, grad.gather(dim, index)),
    "scatter_reduce.two": _scatter_reduce_backward,
    "index_add": lambda grad, dim, index, source, alpha: (
        grad, None, grad.index_select(dim, index) * alpha if source.ndim else
        grad.index_select(dim, index).reshape(()) * alpha),
    "index_copy": lambda grad, dim, index: (grad.index_fill(dim, index, 0), None, grad.index_select(dim, index)),
    "index_fill.int_Scalar": lambda grad, dim, index: (grad.index_fill(dim, index, 0), None),
    "index_fill.int_Tensor": _index_fill_tensor,
    "masked_fill.Scalar": lambda grad, mask: (grad.masked_fill(mask, 0), None),
    "masked_fill.Tensor": lambda grad, mask: (grad.masked_fill(mask, 0), None,
                                              grad.masked_fill(mask.logical_not(), 0).sum()),
    "masked_select": _masked_select_backward,
    "masked_scatter": _masked_scatter_backward,
    "take": lambda grad, self_shape, index: (grad.new_zeros(self_shape).put(index, grad, True), None),
    "take_along_dim": _take_along_dim_backward,
    "put": _put_backward,
}

NONDIFFERENTIABLE = {"nonzero", "nonzero_numpy", "argwhere"}
