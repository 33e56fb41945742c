"""CPU kernels of the indexing family, on NumPy fancy indexing and ``ufunc.at``.

Every kernel first runs the shared shape/dtype rules (`ember/ops/meta/indexing.py`), then
checks index bounds, and only then writes: an op that raises leaves its inputs unchanged.
Accumulating writes (index_put_ with accumulate, scatter_add, index_add, put_) use
``np.<ufunc>.at`` so duplicate indices accumulate instead of the last one winning (float32/float64
index_add: the native index_add_rows kernel, the same sums in the same order); float16 and
bfloat16 accumulate in float32 and are rounded once.
"""
from __future__ import annotations

import warnings
from math import prod

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap
from .. import native
from .pointwise import ON_CUDA
from ..meta import indexing as R
from ..overlap import late_check

_HALF = {np.dtype(np.float16), _dt.bfloat16.np}
_F32 = np.dtype(np.float32)
_U8 = np.dtype(np.uint8)
_ON_CUDA = np.__name__ != "numpy"     # this file's CUDA variant (np bound to CuPy's namespace)


def _oob(a, n, *, negative=True):
    """The first out-of-range value of index array `a` for a dim of size `n`, or None."""
    if a.size == 0:
        return None
    lo = -n if negative else 0
    if a.min() >= lo and a.max() < n:
        return None
    return int(a[(a < lo) | (a >= n)].flat[0])


def _bounds(a, n, dim, *, negative=True, exc=RuntimeError, prefix=""):
    bad = _oob(a, n, negative=negative)
    if bad is not None:
        raise exc(f"{prefix}index {bad} is out of bounds for dimension {dim} with size {n}")


def inplace(kernel, name):
    """An in-place kernel from a functional one; the source/src must not overlap self (checked
    once the functional kernel has validated the arguments, as PyTorch orders it)."""
    def run(self, *args):
        out = kernel(self, *args)
        late_check(name, self, index=args[1], src=args[2])
        np.copyto(self._data, out._data)
        return self
    run.__name__ = name
    return run


def meta_inplace(kernel, name):
    def run(self, *args):
        kernel(self, *args)
        late_check(name, self)  # (meta tensors have no memory: internal overlap only)
        return self
    run.__name__ = name
    return run


def _scalar_array(value, np_dtype):
    """A checked Python number as a 0-d array of `np_dtype` (unsigned types wrap like C)."""
    return np.array(value).astype(np_dtype) if not isinstance(value, complex) or np_dtype.kind == "c" \
        else np.array(value.real).astype(np_dtype)


# ---------------------------------------------------------------------------------------
# index / index_put
# ---------------------------------------------------------------------------------------
def index_key(self, indices, op="index", check_bounds=True):
    """The NumPy key for ``aten::index`` (masks expanded, bounds checked unless asked not to)."""
    R.check_index_tensors(self.shape, indices, op)
    shape = self._data.shape
    key = []
    for t in indices:
        if t is None:
            key.append(slice(None))
            continue
        a = t._data
        kind = a.dtype.kind
        if kind == "b" or a.dtype == _U8:
            if kind != "b":
                warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool "
                              "instead.")
                a = a != 0
            if a.ndim == 0:
                raise NotImplementedError(f"{op}: a 0-dim boolean index tensor (use x[True] / x[False])")
            key.extend(np.nonzero(a))
        else:
            d = len(key)
            if check_bounds:
                _bounds(a, shape[d], d, exc=IndexError)
            key.append(a)
    return tuple(key)


def _empty_result(self, indices, op):
    """For an empty self: the key, and the result shape when the result is empty too. PyTorch
    checks bounds per element, so an empty result never raises."""
    key = index_key(self, indices, op, check_bounds=False)
    shape = R.advanced_shape(self.shape, [None if isinstance(k, slice) else k.shape for k in key])
    if 0 in shape:
        return key, shape
    return index_key(self, indices, op), None


def index(self, indices):
    """``aten::index.Tensor``: advanced indexing, always a copy."""
    if self._data.size == 0:
        key, shape = _empty_result(self, indices, "index")
        if shape is not None:
            return wrap(np.empty(shape, self._data.dtype))
        return wrap(self._data[key])
    key = index_key(self, indices)
    if ON_CUDA and len(key) > 1:   # CuPy refuses unbroadcastable index arrays with a ValueError (NumPy: IndexError)
        R.advanced_shape(self.shape, [None if isinstance(k, slice) else k.shape for k in key])
    return wrap(self._data[key])


def _check_values(self, key, values):
    shapes = [None if isinstance(k, slice) else k.shape for k in key]
    R.check_index_put_values(self, values, R.advanced_shape(self.shape, shapes))


def _add_at(arr, key, vals):
    """``arr[key] += vals`` with repeated indices accumulating (bool: logical or)."""
    if arr.dtype in _HALF:
        tmp = arr.astype(_F32)
        np.add.at(tmp, key, vals.astype(_F32) if hasattr(vals, "astype") else vals)
        arr[...] = tmp
    else:
        np.add.at(arr, key, vals)


def index_put_(self, indices, values, accumulate=False):
    """``aten::index_put_``: write (or accumulate) `values` at advanced indices, in place."""
    if self._data.size == 0:
        key, shape = _empty_result(self, indices, "index_put_")
        _check_values(self, key, values)
        return self
    key = index_key(self, indices, "index_put_")
    _check_values(self, key, values)
    if accumulate:
        _add_at(self._data, key, values._data)
    else:
        self._data[key] = values._data
    return self


def index_put(self, indices, values, accumulate=False):
    if self._data.size == 0:
        key, shape = _empty_result(self, indices, "index_put")
        _check_values(self, key, values)
        return wrap(self._data.copy())
    key = index_key(self, indices, "index_put")
    _check_values(self, key, values)
    out = self._data.copy()
    if accumulate:
        _add_at(out, key, values._data)
    else:
        out[key] = values._data
    return wrap(out)


# ---------------------------------------------------------------------------------------
# index_select, gather, scatter family
# ---------------------------------------------------------------------------------------
def index_select(self, dim, index):
    """Rows of `self` along `dim` picked by a 1-D (or 0-d) index; negative indices are errors."""
    shape = R.index_select_shape(self, dim, index)
    arr = self._data
    idx = index._data.reshape(-1)
    if arr.ndim == 0:
        if _oob(idx, 1, negative=False) is not None:
            raise IndexError("index out of range in self")
        idx = idx[:1]
        return wrap(arr.reshape(1)[idx].reshape(shape))
    dim = dim % arr.ndim
    bad = _oob(idx, arr.shape[dim], negative=False)
    if bad is not None:
        if dim == 0:
            raise IndexError("index out of range in self")
        raise RuntimeError(f"INDICES element is out of DATA bounds, id={bad} axis_dim={arr.shape[dim]}")
    return wrap(np.take(arr, idx, axis=dim))


def gather(self, dim, index, sparse_grad=False):
    """``out[i][j] = self[index[i][j]][j]`` (dim 0); index may be smaller than self."""
    dim = R.gather_check(self, dim, index)
    arr = self._data.reshape(-1) if self.ndim == 0 else self._data
    idx = index._data.reshape(-1) if index.ndim == 0 else index._data
    _bounds(idx, arr.shape[dim], dim, negative=False)
    sub = arr[tuple(slice(0, idx.shape[d]) if d != dim else slice(None) for d in range(arr.ndim))]
    return wrap(np.take_along_axis(sub, idx, axis=dim).reshape(index.shape))


def _scatter_key(idx, dim):
    """Full NumPy index tuple for scatter: `idx` along `dim`, positions elsewhere."""
    key = []
    for d in range(idx.ndim):
        if d == dim:
            key.append(idx)
        else:
            shape = [1] * idx.ndim
            shape[d] = idx.shape[d]
            key.append(np.arange(idx.shape[d]).reshape(shape))
    return tuple(key)


_UFUNC = {"sum": np.add, "prod": np.multiply, "amax": np.maximum, "amin": np.minimum, "mean": np.add}


def _identity(reduce, np_dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if np_dtype.kind == "b":
        return reduce == "amin"
    if np_dtype.kind in "iu":
        info = np.iinfo(np_dtype)
        return info.min if reduce == "amax" else info.max
    return -np.inf if reduce == "amax" else np.inf


def _scatter(self, dim, index, src, reduce=None, include_self=True, op="scatter"):
    """The one scatter kernel: plain writes (last one wins), or a reduction with ufunc.at."""
    dim = R.scatter_check(self, dim, index, src, op)
    value = None if isinstance(src, Tensor) else R.checked_scalar(src, self.dtype)
    zero_d = self.ndim == 0
    out = self._data.copy().reshape(-1) if zero_d else self._data.copy()
    if index.numel() == 0:
        return wrap(out.reshape(self.shape))
    if ON_CUDA and reduce not in (None, "sum") and self.dtype.category == _dt.COMPLEX:   # PyTorch CUDA's has none
        raise NotImplementedError(f'"cuda_scatter_gather_base_kernel_func" not implemented for '
                                  f"'{self.dtype.c10_name}'")
    idx = index._data.reshape(-1) if index.ndim == 0 else index._data
    _bounds(idx, out.shape[dim], dim, negative=False)
    key = _scatter_key(idx, dim)
    if value is None:
        s = src._data.reshape(-1) if src.ndim == 0 else src._data
        vals = s[tuple(slice(0, n) for n in idx.shape)]
    else:
        vals = _scalar_array(value, out.dtype)
    if reduce is None:
        out[key] = vals
        return wrap(out.reshape(self.shape))
    work = out.astype(_F32) if out.dtype in _HALF else out
    if not include_self:
        work[key] = _identity(reduce, work.dtype)
    vals = vals.astype(work.dtype) if vals.dtype != work.dtype else vals
    _UFUNC[reduce].at(work, key, vals)
    if reduce == "mean":
        count = np.full(work.shape, 1 if include_self else 0, dtype=np.int64)
        np.add.at(count, key, 1)
        nz = count > 0
        if work.dtype.kind in "iu":
            work[nz] = np.floor_divide(work[nz], count[nz]).astype(work.dtype)
        else:
            work[nz] = work[nz] / count[nz]
    if work is not out:
        out[...] = work
    return wrap(out.reshape(self.shape))


def scatter_src(self, dim, index, src):
    return _scatter(self, dim, index, src)


def scatter_value(self, dim, index, value):
    return _scatter(self, dim, index, value)


def scatter_reduce_src(self, dim, index, src, reduce):
    return _scatter(self, dim, index, src, R.scatter_reduce_name(reduce))


def scatter_value_reduce(self, dim, index, value, reduce):
    return _scatter(self, dim, index, value, R.scatter_reduce_name(reduce))


def scatter_add(self, dim, index, src):
    return _scatter(self, dim, index, src, "sum", op="scatter_add")


def scatter_reduce_two(self, dim, index, src, reduce, include_self=True):
    R.scatter_reduce_dtype_check(self, reduce)
    return _scatter(self, dim, index, src, R.scatter_reduce_name(reduce, two=True), include_self, op="scatter_reduce")


# ---------------------------------------------------------------------------------------
# index_add / index_copy / index_fill
# ---------------------------------------------------------------------------------------
def _along(arr, dim):
    """`arr` with `dim` moved first (a view), 0-d arrays as 1-element vectors."""
    return arr.reshape(1) if arr.ndim == 0 else np.moveaxis(arr, dim, 0)


def _capturing() -> bool:
    from ..._cuda.graphs import captures_underway, is_current_stream_capturing
    return bool(captures_underway[0]) and is_current_stream_capturing()


def _bounds_after_replay(idx, n, dim, one_dim):
    """index_add's bounds check under a CUDA graph capture (which cannot read the device): found
    on the device, raised after each replay (graphs.defer_check) with eager's error; meanwhile the
    out-of-range entries index row 0, so the replay writes nowhere outside its output."""
    from ..._cuda.graphs import defer_check
    bad = (idx < 0) | (idx >= n)
    found = np.stack([bad.any().astype(idx.dtype), np.take(idx, bad.argmax())])

    def check():
        any_bad, first = (int(v) for v in found.get())
        if any_bad:
            if one_dim:
                raise IndexError("index_add_(): index out of range in self")
            raise RuntimeError(f"index {first} is out of bounds for dimension {dim} with size {n}")
    defer_check(check)
    return np.where(bad, 0, idx)


def index_add(self, dim, index, source, alpha=1):
    """``self[index[i]] += alpha * source[i]`` along `dim`, repeated indices accumulating."""
    dim = R.index_op_check("index_add_", self, dim, index, source)
    out = self._data.copy()
    idx = index._data.reshape(-1)
    n = out.shape[dim] if out.ndim else 1
    if _ON_CUDA and idx.size and _capturing():     # (a capture cannot read the device: checked after each replay)
        idx = _bounds_after_replay(idx, n, dim, out.ndim <= 1)
    else:
        if out.ndim <= 1 and _oob(idx, n, negative=False) is not None:
            # PyTorch's 0-d / 1-d index_add_ kernel: an IndexError naming no index (a RuntimeError above)
            raise IndexError("index_add_(): index out of range in self")
        _bounds(idx, n, dim, negative=False)
    src = source._data
    if alpha != 1:
        a = R.checked_scalar(alpha, self.dtype) if self.dtype.category != _dt.BOOL else alpha
        src = (src.astype(_F32) * a) if src.dtype in _HALF else (src * np.array(a).astype(src.dtype))
    if not _native_index_add(out, dim, idx, src):
        _add_at(_along(out, dim), idx, _along(src.astype(out.dtype) if src.dtype != out.dtype and src.dtype not in
                                              _HALF else src, dim))
    return wrap(out)


def _native_index_add(out, dim, idx, src) -> bool:
    """index_add_rows (ember/ops/native.py) on a float32/float64 `out` (a fresh C-contiguous copy)
    and a `src` of its dtype and shape along `dim`: the same sums in the same order as np.add.at,
    ~10x faster (embedding's backward). False where it does not apply."""
    if out.ndim == 0 or src.dtype is not out.dtype or src.shape != out.shape[:dim] + idx.shape + out.shape[dim + 1:]:
        return False
    fn = native.kernel("index_add_rows", out.dtype)
    if fn is None or not idx.size:
        return fn is not None
    fn(out, np.ascontiguousarray(src), np.ascontiguousarray(idx, np.int64), prod(out.shape[:dim]), out.shape[dim],
       idx.size, prod(out.shape[dim + 1:]))
    return True


def index_copy(self, dim, index, source):
    dim = R.index_op_check("index_copy_", self, dim, index, source)
    out = self._data.copy()
    idx = index._data.reshape(-1)
    n = out.shape[dim] if out.ndim else 1
    _bounds(idx, n, dim, negative=False, exc=IndexError, prefix="index_copy_(): ")
    _along(out, dim)[idx] = _along(source._data, dim)
    return wrap(out)


def index_fill(self, dim, index, value):
    dim = R.index_op_check("index_fill_", self, dim, index)
    v = R.fill_value(value, self.dtype, "index_fill_")
    out = self._data.copy()
    idx = index._data.reshape(-1)
    n = out.shape[dim] if out.ndim else 1
    _bounds(idx, n, dim, exc=IndexError)
    _along(out, dim)[idx] = _scalar_array(v, out.dtype)
    return wrap(out)


# ---------------------------------------------------------------------------------------
# masks
# ---------------------------------------------------------------------------------------
def masked_fill(self, mask, value):
    shape = R.masked_fill_shape(self, mask, value)
    v = R.fill_value(value, self.dtype, "masked_fill_")
    arr = self._data
    out = np.array(np.broadcast_to(arr, shape)) if arr.shape != shape else arr.copy()
    np.copyto(out, _scalar_array(v, arr.dtype), where=mask._data)
    return wrap(out)


def masked_fill_(self, mask, value):
    """In place; the mask broadcasts to self (self does not grow)."""
    R.masked_fill_(self, mask, value)
    v = R.fill_value(value, self.dtype, "masked_fill_")
    np.copyto(self._data, _scalar_array(v, self._data.dtype), where=mask._data)
    return self


def masked_select(self, mask):
    shape = R.masked_select_check(self, mask)
    return wrap(np.broadcast_to(self._data, shape)[np.broadcast_to(mask._data, shape)])


def _masked_scatter_into(out, m, source):
    k = int(np.count_nonzero(m))
    if source.numel() < k:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out[m] = source._data.reshape(-1)[:k]


def masked_scatter(self, mask, source):
    shape = R.masked_scatter_check(self, mask, source)
    out = np.array(np.broadcast_to(self._data, shape))
    _masked_scatter_into(out, np.broadcast_to(mask._data, shape), source)
    return wrap(out)


def masked_scatter_(self, mask, source):
    R.masked_scatter_check(self, mask, source, inplace=True)
    _masked_scatter_into(self._data, np.broadcast_to(mask._data, self.shape), source)
    return self


# ---------------------------------------------------------------------------------------
# take / take_along_dim / put / nonzero
# ---------------------------------------------------------------------------------------
def _flat_oob(idx, n):
    bad = _oob(idx, n)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")


def take(self, index):
    """Elements of `self` viewed as 1-D (negative indices count from the end)."""
    R.take_check(self, index)
    flat = self._data.reshape(-1)
    idx = index._data
    _flat_oob(idx, flat.size)
    return wrap(flat[idx].reshape(index.shape))


def take_along_dim(self, indices, dim=None):
    dim, sshape, ishape = R.take_along_dim_shapes(self, indices, dim)
    if dim is None:
        arr, idx = self._data.reshape(-1), indices._data.reshape(-1)
        _bounds(idx, arr.size, 0, negative=False)
        return wrap(arr[idx])
    else:
        arr = np.broadcast_to(self._data, sshape)
        idx = np.broadcast_to(indices._data, ishape)
    if arr.ndim == 0:
        arr, idx = arr.reshape(1), idx.reshape(1)
    n = arr.shape[dim]
    _bounds(idx, n, dim)
    idx = np.where(idx < 0, idx + n, idx)
    return wrap(np.take_along_axis(arr, idx, axis=dim).reshape(ishape))


def put_(self, index, source, accumulate=False):
    """Write `source` at flat indices of `self` (any strides), in place."""
    R.put_check(self, index, source)
    late_check("put_", self, index=index, source=source)
    arr = self._data
    idx = index._data.reshape(-1)
    _flat_oob(idx, arr.size)
    if idx.size == 0:
        return self
    key = np.unravel_index(np.where(idx < 0, idx + arr.size, idx), arr.shape) if arr.ndim else ()
    vals = source._data.reshape(-1)
    if arr.ndim == 0:
        arr[...] = vals[-1] if not accumulate else arr + vals.sum()
    elif accumulate:
        _add_at(arr, key, vals)
    else:
        arr[key] = vals
    return self


def put(self, index, source, accumulate=False):
    R.put_check(self, index, source)
    late_check("put_", self, index=index, source=source)
    out = wrap(self._data.copy())
    return put_(out, index, source, accumulate)


def nonzero(self):
    """``[n, ndim]`` int64 coordinates of the non-zero elements, in row-major order."""
    return wrap(np.argwhere(self._data).astype(np.int64, copy=False))


def nonzero_numpy(self):
    arr = self._data
    if arr.ndim == 0:
        arr = arr.reshape(1)
    return tuple(wrap(a.astype(np.int64, copy=False)) for a in np.nonzero(arr))


argwhere = nonzero
