"""The scheduler: which buffers are computed together in one kernel (Inductor's scheduler.py).

    groups = schedule(nodes, kept)     # [FusedGroup | ExternCall] in an order that respects reads

A FusedGroup shares one outer loop nest over `outer` (a shape). Each member runs inside it:
a pointwise buffer of shape outer + inner loops over its `inner` dims (vertical fusion: producer
then consumer; horizontal: siblings of one shape share the same loop body), a reduction over
outer loops its reduction dims (so softmax's max, sum and division, or layer_norm's mean,
variance and normalisation, are one kernel with one pass structure per row). A member may read a
buffer written by an earlier member only inside the current outer iteration ("row-local"); a
reduction read only so, by members of its own group, never reaches memory (`local`).

Only the latest group grows, and an extern call closes it, so program order (and the random
generator's order of draws) is kept; the one exception, a reduction that reads nothing of the
latest group joining the group before it (`_joins_previous`: the two stages of split reductions
interleave), moves no work across an extern, and in-kernel random numbers are counter-based (their
values do not depend on the kernels' order). EMBER_LOGS=fusion prints each decision with its reason,
EMBER_LOGS=schedule the loop IR and the final groups.
"""
from __future__ import annotations

import math

from .._logging import trace_log
from . import ir


class FusedGroup:
    def __init__(self, outer, members):
        self.outer, self.members = tuple(outer), list(members)
        self.local = set()          # names of reductions kept in registers
        self.row_local = set()      # pointwise buffers read only here: a per-row array in the kernel
        self.read_here = set()      # pointwise buffers read only here but too long for a row array

    def inner_ranges(self, buf):
        body = buf.body
        if isinstance(body, ir.ReductionBody):
            return body.reduction_ranges
        return body.ranges[len(self.outer):]

    def __repr__(self):
        names = ", ".join(b.name + (" (local)" if b.name in self.local | self.row_local else "")
                          for b in self.members)
        return f"kernel over {list(self.outer)}: {names}"


def _fits(buf, outer):
    """Can `buf` run inside an outer loop nest over `outer`?"""
    body = buf.body
    if isinstance(body, ir.ReductionBody):
        return body.ranges == outer
    return body.ranges[:len(outer)] == outer


def _var_ranges(buf, k):
    """Loop variable -> range for buf's canonical variables that are *inner* under k outer dims."""
    body = buf.body
    outer_vars, rvars = buf.canonical_vars()
    ranges = dict(zip(outer_vars[k:], body.ranges[k:]))
    if isinstance(body, ir.ReductionBody):
        ranges.update(zip(rvars, body.reduction_ranges))
    return ranges


def _row_local(expr, producer, k, inner_ranges):
    """Is `expr` (a read of producer by a member with `inner_ranges`) inside the current row?"""
    for d in range(k):
        if expr.coeff(f"i{d}") != producer.strides[d]:
            return False
    lo = hi = expr.const
    for var, c in expr.terms.items():
        if var in inner_ranges:
            span = c * (inner_ranges[var] - 1)
            lo, hi = lo + min(0, span), hi + max(0, span)
        elif not (var.startswith("i") and int(var[1:]) < k):
            return False
    row = math.prod(producer.shape[k:])
    return 0 <= lo and hi < max(row, 1)


def _legal(members, outer, reads):
    """Why `members` cannot share an outer loop over `outer` (None when they can)."""
    k = len(outer)
    if not all(_fits(b, outer) for b in members):
        return "shapes differ"
    inside = {b.name: b for b in members}
    for b in members:
        inner = _var_ranges(b, k)
        for producer, expr in reads[b.name]:
            if producer.name in inside and not _row_local(expr, producer, k, inner):
                return f"{b.name} reads {producer.name} outside the current row"
    return None


def schedule(nodes, kept_names):
    """Group `nodes` (ComputedBuffer | ExternCall) into kernels; `kept_names`: buffers that must be
    in memory after the graph or for an extern (outputs, extern arguments)."""
    reads = {b.name: b.reads() for b in nodes if isinstance(b, ir.ComputedBuffer)}
    trace_log("schedule", lambda: "LOOP IR\n" + "\n".join(
        repr(b) + "".join(f"\n    reads {p.name}[{e}]" for p, e in reads.get(b.name, ())) for b in nodes))
    out, group = [], None
    for node in nodes:
        if isinstance(node, ir.ExternCall):
            out.append(node)
            group = None
            continue
        if isinstance(node.body, ir.ScatterBody):       # a kernel of its own: its writes are serial
            out.append(FusedGroup(node.body.ranges, [node]))
            group = None
            continue
        if group is not None:
            decision = _try_fuse(group, node, reads)
            trace_log("fusion", lambda: f"fuse {node.name} into [{', '.join(b.name for b in group.members)}]: "
                      + ("yes" if decision is None else f"no ({decision})"))
            if decision is None:
                continue
            if _joins_previous(out, node, reads):
                continue
        outer = node.body.ranges
        group = FusedGroup(outer, [node])
        out.append(group)
    _mark_local(out, reads, kept_names)
    trace_log("schedule", lambda: "SCHEDULE\n" + "\n".join(repr(g) for g in out))
    return out


def _joins_previous(out, node, reads) -> bool:
    """Fuse reduction `node` into the group before the latest one when it reads nothing of the
    latest (which came before it, so cannot read it): a split reduction's second stage sits between
    two first stages over the same rows (LayerNorm's weight and bias gradients on the GPU), which
    then share one pass over the gradient."""
    if len(out) < 2 or not isinstance(node.body, ir.ReductionBody) or \
            not all(isinstance(g, FusedGroup) for g in out[-2:]):
        return False
    latest = {b.name for b in out[-1].members}
    if any(p.name in latest for p, _ in reads[node.name]):
        return False
    decision = _try_fuse(out[-2], node, reads)
    trace_log("fusion", lambda: f"fuse {node.name} into the group before: "
              + ("yes" if decision is None else f"no ({decision})"))
    return decision is None


def _try_fuse(group, node, reads):
    """Add `node` to `group` (maybe narrowing its outer loops); the reason it cannot, or None."""
    candidates = [group.outer]
    body = node.body
    if isinstance(body, ir.ReductionBody) and body.ranges != group.outer and \
            group.outer[:len(body.ranges)] == body.ranges and \
            all(isinstance(b.body, ir.PointwiseBody) for b in group.members):
        candidates.append(body.ranges)       # a pointwise group narrows to the reduction's rows
    reason = "no candidate"
    for outer in candidates:
        reason = _too_few_rows(group.members + [node], outer) or _legal(group.members + [node], outer, reads)
        if reason is None:
            group.outer = outer
            group.members.append(node)
            return None
    return reason


# a kernel runs one program per outer iteration: a pointwise member doing more than BIG_ROW
# elements per iteration of fewer than FEW_ROWS iterations would leave the GPU to a few programs
# (GPT-2's loss gradient, [8192, 50257] elements, fused after the scalar count of its targets
# took 103 ms in one program); it gets a kernel of its own, parallel over its elements
FEW_ROWS, BIG_ROW = 128, 8192


def _too_few_rows(members, outer):
    if math.prod(outer) >= FEW_ROWS:
        return None
    for b in members:
        if isinstance(b.body, ir.PointwiseBody) and math.prod(b.body.ranges[len(outer):]) > BIG_ROW:
            return f"{b.name} would run {math.prod(b.body.ranges[len(outer):])} elements in each of " \
                   f"{math.prod(outer)} programs"
    return None


def _mark_local(groups, reads, kept_names):
    owner = {}
    for g in groups:
        if isinstance(g, FusedGroup):
            for b in g.members:
                owner[b.name] = g
    readers = {}
    for g in groups:
        if isinstance(g, FusedGroup):
            for b in g.members:
                for producer, _ in reads[b.name]:
                    readers.setdefault(producer.name, set()).add(id(g))
    for g in groups:
        if isinstance(g, FusedGroup):
            for b in g.members:
                if b.name in kept_names or not readers.get(b.name, set()) <= {id(g)}:
                    continue
                if isinstance(b.body, ir.ReductionBody) and b.body.ranges == g.outer:
                    g.local.add(b.name)
                elif isinstance(b.body, ir.PointwiseBody) and math.prod(b.shape[len(g.outer):]) <= ROW_LOCAL_LIMIT:
                    g.row_local.add(b.name)
                elif isinstance(b.body, ir.PointwiseBody):
                    g.read_here.add(b.name)     # the Triton generator may recompute it where read


ROW_LOCAL_LIMIT = 16384      # elements of a per-row scratch array (on the kernel's stack)
