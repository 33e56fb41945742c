"""cross_entropy over class indices as row reductions the scheduler fuses into one kernel over the
logits' rows (registered into lowering.LOWERINGS).

Eager's kernel needs its input materialised: under autocast that is a float32 copy of the bf16
logits (GPT-2's [8192, 50257]: 1.6 GB written and read back). Lowered, the cast stays inlined in the
loads and each row is reduced where it lies: its maximum, the sum of exp(x - max) and the picked
shifted logit, the last as a sum of where(column == target, x - max, 0) (one non-zero term, so
exact) instead of an indirect load, which would realise the computed input whole. The loss is then
eager's formula, -((x[t] - max) - log(sum)), 0 where the target is ignore_index; 'mean' divides by
the count of targets kept. A target out of range sets the kernel's error bit (eager's IndexError).

Triton only: on the CPU eager's native kernel already reads its input once per row. Covered: 2-D
float32/float64 input, 1-D int64 targets, no weight, no label smoothing; any
other call returns None and runs eager's kernel.
"""
from __future__ import annotations

import math

from .._core import dtype as _dt
from .ir import Expr, Pointwise, ops
from .lowering import _Meta, loader_for, pointwise, reduce, register


def _kept_target(target, ignore_index, C):
    """fn(row) -> (ignored?, the checked target: 0 where ignored) as ops values."""
    load = loader_for(target, target.shape, _dt.int64)

    def row(i):
        t = load([i])
        ignored = ops.binary("eq", t, ops.constant(ignore_index, _dt.int64), _dt.bool_)
        safe = ops.where(ignored, ops.constant(0, _dt.int64), t, _dt.int64)
        return ignored, ops.check_index(safe, C, False, "cross_entropy")
    return row


@register("cross_entropy_loss.default")
def cross_entropy(g, meta, x, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
    if (not getattr(g, "triton", False) or len(x.shape) != 2 or weight is not None or label_smoothing != 0 or x.dtype not in (_dt.float32, _dt.float64)
            or not hasattr(target, "make_loader") or target.dtype != _dt.int64
            or tuple(target.shape) != (x.shape[0],) or math.prod(x.shape) == 0):
        return None
    dtype = x.dtype
    N, C = x.shape
    row_target = _kept_target(target, ignore_index, C)
    m = reduce(g, x, [1], True, "max", dtype, dtype)
    shifted = pointwise(_Meta(x.shape, dtype), [x, m], dtype, lambda v, mx: ops.binary("sub", v, mx, dtype))
    total = reduce(g, pointwise(_Meta(x.shape, dtype), [shifted], dtype, lambda v: ops.unary("exp", v, dtype)),
                   [1], True, "sum", dtype, dtype)
    load_shifted = shifted.make_loader()
    # each row's checked target, stored: computed once per row, not at each of its C columns
    load_checked = g.realize(Pointwise((N,), _dt.int64, lambda index: row_target(index[0])[1], 6)).make_loader()

    def at_target(index):
        hit = ops.binary("eq", ops.index_expr(index[1], _dt.int64), load_checked([index[0]]), _dt.bool_)
        return ops.where(hit, load_shifted(index), ops.constant(0, dtype), dtype)
    picked = reduce(g, Pointwise(tuple(x.shape), dtype, at_target, 3), [1], True, "sum", dtype, dtype)
    load_total, load_picked = total.make_loader(), picked.make_loader()

    def row_loss(index):
        ignored, _ = row_target(index[0])
        logp = ops.binary("sub", load_picked([index[0], Expr()]),
                          ops.unary("log", load_total([index[0], Expr()]), dtype), dtype)
        return ops.where(ignored, ops.constant(0, dtype), ops.unary("neg", logp, dtype), dtype)
    losses = Pointwise((N,), dtype, row_loss, 4)
    if reduction == 0:
        return losses
    loss_sum = reduce(g, losses, [0], False, "sum", dtype, dtype)
    if reduction == 2:
        return loss_sum
    kept = Pointwise((N,), dtype, lambda index: ops.where(
        row_target(index[0])[0], ops.constant(0, dtype), ops.constant(1, dtype), dtype), 2)
    count = reduce(g, kept, [0], False, "sum", dtype, dtype)
    return pointwise(meta, [loss_sum, count], dtype, lambda s, n: ops.binary("truediv", s, n, dtype))
