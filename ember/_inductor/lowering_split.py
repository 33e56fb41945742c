"""Split reductions for the GPU (lowering.reduce calls `split_reduction` when kernels are Triton's).

A reduction over few outputs runs one program per output on the GPU; sum(x*x) of a whole tensor
would be one program streaming 2^27 elements on one SM. Split, it is two reductions of the same
loop IR: partial results of S chunks of the first reduced dim (S programs at once), then the S
partials per output (the scheduler puts each in its own kernel, as it would any two reductions).
"""
from __future__ import annotations

import math

from .._core import dtype as _dt
from .ir import ReductionBody, ops


_SPLIT_KINDS = {"sum": 0, "prod": 1, "max": float("-inf"), "min": float("inf"), "any": False, "all": True}
SPLIT_MIN = 1 << 16             # a reduction this long over few outputs is split on the GPU


def split_reduction(g, body, out_dtype):
    """A long reduction over few outputs (sum(x*x) of a whole tensor) as two: partial results of S
    chunks of its first reduced dim (S programs run at once on the GPU), then the S partials reduced
    per output. Chunks past the end read nothing (ops.masked) and give the reduction's identity.
    None when not worth it or not associative in this form (argmax, Welford)."""
    rows, red = math.prod(body.ranges), body.reduction_ranges
    if body.reduction_type not in _SPLIT_KINDS or rows >= 64 or not red or math.prod(red) < SPLIT_MIN or red[0] < 2:
        return None
    first = red[0]
    splits = min(first, max(2, 512 // max(rows, 1)))
    chunk = -(-first // splits)
    splits = -(-first // chunk)
    src, rt, inner_fn = body.src_dtype, body.reduction_type, body.inner_fn
    identity = _SPLIT_KINDS[rt]
    if not src.is_floating_point and rt in ("max", "min"):
        import numpy as np
        info = np.iinfo(src.np) if src != _dt.bool_ else None
        identity = (info.min if rt == "max" else info.max) if info else rt == "min"

    def partial_fn(index, rindex):
        first_index = index[-1] * chunk + rindex[0]
        inside = ops.binary("lt", ops.index_expr(first_index, _dt.int64), ops.constant(first, _dt.int64), _dt.int64)
        return ops.masked(inside, lambda: inner_fn(index[:-1], [first_index] + list(rindex[1:])), identity, src)
    partial_dtype = _dt.bool_ if rt in ("any", "all") else src
    partial = g.reduction(ReductionBody(list(body.ranges) + [splits], [chunk] + list(red[1:]), rt, partial_fn, src),
                          partial_dtype)
    load = partial.make_loader()
    return g.reduction(ReductionBody(body.ranges, [splits], rt, lambda index, r: load(list(index) + list(r)),
                                     partial_dtype), out_dtype)
