"""Meta kernels of the counting ops whose result shape does not depend on the data (bincount's does:
it has none, as in PyTorch)."""
from __future__ import annotations

from ... import return_types as rt
from ..._core import dtype as _dt
from ..._core.tensor import wrap_meta


def bincount(self, weights=None, minlength=0):
    raise NotImplementedError("bincount: meta tensors (the result size depends on the data)")


def histogram_bins(self, bins, range=None, weight=None, density=False):
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    return rt.histogram((wrap_meta((bins,), self.dtype), wrap_meta((bins + 1,), self.dtype)))


def histogram_edges(self, bins, weight=None, density=False):
    return rt.histogram((wrap_meta((bins.shape[0] - 1,), self.dtype), wrap_meta(tuple(bins.shape), self.dtype)))


def nonzero_static(self, size, fill_value=-1):
    return wrap_meta((size, self.dim()), _dt.int64)


def index_reduce(self, dim, index, source, reduce, include_self=True):
    return wrap_meta(tuple(self.shape), self.dtype)
