"""CPU kernels of the counting and reduce-into ops: bincount, histogram, nonzero_static
and index_reduce (table: ember/ops/table/counting.py)."""
from __future__ import annotations

import numpy as np

from ... import return_types as rt
from ..._core import dtype as _dt
from ..._core.tensor import wrap
from .pointwise import not_implemented


def bincount(self, weights=None, minlength=0):
    if self.dtype.category != _dt.INT:
        raise not_implemented("bincount_cpu", self.dtype)
    values = self._data
    if values.ndim != 1 or (values.size and values.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return wrap(np.bincount(values, minlength=minlength).astype(np.int64))
    if weights.dim() != 1 or weights.shape[0] != values.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    out_dtype = weights.dtype.np if weights.dtype in (_dt.float32, _dt.float64) else np.dtype(np.float64)
    counts = np.bincount(values, weights=weights._data.astype(np.float64), minlength=minlength)
    return wrap(counts.astype(out_dtype))


def _histogram_edges(values, bins, hist_range):
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if hist_range is not None:
        low, high = float(hist_range[0]), float(hist_range[1])
    elif values.size:
        low, high = float(values.min()), float(values.max())
    else:
        low, high = 0.0, 1.0
    if low > high:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low:g} max {high:g} for "
                           f"dimension 0")
    if not (np.isfinite(low) and np.isfinite(high)):
        raise RuntimeError(f"torch.histogramdd: dimension 0's range [{low:g}, {high:g}] is not finite")
    if low == high:
        low, high = low - 0.5, high + 0.5
    return np.linspace(low, high, bins + 1).astype(values.dtype)


def _histogram(self, edges, weight, density):
    if self.dtype.category != _dt.FLOAT:
        raise not_implemented("histogramdd", self.dtype)
    values = self._data.reshape(-1)
    if weight is not None and tuple(weight.shape) != tuple(self.shape):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the same shape as the "
                           "input tensor excluding its innermost dimension")
    w = None if weight is None else weight._data.reshape(-1).astype(np.float64)
    bins = edges.shape[0] - 1
    # bin i holds edges[i] <= x < edges[i + 1]; the last bin also holds x == edges[-1]
    position = np.searchsorted(edges, values, side="right") - 1
    position = np.where(values == edges[-1], bins - 1, position)
    inside = (position >= 0) & (position < bins) & (values >= edges[0]) & (values <= edges[-1])
    hist = np.bincount(position[inside], weights=None if w is None else w[inside], minlength=bins)
    hist = hist.astype(np.float64)
    if density:
        widths = np.diff(edges.astype(np.float64))
        total = hist.sum()
        hist = hist / (total * widths) if total else hist / widths * np.nan
    return rt.histogram((wrap(hist.astype(self._data.dtype)), wrap(np.ascontiguousarray(edges))))


def histogram_bins(self, bins, range=None, weight=None, density=False):
    if self.dtype.category != _dt.FLOAT:
        raise not_implemented("histogramdd", self.dtype)
    return _histogram(self, _histogram_edges(self._data, bins, range), weight, density)


def histogram_edges(self, bins, weight=None, density=False):
    if bins.dim() != 1 or bins.numel() < 2:
        raise RuntimeError("torch.histogramdd: bins tensor should have at least 1 element, but got 0 elements")
    return _histogram(self, bins._data.astype(self._data.dtype), weight, density)


def nonzero_static(self, size, fill_value=-1):
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer but got {size}")
    found = np.argwhere(self._data)[:size].astype(np.int64)
    out = np.full((size, self._data.ndim), fill_value, dtype=np.int64)
    out[:found.shape[0]] = found
    return wrap(out)


_REDUCERS = {"prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


def index_reduce(self, dim, index, source, reduce, include_self=True):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                           f"{reduce}.")
    ndim = max(self.dim(), 1)
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    if index.dim() > 1 or index.dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError("index_reduce_(): Index is supposed to be a vector")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_reduce_(): self ({self.dtype.c10_name}) and source ({source.dtype.c10_name}) "
                           f"must have the same scalar type")
    out = np.array(self._data, copy=True)
    target = np.moveaxis(out.reshape(out.shape or (1,)), dim, 0)
    src = np.moveaxis(source._data.reshape(source._data.shape or (1,)), dim, 0)
    idx = index._data.reshape(-1).astype(np.int64)
    if idx.shape[0] != src.shape[0]:
        raise RuntimeError("index_reduce_(): Index should have dimension 1 or 0 (got "
                           f"{index.dim()}) and the number of indices should equal the size of source along dim")
    if idx.size and (idx.min() < 0 or idx.max() >= target.shape[0]):   # no negative indices, as PyTorch
        raise IndexError("index out of range in self")
    touched = np.unique(idx)
    if reduce == "mean":
        counts = np.bincount(idx, minlength=target.shape[0]).astype(np.float64) + (1 if include_self else 0)
        if not include_self:
            target[touched] = 0
        np.add.at(target, idx, src)
        shape = (-1,) + (1,) * (target.ndim - 1)
        divisor = np.maximum(counts, 1).reshape(shape)
        if target.dtype.kind in "iu":
            target[...] = np.floor_divide(target, divisor.astype(target.dtype))
        else:
            target[...] = target / divisor.astype(target.dtype)
        return wrap(out)
    ufunc = _REDUCERS[reduce]
    if not include_self:
        identity = {"prod": 1, "amax": -np.inf, "amin": np.inf}[reduce]
        if target.dtype.kind in "iu":
            info = np.iinfo(target.dtype)
            identity = {"prod": 1, "amax": info.min, "amin": info.max}[reduce]
        target[touched] = identity
    ufunc.at(target, idx, src)
    return wrap(out)
