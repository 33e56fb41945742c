"""CPU kernels of the shape ops that copy: cat, stack, repeat, repeat_interleave, flip, roll,
tril/triu, diag, diag_embed. Shapes, dtypes and errors come from the rules in
`ember/ops/meta/shape.py` (shared with the Meta kernels); results are contiguous unless PyTorch
preserves the input's layout (flip).

Also the composites of the family (hstack, tile, rot90, tensor_split, chunk, atleast_Nd ...):
written with other operators, so they serve every backend and autograd.
"""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.storage import make_strided, contiguous_strides
from ..._core.tensor import Tensor, wrap
from .. import rules
from ..meta import shape as R
from . import views

_ndarray = np.ndarray


def _contig(arr):
    """A new C-contiguous array with PyTorch's strides (np.ascontiguousarray would turn 0-d into
    1-d, and keeps the odd strides NumPy allows on size-1 dims of a view)."""
    return arr if arr.flags.c_contiguous and arr.base is None else arr.copy(order="C")


def _as(t: Tensor, np_dtype):
    arr = t._data
    return arr if arr.dtype is np_dtype else arr.astype(np_dtype)


def empty_strided(shape, strides, np_dtype):
    """A fresh array with the given element strides (PyTorch's empty_strided)."""
    if strides is None:
        return np.empty(shape, np_dtype)
    size = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if 0 not in shape else 0
    buf = np.empty(size, np_dtype)
    return make_strided(buf, shape, strides, 0)


def cat(tensors, dim=0):
    """aten::cat: dtypes promoted across the inputs; legacy 1-D empty inputs skipped."""
    if len(tensors) == 2:  # the common case, without the generic bookkeeping
        a, b = tensors
        x, y = a._data, b._data
        if x.dtype is y.dtype and x.ndim == y.ndim and x.ndim > 0 and a.is_cpu and b.is_cpu:
            d = dim + x.ndim if -x.ndim <= dim < 0 else dim
            if 0 <= d < x.ndim and x.shape[:d] == y.shape[:d] and x.shape[d + 1:] == y.shape[d + 1:] and (
                    x.ndim > 1 or (x.shape[0] and y.shape[0])):
                return wrap(np.concatenate((x, y), axis=d))
    shape, dtype, d, parts = R.cat_rule(tensors, dim)
    np_dtype = dtype.np
    if not parts:
        return wrap(np.empty(shape, np_dtype))
    return wrap(np.concatenate([_as(t, np_dtype) for t in parts], axis=d))


def stack(tensors, dim=0):
    """aten::stack: equal shapes, joined along a new dim."""
    shape, dtype, d = R.stack_rule(tensors, dim)
    np_dtype = dtype.np
    return wrap(np.stack([_as(t, np_dtype) for t in tensors], axis=d))


def repeat(self, repeats):
    """Tensor.repeat: tile the (left-padded) tensor `repeats` times along each dim."""
    out_shape, padded = R.repeat_rule(self.shape, repeats)
    arr = self._data.reshape(padded)
    return wrap(_contig(np.tile(arr, repeats)) if arr.size and all(out_shape) else np.empty(out_shape, arr.dtype))


def repeat_interleave_int(self, repeats, dim=None, output_size=None):
    """aten::repeat_interleave.self_int: each element repeated `repeats` times along dim
    (the flattened tensor when dim is None)."""
    shape, d, reps = R.repeat_interleave_rule(self, repeats, dim, output_size)
    arr = self._data.reshape(-1) if dim is None else self._data.reshape(self.shape or (1,))
    out = np.repeat(arr, reps, axis=d)
    return wrap(_contig(out).reshape(shape))


def repeat_interleave_tensor(self, repeats, dim=None, output_size=None):
    return repeat_interleave_int(self, repeats, dim, output_size)


def repeat_interleave_indices(repeats, output_size=None):
    """aten::repeat_interleave.Tensor: index i repeated repeats[i] times."""
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    idx = wrap(np.arange(repeats.shape[0], dtype=repeats._data.dtype))
    return repeat_interleave_int(idx, repeats, 0, output_size)


def flip(self, dims):
    """aten::flip: a copy with the given dims reversed (the input's layout kept when dense)."""
    wrapped = rules.wrap_dims(dims, self.ndim)
    arr = self._data
    values = np.flip(arr, wrapped) if wrapped and arr.ndim else arr
    strides = R.dense_strides(arr.shape, self.stride())
    out = empty_strided(arr.shape, strides, arr.dtype)
    np.copyto(out, values)
    return wrap(out)


def roll(self, shifts, dims=()):
    """aten::roll: elements shifted circularly; no dims: the flattened tensor."""
    wrapped = R.roll_rule(self, shifts, dims)
    arr = self._data
    if wrapped == "empty":
        return wrap(empty_strided(arr.shape, R.dense_strides(arr.shape, self.stride()), arr.dtype))
    if wrapped is None:
        return wrap(np.roll(arr.reshape(-1), shifts[0]).reshape(arr.shape))
    return wrap(_contig(np.roll(arr, shifts, wrapped)))


def _tri(op, lower):
    def kernel(self, diagonal=0):
        R.tri_rule(self, op)
        arr = self._data
        rows, cols = arr.shape[-2:]
        i = np.arange(rows)[:, None]
        j = np.arange(cols)[None, :]
        keep = (j - i <= diagonal) if lower else (j - i >= diagonal)
        out = np.zeros(arr.shape, arr.dtype)
        np.copyto(out, arr, where=keep)
        return wrap(out)
    kernel.__name__ = op
    return kernel


tril = _tri("tril", True)
triu = _tri("triu", False)


def diag(self, diagonal=0):
    """aten::diag: 1-D -> a square matrix with it on a diagonal; 2-D -> a copy of its diagonal."""
    shape = R.diag_rule(self, diagonal)
    arr = self._data
    if arr.ndim == 2:
        return wrap(_contig(np.diagonal(arr, diagonal)) if shape[0] else np.empty(shape, arr.dtype))
    out = np.zeros(shape, arr.dtype)
    _diagonal_of(out, diagonal, 0, 1)[...] = arr
    return wrap(out)


def _diagonal_of(arr, offset, d1, d2):
    """A writable ndarray view of arr's diagonal (views.diagonal_geometry)."""
    strides = contiguous_strides(arr.shape)
    return make_strided(arr, *views.diagonal_geometry(arr.shape, strides, 0, offset, d1, d2))


def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """aten::diag_embed: the last dim of self placed on the (dim1, dim2) diagonal of zeros."""
    shape, d1, d2 = R.diag_embed_rule(self, offset, dim1, dim2)
    arr = self._data
    out = np.zeros(shape, arr.dtype)
    _diagonal_of(out, offset, d1, d2)[...] = arr
    return wrap(out)


# ---------------------------------------------------------------------------------------
# composites: written with other operators, so every backend (and autograd) gets them
# ---------------------------------------------------------------------------------------
_call = views._call


def concat(tensors, dim=0):
    return _call("cat", "default", tensors, dim)


def hstack(tensors):
    if not tensors:
        raise RuntimeError("hstack expects a non-empty TensorList")
    ts = _call("atleast_1d", "Sequence", tensors)
    return _call("cat", "default", ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors):
    if not tensors:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return _call("cat", "default", _call("atleast_2d", "Sequence", tensors), 0)


def dstack(tensors):
    if not tensors:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return _call("cat", "default", _call("atleast_3d", "Sequence", tensors), 2)


def column_stack(tensors):
    if not tensors:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    cols = [_call("reshape", "default", t, (t.numel(), 1)) if t.ndim <= 1 else t for t in tensors]
    return _call("cat", "default", cols, 1)


def tile(self, dims):
    """aten::tile: repeat, with `dims` left-padded with ones to self's rank."""
    if len(dims) < self.ndim:
        dims = (1,) * (self.ndim - len(dims)) + tuple(dims)
    return _call("repeat", "default", self, dims)


def fliplr(self):
    if self.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _call("flip", "default", self, (1,))


def flipud(self):
    if self.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _call("flip", "default", self, (0,))


def rot90(self, k=1, dims=(0, 1)):
    """aten::rot90: rotate k quarter turns in the plane of dims (flip + transpose, like ATen)."""
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if self.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {self.ndim}")
    d0, d1 = dims
    if rules.wrap_dim(d0, self.ndim) == rules.wrap_dim(d1, self.ndim):
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return _call("transpose", "int", _call("flip", "default", self, (d1,)), d0, d1)
    if k == 2:
        return _call("flip", "default", self, (d0, d1))
    if k == 3:
        return _call("transpose", "int", _call("flip", "default", self, (d0,)), d0, d1)
    return _call("clone", "default", self, memory_format="contiguous_format")


def diagflat(self, offset=0):
    return _call("diag", "default", _call("reshape", "default", self, (-1,)), offset)


# ---------------------------------------------------------------------------------------
# splitting and atleast_Nd: composites of slice / split / reshape / unsqueeze
# ---------------------------------------------------------------------------------------
def _tensor_split_dim(self, dim):
    if not self.ndim:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    return rules.wrap_dim(dim, self.ndim)


def tensor_split_sections(self, sections, dim=0):
    d = _tensor_split_dim(self, dim)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    small, extra = divmod(self.shape[d], sections)
    out, start = [], 0
    for i in range(sections):
        stop = start + small + (i < extra)
        out.append(_call("slice", "Tensor", self, d, start, stop, 1))
        start = stop
    return tuple(out)


def tensor_split_indices(self, indices, dim=0):
    d = _tensor_split_dim(self, dim)
    out, start = [], 0
    for idx in list(indices) + [None]:
        out.append(_call("slice", "Tensor", self, d, start, idx, 1))
        start = idx
    return tuple(out)


def tensor_split_tensor(self, tensor_indices_or_sections, dim=0):
    t = tensor_indices_or_sections
    if not t.is_cpu:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be on cpu, but it's on "
                           f"{t.device}")
    if t.dtype is not _dt.int64:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                           f"{t.dtype.c10_name}")
    if t.ndim > 1:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                           f"one-dimensional tensor, but got a tensor with {t.ndim} dims")
    if t.ndim == 0:
        return tensor_split_sections(self, int(t.item()), dim)
    return tensor_split_indices(self, [int(v) for v in t.tolist()], dim)


def chunk(self, chunks, dim=0):
    if not self.ndim:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = rules.wrap_dim(dim, self.ndim)
    size = self.shape[d]
    split_size = (size + chunks - 1) // chunks
    if split_size == 0 and size == 0:
        return _call("split_with_sizes", "default", self, [0] * chunks, d)
    return _call("split", "Tensor", self, split_size, d)


def _xsplit(name, min_dims, dim_of):
    def sections_kernel(self, sections):
        _xsplit_check(self, name, min_dims)
        d = dim_of(self)
        if sections == 0 or self.shape[d] % sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the dimension "
                               f"{self.shape[d]} is not divisible by the split_size {sections}!")
        return tensor_split_sections(self, sections, d)

    def indices_kernel(self, indices):
        _xsplit_check(self, name, min_dims)
        return tensor_split_indices(self, indices, dim_of(self))
    sections_kernel.__name__, indices_kernel.__name__ = name, name + "_array"
    return sections_kernel, indices_kernel


def _xsplit_check(self, name, min_dims):
    if self.ndim < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                           f"{self.ndim} dimensions!")


hsplit, hsplit_array = _xsplit("hsplit", 1, lambda t: 0 if t.ndim == 1 else 1)
vsplit, vsplit_array = _xsplit("vsplit", 2, lambda t: 0)
dsplit, dsplit_array = _xsplit("dsplit", 3, lambda t: 2)


def atleast(n):
    """atleast_1d/2d/3d: reshape 0-d to ones, 1-d (n,) to (1, n) or (1, n, 1), 2-d to (m, k, 1)."""
    def kernel(self):
        d = self.ndim
        if d >= n:
            return self
        if d == 0:
            return _call("reshape", "default", self, (1,) * n)
        if d == 1 and n >= 2:
            out = _call("unsqueeze", "default", self, 0)
            return out if n == 2 else _call("unsqueeze", "default", out, -1)
        return _call("unsqueeze", "default", self, -1)
    kernel.__name__ = f"atleast_{n}d"
    return kernel


def atleast_seq(n):
    """atleast_Nd.Sequence: atleast_Nd of each tensor."""

    def kernel(tensors):
        return tuple(_call(f"atleast_{n}d", "default", t) for t in tensors)
    kernel.__name__ = f"atleast_{n}d_sequence"
    return kernel
