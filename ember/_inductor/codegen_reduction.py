"""C code of one reduction member of a kernel (codegen_c.generate_kernel calls `emit_reduction`).

    double acc_mean[L], acc_m2[L]; ...        # L lanes of accumulators, L * sizeof(type) = LANE_BYTES
    for (r_k = 0; r_k + L <= n; r_k += L) {   # whole blocks: the lanes are SIMD registers
        #pragma omp simd
        for (r_j = 0; r_j < L; r_j++) { r = r_k + r_j; ...; acc[r_j] += value; }
    }
    for (r = r_k; r < n; r++) { ...; acc_tail += value; }      # the rest, then the lanes summed

Several accumulators: one `#pragma omp simd reduction` loop keeps a single vector accumulator, so
a row sum waits on the adder's latency (3-4 cycles per vector); L lanes (several vectors) let the
adds of consecutive vectors overlap (layer_norm's two row reductions, softmax's max and sum).
Welford (var/std) runs the same way: each lane keeps its own mean and sum of squared deviations
(all lanes have seen the same count, so 1/count is one scalar division per block, not one per
element), and the lanes are merged with Chan's pairwise formula. float32 sums add SUM_BLOCK
elements in float and the blocks in double; a sum of at least STREAM_BLOCK elements reads each such
block as SUM_STREAMS parts at once (lanes 16 s .. 16 s + 15 take part s): one core reads DRAM ~1.3x
faster from four streams than from one (bench/read_bound.py). Float max/min propagate NaN (a flag
beside the vector max) and run as one simd loop (vmaxps has no add-like latency to hide).
"""
from __future__ import annotations

from .._core import dtype as _dt
from . import codegen_c_vec, ir
from .codegen_c import CEmitter, _loop_open, ctype, hoist_invariants, to_memory

SUM_BLOCK = 4096
SUM_STREAMS, STREAM_LEN = 4, 8192      # 4 x 32 KB read at once: the fastest of 2-8 streams of 8-64 KB here
STREAM_BLOCK = SUM_STREAMS * STREAM_LEN
LANE_BYTES = 256                # 4 AVX-512 vectors (8 AVX2 ones): enough to cover the add latency
_SIZEOF = {"float": 4, "double": 8, "int64_t": 8, "int32_t": 4, "int16_t": 2, "int8_t": 1, "uint8_t": 1,
           "_Bool": 1, "int": 4}
_REDUCE_INIT = {"sum": "0", "prod": "1", "any": "0", "all": "1"}
_INT_LIMITS = {"int64_t": ("INT64_MIN", "INT64_MAX"), "int32_t": ("INT32_MIN", "INT32_MAX"),
               "int16_t": ("INT16_MIN", "INT16_MAX"), "int8_t": ("INT8_MIN", "INT8_MAX"),
               "uint8_t": ("0", "UINT8_MAX"), "_Bool": ("0", "1")}


def lanes_of(t) -> int:
    return max(1, LANE_BYTES // _SIZEOF[t])


def _combiner(rt, t, floating, acc):
    """(init, step(acc_text, value) -> C statement, merge(acc_text, lane_text) -> C statement, the
    simd reduction clause for `acc`, its NaN flag or None: a float max/min also ors `acc`_nan)."""
    s = "f" if t == "float" else "d"
    if rt in ("sum", "prod"):
        op = "+" if rt == "sum" else "*"
        step = lambda a, v: f"{a} {op}= {v};"                               # noqa: E731
        return _REDUCE_INIT[rt], step, step, f"reduction({op}:{acc})", None
    if rt in ("any", "all"):
        op = "|" if rt == "any" else "&"
        return (_REDUCE_INIT[rt], (lambda a, v: f"{a} {op}= ({v} != 0);"), (lambda a, v: f"{a} {op}= {v};"),
                f"reduction({op}:{acc})", None)
    cmp = ">" if rt == "max" else "<"
    if floating:
        # OpenMP's own max/min (GCC vectorises it; a declared nanmax reduction stays scalar) plus a
        # NaN flag: NaN wins, as in eager. Written as a C conditional, not sel_f: GCC turns
        # `v > a ? v : a` in a max reduction into one vmaxps (whose NaN and equal cases keep `a`, as
        # the conditional does), where sel_f's bit operations cost a compare and a blend
        init = "-INFINITY" if rt == "max" else "INFINITY"
        merge = lambda a, v: f"{a} = {v} {cmp} {a} ? {v} : {a};"                 # noqa: E731
        return (init, (lambda a, v: merge(a, v) + f" {acc}_nan |= ({v} != {v});"), merge,
                f"reduction({rt}:{acc})", f"{acc}_nan")
    init = _INT_LIMITS[t][0 if rt == "max" else 1]
    merge = lambda a, v: f"{a} = {a} {cmp} {v} ? {a} : {v};"                   # noqa: E731
    return init, merge, merge, f"reduction({rt}:{acc})", None


def _blocked(v, lo, hi, lanes, lines, lane_stmt, tail_stmt):
    """C lines running `lines` for v in [lo, hi): whole blocks of `lanes` through a simd loop whose
    lane index is {v}_j (lane_stmt ends its body), then the rest one at a time (tail_stmt)."""
    out = [f"{{ int64_t {v}_k = {lo};",
           f"for (; {v}_k + {lanes} <= {hi}; {v}_k += {lanes}) {{",
           "#pragma omp simd ERR",
           f"for (int64_t {v}_j = 0; {v}_j < {lanes}; {v}_j++) {{",
           f"    const int64_t {v} = {v}_k + {v}_j;"]
    out += ["    " + ln for ln in lines] + ["    " + lane_stmt, "}}",
                                               f"for (int64_t {v} = {v}_k; {v} < {hi}; {v}++) {{"]
    return out + ["    " + ln for ln in lines] + ["    " + tail_stmt, "}}"]


def _lane_tree(acc, lanes, merge_step):
    """C lines folding the `lanes` accumulators into `acc` as a tree: halves combined in constant-size
    loops (GCC's own simd reduction ends in a serial chain of scalar adds, ~50 cycles of latency a
    row that the next loop waits for: 5% of layer_norm over rows of 1024). `lanes` is a power of 2."""
    out, width = [], lanes // 2
    while width:
        out.append(f"for (int64_t {acc}_j = 0; {acc}_j < {width}; {acc}_j++) "
                   + merge_step(f"{acc}_v[{acc}_j]", f"{acc}_v[{acc}_j + {width}]"))
        width //= 2
    return out + [merge_step(acc, f"{acc}_v[0]")]


def emit_reduction(k, b, group, loops, rename, locals_, body, store, threads, parallel):
    rt, src = b.body.reduction_type, b.body.src_dtype
    t, ot = ctype(src), ctype(b.dtype)
    acc = k.temp()
    ovars, rvars = b.canonical_vars()
    lines = []
    with ir.set_handler(CEmitter(k, lines, rename, locals_, in_loop=True)):
        value = b.body.run((ovars, rvars))
    hoisted, lines = hoist_invariants(lines, loops)     # a broadcast row value: read once
    body.extend(hoisted)
    floating = src.is_floating_point
    if rt in ("welford_mean", "welford_m2"):
        return _welford(k, b, group, loops, rename, locals_, body, store, lines, value, acc, rt, ot)
    if rt in ("argmax", "argmin"):
        return _arg(k, b, group, loops, rename, locals_, body, store, lines, value, acc, rt, t, floating, ot)
    if rt in ("any", "all"):
        t = "int"
    init, combine, merge_step, clause, nan_flag = _combiner(rt, t, floating, acc)
    result = f"({nan_flag} ? NAN : {acc})" if nan_flag else acc
    nan_decl = f" int {nan_flag} = 0;" if nan_flag else ""
    lanes = lanes_of(t)
    w = codegen_c_vec.lanes()
    if w and loops and not parallel and src == _dt.float32 and rt in ("sum", "max", "min"):
        try:            # vector-typed C (codegen_c_vec.py)
            vec, result = codegen_c_vec.reduction(k, b, loops, rename, locals_, lines, value, acc, rt, combine,
                                                  merge_step, w)
            body.extend(vec)
            return _finish(k, b, group, result, ot, locals_, body, store, rename)
        except codegen_c_vec.Unsupported:
            pass
    float_blocks = rt == "sum" and t == "float" and bool(loops) and loops[-1][1] > SUM_BLOCK
    # a float max/min takes one simd loop: vmaxps's latency (2 cycles) hides under the NaN flag's
    # work, and in the lanes' blocks GCC ors the flag across the vector after every block
    if (not parallel or float_blocks) and loops and loops[-1][1] >= 2 * lanes and not nan_flag:
        v, r = loops[-1]
        merge = _lane_tree(acc, lanes, merge_step)
        if float_blocks:
            # float blocks (streamed, then of SUM_BLOCK: lanes then tail), added up in double; in
            # parallel, the rows or else the blocks are split between the threads
            par = (f"#pragma omp parallel for num_threads({threads}) schedule(static) reduction(+:{acc}_d)"
                   if parallel else None)
            split = [par + " ERR"] if par and len(loops) == 1 else []
            body.append(f"double {acc}_d = 0;")
            n = _loop_open(loops[:-1], body, None, par)
            whole = r // STREAM_BLOCK * STREAM_BLOCK
            if whole:
                per = lanes // SUM_STREAMS
                body += split + [f"for (int64_t {v}_b = 0; {v}_b < {whole}; {v}_b += {STREAM_BLOCK}) {{",
                         f"{t} {acc} = 0; {t} {acc}_v[{lanes}] = {{0}};",
                         f"for (int64_t {v}_k = {v}_b; {v}_k < {v}_b + {STREAM_LEN}; {v}_k += {per})",
                         f"for (int64_t {v}_s = 0; {v}_s < {SUM_STREAMS}; {v}_s++) {{",
                         "#pragma omp simd ERR",
                         f"for (int64_t {v}_j = 0; {v}_j < {per}; {v}_j++) {{",
                         f"    const int64_t {v} = {v}_k + {v}_s * {STREAM_LEN} + {v}_j;"]
                body += ["    " + ln for ln in lines]
                body += ["    " + combine(f"{acc}_v[{v}_s * {per} + {v}_j]", value), "}}"]
                body += merge + [f"{acc}_d += {acc}; }}"]
            body += split + [f"for (int64_t {v}_b = {whole}; {v}_b < {r}; {v}_b += {SUM_BLOCK}) {{"]
            body.append(f"const int64_t {v}_e = {v}_b + {SUM_BLOCK} < {r} ? {v}_b + {SUM_BLOCK} : {r};")
            body.append(f"{t} {acc} = 0; {t} {acc}_v[{lanes}] = {{0}};")
            body.extend(_blocked(v, f"{v}_b", f"{v}_e", lanes, lines, combine(f"{acc}_v[{v}_j]", value),
                                 combine(acc, value)))
            body.extend(merge)
            body.append(f"{acc}_d += {acc}; }}" + "}" * n)
            return _finish(k, b, group, f"{acc}_d", ot, locals_, body, store, rename)
        body.append(f"{t} {acc} = {init}; {t} {acc}_v[{lanes}];")
        body.append(f"for (int64_t {acc}_j = 0; {acc}_j < {lanes}; {acc}_j++) {acc}_v[{acc}_j] = {init};")
        n = _loop_open(loops[:-1], body)
        body.extend(_blocked(v, "0", str(r), lanes, lines, combine(f"{acc}_v[{v}_j]", value), combine(acc, value)))
        body.append("}" * n)
        body.extend(merge)
        return _finish(k, b, group, result, ot, locals_, body, store, rename)
    lines.append(combine(acc, value))
    clause = f"{clause} reduction(|:{nan_flag})" if nan_flag else clause
    par = f"#pragma omp parallel for num_threads({threads}) schedule(static) {clause}" if parallel else None
    body.append(f"{t} {acc} = {init};{nan_decl}")
    n = _loop_open(loops, body, clause, par if loops else None)
    body.extend("    " + ln for ln in lines)
    body.append("}" * n)
    return _finish(k, b, group, result, ot, locals_, body, store, rename)


def _welford(k, b, group, loops, rename, locals_, body, store, lines, value, acc, rt, ot):
    """Welford's one pass in double (no catastrophic cancellation on large means, unlike
    sum(x*x) - sum(x)^2/n): lanes of (mean, m2) that have all seen `acc_n` elements, a scalar one
    for the tail, merged by Chan's formula. The mean of nothing is NaN, as eager's."""
    step = (f"{{ const double x_ = (double){value}; {acc}_tn++; const double d_ = x_ - {acc}_tmean;"
            f" {acc}_tmean += d_ / (double){acc}_tn; {acc}_tm2 += d_ * (x_ - {acc}_tmean); }}")
    body.append(f"double {acc}_tmean = 0, {acc}_tm2 = 0; int64_t {acc}_tn = 0;")
    lanes = lanes_of("double")
    if loops and loops[-1][1] >= 2 * lanes:
        v, r = loops[-1]
        body.append(f"double {acc}_mean[{lanes}] = {{0}}, {acc}_m2[{lanes}] = {{0}}; int64_t {acc}_n = 0;")
        n = _loop_open(loops[:-1], body)
        body += [f"for (int64_t {v}_k = 0; {v}_k + {lanes} <= {r}; {v}_k += {lanes}) {{",
                 f"{acc}_n++; const double {acc}_inv = 1.0 / (double){acc}_n;",
                 "#pragma omp simd ERR",
                 f"for (int64_t {v}_j = 0; {v}_j < {lanes}; {v}_j++) {{",
                 f"    const int64_t {v} = {v}_k + {v}_j;"]
        body += ["    " + ln for ln in lines]
        body += [f"    const double x_ = (double){value}; const double d_ = x_ - {acc}_mean[{v}_j];",
                 f"    {acc}_mean[{v}_j] += d_ * {acc}_inv; {acc}_m2[{v}_j] += d_ * (x_ - {acc}_mean[{v}_j]);",
                 "}}", f"for (int64_t {v} = {r} / {lanes} * {lanes}; {v} < {r}; {v}++) {{"]
        body += ["    " + ln for ln in lines] + ["    " + step, "}" + "}" * n]
        # Chan et al.: merge each lane (count acc_n) into the running (tail) statistics
        body.append(f"for (int64_t {acc}_j = 0; {acc}_j < {lanes}; {acc}_j++) {{ if (!{acc}_n) break;"
                    f" const double nb_ = (double){acc}_n, na_ = (double){acc}_tn, nt_ = na_ + nb_;"
                    f" const double dm_ = {acc}_mean[{acc}_j] - {acc}_tmean;"
                    f" {acc}_tmean += dm_ * (nb_ / nt_); {acc}_tm2 += {acc}_m2[{acc}_j] + dm_ * dm_ * (na_ * nb_ / nt_);"
                    f" {acc}_tn += {acc}_n; }}")
    else:
        n = _loop_open(loops, body)
        body.extend("    " + ln for ln in lines + [step])
        body.append("}" * n)
    result = f"{acc}_tm2" if rt == "welford_m2" else f"({acc}_tn ? {acc}_tmean : NAN)"
    return _finish(k, b, group, result, ot, locals_, body, store, rename)


def _arg(k, b, group, loops, rename, locals_, body, store, lines, value, acc, rt, t, floating, ot):
    """argmax / argmin: the first index of the extreme, NaN wins (a serial loop: the first wins)."""
    better = ">" if rt == "argmax" else "<"
    if floating:
        init = "-INFINITY" if rt == "argmax" else "INFINITY"
        cond = f"!({acc} != {acc}) && ({value} {better} {acc} || {value} != {value})"
    else:
        init = _INT_LIMITS[t][0 if rt == "argmax" else 1]
        cond = f"{value} {better} {acc}"
    ovars, rvars = b.canonical_vars()
    idx = ir.strided_index([ir.Expr.var(v) for v in rvars], ir.contiguous_strides(b.body.reduction_ranges))
    lines.append(f"if ({cond}) {{ {acc} = {value}; {acc}_i = {idx.render(rename)}; }}")
    body.append(f"{t} {acc} = {init}; int64_t {acc}_i = 0;")
    n = _loop_open(loops, body)
    body.extend("    " + ln for ln in lines)
    body.append("}" * n)
    return _finish(k, b, group, f"{acc}_i", ot, locals_, body, store, rename)


def _finish(k, b, group, acc, ot, locals_, body, store, rename):
    res = k.temp()
    body.append(f"const {ot} {res} = ({ot}){acc};")
    k.invariants.add(res)          # one value per outer iteration: a divisor of it is hoisted
    if b.name in group.local:
        locals_[b.name] = res
    else:
        k.use(b)
        k.written.add(b.name)
        body.append(f"{b.name}[{store.render(rename)}] = {to_memory(b.dtype, res)};")
