"""Counting and reduce-into ops: bincount, histogram, nonzero_static and index_reduce (kernels: ember/ops/cpu/counting.py; meta: ember/ops/meta/counting.py)."""
from __future__ import annotations

from ..registry import Op
from ..cpu import counting as cpu
from ..meta import counting as meta

_HIST = "-> (Tensor hist, Tensor bin_edges)"

OPS = [
    Op("bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor", cpu=cpu.bincount,
       meta=meta.bincount),
    Op(f"histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, Tensor? weight=None, "
       f"bool density=False) {_HIST}", cpu=cpu.histogram_bins, meta=meta.histogram_bins),
    Op(f"histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, bool density=False) {_HIST}",
       cpu=cpu.histogram_edges, meta=meta.histogram_edges),
    Op("nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor", cpu=cpu.nonzero_static,
       meta=meta.nonzero_static),
    Op("index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, bool include_self=True) "
       "-> Tensor", cpu=cpu.index_reduce, meta=meta.index_reduce, inplace=True, out=True),
]
