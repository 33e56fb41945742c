"""Column reductions with the loops interchanged (codegen_c.generate_kernel asks `worth_interchanging`).

A reduction over the leading dim of a row-major [N, C] tensor (a bias gradient: grad.sum(0)) in
the natural order reads a column at a time, C elements apart: no SIMD and a cache miss per
element (20 ms for a 4096 x 1000 float32 sum + max here). Interchanged, a tile of TILE columns
keeps one accumulator per column, and each row of the tile is one contiguous SIMD step:

    for (i_t = 0; i_t < C; i_t += TILE) {                    # omp parallel for over tiles
        float acc[TILE] = init;
        for (r = 0; r < N; r++)                              # the reduction loops
            #pragma omp simd
            for (i = i_t; i < min(i_t + TILE, C); i++) acc[i - i_t] += x[r*C + i];
        for (i ...) out[i] = acc[i - i_t];                    # then the group's pointwise members
    }

Each member is a pass over the tile in group order, so a member reading an earlier reduction's
result (var's mean) reads its accumulator. max/min propagate NaN per column (nanmax). float32
sums over more than SUM_BLOCK rows accumulate in double, as the row sums' blocks do. Welford
(var over dim 0, BatchNorm1d's statistics) keeps a (mean, m2) per column in double; every column
has seen the same number of rows, so 1/count is one division per row.
"""
from __future__ import annotations

from . import ir
from .codegen_c import CEmitter, _loop_open, ctype, merge_loops, to_memory
from .codegen_reduction import SUM_BLOCK, _INT_LIMITS, _REDUCE_INIT

TILE = 512
_KINDS = ("sum", "prod", "max", "min", "any", "all", "welford_mean", "welford_m2")


def worth_interchanging(group, reads, outer_loops) -> bool:
    """One outer loop, reductions (of _KINDS) and flat pointwise members only, and a reduction
    that reads its input with unit stride along the output and a larger one along the reduction."""
    if len(outer_loops) != 1:
        return False
    head = outer_loops[0][0]
    strided = False
    for b in group.members:
        body = b.body
        if isinstance(body, ir.ReductionBody):
            if body.reduction_type not in _KINDS or not body.reduction_ranges:
                return False
            inner = b.canonical_vars()[1][-1]
            strided |= any(buf is not ir.INDEX_ONLY and e.coeff(head) == 1 and e.coeff(inner) not in (0, 1)
                           for buf, e in reads[b.name])
        elif group.inner_ranges(b):
            return False
    return strided


def _step(rt, t, floating):
    """(init, combine(acc, value) -> C statement) for one column's accumulator."""
    if rt in ("sum", "prod"):
        op = "+" if rt == "sum" else "*"
        return _REDUCE_INIT[rt], lambda a, v: f"{a} {op}= {v};"
    if rt in ("any", "all"):
        op = "|" if rt == "any" else "&"
        return _REDUCE_INIT[rt], lambda a, v: f"{a} {op}= ({v} != 0);"
    if floating:                 # nanmax(v, acc): v when it is NaN or larger, so NaN sticks
        s = "f" if t == "float" else "d"
        return ("-INFINITY" if rt == "max" else "INFINITY"), lambda a, v: f"{a} = nan{rt}_{s}({v}, {a});"
    cmp = ">" if rt == "max" else "<"
    return _INT_LIMITS[t][0 if rt == "max" else 1], lambda a, v: f"{a} = {a} {cmp} {v} ? {a} : {v};"


def emit(k, group, outer_loops, rename, member_exprs, stores, parallel_pragma):
    """The kernel body (C lines) of `group` with its column loop innermost."""
    (head, ncols), = outer_loops
    col = f"({head} - {head}_t)"
    out = [parallel_pragma + " ERR"] if parallel_pragma else []
    out += [f"for (int64_t {head}_t = 0; {head}_t < {ncols}; {head}_t += {TILE}) {{",
            f"const int64_t {head}_e = {head}_t + {TILE} < {ncols} ? {head}_t + {TILE} : {ncols};"]
    locals_ = {}

    def column_loop(lines):
        return ["#pragma omp simd ERR", f"for (int64_t {head} = {head}_t; {head} < {head}_e; {head}++) {{"] + \
            ["    " + ln for ln in lines] + ["}"]
    for b in group.members:
        ovars, rvars = b.canonical_vars()
        reduction = isinstance(b.body, ir.ReductionBody)
        loops, full_rename = [], rename
        if reduction:
            loops, rrename = merge_loops(rvars, b.body.reduction_ranges, member_exprs[b.name])
            full_rename = dict(rename, **rrename)
        lines = []
        with ir.set_handler(CEmitter(k, lines, full_rename, locals_)):
            value = b.body.run((ovars, rvars))
        if reduction:
            src = b.body.src_dtype
            rt, t = b.body.reduction_type, ctype(src)
            if rt in ("any", "all"):
                t = "int"
            elif rt == "sum" and t == "float" and b.body.reduction_ranges and \
                    max(b.body.reduction_ranges) > SUM_BLOCK:
                t, value = "double", f"(double){value}"
            acc = k.temp()
            if rt.startswith("welford"):
                # every column has seen the same rows: one count and one 1/count per row
                out.append(f"double {acc}_mean[{TILE}] = {{0}}, {acc}_m2[{TILE}] = {{0}}; int64_t {acc}_n = 0;")
                n = _loop_open(loops, out)
                out.append(f"    {acc}_n++; const double {acc}_inv = 1.0 / (double){acc}_n;")
                step = (f"const double x_ = (double){value}; const double d_ = x_ - {acc}_mean[{col}];"
                        f" {acc}_mean[{col}] += d_ * {acc}_inv; {acc}_m2[{col}] += d_ * (x_ - {acc}_mean[{col}]);")
                result = (f"(({ctype(b.dtype)}){acc}_m2[{col}])" if rt == "welford_m2" else
                          f"(({ctype(b.dtype)})({acc}_n ? {acc}_mean[{col}] : NAN))")
            else:
                init, combine = _step(rt, t, src.is_floating_point)
                out += [f"{t} {acc}[{TILE}];", f"for (int64_t j_ = 0; j_ < {TILE}; j_++) {acc}[j_] = {init};"]
                n = _loop_open(loops, out)
                step = combine(f"{acc}[{col}]", value)
                result = f"(({ctype(b.dtype)}){acc}[{col}])"
            out += ["    " + ln for ln in column_loop(lines + [step])]
            out.append("}" * n)
        else:
            result = value
            out_lines = lines
        if b.name in group.local | group.row_local:
            if reduction:
                locals_[b.name] = result
                continue
            arr = k.temp()                # a pointwise value read by later members: a tile array
            out.append(f"{ctype(b.dtype)} {arr}[{TILE}];")
            out += column_loop(out_lines + [f"{arr}[{col}] = {result};"])
            locals_[b.name] = f"{arr}[{col}]"
            continue
        k.use(b)
        k.written.add(b.name)
        store = f"{b.name}[{stores[b.name].render(rename)}] = {to_memory(b.dtype, result)};"
        out += column_loop(([] if reduction else out_lines) + [store])
        if reduction:
            locals_[b.name] = result
    return out + ["}"]
