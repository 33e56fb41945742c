"""Lowerings that move data by index: cat and constant padding (masked loads), gather, index,
index_select and embedding (indirect loads). Registered into lowering.LOWERINGS.

A masked load (`ops.masked(mask, body, other)`) runs `body` only where the mask holds, so a read
that would leave its input is never made. An indirect load first checks the loaded index
(`ops.check_index`: wraps negatives where eager does, sets the kernel's error bit and reads element
0 when it is out of bounds), so a bad index raises eager's exception and never reads outside the
buffer. Indirectly read inputs are realised first (the index picks an element of memory).
"""
from __future__ import annotations

import math

from .._core import dtype as _dt
from .ir import BufferValue, Expr, Pointwise, cost_of, ops
from .lowering import _wrap, loader_for, register


def _in_range(e, lo, hi):
    """ops value: lo <= e < hi for an index Expr `e`."""
    v = ops.index_expr(e, _dt.int64)
    return ops.binary("logical_and", ops.binary("ge", v, ops.constant(lo, _dt.int64), _dt.int64),
                      ops.binary("lt", v, ops.constant(hi, _dt.int64), _dt.int64), _dt.bool_)


@register("cat.default")
def cat(g, meta, tensors, dim=0):
    out, dtype = tuple(meta.shape), meta.dtype
    if not all(hasattr(t, "make_loader") for t in tensors):
        return None
    # eager skips legacy empty 1-d inputs of a cat of higher-rank tensors
    parts = [t for t in tensors if not (len(t.shape) == 1 and t.shape[0] == 0 and len(out) != 1)]
    dim = _wrap(dim, len(out))
    spans, lo = [], 0
    for t in parts:
        if t.shape[dim]:
            spans.append((t, lo, lo + t.shape[dim], loader_for(t, t.shape, dtype)))
        lo += t.shape[dim]
    if not spans:
        return Pointwise(out, dtype, lambda index: ops.constant(0, dtype))

    def inner(index):
        value = None
        for t, start, end, load in reversed(spans):
            shifted = list(index)
            shifted[dim] = index[dim] + (-start)
            part = ops.masked(_in_range(index[dim], start, end), lambda s=shifted, ld=load: ld(s), 0, dtype)
            value = part if value is None else ops.where(_in_range(index[dim], start, end), part, value, dtype)
        return value
    return Pointwise(out, dtype, inner, 1 + sum(cost_of(t) + 3 for t, *_ in spans))


@register("pad.default")
def pad_(g, meta, x, pad, mode="constant", value=None):
    return constant_pad(g, meta, x, pad, value) if mode == "constant" else None


@register("constant_pad_nd.default")
def constant_pad(g, meta, x, pad, value=0):
    out, dtype, n = tuple(meta.shape), meta.dtype, len(x.shape)
    low = [0] * n
    for k in range(len(pad) // 2):          # pairs (low, high) from the last dim backwards
        low[n - 1 - k] = pad[2 * k]
    load = x.make_loader()
    fill = 0 if value is None else value
    if dtype == _dt.bool_:
        fill = bool(fill)

    def inner(index):
        src = [index[d] + (-low[d]) for d in range(n)]
        mask = None
        for d in range(n):
            if low[d] > 0 or out[d] - low[d] > x.shape[d]:     # dims whose window leaves the input
                m = _in_range(index[d], low[d], low[d] + x.shape[d])
                mask = m if mask is None else ops.binary("logical_and", mask, m, _dt.bool_)
        if math.prod(x.shape) == 0:
            return ops.constant(fill, dtype)
        if mask is None:
            return load(src)
        return ops.masked(mask, lambda: load(src), fill, dtype)
    return Pointwise(out, dtype, inner, cost_of(x) + 2 * n)


def _window(x):
    """(buffer, strides, offset) of x as memory (realised first when it is computed)."""
    return x.buffer, x.strides, x.offset


def _indirect(g, meta, x, picks, positions, op, wrap):
    """A Pointwise of meta's shape reading x[...]: `positions(index)` -> for each dim of x either an
    Expr (a direct index) or an ops value of a loaded index (checked against that dim's size)."""
    if math.prod(x.shape) == 0 and math.prod(meta.shape) != 0:
        return None                          # every index is out of bounds: eager's kernel says so
    x = g.realize(x)
    buf, strides, offset = _window(x)

    def inner(index):
        base, indirect = Expr(const=offset), []
        for d, p in enumerate(positions(index)):
            if isinstance(p, Expr):
                base = base + p * strides[d]
            else:
                indirect.append((ops.check_index(p, x.shape[d], wrap, op), strides[d]))
        return ops.load_indirect(buf, base, indirect)
    cost = 2 + sum(cost_of(p) for p in picks)
    return Pointwise(tuple(meta.shape), meta.dtype, inner, cost)


def _index_loader(idx):
    load = idx.make_loader()
    return lambda index: load(index)


@register("index_select.default")
def index_select(g, meta, x, dim, index):
    dim = _wrap(dim, max(len(x.shape), 1))
    if len(x.shape) == 0 or len(index.shape) > 1:
        return None
    pick = _index_loader(index)
    return _indirect(g, meta, x, [index], lambda i: [pick([i[d]]) if d == dim else i[d] for d in range(len(x.shape))],
                     "index_select", False)


@register("embedding.default")
def embedding(g, meta, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if len(weight.shape) != 2:
        return None
    pick, k = _index_loader(indices), len(indices.shape)
    return _indirect(g, meta, weight, [indices], lambda i: [pick(i[:k]), i[k]], "embedding", False)


@register("gather.default")
def gather(g, meta, x, dim, index, sparse_grad=False):
    if len(x.shape) == 0 or len(index.shape) != len(x.shape):
        return None
    dim = _wrap(dim, len(x.shape))
    pick = _index_loader(index)
    return _indirect(g, meta, x, [index], lambda i: [pick(i) if d == dim else i[d] for d in range(len(x.shape))],
                     "gather", False)


def _advanced(shape, indices):
    """x[indices] for integer index tensors (broadcast together): (result shape, positions) where
    positions(result index) gives, per dim of x, an Expr or a loaded index; None for bool masks
    (a data-dependent shape) or nothing to index."""
    idx = list(indices) + [None] * (len(shape) - len(indices))
    given = [d for d, t in enumerate(idx) if t is not None]
    if not given or any(not hasattr(idx[d], "make_loader") or idx[d].dtype not in (_dt.int64, _dt.int32)
                        for d in given):
        return None
    from .lowering import broadcast_shape
    bshape = broadcast_shape(*[idx[d].shape for d in given])
    adjacent = given == list(range(given[0], given[-1] + 1))
    start = given[0] if adjacent else 0          # where the broadcast index dims go in the result
    nb = len(bshape)
    loaders = {d: loader_for(idx[d], bshape, _dt.int64) for d in given}
    rest_shape = [n for d, n in enumerate(shape) if d not in loaders]
    result = tuple(rest_shape[:start]) + tuple(bshape) + tuple(rest_shape[start:])

    def positions(i):
        bidx = i[start:start + nb]
        rest = list(i[:start]) + list(i[start + nb:])
        out, r = [], 0
        for d in range(len(shape)):
            if d in loaders:
                out.append(loaders[d](bidx))
            else:
                out.append(rest[r])
                r += 1
        return out
    return result, positions, [idx[d] for d in given]


@register("index.Tensor")
def index(g, meta, x, indices):
    adv = _advanced(x.shape, indices)
    if adv is None:
        return None
    _, positions, picks = adv
    return _indirect(g, meta, x, picks, positions, "index", True)

# -- scatters: a serial loop of updates after a copy (ir.ScatterBody) ---------------------------


def _scatter(g, meta, x, update_ranges, positions, value_fn, accumulate, op, wrap):
    from .ir import ComputedBuffer, ScatterBody
    if g.triton:
        return None         # a serial loop of updates: eager's kernel on the GPU (codegen_triton has none)
    if math.prod(x.shape) == 0 and math.prod(update_ranges) != 0:
        return None                          # every index is out of bounds: eager's kernel says so
    dtype = meta.dtype
    body = ScatterBody(meta.shape, loader_for(x, tuple(meta.shape), dtype), update_ranges, positions, value_fn,
                       accumulate, op, wrap)
    buf = ComputedBuffer(g.new_name(), meta.shape, dtype, body)
    g.nodes.append(buf)
    return BufferValue(buf)


@register("scatter_add.default")
def scatter_add(g, meta, x, dim, index, src):
    if len(x.shape) == 0 or len(index.shape) != len(x.shape) or not hasattr(src, "make_loader"):
        return None
    dim = _wrap(dim, len(x.shape))
    pick, value = index.make_loader(), loader_for(src, src.shape, meta.dtype)
    return _scatter(g, meta, x, index.shape, lambda r: [pick(r) if d == dim else r[d] for d in range(len(x.shape))],
                    value, True, "scatter_add", False)


@register("index_put.default")
def index_put(g, meta, x, indices, values, accumulate=False):
    adv = _advanced(x.shape, indices)
    if adv is None:
        return None
    result, positions, _ = adv
    return _scatter(g, meta, x, result, positions, loader_for(values, result, meta.dtype), accumulate,
                    "index_put", True)
