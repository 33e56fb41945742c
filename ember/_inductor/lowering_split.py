"""Split reductions for the GPU (lowering.reduce calls `split_reduction` when kernels are Triton's).

A reduction over few outputs runs one program per output on the GPU; sum(x*x) of a whole tensor
would be one program streaming 2^27 elements on one SM. Split, it is two reductions of the same
loop IR: partial results of S chunks of a reduced dim (S programs at once), then the S partials
per output (the scheduler puts each in its own kernel, as it would any two reductions).

Column reductions (a bias gradient: the rows of [8192, 768] summed) run as column kernels
(codegen_triton_columns), one program per COLUMN_XBLOCK columns: 12 programs for 768 columns. They
are split too, over their longest reduced dim, into enough chunks for ~COLUMN_PROGRAMS programs;
the partials are laid out [S, columns] so that both stages read whole rows.
16-bit float sums and products keep their partials in float32 (one rounding, as eager's).
"""
from __future__ import annotations

import math

from .._core import dtype as _dt
from .ir import DependencyCollector, ReductionBody, ops, set_handler


_SPLIT_KINDS = {"sum": 0, "prod": 1, "max": float("-inf"), "min": float("inf"), "any": False, "all": True}
SPLIT_MIN = 1 << 16             # a reduction this long over few outputs is split on the GPU
COLUMN_PROGRAMS = 384           # programs a split column reduction aims at (~3 per SM of an H100)
COLUMN_CHUNK_MIN = 64           # rows of a column reduction's chunk, at least


def split_reduction(g, body, out_dtype):
    """A long reduction over few outputs (sum(x*x) of a whole tensor), or a column reduction over
    few column blocks, as two: partial results of S chunks of a reduced dim, then the S partials
    reduced per output. Chunks past the end read nothing (ops.masked) and give the reduction's
    identity. None when not worth it or not associative in this form (argmax, Welford)."""
    rows, red = math.prod(body.ranges), body.reduction_ranges
    if body.reduction_type not in _SPLIT_KINDS or not red:
        return None
    if rows < 64:
        if math.prod(red) < SPLIT_MIN or red[0] < 2:
            return None
        return _split(g, body, out_dtype, 0, min(red[0], max(2, 512 // max(rows, 1))), columns=False)
    if not _reads_columns(body):
        return None
    from .codegen_triton_columns import COLUMN_XBLOCK
    cols = body.ranges[-1]
    blocks = -(-cols // min(COLUMN_XBLOCK, 1 << (cols - 1).bit_length())) * (rows // cols)
    dim = max(range(len(red)), key=lambda d: red[d])
    want = min(COLUMN_PROGRAMS // blocks, red[dim] // COLUMN_CHUNK_MIN)
    if want < 2:
        return None
    return _split(g, body, out_dtype, dim, 1 << (want.bit_length() - 1), columns=True)


def _reads_columns(body) -> bool:
    from .codegen_triton_columns import reads_columns
    ovars, rvars = body.vars("i", "r")
    collector = DependencyCollector()
    with set_handler(collector):
        body.run((ovars, rvars))
    return reads_columns(collector.loads, ovars[-1], rvars)


def _split(g, body, out_dtype, dim, splits, columns):
    """Stage one: partials over `splits` chunks of reduced dim `dim`, laid out [S] + outputs
    (`columns`) or outputs + [S]; stage two: the partials reduced per output."""
    red, src, rt, inner_fn = body.reduction_ranges, body.src_dtype, body.reduction_type, body.inner_fn
    whole = red[dim]
    chunk = -(-whole // splits)
    splits = -(-whole // chunk)
    identity = _SPLIT_KINDS[rt]
    if not src.is_floating_point and rt in ("max", "min"):
        import numpy as np
        info = np.iinfo(src.np) if src != _dt.bool_ else None
        identity = (info.min if rt == "max" else info.max) if info else rt == "min"

    def partial_fn(index, rindex):
        s, outer = (index[0], index[1:]) if columns else (index[-1], index[:-1])
        full = list(rindex)
        full[dim] = s * chunk + rindex[dim]
        if splits * chunk == whole:             # every chunk is whole: no mask
            return inner_fn(outer, full)
        inside = ops.binary("lt", ops.index_expr(full[dim], _dt.int64), ops.constant(whole, _dt.int64), _dt.int64)
        return ops.masked(inside, lambda: inner_fn(outer, full), identity, src)
    if rt in ("any", "all"):
        partial_dtype = _dt.bool_
    elif rt in ("sum", "prod") and src in (_dt.float16, _dt.bfloat16):
        partial_dtype = _dt.float32             # partial sums not rounded to 16 bits
    else:
        partial_dtype = src
    ranges = [splits] + list(body.ranges) if columns else list(body.ranges) + [splits]
    part_red = list(red[:dim]) + [chunk] + list(red[dim + 1:])
    partial = g.reduction(ReductionBody(ranges, part_red, rt, partial_fn, src), partial_dtype)
    load = partial.make_loader()

    def final_fn(index, r):
        return load(list(r) + list(index)) if columns else load(list(index) + list(r))
    return g.reduction(ReductionBody(body.ranges, [splits], rt, final_fn, partial_dtype), out_dtype)
