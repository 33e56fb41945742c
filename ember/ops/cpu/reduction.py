"""CPU kernels of the reductions: sum, mean, prod, max/min, amax, argmax, var/std, norm,
logsumexp, all/any, count_nonzero.

Shapes, dtypes and errors come from the family's plans (`ember/ops/meta/reduction.py`), run
before any data is read. dtypes follow PyTorch: bool and integers sum to int64, mean needs a
floating or complex dtype, var/std/norm of complex are real. float16/bfloat16 accumulate in
float32 and round once at the end, as PyTorch's CPU kernels do. A 0-d tensor accepts dim 0/-1:
NumPy has no axis there, so it reduces over ``axis=()``.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import wrap
from ..meta import reduction as M
from ..meta.histogram import plan_histc
from .. import rules
from .pointwise import ON_CUDA

_ndarray = np.ndarray
_F32 = np.dtype(np.float32)
_HALF = {np.dtype(np.float16), _dt.bfloat16.np}
_COMPLEX = _dt.COMPLEX
_INF = float("inf")


def compute(np_dtype):
    """The dtype to compute in: half types in float32."""
    return _F32 if np_dtype in _HALF else np_dtype


def acc(arr):
    """The array to accumulate in: half types widened to float32 (exact, order-preserving)."""
    return arr.astype(_F32) if arr.dtype in _HALF else arr


def cast(arr, np_dtype):
    """`arr` in `np_dtype` (complex to real keeps the real part, as PyTorch's casts do)."""
    if arr.dtype is np_dtype:
        return arr
    if arr.dtype.kind == "c" and np_dtype.kind != "c":
        arr = arr.real
    return arr.astype(np_dtype)


def finish(res, np_dtype):
    """Wrap a NumPy result (array or scalar), cast to `np_dtype`."""
    if res.__class__ is not _ndarray:
        res = np.asarray(res)
    if res.dtype is not np_dtype:
        res = res.astype(np_dtype)
    return wrap(res)


def axes(arr, dims):
    """NumPy axes for wrapped dims: a 0-d array has none."""
    return dims if arr.ndim else ()


def count(shape, dims) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


# ---------------------------------------------------------------------------------------
# sum, nansum, mean, nanmean, prod
# ---------------------------------------------------------------------------------------
_add_reduce = np.add.reduce


def _single_dim(dim, ndim):
    """The axis of a one-dim reduction that needs no checks (in range, tensor not 0-d), or None."""
    if dim.__class__ is tuple and len(dim) == 1 and ndim:
        d = dim[0]
        if -ndim <= d < ndim:
            return d
    return None


def sum_dim(self, dim, keepdim=False, dtype=None):
    """sum over `dim` (None or [] = all dims), in `dtype` or PyTorch's default accumulation type."""
    arr = self._data
    if dtype is None and arr.dtype.kind == "f" and arr.dtype not in _HALF:  # hot paths: float sums
        if dim is None:
            return wrap(np.asarray(_add_reduce(arr, axis=None)))
        d = _single_dim(dim, arr.ndim)
        if d is not None:
            return wrap(np.asarray(_add_reduce(arr, axis=d, keepdims=keepdim)))
    dims, _, out_dt = M.plan_sum(self, dim, keepdim, dtype)
    onp = out_dt.np
    cnp = compute(onp)
    return finish(np.sum(cast(arr, cnp), axis=axes(arr, dims), dtype=cnp, keepdims=keepdim), onp)


def sum(self, dtype=None):
    arr = self._data
    if dtype is None and arr.dtype.kind == "f" and arr.dtype not in _HALF:  # hot path
        return wrap(_add_reduce(arr, axis=None))
    return sum_dim(self, None, False, dtype)


def nansum(self, dim=None, keepdim=False, dtype=None):
    dims, _, out_dt = M.plan_nansum(self, dim, keepdim, dtype)
    arr, onp = self._data, out_dt.np
    cnp = compute(onp)
    return finish(np.nansum(cast(arr, cnp), axis=axes(arr, dims), dtype=cnp, keepdims=keepdim), onp)


def mean_dim(self, dim, keepdim=False, dtype=None):
    """sum / count in the float (or complex) result dtype; an empty reduction is NaN."""
    arr = self._data
    if dtype is None and arr.dtype.kind == "f" and arr.dtype not in _HALF and dim is not None:
        d = _single_dim(dim, arr.ndim)
        if d is not None:  # hot path: float mean over one dim
            return wrap(np.asarray(_add_reduce(arr, axis=d, keepdims=keepdim) / arr.shape[d]))
    dims, _, out_dt = M.plan_mean(self, dim, keepdim, dtype)
    onp = out_dt.np
    a = cast(arr, compute(onp))
    s = np.sum(a, axis=axes(arr, dims), keepdims=keepdim)
    return finish(s / count(arr.shape, axes(arr, dims)), onp)


def mean(self, dtype=None):
    arr = self._data
    if dtype is None and arr.dtype.kind == "f" and arr.dtype not in _HALF and arr.size:  # hot path
        return wrap(_add_reduce(arr, axis=None) / arr.size)
    return mean_dim(self, None, False, dtype)


def nanmean(self, dim=None, keepdim=False, dtype=None):
    dims, _, out_dt = M.plan_nanmean(self, dim, keepdim, dtype)
    arr, onp = self._data, out_dt.np
    a = cast(arr, compute(onp))
    ax = axes(arr, dims)
    s = np.nansum(a, axis=ax, keepdims=keepdim)
    n = np.sum(~np.isnan(a), axis=ax, keepdims=keepdim)
    return finish(s / n.astype(s.dtype), onp)


def prod_dim(self, dim, keepdim=False, dtype=None):
    dims, _, out_dt = M.plan_prod(self, dim, keepdim, dtype)
    arr, onp = self._data, out_dt.np
    cnp = compute(onp)
    return finish(np.prod(cast(arr, cnp), axis=axes(arr, dims), dtype=cnp, keepdims=keepdim), onp)


def prod(self, dtype=None):
    return prod_dim(self, None, False, dtype)


# ---------------------------------------------------------------------------------------
# max / min family (NaN propagates; ties give the first index)
# ---------------------------------------------------------------------------------------
def _all_kernel(op, reduce, ufunc):
    def kernel(self):
        arr = self._data
        if arr.size and arr.dtype.kind in "fiub" and arr.dtype not in _HALF:  # hot path
            return wrap(ufunc.reduce(arr, axis=None))
        M.plan_max_all(self, op)
        return finish(reduce(acc(arr)), arr.dtype)
    kernel.__name__ = op
    return kernel


max_all = _all_kernel("max", np.max, np.maximum)  # maximum.reduce propagates NaN, as PyTorch does
min_all = _all_kernel("min", np.min, np.minimum)


def arg_along(arr, d, keepdim, argfn):
    """(values, int64 indices) of argmax/argmin along d; NumPy picks the first max and the first
    NaN, as PyTorch does."""
    if arr.ndim == 0:
        return arr.copy(), np.zeros((), np.int64)
    idx = argfn(acc(arr), axis=d, keepdims=True)
    vals = np.take_along_axis(arr, idx, axis=d)
    if not keepdim:
        idx, vals = idx.squeeze(d), vals.squeeze(d)
    return vals, idx.astype(np.int64, copy=False)


def _dim_kernel(op, cls, argfn):
    def kernel(self, dim, keepdim=False):
        d, _ = M.plan_max_dim(self, dim, keepdim, op)
        vals, idx = arg_along(self._data, d, keepdim, argfn)
        return cls((wrap(np.asarray(vals)), wrap(np.asarray(idx))))
    kernel.__name__ = op + "_dim"
    return kernel


max_dim = _dim_kernel("max", M.rt.max, np.argmax)
min_dim = _dim_kernel("min", M.rt.min, np.argmin)


def _amax_kernel(op, reduce):
    def kernel(self, dim=(), keepdim=False):
        dims, _ = M.plan_amax(self, dim, keepdim, op)
        arr = self._data
        return finish(reduce(acc(arr), axis=axes(arr, dims), keepdims=keepdim), arr.dtype)
    kernel.__name__ = op
    return kernel


amax = _amax_kernel("amax", np.max)
amin = _amax_kernel("amin", np.min)


def aminmax(self, dim=None, keepdim=False):
    d, shape = M.plan_aminmax(self, dim, keepdim)
    if dim is None and ON_CUDA:
        shape = ()   # PyTorch's CUDA kernel reduces everything to a 0-d result, keepdim or not
    arr = self._data
    a = acc(arr)
    ax = None if d is None or not arr.ndim else d
    lo, hi = np.min(a, axis=ax), np.max(a, axis=ax)
    return M.rt.aminmax((finish(np.reshape(lo, shape), arr.dtype), finish(np.reshape(hi, shape), arr.dtype)))


def _argmax_kernel(op, argfn):
    def kernel(self, dim=None, keepdim=False):
        d, shape = M.plan_argmax(self, dim, keepdim, op)
        arr = self._data
        if d is None:
            return wrap(np.asarray(argfn(acc(arr).reshape(-1)), np.int64).reshape(shape))
        return wrap(np.asarray(arg_along(arr, d, keepdim, argfn)[1]))
    kernel.__name__ = op
    return kernel


argmax = _argmax_kernel("argmax", np.argmax)
argmin = _argmax_kernel("argmin", np.argmin)

def _binary_extreme(name, ufunc):
    def kernel(self, other):
        """max(a, b) / min(a, b): elementwise with PyTorch's promotion, NaN propagating."""
        if self.dtype.category == _COMPLEX or other.dtype.category == _COMPLEX:
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        rules.broadcast_shapes(self.shape, other.shape, op=name)
        onp = rules.common_dtype(self, other).np
        cnp = compute(onp)
        return finish(ufunc(cast(self._data, cnp), cast(other._data, cnp)), onp)
    kernel.__name__ = name
    return kernel


max_other = _binary_extreme("maximum", np.maximum)
min_other = _binary_extreme("minimum", np.minimum)


# ---------------------------------------------------------------------------------------
# var / std (two passes: mean, then the sum of squared deviations)
# ---------------------------------------------------------------------------------------
def _moments(self, dim, correction, keepdim, op, take_sqrt, with_mean):
    dims, shape, real_dt = M.plan_var(self, dim, keepdim, op)
    arr = self._data
    a = acc(arr)
    ax = axes(arr, dims)
    n = count(arr.shape, ax)
    mean = np.sum(a, axis=ax, keepdims=True) / n
    dev = a - mean
    sq = dev.real * dev.real + dev.imag * dev.imag if a.dtype.kind == "c" else dev * dev
    m2 = np.sum(sq, axis=ax, keepdims=keepdim)
    denom = n - correction
    if denom <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      f"reduction factor (input numel divided by output numel).", UserWarning, stacklevel=3)
        denom = 0
    v = np.asarray(m2) / denom
    if take_sqrt:
        v = np.sqrt(v)
    out = finish(v, real_dt.np)
    if with_mean:
        return out, finish(np.reshape(mean, shape), arr.dtype)
    return out


def _var_family(op, take_sqrt, with_mean):
    def run(self, dim, correction, keepdim):
        return _moments(self, dim, correction, keepdim, op, take_sqrt, with_mean)
    return M._var_overloads(run)


var, var_dim, var_correction = _var_family("var", False, False)
std, std_dim, std_correction = _var_family("std", True, False)
var_mean, var_mean_dim, var_mean_correction = _var_family("var_mean", False, True)
std_mean, std_mean_dim, std_mean_correction = _var_family("std_mean", True, True)


# ---------------------------------------------------------------------------------------
# norm, logsumexp
# ---------------------------------------------------------------------------------------
def norm(self, p=2, dim=None, keepdim=False, dtype=None):
    """The vector p-norm over `dim` (all dims when None): inf/-inf are max/min of |x|, 0 counts
    non-zeros."""
    p = 2 if p is None else p
    dims, _, out_dt = M.plan_norm(self, p, dim, keepdim, dtype)
    arr = self._data
    if dtype is not None:
        arr = arr.astype(dtype.np)
    a = np.abs(acc(arr))
    ax = axes(arr, dims)
    if p == 2:
        r = np.sqrt(np.sum(a * a, axis=ax, keepdims=keepdim))
    elif p == 1:
        r = np.sum(a, axis=ax, keepdims=keepdim)
    elif p == _INF:
        r = np.max(a, axis=ax, keepdims=keepdim)
    elif p == -_INF:
        r = np.min(a, axis=ax, keepdims=keepdim)
    elif p == 0:
        r = np.sum(a != 0, axis=ax, keepdims=keepdim).astype(a.dtype)
    else:
        r = np.sum(a ** p, axis=ax, keepdims=keepdim) ** (1.0 / p)
    return finish(r, out_dt.np)


def norm_dtype(self, p, dtype):
    return norm(self, p, None, False, dtype)


def logsumexp(self, dim, keepdim=False):
    """log(sum(exp(x))) computed as m + log(sum(exp(x - m))) with m the max (0 where infinite)."""
    dims, shape, out_dt = M.plan_logsumexp(self, dim, keepdim)
    arr, onp = self._data, out_dt.np
    a = cast(arr, compute(onp))
    ax = axes(arr, dims)
    if a.size == 0:
        return finish(np.log(np.sum(np.exp(a), axis=ax, keepdims=keepdim)), onp)
    m = np.max(a.real if a.dtype.kind == "c" else a, axis=ax, keepdims=True)
    m = np.where(np.isinf(m), 0, m).astype(m.dtype)
    r = np.log(np.sum(np.exp(a - m), axis=ax, keepdims=keepdim)) + np.reshape(m, shape)
    return finish(r, onp)


# ---------------------------------------------------------------------------------------
# all, any, count_nonzero
# ---------------------------------------------------------------------------------------
def _truth(arr):
    return arr if arr.dtype.kind == "b" else acc(arr) != 0


def _all_like(op, reduce):
    def dims_kernel(self, dim=None, keepdim=False):
        dims, _, out_dt = M.plan_all(self, dim, keepdim, op)
        arr = self._data
        t = _truth(arr)
        if not dims:  # nothing reduced: a (fresh) elementwise truth value
            return finish(t.copy() if t is arr else t, out_dt.np)
        return finish(reduce(t, axis=dims, keepdims=keepdim), out_dt.np)

    def full(self):
        return dims_kernel(self, None, False)
    dims_kernel.__name__, full.__name__ = op + "_dims", op
    return full, dims_kernel


all, all_dim = _all_like("all", np.all)
any, any_dim = _all_like("any", np.any)


def count_nonzero(self, dim=None):
    dims, shape = M.plan_count_nonzero(self, dim)
    arr = self._data
    t = _truth(arr)
    if not arr.ndim:
        return wrap(np.asarray(t, np.int64))
    return wrap(np.asarray(np.count_nonzero(t, axis=dims), np.int64).reshape(shape))


def histc(self, bins=100, min=0, max=0):
    """Counts of the elements in `bins` equal-width bins over [min, max] (the data's range when
    min == max); elements outside it and NaN are not counted; the last bin includes max. The
    bin of an element is computed in the input's dtype, as PyTorch's kernel does, so the
    elements near a bin edge fall on the same side in both."""
    low, high = plan_histc(self, bins, float(min), float(max))
    arr = self._data
    dt = arr.dtype
    left, right = np.array(low).astype(dt), np.array(high).astype(dt)
    flat = arr.reshape(-1)
    x = flat[(flat >= left) & (flat <= right)]
    pos = ((x - left) * dt.type(bins) / (right - left)).astype(np.int64)
    np.clip(pos, 0, bins - 1, out=pos)  # the right edge belongs to the last bin
    return wrap(np.bincount(pos, minlength=bins).astype(dt))
