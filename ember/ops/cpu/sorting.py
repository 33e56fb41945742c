"""CPU kernels of scans, softmax, sorting and selection: cumsum, cumprod, cummax, cummin,
logcumsumexp, softmax, log_softmax, sort, argsort, msort, topk, unique, unique_consecutive,
median, nanmedian, mode, kthvalue, quantile.

Sorting is always stable (NumPy's ``kind="stable"``), which is what PyTorch's CPU sort does;
NaN sorts as the largest value. Index results are int64. Errors and result shapes come from the
family's plans in `ember/ops/meta/reduction.py`.
"""
from __future__ import annotations

import numpy as np

from .. import native

from ..._core.tensor import wrap
from ..meta import reduction as M
from .reduction import acc, cast, compute, finish

rt = M.rt
_I64 = np.dtype(np.int64)


def _zero_index():
    return wrap(np.zeros((), np.int64))


def _pair(cls, vals, idx):
    return cls((wrap(np.asarray(vals)), wrap(np.asarray(idx).astype(_I64, copy=False))))


def _positions(shape, d):
    """0..n-1 along axis d, broadcastable against an array of `shape`."""
    view = [1] * len(shape)
    view[d] = shape[d]
    return np.arange(shape[d], dtype=np.int64).reshape(view)


# ---------------------------------------------------------------------------------------
# scans
# ---------------------------------------------------------------------------------------
def _cum(op, fn):
    def kernel(self, dim, dtype=None):
        d, out_dt = M.plan_cumsum(self, dim, dtype, op)
        arr, onp = self._data, out_dt.np
        cnp = compute(onp)
        a = cast(arr, cnp)
        if not arr.ndim:
            return finish(a.copy() if a is arr else a, onp)
        return finish(fn(a, axis=d, dtype=cnp), onp)
    kernel.__name__ = op
    return kernel


cumsum = _cum("cumsum", np.cumsum)
cumprod = _cum("cumprod", np.cumprod)


def _cum_extreme(op, ufunc, cls):
    """cummax/cummin: the running extreme and the index of its LAST occurrence (PyTorch updates
    on ties), NaN propagating with the index of the newest NaN."""
    def kernel(self, dim):
        d = M.plan_cummax(self, dim, op)
        arr = self._data
        if not arr.ndim:
            return cls((wrap(arr.copy()), _zero_index()))
        a = acc(arr)
        m = ufunc.accumulate(a, axis=d)
        hit = a == m
        if a.dtype.kind == "f":
            hit |= np.isnan(a)
        # the index of the last hit so far; m only changes at a hit, so it is the extreme's index
        idx = np.maximum.accumulate(np.where(hit, _positions(a.shape, d), 0), axis=d)
        return cls((finish(m, arr.dtype), wrap(idx)))
    kernel.__name__ = op
    return kernel


cummax = _cum_extreme("cummax", np.maximum, rt.cummax)
cummin = _cum_extreme("cummin", np.minimum, rt.cummin)


def logcumsumexp(self, dim):
    d = M.plan_logcumsumexp(self, dim)
    arr = self._data
    a = cast(arr, compute(arr.dtype))
    if not arr.ndim or a.size == 0:
        return finish(a.copy() if a is arr else a, arr.dtype)
    if a.dtype.kind != "c":
        return finish(np.logaddexp.accumulate(a, axis=d), arr.dtype)
    # complex: PyTorch accumulates with max + log1p(exp(min - max)), whose imaginary part is not
    # wrapped into (-pi, pi]; follow the same recurrence so the branch agrees.
    a = np.moveaxis(a, d, 0)
    out = np.empty_like(a)
    acc_ = out[0] = a[0]
    for i in range(1, a.shape[0]):
        acc_ = out[i] = _log_add_exp_complex(acc_, a[i])
    return finish(np.moveaxis(out, 0, d), arr.dtype)


def _log_add_exp_complex(x, y):
    """PyTorch's complex log-add-exp (ReduceOps.cpp `_log_add_exp_helper`), elementwise."""
    x_smaller = x.real < y.real
    lo, hi = np.where(x_smaller, x, y), np.where(x_smaller, y, x)
    r = hi + np.log1p(np.exp(lo - hi))
    both_inf = ~np.isfinite(lo.real) & (lo.real == hi.real)
    if both_inf.any():
        r = np.where(both_inf & (lo.real < 0), x, np.where(both_inf, np.log(np.exp(x) + np.exp(y)), r))
    nan = np.isnan(x.real) | np.isnan(y.real)
    if nan.any():
        r = np.where(nan, complex(np.nan, np.nan), r)
    return r


def _softmax(op, log):
    def kernel(self, dim, dtype=None):
        """Numerically stable: exp(x - max) / sum, or (x - max) - log(sum) for the log form."""
        d, out_dt = M.plan_softmax(self, dim, dtype, op)
        arr, onp = self._data, out_dt.np
        a = cast(arr, compute(onp))
        if a.size == 0:
            return finish(a.copy() if a is arr else a, onp)
        if not a.ndim:
            a, d = a.reshape(1), 0
        fn = native.kernel("softmax_fwd", a.dtype) if d == a.ndim - 1 and a.flags.c_contiguous else None
        if fn is not None:   # one C pass per row (ember/ops/native.py)
            r = np.empty_like(a)
            fn(a, r, a.size // a.shape[-1], a.shape[-1], log)
            return finish(r.reshape(arr.shape), onp)
        z = a - np.max(a, axis=d, keepdims=True)
        e = np.exp(z)
        s = np.sum(e, axis=d, keepdims=True)
        r = z - np.log(s) if log else e / s
        return finish(r.reshape(arr.shape), onp)
    kernel.__name__ = op
    return kernel


softmax = _softmax("softmax", False)
log_softmax = _softmax("log_softmax", True)


# ---------------------------------------------------------------------------------------
# sort, argsort, msort, topk
# ---------------------------------------------------------------------------------------
def sort_indices(a, d, descending):
    """Stable argsort along d. Descending keeps equal elements in their original order (and NaN
    first): sort the reversed array ascending, reverse the result, and map positions back."""
    if not descending:
        return np.argsort(a, axis=d, kind="stable")
    idx = np.flip(np.argsort(np.flip(a, axis=d), axis=d, kind="stable"), axis=d)
    return (a.shape[d] - 1) - idx


def sort(self, dim=-1, descending=False):
    d = M.plan_sort(self, dim)
    arr = self._data
    if not arr.ndim:
        return rt.sort((wrap(arr.copy()), _zero_index()))
    idx = sort_indices(acc(arr), d, descending)
    return _pair(rt.sort, np.take_along_axis(arr, idx, axis=d), idx)


def sort_stable(self, stable=None, dim=-1, descending=False):
    return sort(self, dim, descending)


def argsort(self, dim=-1, descending=False):
    d = M.plan_sort(self, dim, "argsort")
    arr = self._data
    if not arr.ndim:
        return _zero_index()
    return wrap(sort_indices(acc(arr), d, descending).astype(_I64, copy=False))


def argsort_stable(self, stable=False, dim=-1, descending=False):
    return argsort(self, dim, descending)


def msort(self):
    return sort(self, 0)[0]


def topk(self, k, dim=-1, largest=True, sorted=True):
    """The k largest (smallest) along dim, always returned sorted; ties keep the first index."""
    d, shape = M.plan_topk(self, k, dim)
    arr = self._data
    if not arr.ndim:
        if k == 0:
            raise NotImplementedError("topk: k=0 on a 0-d tensor")
        return rt.topk((wrap(arr.copy()), _zero_index()))
    idx = np.take(sort_indices(acc(arr), d, largest), np.arange(k), axis=d)
    return _pair(rt.topk, np.take_along_axis(arr, idx, axis=d), idx)


# ---------------------------------------------------------------------------------------
# unique
# ---------------------------------------------------------------------------------------
def _check_unique(self, kernel):
    if self.dtype.category == M.COMPLEX:
        raise M.not_implemented(kernel, self.dtype)


def _empty_index():
    return wrap(np.empty((0,), np.int64))


def unique2(self, sorted=True, return_inverse=False, return_counts=False):
    """aten::_unique2: sorted unique values (NaNs kept apart, as PyTorch does), the inverse
    indices in the input's shape and the counts; unrequested outputs are empty."""
    _check_unique(self, "unique")
    arr = self._data
    vals, inv, cnt = np.unique(acc(arr).reshape(-1), return_inverse=True, return_counts=True, equal_nan=False)
    return (finish(vals, arr.dtype),
            wrap(inv.astype(_I64).reshape(arr.shape)) if return_inverse else _empty_index(),
            wrap(cnt.astype(_I64)) if return_counts else _empty_index())


def _check_dim_given(self, d):
    if not self.ndim:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    return M.rules.wrap_dim(d, self.ndim)


def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along `dim`)."""
    _check_unique(self, "unique")
    arr = self._data
    if dim is None:
        flat = acc(arr).reshape(-1)
        change = flat[1:] != flat[:-1]
        d, n = None, flat.size
    else:
        d = _check_dim_given(self, dim)
        n = arr.shape[d]
        rows = np.moveaxis(acc(arr), d, 0).reshape(n, -1)
        change = np.any(rows[1:] != rows[:-1], axis=1)
    starts = np.concatenate([np.ones(min(n, 1), bool), change])
    first = np.nonzero(starts)[0]
    vals = arr.reshape(-1)[first] if d is None else np.take(arr, first, axis=d)
    inv = np.cumsum(starts, dtype=np.int64) - 1
    if d is None:
        inv = inv.reshape(arr.shape)
    counts = np.diff(np.append(first, n)).astype(_I64)
    return (wrap(np.ascontiguousarray(vals)), wrap(inv) if return_inverse else _empty_index(),
            wrap(counts) if return_counts else _empty_index())


def unique_dim(self, dim, sorted=True, return_inverse=False, return_counts=False):
    """Unique slices along `dim`, in lexicographic order."""
    _check_unique(self, "unique_dim")
    d = _check_dim_given(self, dim)
    arr = self._data
    if arr.size == 0:
        if arr.shape[d] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")
        return wrap(arr.copy()), _empty_index(), _empty_index()
    vals, inv, cnt = np.unique(acc(arr), axis=d, return_inverse=True, return_counts=True, equal_nan=False)
    return (finish(np.ascontiguousarray(vals), arr.dtype),
            wrap(inv.astype(_I64).reshape(-1)) if return_inverse else _empty_index(),
            wrap(cnt.astype(_I64)) if return_counts else _empty_index())


# ---------------------------------------------------------------------------------------
# median, nanmedian, kthvalue, mode
# ---------------------------------------------------------------------------------------
def _median_all(self, op, skip_nan):
    M.plan_median(self, None, False, op)
    arr = self._data
    flat = acc(arr).reshape(-1)
    if flat.dtype.kind == "f":
        nan = np.isnan(flat)
        if skip_nan:
            flat = flat[~nan]
        elif nan.any():
            return finish(np.asarray(np.nan), arr.dtype)
        if flat.size == 0:
            return finish(np.asarray(np.nan), arr.dtype)
    elif flat.size == 0:
        raise NotImplementedError(f"{op}: the median of an empty integer tensor is undefined")
    k = (flat.size - 1) // 2
    return finish(np.partition(flat, k)[k], arr.dtype)


def median(self):
    """The lower median (of an even count, the smaller middle value); NaN if any NaN."""
    return _median_all(self, "median", False)


def nanmedian(self):
    return _median_all(self, "nanmedian", True)


def _select_along(self, d, keepdim, cls, position):
    """Values and indices at sorted `position` (an int array, keepdims shape) along d."""
    arr = self._data
    if not arr.ndim:
        return cls((wrap(arr.copy()), _zero_index()))
    order = np.argsort(acc(arr), axis=d, kind="stable")
    idx = np.take_along_axis(order, position(acc(arr), arr.shape[d]), axis=d)
    vals = np.take_along_axis(arr, idx, axis=d)
    if not keepdim:
        idx, vals = idx.squeeze(d), vals.squeeze(d)
    return _pair(cls, vals, idx)


def _median_dim(op, cls, skip_nan):
    def kernel(self, dim, keepdim=False):
        d, _ = M.plan_median(self, dim, keepdim, op)

        def position(a, n):
            shape = list(a.shape)
            shape[d] = 1
            if a.dtype.kind != "f":
                return np.full(shape, (n - 1) // 2, np.int64)
            nans = np.sum(np.isnan(a), axis=d, keepdims=True)
            if skip_nan:
                valid = n - nans
                return np.where(valid > 0, (valid - 1) // 2, 0)
            return np.where(nans > 0, n - nans, (n - 1) // 2)  # NaN: the first NaN (sorted last)
        return _select_along(self, d, keepdim, cls, position)
    kernel.__name__ = op + "_dim"
    return kernel


median_dim = _median_dim("median", rt.median, False)
nanmedian_dim = _median_dim("nanmedian", rt.nanmedian, True)


def kthvalue(self, k, dim=-1, keepdim=False):
    """The k-th smallest along dim (1-based), with its index."""
    d, shape = M.plan_kthvalue(self, k, dim, keepdim)

    def position(a, n):
        s = list(a.shape)
        s[d] = 1
        return np.full(s, k - 1, np.int64)
    return _select_along(self, d, keepdim, rt.kthvalue, position)


def mode(self, dim=-1, keepdim=False):
    """The most frequent value along dim (the smallest on ties) and its last index."""
    d, shape = M.plan_mode(self, dim, keepdim)
    arr = self._data
    if not arr.ndim:
        return rt.mode((wrap(arr.copy()), _zero_index()))
    n = arr.shape[d]
    rows = np.moveaxis(acc(arr), d, -1).reshape(-1, n)
    orig = np.moveaxis(arr, d, -1).reshape(-1, n)
    vals = np.empty(rows.shape[0], arr.dtype)
    idx = np.empty(rows.shape[0], np.int64)
    for r in range(rows.shape[0]):
        order = np.argsort(rows[r], kind="stable")
        s = rows[r][order]
        first = np.nonzero(np.concatenate([[True], s[1:] != s[:-1]]))[0]
        lengths = np.diff(np.append(first, n))
        j = int(np.argmax(lengths))
        vals[r] = orig[r][order[first[j]]]
        idx[r] = order[first[j]:first[j] + lengths[j]].max()
    return _pair(rt.mode, vals.reshape(shape), idx.reshape(shape))


# ---------------------------------------------------------------------------------------
# quantile
# ---------------------------------------------------------------------------------------
def _lerp(a, b, w):
    """PyTorch's lerp formula (exact at both ends)."""
    return np.where(w < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def _quantile(op, skip_nan):
    def kernel(self, q, dim=None, keepdim=False, interpolation="linear"):
        d, shape = M.plan_quantile(self, q, dim, keepdim, interpolation, op)
        arr = self._data
        dt = arr.dtype
        if isinstance(q, (int, float)):
            if not 0 <= q <= 1:
                raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
            qa = np.asarray([q], dt)
        else:
            qa = q._data.reshape(-1)
            if qa.size and not (np.all(qa >= 0) and np.all(qa <= 1)):
                raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
        a = arr.reshape(-1) if d is None else np.moveaxis(arr, d, -1) if arr.ndim else arr.reshape(1)
        s = np.sort(a, axis=-1)[..., None, :]                      # (..., 1, n), NaN last
        n = s.shape[-1]
        nans = np.sum(np.isnan(s), axis=-1)                          # (..., 1)
        if skip_nan:
            ranks = qa * (n - nans - 1).astype(dt)
        else:
            ranks = np.where(nans > 0, dt.type(n - 1), qa * dt.type(n - 1))
        ranks = ranks.astype(dt)
        if interpolation == "nearest":
            ranks = np.round(ranks)
        below = np.clip(np.floor(ranks), 0, n - 1).astype(np.int64)
        above = np.clip(np.ceil(ranks), 0, n - 1).astype(np.int64)
        vb = np.take_along_axis(s, below[..., None], axis=-1)[..., 0]
        va = np.take_along_axis(s, above[..., None], axis=-1)[..., 0]
        if interpolation in ("lower", "nearest"):
            r = vb
        elif interpolation == "higher":
            r = va
        else:
            w = ranks - below if interpolation == "linear" else np.full_like(ranks, 0.5)
            r = _lerp(vb, va, w.astype(dt))
        if skip_nan:
            r = np.where(n - nans > 0, r, np.nan)
        r = np.moveaxis(np.asarray(r, dt), -1, 0)                    # q first
        return finish(np.ascontiguousarray(r).reshape(shape), dt)
    kernel.__name__ = op
    return kernel


quantile = _quantile("quantile", False)
nanquantile = _quantile("nanquantile", True)
