"""Decompositions of indexing ops (ember/ops/table/indexing.py) into gather/scatter/index/index_put,
index_select, where and nonzero. ``index_*`` along a dim become a scatter with the index
broadcast over the other dims (ATen's decompositions do the same through index_put)."""
from __future__ import annotations

from ._ops import aten, to


def _spread_index(index, dim, shape):
    """A 1-D `index` along `dim` as a scatter index of `shape` (index[i] at position i of dim)."""
    view = [1] * len(shape)
    if shape:
        view[dim] = index.numel()
    spread = aten.view.default(index, view) if shape else aten.view.default(index, [])
    return aten.expand.default(spread, list(shape))


def _index_check(self, dim, index, name):
    if index.dim() > 1:
        raise IndexError(f"{name}(): Index is supposed to be a vector")
    if index.dtype.name not in ("int64", "int32"):
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    return dim % max(self.dim(), 1)


def index_add(self, dim, index, source, alpha=1):
    dim = _index_check(self, dim, index, "index_add")
    if self.dim() == 0:
        return aten.add.Tensor(self, aten.mul.Tensor(aten.view.default(source, []), alpha))
    shape = list(source.shape) if source.dim() else [1]
    source = source if source.dim() else aten.view.default(source, [1])
    scaled = source if alpha == 1 else aten.mul.Tensor(source, alpha)
    return aten.scatter_add.default(self, dim, _spread_index(index, dim, shape), scaled)


def index_copy(self, dim, index, source):
    dim = _index_check(self, dim, index, "index_copy")
    if self.dim() == 0:
        return aten.clone.default(aten.view.default(source, []))
    return aten.scatter.src(self, dim, _spread_index(index, dim, list(source.shape)), source)


def index_fill_scalar(self, dim, index, value):
    dim = _index_check(self, dim, index, "index_fill")
    if self.dim() == 0:
        return aten.full_like.default(self, value) if index.numel() else aten.clone.default(self)
    shape = list(self.shape)
    shape[dim] = index.numel()
    return aten.scatter.value(self, dim, _spread_index(index, dim, shape), value)


def index_fill_tensor(self, dim, index, value):
    if value.dim() != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    dim = _index_check(self, dim, index, "index_fill")
    if self.dim() == 0:
        return to(aten.clone.default(value), self.dtype) if index.numel() else aten.clone.default(self)
    shape = list(self.shape)
    shape[dim] = index.numel()
    filler = aten.expand.default(to(value, self.dtype), shape)
    return aten.scatter.src(self, dim, _spread_index(index, dim, shape), filler)


def masked_fill_scalar(self, mask, value):
    if mask.dtype.name != "bool":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype.c10_name}")
    return aten.where.self(mask, aten.full_like.default(self, value, dtype=self.dtype), self)


def masked_fill_tensor(self, mask, value):
    if value.dim() != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                           f"{value.dim()} dimension(s).")
    if mask.dtype.name != "bool":
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask.dtype.c10_name}")
    return aten.where.self(mask, to(value, self.dtype), self)


def _flat(x):
    if x.is_contiguous():
        return aten.view.default(x, [-1])
    return aten.view.default(aten.clone.default(x, memory_format=_contiguous()), [-1])


def _contiguous():
    from ... import contiguous_format
    return contiguous_format


def take(self, index):
    if index.dtype.name != "int64":
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.c10_name}")
    flat = _flat(self)
    if flat.numel() == 0 and index.numel():
        raise IndexError("take(): tried to take from an empty tensor")
    return aten.index.Tensor(flat, [index])


def take_along_dim(self, indices, dim=None):
    if dim is None:
        return take(self, _flat(indices))
    ndim = self.dim()
    dim = dim % max(ndim, 1)
    if indices.dim() != ndim:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {ndim} dimensions for input, and {indices.dim()} dimensions for indices")
    self_shape, index_shape = list(self.shape), list(indices.shape)
    from ... import broadcast_shapes
    self_shape[dim] = index_shape[dim] = 1
    common = list(broadcast_shapes(self_shape, index_shape))
    self_target, index_target = list(common), list(common)
    self_target[dim], index_target[dim] = self.shape[dim], indices.shape[dim]
    return aten.gather.default(aten.expand.default(self, self_target), dim,
                               aten.expand.default(indices, index_target))


def put(self, index, source, accumulate=False):
    flat = _flat(self)
    written = aten.index_put.default(flat, [_flat(index)], _flat(source), accumulate)
    return aten.view.default(written, list(self.shape))


def argwhere(self):
    return aten.nonzero.default(self)


def nonzero_numpy(self):
    found = aten.nonzero.default(self)
    return [aten.select.int(found, 1, d) for d in range(found.shape[1])]


_REDUCE = {"add": "sum", "multiply": "prod"}


def scatter_value_reduce(self, dim, index, value, reduce):
    if reduce not in _REDUCE:
        raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
    values = aten.full_like.default(index, value, dtype=self.dtype)
    return aten.scatter_reduce.two(self, dim, index, values, _REDUCE[reduce])


def scatter_src_reduce(self, dim, index, src, reduce):
    if reduce not in _REDUCE:
        raise RuntimeError(f"reduce argument must be either add or multiply. Got {reduce}")
    if src.dim() == index.dim() and tuple(src.shape) != tuple(index.shape):
        src = _crop(src, index.shape)
    return aten.scatter_reduce.two(self, dim, index, src, _REDUCE[reduce])


def _crop(src, shape):
    """scatter reads src only where index has elements: its leading corner of index's shape."""
    for d, n in enumerate(shape):
        if src.shape[d] != n:
            src = aten.slice.Tensor(src, d, 0, n)
    return src


DECOMPOSITIONS = {
    "index_add": index_add, "index_copy": index_copy, "index_fill.int_Scalar": index_fill_scalar,
    "index_fill.int_Tensor": index_fill_tensor, "masked_fill.Scalar": masked_fill_scalar,
    "masked_fill.Tensor": masked_fill_tensor, "take": take, "take_along_dim": take_along_dim, "put": put,
    "argwhere": argwhere, "nonzero_numpy": nonzero_numpy,
    "scatter.value_reduce": scatter_value_reduce, "scatter.reduce": scatter_src_reduce,
}
