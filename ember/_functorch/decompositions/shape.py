"""Decompositions of shape ops (ember/ops/table/shape.py, conversion.py) into the core views
(view, permute, expand, slice, select, as_strided, squeeze.dims, unsqueeze, diagonal,
split_with_sizes) and cat/clone: a view decomposes into views, so its result still aliases its input."""
from __future__ import annotations

from ._ops import aten, eager_error


def _wrap(dim, ndim):
    return dim % max(ndim, 1)


def squeeze_all(self):
    return aten.squeeze.dims(self, [d for d, n in enumerate(self.shape) if n == 1])


def transpose(self, dim0, dim1):
    ndim = self.dim()
    order = list(range(ndim))
    if ndim:
        dim0, dim1 = _wrap(dim0, ndim), _wrap(dim1, ndim)
        order[dim0], order[dim1] = order[dim1], order[dim0]
    elif dim0 not in (0, -1) or dim1 not in (0, -1):
        return eager_error(aten.transpose.int, self, dim0, dim1)
    return aten.permute.default(self, order)


def t(self):
    if self.dim() > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.dim()}D")
    return aten.permute.default(self, list(range(self.dim()))[::-1])


def unbind(self, dim=0):
    dim = _wrap(dim, self.dim())
    return [aten.select.int(self, dim, i) for i in range(self.shape[dim])]


def split(self, split_size, dim=0):
    length = self.shape[_wrap(dim, self.dim())]
    if split_size <= 0 and length:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {length}")
    sizes = [split_size] * (length // split_size) if split_size else [0]
    if split_size and length % split_size:
        sizes.append(length % split_size)
    return aten.split_with_sizes.default(self, sizes or [0], dim)


def split_sizes(self, split_size, dim=0):
    return aten.split_with_sizes.default(self, list(split_size), dim)


def unfold(self, dimension, size, step):
    """The windows along `dimension` as a new last dim: an as_strided view of the same storage."""
    ndim = self.dim()
    if ndim == 0:
        if size != 1 or step <= 0:
            return eager_error(aten.unfold.default, self, dimension, size, step)
        return aten.unsqueeze.default(self, 0)
    dim = _wrap(dimension, ndim)
    length = self.shape[dim]
    if size > length or step <= 0:
        return eager_error(aten.unfold.default, self, dimension, size, step)
    shape, stride = list(self.shape), list(self.stride())
    shape[dim] = (length - size) // step + 1
    stride[dim] = stride[dim] * step
    return aten.as_strided.default(self, shape + [size], stride + [self.stride()[dim]], self.storage_offset())


def stack(tensors, dim=0):
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    dim = _wrap(dim, tensors[0].dim() + 1)
    return aten.cat.default([aten.unsqueeze.default(t, dim) for t in tensors], dim)


def repeat_interleave(self, repeats, dim=None, output_size=None):
    """Each element `repeats` times along dim: unsqueeze, expand, flatten (a copy)."""
    if dim is None:
        self = aten.view.default(self, [-1]) if self.is_contiguous() else aten.view.default(
            aten.clone.default(self, memory_format=_contiguous()), [-1])
        dim = 0
    dim = _wrap(dim, self.dim())
    shape = list(self.shape)
    expanded = shape[:dim + 1] + [repeats] + shape[dim + 1:]
    grown = aten.expand.default(aten.unsqueeze.default(self, dim + 1), expanded)
    shape[dim] *= repeats
    return aten.view.default(aten.clone.default(grown, memory_format=_contiguous()), shape)


def _contiguous():
    from ... import contiguous_format
    return contiguous_format


def roll(self, shifts, dims=()):
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not dims:
        if len(shifts) != 1:
            return eager_error(aten.roll.default, self, shifts, dims)
        flat = aten.view.default(aten.clone.default(self, memory_format=_contiguous()), [-1])
        return aten.view.default(roll(flat, shifts, [0]), list(self.shape))
    if len(shifts) != len(dims):
        return eager_error(aten.roll.default, self, shifts, dims)
    result = self
    for shift, dim in zip(shifts, dims):
        dim = _wrap(dim, self.dim())
        length = self.shape[dim]
        if length == 0:
            continue
        shift %= length
        if shift:
            tail = aten.slice.Tensor(result, dim, length - shift, length)
            head = aten.slice.Tensor(result, dim, 0, length - shift)
            result = aten.cat.default([tail, head], dim)
    if result is self or not result.is_contiguous():
        return aten.clone.default(result, memory_format=_contiguous())    # eager's roll: a contiguous copy
    return result


def _band(self, diagonal, lower):
    """The mask col - row <= diagonal (lower) or >= diagonal (upper) over the last two dims."""
    if self.dim() < 2:
        return None
    rows, cols = self.shape[-2], self.shape[-1]
    from ... import int64
    row = aten.unsqueeze.default(aten.arange.start_step(0, rows, 1, dtype=int64, device=self.device), -1)
    col = aten.arange.start_step(0, cols, 1, dtype=int64, device=self.device)
    offset = aten.sub.Tensor(col, row)
    return aten.le.Tensor(offset, diagonal) if lower else aten.ge.Tensor(offset, diagonal)


def tril(self, diagonal=0):
    mask = _band(self, diagonal, True)
    if mask is None:
        return eager_error(aten.tril.default, self, diagonal)
    return aten.where.self(mask, self, aten.full_like.default(self, 0))


def triu(self, diagonal=0):
    mask = _band(self, diagonal, False)
    if mask is None:
        return eager_error(aten.triu.default, self, diagonal)
    return aten.where.self(mask, self, aten.full_like.default(self, 0))


def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """A zero matrix per vector of the last dim, the vector on its `offset` diagonal."""
    n = self.shape[-1] + abs(offset) if self.dim() else 0
    ndim = self.dim() + 1
    dim1, dim2 = _wrap(dim1, ndim), _wrap(dim2, ndim)
    if self.dim() == 0 or dim1 == dim2:
        return eager_error(aten.diag_embed.default, self, offset, dim1, dim2)
    from ... import int64
    row = aten.unsqueeze.default(aten.arange.start_step(0, n, 1, dtype=int64, device=self.device), -1)
    col = aten.arange.start_step(0, n, 1, dtype=int64, device=self.device)
    on_diagonal = aten.eq.Tensor(aten.sub.Tensor(col, row), offset)        # [n, n]
    # element k of the vector sits at (k, k + offset): pad |offset| zeros in front, then index by column
    # (offset >= 0) or by row (offset < 0)
    vec = aten.constant_pad_nd.default(self, [abs(offset), 0]) if offset else self
    # vec[..., j] for offset >= 0 sits at (j - offset, j): take it by column; offset < 0 by row
    by = col if offset >= 0 else aten.squeeze.dims(row, [1])
    picked = aten.index_select.default(vec, -1, by)                     # [..., n]
    picked = aten.unsqueeze.default(picked, -2 if offset >= 0 else -1)   # broadcast over the other index
    result = aten.where.self(on_diagonal, picked, aten.full_like.default(picked, 0))  # [..., n, n]
    batch = self.dim() - 1
    order = list(range(batch))
    order.insert(dim1 if dim1 < dim2 else dim2, batch if dim1 < dim2 else batch + 1)
    order.insert(dim2 if dim1 < dim2 else dim1, batch + 1 if dim1 < dim2 else batch)
    if order == sorted(order):
        return result
    return aten.clone.default(aten.permute.default(result, order), memory_format=_contiguous())   # a fresh tensor


def diag(self, diagonal=0):
    if self.dim() == 1:
        return diag_embed(self, diagonal, 0, 1)
    if self.dim() == 2:
        return aten.clone.default(aten.diagonal.default(self, diagonal))
    return eager_error(aten.diag.default, self, diagonal)


def contiguous(self, memory_format=None):
    from ... import contiguous_format
    memory_format = contiguous_format if memory_format is None else memory_format
    if self.is_contiguous(memory_format=memory_format):
        return self
    return aten.clone.default(self, memory_format=memory_format)


def detach(self):
    from ... import no_grad
    with no_grad():
        return aten.alias.default(self)


def pixel_shuffle(self, upscale_factor):
    r = upscale_factor
    *batch, c, h, w = self.shape
    if self.dim() < 3 or c % (r * r):
        return eager_error(aten.pixel_shuffle.default, self, upscale_factor)
    n = len(batch)
    split = aten.view.default(contiguous(self), batch + [c // (r * r), r, r, h, w])
    order = list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]
    moved = aten.permute.default(split, order)
    copied = aten.clone.default(moved, memory_format=_contiguous())
    return aten.view.default(copied, batch + [c // (r * r), h * r, w * r])


def pixel_unshuffle(self, downscale_factor):
    r = downscale_factor
    *batch, c, h, w = self.shape
    if self.dim() < 3 or h % r or w % r:
        return eager_error(aten.pixel_unshuffle.default, self, downscale_factor)
    n = len(batch)
    split = aten.view.default(contiguous(self), batch + [c, h // r, r, w // r, r])
    order = list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]
    moved = aten.permute.default(split, order)
    copied = aten.clone.default(moved, memory_format=_contiguous())
    return aten.view.default(copied, batch + [c * r * r, h // r, w // r])


DECOMPOSITIONS = {
    "squeeze": squeeze_all, "transpose.int": transpose, "t": t, "unbind.int": unbind, "split.Tensor": split,
    "split.sizes": split_sizes, "unfold": unfold, "stack": stack, "repeat_interleave.self_int": repeat_interleave,
    "roll": roll, "tril": tril, "triu": triu, "diag_embed": diag_embed, "diag": diag, "contiguous": contiguous,
    "detach": detach, "pixel_shuffle": pixel_shuffle, "pixel_unshuffle": pixel_unshuffle,
}
