"""Rules and Meta kernel of histc (the histogram family: its CPU kernel is in cpu/reduction.py)."""
from __future__ import annotations

from ..._core.tensor import wrap_meta
from .reduction import BOOL, COMPLEX, FLOAT, not_implemented

_INF = float("inf")


def plan_histc(self, bins, low, high):
    """histc's checks, in PyTorch's order, and its range: [min, max] of the data when the
    given bounds are equal (widened by 1 on both sides when the data is constant too)."""
    if self.dtype.category != FLOAT:
        raise not_implemented("linspace_cpu" if self.dtype.category == BOOL else
                              "aminmax_cpu" if self.dtype.category == COMPLEX else "histogram_cpu", self.dtype)
    if low == high and self.numel() and not self.is_meta:
        low, high = float(self.min().item()), float(self.max().item())
    if low == high:
        low, high = low - 1, high + 1
    if low != low or high != high or low in (_INF, -_INF) or high in (_INF, -_INF):
        raise RuntimeError(f"torch.histc: range of [{low:g}, {high:g}] is not finite")
    if not low < high:
        raise RuntimeError("torch.histc: max must be larger than min")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    return low, high


def histc(self, bins=100, min=0, max=0):
    plan_histc(self, bins, float(min), float(max))
    return wrap_meta((bins,), self.dtype)
