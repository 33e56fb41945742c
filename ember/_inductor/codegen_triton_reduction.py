"""Triton code of one reduction member of a row kernel (codegen_triton.generate_kernel calls `_reduction`).

Persistent (the row fits one block): the masked lanes take the reduction's identity, then one
tl.sum / tl.reduce over the block. var/std (welford_m2) is an exact two-pass over the registers:
the mean (CSE'd with a welford_mean member of the same row), then the sum of squared deviations.

Looped: a block-wide accumulator updated per chunk, reduced after the loop; Welford keeps a
(mean, m2, count) per lane, merged by Chan's formula (triton_helpers.welford). argmax/argmin keep
(value, index) per lane; ties go to the smaller index, so the first extreme wins as in eager.
"""
from __future__ import annotations

import re

from .._core import dtype as _dt
from . import ir
from .codegen_triton import TritonEmitter, _open_inner, compute_tl

_IDENTITY = {"sum": "0", "prod": "1", "any": "0", "all": "1"}
_INT_EXTREMES = {"tl.int64": (-2 ** 63, 2 ** 63 - 1), "tl.int32": (-2 ** 31, 2 ** 31 - 1),
                 "tl.int16": (-2 ** 15, 2 ** 15 - 1), "tl.int8": (-128, 127), "tl.uint8": (0, 255),
                 "tl.int1": (0, 1)}
_BIG_INDEX = 2 ** 62


def combine_forms(rt, t, keep_dims=False):
    """(identity, final reduction over axis 0 of "{}", one accumulation step "{}", "{}") of the
    reduction `rt` over values of Triton type `t`: NaN-propagating max/min on floats."""
    init = _IDENTITY.get(rt) or _extreme_init(rt, t)
    keep = ", keep_dims=True" if keep_dims else ""
    if rt in ("max", "min") and t.startswith("tl.float"):
        return init, f"tl.reduce({{}}, 0, nan{rt}{keep})", f"nan{rt}({{}}, {{}})"
    if rt in ("max", "min", "any", "all"):
        fn = "max" if rt in ("max", "any") else "min"
        return init, f"tl.{fn}({{}}, 0{keep})", f"tl.{fn}imum({{}}, {{}})"
    if rt == "prod":
        return init, f"tl.reduce({{}}, 0, prod{keep})", "({} * {})"
    return init, f"tl.sum({{}}, 0{keep})", "({} + {})"


def _extreme_init(rt, t):
    """The identity of max/min (and argmax/argmin) in compute type t."""
    low = rt in ("max", "argmax")
    if t.startswith("tl.float"):
        return "float('-inf')" if low else "float('inf')"
    return str(_INT_EXTREMES[t][0 if low else 1])


def _reduction(k, b, inner, inner_vars, rename, locals_, lines, cse, persistent, mask):
    """Emit member `b` (a ReductionBody) of a row kernel; returns the name of its per-row result."""
    rt, src = b.body.reduction_type, b.body.src_dtype
    numel = 1
    for r in inner:
        numel *= r
    ovars, rvars = b.canonical_vars()
    body, rmask, sub, own_cse = _open_inner(k, inner, inner_vars, b, rename, lines, cse, persistent)
    head_len, mark = len(body), len(lines)      # (the loop's header lines; where its accumulators begin)
    em = TritonEmitter(k, body, sub, locals_, rmask, own_cse)
    with ir.set_handler(em):
        value = b.body.run((ovars, rvars))
    t = compute_tl(src)
    lane = rmask.replace("_mask", "")
    if rt in ("any", "all"):
        value, t = em._emit(f"({value} != 0).to(tl.int8)"), "tl.int8"
    if rt in ("welford_mean", "welford_m2"):
        res = _welford(k, em, body, lines, value, rmask, numel, rt, t, persistent)
    elif rt in ("argmax", "argmin"):
        init = _extreme_init(rt, t)
        if persistent:
            res = em._emit(f"tl.reduce((tl.where({rmask}, {value}, {init}), tl.where({rmask}, {lane}.to(tl.int64), "
                           f"{_BIG_INDEX})), 0, {rt})[1]")
        else:
            acc = k.temp()
            lines += [f"{acc}_v = tl.full([{_block(body)}], {init}, {t})",
                      f"{acc}_i = tl.full([{_block(body)}], {_BIG_INDEX}, tl.int64)"]
            body.append(f"{acc}_v, {acc}_i = {rt}({acc}_v, {acc}_i, tl.where({rmask}, {value}, {init}), "
                        f"tl.where({rmask}, {lane}.to(tl.int64), {_BIG_INDEX}))")
            res = f"tl.reduce(({acc}_v, {acc}_i), 0, {rt})[1]"
    else:
        init, final, step = combine_forms(rt, t)
        masked = f"tl.where({rmask}, {value}, {init})"
        if persistent:
            res = em._emit(final.format(masked))
        else:
            acc = k.temp()
            lines.append(f"{acc} = tl.full([{_block(body)}], {init}, {t})")
            body.append(f"{acc} = {step.format(acc, masked)}")
            res = final.format(acc)
    if not persistent:
        inits = lines[mark:]
        del lines[mark:]
        _place_loop(k, lines, inits, [body[0]] + ["    " + ln for ln in body[1:]], head_len)
    out = k.temp()
    if b.dtype == _dt.bool_:
        lines.append(f"{out} = {res} != 0")
    else:
        lines.append(f"{out} = ({res}).to({compute_tl(b.dtype)})")
    return out


_TEMP = re.compile(r"\b(t\d+)(?:_\w+)?\b")


def _place_loop(k, lines, inits, loop, head_len):
    """Append a looped reduction (its accumulators, then its loop); into the kernel's previous loop
    when that one runs over the same range and nothing this one reads is computed from that loop's
    results or stored after it: independent reductions of one row share one pass over it (the
    loss's picked logit and its sum of exponentials read the logits once, not twice). Per-row lines
    between the loops that do not read the earlier loop (a row's target) move up before it."""
    prev = k.open_loop
    if prev is not None and lines[prev[0]:prev[0] + head_len] == loop[:head_len]:
        start, end = prev
        dependent = {m.group(1) for ln in lines[start:end] for m in [_TEMP.match(ln.strip())] if m}
        movable, kept = [], []
        for ln in lines[end:]:
            if ln.startswith(("for ", " ")):
                break                                   # another loop in between
            if set(_TEMP.findall(ln)) & dependent or "tl.store(" in ln or "debug_barrier" in ln:
                kept.append(ln)
                m = _TEMP.match(ln.strip())
                dependent |= {m.group(1)} if m else set()
            else:
                movable.append(ln)
        else:
            text = "\n".join(loop[head_len:])
            computed = {m.group(1) for ln in kept for m in [_TEMP.match(ln.strip())] if m}
            stored = set(re.findall(r"tl\.store\((\w+)", "\n".join(kept)))
            if not computed & set(_TEMP.findall(text)) and not any(re.search(rf"\b{b}\b", text) for b in stored):
                joined = _reusing(lines[start + head_len:end], loop[head_len:])
                lines[end:] = joined + kept
                lines[start:start] = movable + inits
                k.open_loop = (start + len(movable) + len(inits), end + len(movable) + len(inits) + len(joined))
                return
    lines.extend(inits)
    k.open_loop = (len(lines), len(lines) + len(loop))
    lines.extend(loop)


_ASSIGN = re.compile(r"(\s*)(t\d+) = (.*)$")


def _reusing(loop_lines, new_lines):
    """new_lines, joining loop_lines' iteration, without the lines that compute what a line of
    loop_lines already computes (the same expression text: the same load of the row, the same
    index compare), their names replaced by the earlier ones. new_lines read none of loop_lines'
    names (_place_loop's check), so equal text means an equal value."""
    earlier = {}
    for ln in loop_lines:
        m = _ASSIGN.match(ln)
        if m and not re.search(rf"\b{m.group(2)}\b", m.group(3)):     # (not an accumulator's update)
            earlier.setdefault(m.group(3), m.group(2))
    out, renamed = [], {}
    for ln in new_lines:
        if renamed:
            ln = _TEMP_NAME.sub(lambda t: renamed.get(t.group(0), t.group(0)), ln)
        m = _ASSIGN.match(ln)
        if m and m.group(3) in earlier:
            renamed[m.group(2)] = earlier[m.group(3)]
            continue
        out.append(ln)
    return out


_TEMP_NAME = re.compile(r"\bt\d+\b")


def _block(body):
    """The chunk size of a looped member (its lane index line: `rN = rN_off + tl.arange(0, B)`)."""
    return body[1].rsplit(", ", 1)[1].rstrip(")")


def _welford(k, em, body, lines, value, rmask, numel, rt, t, persistent):
    if t not in ("tl.float32", "tl.float64"):
        t = "tl.float32"
    if numel == 0:
        return "float('nan')" if rt == "welford_mean" else "0.0"
    if persistent:
        total = em._emit(f"tl.sum(tl.where({rmask}, ({value}).to({t}), 0), 0)")
        mean = em._emit(f"div_rn({total}, tl.full([], {float(numel)}, {t}))")
        if rt == "welford_mean":
            return mean
        dev = em._emit(f"tl.where({rmask}, ({value}).to({t}) - {mean}, 0)")
        return em._emit(f"tl.sum({dev} * {dev}, 0)")
    acc, block = k.temp(), _block(body)
    lines += [f"{acc}_mean = tl.zeros([{block}], {t})", f"{acc}_m2 = tl.zeros([{block}], {t})",
              f"{acc}_n = tl.zeros([{block}], {t})"]
    body += [f"{acc}_x = ({value}).to({t})",
             f"{acc}_n = {acc}_n + tl.where({rmask}, 1.0, 0.0)",
             f"{acc}_d = tl.where({rmask}, {acc}_x - {acc}_mean, 0.0)",
             f"{acc}_mean = {acc}_mean + div_rn({acc}_d, tl.maximum({acc}_n, 1.0))",
             f"{acc}_m2 = {acc}_m2 + tl.where({rmask}, {acc}_d * ({acc}_x - {acc}_mean), 0.0)"]
    index = 0 if rt == "welford_mean" else 1
    return f"tl.reduce(({acc}_mean, {acc}_m2, {acc}_n), 0, welford)[{index}]"
