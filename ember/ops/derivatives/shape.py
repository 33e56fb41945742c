"""Derivatives of views, shape ops and copies that rearrange elements.

Views whose elements map one-to-one onto the input's (view, squeeze, transpose, permute) invert
the geometry. Slicing-like views embed the gradient into zeros with ``cat`` (fast, and
differentiable again through cat's own formula). Views that may read an element more than once
(unfold, diagonal, repeat_interleave ...) use the *index trick*: applying the op to
``arange(numel).reshape(shape)`` tells, for each output element, which input element it came
from; ``index_add`` then sums the gradient back into place, so overlaps accumulate.
"""
from __future__ import annotations


def _index_trick(grad, shape, op):
    """Gradient of an element-rearranging op: `op` applied to the flat positions of the input."""
    from ... import arange
    n = 1
    for s in shape:
        n *= s
    pos = op(arange(n, device=grad.device).reshape(shape))
    return grad.new_zeros((n,)).index_add(0, pos.reshape(-1), grad.reshape(-1)).reshape(shape)


def _embed(grad, shape, dim, start, length):
    """Zeros of `shape` with `grad` at [start, start + length) along `dim` (via cat)."""
    from ... import cat
    n = shape[dim]
    parts = []
    if start:
        s = list(grad.shape)
        s[dim] = start
        parts.append(grad.new_zeros(s))
    parts.append(grad)
    if n - start - length:
        s = list(grad.shape)
        s[dim] = n - start - length
        parts.append(grad.new_zeros(s))
    return parts[0] if len(parts) == 1 else cat(parts, dim)


def _slice_backward(grad, self_shape, dim, start, end, step):
    dim = dim % len(self_shape)
    idx = range(*slice(start, end, step).indices(self_shape[dim]))
    if step == 1 or len(idx) <= 1:
        return _embed(grad, self_shape, dim, idx.start if len(idx) else 0, len(idx))
    from ... import arange
    index = arange(len(idx), device=grad.device) * idx.step + idx.start
    return grad.new_zeros(self_shape).index_add(dim, index, grad)


def _select_backward(grad, self_shape, dim, index):
    dim = dim % len(self_shape)
    return _embed(grad.unsqueeze(dim), self_shape, dim, index % self_shape[dim], 1)


def _cat(tensors, dim):
    from ... import cat
    return cat(tensors, dim)


def _stack(tensors, dim):
    from ... import stack
    return stack(tensors, dim)


def _cat_backward(grad, tensors_shape, dim):
    # legacy: 1-D empty tensors are skipped by cat whatever the other tensors' rank
    ref = next((s for s in tensors_shape if not (len(s) == 1 and s[0] == 0)), None)
    if ref is None:
        return [grad.new_zeros(s) for s in tensors_shape]
    dim = dim % len(ref)
    out, offset = [], 0
    for s in tensors_shape:
        if len(s) == 1 and s[0] == 0 and len(ref) != 1:
            out.append(grad.new_zeros(s))
            continue
        out.append(grad.narrow(dim, offset, s[dim]))
        offset += s[dim]
    return out


def _permute_backward(grad, dims):
    nd = len(dims)
    inverse = [0] * nd
    for i, d in enumerate(dims):
        inverse[d % nd] = i
    return grad.permute(inverse)


def _repeat_backward(grad, self_shape, repeats):
    lead = len(repeats) - len(self_shape)
    padded = [1] * lead + list(self_shape)
    inter = []
    for r, s in zip(repeats, padded):
        inter += [r, s]
    if 0 in inter:
        return grad.new_zeros(self_shape)
    g = grad.reshape(inter)
    g = g.sum(list(range(0, len(inter), 2))) if inter else g
    return g.reshape(self_shape)


def _roll_backward(grad, shifts, dims):
    return grad.roll([-s for s in shifts], dims)


def _as_strided_backward(grad, self, size, stride, storage_offset):
    """Gradient of as_strided through storage positions: out positions -> storage (summed),
    storage -> input positions. Inputs whose own elements overlap are not supported."""
    import numpy as np
    from ... import tensor as make_tensor, int64

    def positions(shape, strides, offset):
        pos = np.full((), offset, dtype=np.int64)
        for n, st in zip(shape, strides):
            pos = pos[..., None] + np.arange(n, dtype=np.int64) * st
        return pos.reshape(-1)

    offset = self.storage_offset() if storage_offset is None else storage_offset
    in_pos = positions(self.shape, self.stride(), self.storage_offset())
    if len(np.unique(in_pos)) != in_pos.size:
        raise NotImplementedError("as_strided backward: the input's elements overlap in memory")
    out_pos = positions(size, stride, offset)
    base = int(min(in_pos.min(initial=0), out_pos.min(initial=0)))
    top = int(max(in_pos.max(initial=0), out_pos.max(initial=0))) + 1
    buf = grad.new_zeros((top - base,)).index_add(
        0, make_tensor(out_pos - base, dtype=int64, device=grad.device), grad.reshape(-1))
    return buf.index_select(0, make_tensor(in_pos - base, dtype=int64, device=grad.device)).reshape(self.shape)


def _diag_backward(grad, self_shape, diagonal):
    if len(self_shape) == 1:
        return grad.diagonal(diagonal)
    return _index_trick(grad, self_shape, lambda p: p.diag(diagonal))


def _repeat_interleave_backward(grad, self_shape, repeats, dim, output_size=None):
    return _index_trick(grad, self_shape, lambda p: p.repeat_interleave(repeats, dim))


FORMULAS = {
    "view": lambda grad, self_shape: grad.reshape(self_shape),
    "squeeze": lambda grad, self_shape: grad.reshape(self_shape),
    "squeeze.dim": lambda grad, self_shape: grad.reshape(self_shape),
    "squeeze.dims": lambda grad, self_shape: grad.reshape(self_shape),
    "unsqueeze": lambda grad, self_shape: grad.reshape(self_shape),
    "transpose.int": lambda grad, dim0, dim1: grad.transpose(dim0, dim1),
    "transpose_": lambda grad, dim0, dim1: grad.transpose(dim0, dim1),  # (its own name: no .int overload)
    "permute": _permute_backward,
    "t": lambda grad: grad.t(),
    "expand": lambda grad: grad,  # the engine sums the broadcast dims back to the input's shape
    "as_strided": _as_strided_backward,
    "slice.Tensor": _slice_backward,
    "select.int": _select_backward,
    "unbind.int": lambda grads, dim: _stack(list(grads), dim),
    "split.Tensor": lambda grads, dim: _cat(list(grads), dim),
    "split_with_sizes": lambda grads, dim: _cat(list(grads), dim),
    "split.sizes": lambda grads, dim: _cat(list(grads), dim),
    "diagonal": lambda grad, self_shape, offset, dim1, dim2: _index_trick(
        grad, self_shape, lambda p: p.diagonal(offset, dim1, dim2)),
    "unfold": lambda grad, self_shape, dimension, size, step: _index_trick(
        grad, self_shape, lambda p: p.unfold(dimension, size, step)),
    "cat": _cat_backward,
    "stack": lambda grad, dim, tensors_shape: list(grad.unbind(dim % (len(tensors_shape[0]) + 1))),
    "repeat": _repeat_backward,
    "repeat_interleave.self_int": _repeat_interleave_backward,
    "repeat_interleave.self_Tensor": lambda grad, self_shape, repeats, dim: (
        _repeat_interleave_backward(grad, self_shape, repeats, dim), None),
    "flip": lambda grad, dims: grad.flip(dims),
    "roll": _roll_backward,
    "tril": lambda grad, diagonal: grad.tril(diagonal),
    "triu": lambda grad, diagonal: grad.triu(diagonal),
    "diag": _diag_backward,
    "diag_embed": lambda grad, offset, dim1, dim2: grad.diagonal(offset, dim1, dim2),
}

NONDIFFERENTIABLE = {"view.dtype", "repeat_interleave.Tensor"}
