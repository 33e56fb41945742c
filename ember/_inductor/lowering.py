"""Lowerings: aten op -> loop IR, one table keyed like the derivatives ("add.Tensor": ...).

    LOWERINGS["exp.default"](g, meta, x)      # g: the GraphLowering, meta: node.meta["val"],
                                              # tensor arguments are ir.Values, the rest Python

Pointwise ops build an `ir.Pointwise` whose inner_fn loads each (broadcast) input, casts it to the
computing dtype and calls `ops.unary/binary/...`; reductions build `ir.ReductionBody` buffers
(softmax, layer_norm, var, logsumexp are reductions + pointwise, fused per row by the scheduler);
views rewrite strides (`ir.BufferValue`) or indices (`ir.Pointwise`) and copy nothing. An op
missing here runs its eager kernel inside the compiled graph (`GraphLowering.extern`); so does any
op on a dtype the C code does not compute (complex); float16/bfloat16 are computed in float.
"""
from __future__ import annotations

import math

from .._core import dtype as _dt
from .ir import BufferValue, Expr, Pointwise, ReductionBody, cost_of, ops

LOWERINGS: dict = {}
# ops the fuser runs through its own extern kernels (lowering_blas.py: linear, matmul), not fused into
# generated C: kept apart so LOWERINGS stays "what becomes C" (the jit's fusion groups read it)
EXTERN_LOWERINGS: dict = {}


def register(*keys, table=LOWERINGS):
    def deco(fn):
        for key in keys:
            table[key] = fn
        return fn
    return deco


def _meta_of(v):
    from .._core.tensor import wrap_meta
    return wrap_meta(v.shape, v.dtype) if hasattr(v, "make_loader") else v


def result_type(*args):
    import ember
    return ember.result_type(*[_meta_of(a) for a in args])


def broadcast_shape(*shapes):
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(ndim):
        sizes = {s[d - ndim + len(s)] for s in shapes if d - ndim + len(s) >= 0} - {1}
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def loader_for(value, shape, dtype):
    """fn(index over `shape`) -> ops value of `value` (Value or Python scalar) broadcast to `shape`,
    cast to `dtype`."""
    if not hasattr(value, "make_loader"):
        return lambda index: ops.constant(value, dtype)
    inner, src, vshape = value.make_loader(), value.dtype, value.shape
    lead = len(shape) - len(vshape)

    def load(index):
        idx = [Expr() if vshape[d] == 1 else index[lead + d] for d in range(len(vshape))]
        v = inner(idx)
        return v if src == dtype else ops.to_dtype(v, src, dtype)
    return load


def pointwise(meta, inputs, compute_dtype, fn):
    """A Pointwise of `meta`'s shape/dtype: fn(*loaded inputs cast to compute_dtype)."""
    shape = tuple(meta.shape)
    loaders = [loader_for(x, shape, compute_dtype) for x in inputs]
    cost = 1 + sum(cost_of(x) for x in inputs if hasattr(x, "make_loader"))
    return Pointwise(shape, meta.dtype, lambda index: fn(*[ld(index) for ld in loaders]), cost)

# -- pointwise ops -----------------------------------------------------------------------------


FLOAT_UNARY = ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf", "erfc",
               "log1p", "expm1", "log2", "log10", "exp2", "asin", "acos", "atan", "sinh", "cosh",
               "asinh", "acosh", "atanh", "reciprocal", "silu")
SAME_DTYPE_UNARY = ("neg", "abs", "floor", "ceil", "trunc", "round", "relu", "frac", "square", "sign",
                    "bitwise_not")
BOOL_UNARY = ("isnan", "isinf", "isfinite", "logical_not")


def _unary(name):
    def lower(g, meta, x):
        dtype = x.dtype if name in BOOL_UNARY else meta.dtype
        return pointwise(meta, [x], dtype, lambda v: ops.unary(name, v, dtype))
    return lower


for _name in FLOAT_UNARY + SAME_DTYPE_UNARY + BOOL_UNARY:
    register(f"{_name}.default")(_unary(_name))


@register("gelu.default")
def gelu(g, meta, x, approximate="none"):
    name = "gelu_tanh" if approximate == "tanh" else "gelu"
    return pointwise(meta, [x], meta.dtype, lambda v: ops.unary(name, v, meta.dtype))


# -- constants: factories read nothing; a constant is inlined into its readers (a graph output is
# a kernel that stores it)
_FILL_VALUE = {"ones.default": lambda *a: 1, "zeros.default": lambda *a: 0, "full.default": lambda size, v: v,
               "ones_like.default": lambda x: 1, "zeros_like.default": lambda x: 0, "full_like.default": lambda x, v: v,
               "new_ones.default": lambda x, size: 1, "new_zeros.default": lambda x, size: 0,
               "new_full.default": lambda x, size, v: v, "scalar_tensor.default": lambda v: v,
               "fill.Scalar": lambda x, v: v}


@register(*_FILL_VALUE)
def constant_fill(g, meta, *args, device=None, **_dtype_layout_pin_memory_format):
    if device is not None and not str(device).startswith(g.device):
        return None
    value = _FILL_VALUE[g.current_key](*args)
    return Pointwise(meta.shape, meta.dtype, lambda index: ops.constant(value, meta.dtype))


@register("arange.default", "arange.start", "arange.start_step")
def arange(g, meta, *args, device=None, **_dtype_layout_pin_memory):
    """Integer results only (exact); a float arange's accumulate-type rounding is eager's (an extern)."""
    if (device is not None and not str(device).startswith(g.device)) or meta.dtype.is_floating_point or \
            not all(isinstance(a, int) for a in args):
        return None
    start, step = (0, 1) if len(args) == 1 else (args[0], args[2] if len(args) > 2 else 1)
    return Pointwise(meta.shape, meta.dtype, lambda index: ops.index_expr(index[0] * step + start, meta.dtype))


@register("fill.Tensor")
def fill_tensor(g, meta, x, value):
    return pointwise(meta, [value], meta.dtype, lambda v: v)


def _binary(name, compute="out"):
    """compute: "out" (the result's dtype), "promoted" (comparisons: the operands' common dtype)."""
    def lower(g, meta, a, b, alpha=None):
        dtype = meta.dtype if compute == "out" else result_type(a, b)
        if alpha is not None and alpha != 1:
            return pointwise(meta, [a, b], dtype, lambda x, y: ops.binary(
                name, x, ops.binary("mul", y, ops.constant(alpha, dtype), dtype), dtype))
        return pointwise(meta, [a, b], dtype, lambda x, y: ops.binary(name, x, y, dtype))
    return lower


for _key, _name in (("add.Tensor", "add"), ("sub.Tensor", "sub"), ("mul.Tensor", "mul"),
                    ("div.Tensor", "truediv"), ("floor_divide.default", "floordiv"),
                    ("remainder.Tensor", "remainder"), ("remainder.Scalar_Tensor", "remainder"),
                    ("fmod.Tensor", "fmod"), ("maximum.default", "maximum"),
                    ("minimum.default", "minimum"), ("atan2.default", "atan2"),
                    ("bitwise_and.Tensor", "bitwise_and"), ("bitwise_or.Tensor", "bitwise_or"),
                    ("bitwise_xor.Tensor", "bitwise_xor"), ("max.other", "maximum"),
                    ("min.other", "minimum"), ("copysign.Tensor", "copysign")):
    register(_key)(_binary(_name))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    register(f"{_name}.Tensor", f"{_name}.Scalar")(_binary(_name, "promoted"))


@register("rsub.Tensor")
def rsub(g, meta, a, b, alpha=1):
    return _binary("sub")(g, meta, b, a, alpha)


def _logical(name):
    def lower(g, meta, a, b):                # operands become bool first (x != 0)
        return pointwise(meta, [a, b], _dt.bool_, lambda x, y: ops.binary(name, x, y, _dt.bool_))
    return lower


for _name in ("logical_and", "logical_or", "logical_xor"):
    register(f"{_name}.default")(_logical(_name))


@register("div.Tensor_mode")
def div_mode(g, meta, a, b, rounding_mode=None):
    name = {None: "truediv", "trunc": "truncdiv", "floor": "floordiv"}[rounding_mode]
    return pointwise(meta, [a, b], meta.dtype, lambda x, y: ops.binary(name, x, y, meta.dtype))


@register("pow.Tensor_Tensor", "pow.Scalar")
def pow_(g, meta, base, exponent):
    if not meta.dtype.is_floating_point:
        return None                                  # integer powers: the eager kernel
    dtype = meta.dtype
    if not hasattr(exponent, "make_loader") and exponent in (2, 3, 0.5, 1, -1):
        shapes = {2: lambda x: ops.binary("mul", x, x, dtype),
                  3: lambda x: ops.binary("mul", ops.binary("mul", x, x, dtype), x, dtype),
                  0.5: lambda x: ops.unary("sqrt", x, dtype), 1: lambda x: x,
                  -1: lambda x: ops.unary("reciprocal", x, dtype)}
        return pointwise(meta, [base], dtype, shapes[exponent])
    return pointwise(meta, [base, exponent], dtype, lambda x, y: ops.binary("pow", x, y, dtype))


@register("where.self")
def where(g, meta, cond, a, b):
    dtype = meta.dtype
    c = loader_for(cond, tuple(meta.shape), _dt.bool_)
    la, lb = loader_for(a, tuple(meta.shape), dtype), loader_for(b, tuple(meta.shape), dtype)
    cost = 1 + sum(cost_of(v) for v in (cond, a, b) if hasattr(v, "make_loader"))
    return Pointwise(meta.shape, dtype, lambda i: ops.where(c(i), la(i), lb(i), dtype), cost)


@register("masked_fill.Scalar", "masked_fill.Tensor")
def masked_fill(g, meta, x, mask, value):
    return where(g, meta, mask, value, x)


@register("clamp.default", "clamp.Tensor")
def clamp(g, meta, x, min=None, max=None):
    dtype = meta.dtype

    def fn(v, lo, hi):
        if lo is not None:
            v = ops.binary("clamp_min", v, lo, dtype)
        if hi is not None:
            v = ops.binary("clamp_max", v, hi, dtype)
        return v
    shape = tuple(meta.shape)
    lx = loader_for(x, shape, dtype)
    llo = None if min is None else loader_for(min, shape, dtype)
    lhi = None if max is None else loader_for(max, shape, dtype)
    return Pointwise(shape, dtype, lambda i: fn(lx(i), llo and llo(i), lhi and lhi(i)), cost_of(x) + 2)


@register("clamp_min.default")
def clamp_min(g, meta, x, min):
    return clamp(g, meta, x, min=min)


@register("clamp_max.default")
def clamp_max(g, meta, x, max):
    return clamp(g, meta, x, max=max)


@register("hardtanh.default")
def hardtanh(g, meta, x, min_val=-1.0, max_val=1.0):
    return clamp(g, meta, x, min=min_val, max=max_val)


@register("_to_copy.default", "clone.default", "contiguous.default", "to.dtype")
def copy_(g, meta, x, *args, **kwargs):
    """A fresh value (Pointwise): inlined when read inside the graph, stored when it is an output."""
    if kwargs.get("device") is not None and not str(kwargs["device"]).startswith(g.device):
        return None                          # a copy to another device: its eager kernel
    return pointwise(meta, [x], meta.dtype, lambda v: v)

# -- views -------------------------------------------------------------------------------------


def _view(x, shape, index_fn, strides_fn):
    """A view: index_fn(out index) -> in index for computed values; strides_fn(strides, offset) ->
    (strides, offset) for buffer windows (so a view of a buffer stays a strided load)."""
    if isinstance(x, BufferValue):
        strides, offset = strides_fn(x.strides, x.offset)
        return BufferValue(x.buffer, shape, strides, offset)
    inner = x.make_loader()
    return Pointwise(shape, x.dtype, lambda index: inner(index_fn(index)), cost_of(x))


def _wrap(d, n):
    return d + n if d < 0 else d


@register("permute.default")
def permute(g, meta, x, dims):
    dims = [_wrap(d, len(x.shape)) for d in dims]
    inv = [dims.index(d) for d in range(len(dims))]
    out = _view(x, tuple(meta.shape), lambda idx: [idx[inv[d]] for d in range(len(dims))],
                lambda s, o: (tuple(s[d] for d in dims), o))
    if isinstance(out, Pointwise):
        out.permute_of = (x, dims)   # an extern argument: x's buffer read through permuted strides
    return out


@register("transpose.int")
def transpose(g, meta, x, dim0, dim1):
    dims = list(range(len(x.shape)))
    d0, d1 = _wrap(dim0, len(dims)), _wrap(dim1, len(dims))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return permute(g, meta, x, dims)


@register("t.default")
def t(g, meta, x):
    return permute(g, meta, x, list(range(len(x.shape)))[::-1])


@register("expand.default")
def expand(g, meta, x, size, implicit=False):
    out = tuple(meta.shape)
    lead = len(out) - len(x.shape)
    bcast = [x.shape[d] == 1 and out[lead + d] != 1 for d in range(len(x.shape))]
    return _view(x, out, lambda idx: [Expr() if bcast[d] else idx[lead + d] for d in range(len(bcast))],
                 lambda s, o: ((0,) * lead + tuple(0 if bcast[d] else s[d] for d in range(len(bcast))), o))


@register("slice.Tensor")
def slice_(g, meta, x, dim=0, start=None, end=None, step=1):
    dim = _wrap(dim, len(x.shape))
    size = x.shape[dim]
    start = 0 if start is None else (start + size if start < 0 else start)
    start = min(max(start, 0), size)

    def index_fn(idx):
        idx = list(idx)
        idx[dim] = idx[dim] * step + start
        return idx

    def strides_fn(s, o):
        return s[:dim] + (s[dim] * step,) + s[dim + 1:], o + start * s[dim]
    return _view(x, tuple(meta.shape), index_fn, strides_fn)


@register("select.int")
def select(g, meta, x, dim, index):
    dim = _wrap(dim, len(x.shape))
    index = index + x.shape[dim] if index < 0 else index
    return _view(x, tuple(meta.shape), lambda idx: list(idx[:dim]) + [Expr(const=index)] + list(idx[dim:]),
                 lambda s, o: (s[:dim] + s[dim + 1:], o + index * s[dim]))


def _reshape_dims(x, out_shape):
    """Size-1 dims inserted/removed only: (kept in-dims, out positions of them) or None."""
    kept_in = [d for d, s in enumerate(x.shape) if s != 1]
    kept_out = [d for d, s in enumerate(out_shape) if s != 1]
    if [x.shape[d] for d in kept_in] != [out_shape[d] for d in kept_out]:
        return None
    return kept_in, kept_out


@register("unsqueeze.default", "squeeze.default", "squeeze.dim", "squeeze.dims", "view.default",
          "reshape.default", "_unsafe_view.default", "flatten.using_ints")
def reshape(g, meta, x, *args):
    out = tuple(meta.shape)
    dims = _reshape_dims(x, out)
    if dims is not None:                     # only size-1 dims move: an index rewrite
        kept_in, kept_out = dims

        def index_fn(idx):
            full = [Expr()] * len(x.shape)
            for i, o in zip(kept_in, kept_out):
                full[i] = idx[o]
            return full

        def strides_fn(s, o):
            strides = [0] * len(out)
            for i, k in zip(kept_in, kept_out):
                strides[k] = s[i]
            return tuple(strides), o
        return _view(x, out, index_fn, strides_fn)
    if isinstance(x, BufferValue):
        strides = _view_strides(x.shape, x.strides, out)
        if strides is not None:              # e.g. q of a split qkv viewed as (B, T, heads, d)
            return BufferValue(x.buffer, out, strides, x.offset)
        x = Pointwise(x.shape, x.dtype, x.make_loader())    # a window no view reaches: copied
    from .ir import contiguous_strides
    return BufferValue(g.realize(x).buffer, out, contiguous_strides(out), 0)


def _view_strides(shape, strides, out):
    """Strides under which `out` views memory laid out as (shape, strides), or None when it needs a
    copy. The in-dims fall into chunks of dims that are contiguous with each other; each chunk is cut
    into consecutive out-dims of the same element count."""
    if math.prod(shape) == 0:
        from .ir import contiguous_strides
        return contiguous_strides(out)
    chunks = []                              # [elements, innermost stride], outermost first
    for size, stride in zip(shape, strides):
        if size == 1:
            continue
        if chunks and chunks[-1][1] == stride * size:
            chunks[-1] = [chunks[-1][0] * size, stride]
        else:
            chunks.append([size, stride])
    new, d = [0] * len(out), len(out) - 1
    for numel, inner in reversed(chunks):
        done = 1
        while done < numel:
            if d < 0:
                return None
            new[d], done, d = inner * done, done * out[d], d - 1
        if done != numel:
            return None
    while d >= 0:                            # leading size-1 out-dims
        if out[d] != 1:
            return None
        new[d], d = 0, d - 1
    return tuple(new)


@register("alias.default", "detach.default")
def alias(g, meta, x):
    return x

# -- reductions --------------------------------------------------------------------------------


def _dims(x, dim):
    n = len(x.shape)
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return list(range(n))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return sorted({_wrap(d, max(n, 1)) for d in dims} & set(range(n))) if n else []


def reduce(g, x, dims, keepdim, rtype, out_dtype, src_dtype=None, fn=None):
    """BufferValue of `rtype` over `dims` of x (fn(value) applied to each element first)."""
    src_dtype = src_dtype or x.dtype
    dims = set(dims)
    kept = [d for d in range(len(x.shape)) if d not in dims]
    red = [d for d in range(len(x.shape)) if d in dims]
    load = x.make_loader()

    def inner_fn(index, rindex):
        full = [None] * len(x.shape)
        for d, i in zip(kept, index):
            full[d] = i
        for d, r in zip(red, rindex):
            full[d] = r
        v = load(full)
        if x.dtype != src_dtype:
            v = ops.to_dtype(v, x.dtype, src_dtype)
        return fn(v) if fn else v
    body = ReductionBody([x.shape[d] for d in kept], [x.shape[d] for d in red], rtype, inner_fn, src_dtype)
    value = None
    if getattr(g, "triton", False):          # the GPU: a long reduction over few outputs is split
        from .lowering_split import split_reduction
        value = split_reduction(g, body, out_dtype)
    value = value or g.reduction(body, out_dtype)
    if keepdim:
        shape = tuple(1 if d in dims else x.shape[d] for d in range(len(x.shape)))
        value = reshape(g, _Meta(shape, out_dtype), value)
    return value


class _Meta:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = tuple(shape), dtype


def _count(x, dims):
    return math.prod(x.shape[d] for d in dims)


@register("sum.default", "sum.dim_IntList")
def sum_(g, meta, x, dim=None, keepdim=False, dtype=None):
    return reduce(g, x, _dims(x, dim), keepdim, "sum", meta.dtype, meta.dtype)


@register("prod.default", "prod.dim_int")
def prod(g, meta, x, dim=None, keepdim=False, dtype=None):
    return reduce(g, x, _dims(x, dim), keepdim, "prod", meta.dtype, meta.dtype)


@register("mean.default", "mean.dim")
def mean(g, meta, x, dim=None, keepdim=False, dtype=None):
    dims = _dims(x, dim)
    total = reduce(g, x, dims, keepdim, "sum", meta.dtype, meta.dtype)
    n = _count(x, dims)
    return pointwise(meta, [total], meta.dtype,
                     lambda s: ops.binary("truediv", s, ops.constant(n, meta.dtype), meta.dtype))


@register("amax.default", "amin.default", "max.default", "min.default")
def amax(g, meta, x, dim=(), keepdim=False):
    return reduce(g, x, _dims(x, dim), keepdim, _REDUCE_KIND[g.current_key], meta.dtype)


_REDUCE_KIND = {"amax.default": "max", "amin.default": "min", "max.default": "max", "min.default": "min",
                "argmax.default": "argmax", "argmin.default": "argmin", "max.dim": "max", "min.dim": "min",
                "any.default": "any", "any.dim": "any", "any.dims": "any",
                "all.default": "all", "all.dim": "all", "all.dims": "all"}


@register("any.default", "any.dim", "any.dims", "all.default", "all.dim", "all.dims")
def any_all(g, meta, x, dim=None, keepdim=False):
    return reduce(g, x, _dims(x, dim), keepdim, _REDUCE_KIND[g.current_key], _dt.bool_, _dt.bool_)


@register("argmax.default", "argmin.default")
def argmax(g, meta, x, dim=None, keepdim=False):
    kind = _REDUCE_KIND[g.current_key]
    if dim is None:
        flat = reshape(g, _Meta((math.prod(x.shape),), x.dtype), x)
        out = reduce(g, flat, [0], False, kind, _dt.int64)
        return reshape(g, meta, out) if keepdim else out
    return reduce(g, x, _dims(x, dim), keepdim, kind, _dt.int64)


@register("max.dim", "min.dim")
def max_dim(g, meta, x, dim, keepdim=False):
    kind = _REDUCE_KIND[g.current_key]
    return (reduce(g, x, _dims(x, dim), keepdim, kind, x.dtype),
            reduce(g, x, _dims(x, dim), keepdim, "arg" + kind, _dt.int64))


def _var(g, x, dims, correction, keepdim, dtype):
    """(var, mean) as two reductions of one row: mean, then the sum of squared deviations from it
    (two passes over a row that the scheduler keeps in one kernel; as exact as Welford)."""
    n = _count(x, dims)
    total = reduce(g, x, dims, True, "sum", dtype, dtype)
    mean_k = pointwise(_Meta(total.shape, dtype), [total], dtype,
                       lambda s: ops.binary("truediv", s, ops.constant(n, dtype), dtype))
    mean_k = g.realize(mean_k)
    centered = pointwise(_Meta(x.shape, dtype), [x, mean_k], dtype,
                         lambda v, m: ops.binary("mul", ops.binary("sub", v, m, dtype),
                                                 ops.binary("sub", v, m, dtype), dtype))
    ssq = reduce(g, centered, dims, keepdim, "sum", dtype, dtype)
    denom = max(0, n - correction)
    var = pointwise(_Meta(ssq.shape, dtype), [ssq], dtype,
                    lambda s: ops.binary("truediv", s, ops.constant(denom, dtype), dtype))
    mean_out = mean_k if keepdim else reshape(g, _Meta(ssq.shape, dtype), mean_k)
    return var, mean_out


def _correction(unbiased, correction):
    if correction is not None:
        return correction
    return 1 if unbiased in (None, True) else 0


@register("var.default", "var.dim", "var.correction", "std.default", "std.dim", "std.correction",
          "var_mean.default", "var_mean.dim", "var_mean.correction")
def var(g, meta, x, dim=None, unbiased=None, keepdim=False, correction=None):
    kind = g.current_key.split(".")[0]
    if isinstance(dim, bool):                # var.default(x, unbiased)
        dim, unbiased = None, dim
    out_meta, dims, dtype = (meta[0] if kind == "var_mean" else meta), _dims(x, dim), \
        (meta[0] if kind == "var_mean" else meta).dtype
    # Welford's one pass (codegen_c): stable on large means, one read of each row
    m2 = reduce(g, x, dims, keepdim, "welford_m2", dtype, dtype)
    denom = max(0, _count(x, dims) - _correction(unbiased, correction))
    v = pointwise(_Meta(m2.shape, dtype), [m2], dtype,
                  lambda s: ops.binary("truediv", s, ops.constant(denom, dtype), dtype))
    m = reduce(g, x, dims, keepdim, "welford_mean", dtype, dtype) if kind == "var_mean" else None
    if kind == "std":
        return pointwise(out_meta, [v], out_meta.dtype, lambda s: ops.unary("sqrt", s, out_meta.dtype))
    return (v, m) if kind == "var_mean" else v


def _row_max(g, x, dims, dtype):
    return reduce(g, x, dims, True, "max", dtype, dtype)


@register("softmax.int", "_softmax.default", "log_softmax.int", "_log_softmax.default")
def softmax(g, meta, x, dim, dtype=None):
    dtype = meta.dtype
    log = "log_softmax" in g.current_key
    dims = _dims(x, dim)
    m = _row_max(g, x, dims, dtype)
    shifted = pointwise(_Meta(x.shape, dtype), [x, m], dtype, lambda v, mx: ops.binary("sub", v, mx, dtype))
    e = pointwise(_Meta(x.shape, dtype), [shifted], dtype, lambda v: ops.unary("exp", v, dtype))
    if not log:
        e = g.realize(e)        # exp once per element: the scheduler keeps it as a per-row scratch array
    s = reduce(g, e, dims, True, "sum", dtype, dtype)
    if log:
        return pointwise(meta, [shifted, s], dtype,
                         lambda v, t: ops.binary("sub", v, ops.unary("log", t, dtype), dtype))
    return pointwise(meta, [e, s], dtype, lambda v, t: ops.binary("truediv", v, t, dtype))


@register("logsumexp.default")
def logsumexp(g, meta, x, dim, keepdim=False):
    dtype = meta.dtype
    dims = _dims(x, dim)
    m = _row_max(g, x, dims, dtype)
    # an infinite row maximum is replaced by 0 (PyTorch's rule): +inf stays +inf, -inf rows give -inf
    safe = pointwise(_Meta(m.shape, dtype), [m], dtype, lambda v: ops.where(
        ops.unary("isinf", v, dtype), ops.constant(0, dtype), v, dtype))
    e = pointwise(_Meta(x.shape, dtype), [x, safe], dtype,
                  lambda v, mx: ops.unary("exp", ops.binary("sub", v, mx, dtype), dtype))
    s = reduce(g, e, dims, keepdim, "sum", dtype, dtype)
    safe_out = safe if keepdim else reshape(g, _Meta(s.shape, dtype), g.realize(safe))
    return pointwise(meta, [s, safe_out], dtype,
                     lambda t, mx: ops.binary("add", ops.unary("log", t, dtype), mx, dtype))


@register("layer_norm.default")
def layer_norm(g, meta, x, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    dtype = meta.dtype
    dims = list(range(len(x.shape) - len(normalized_shape), len(x.shape)))
    v, m = _var(g, x, dims, 0, True, dtype)
    rstd = pointwise(_Meta(v.shape, dtype), [v], dtype, lambda s: ops.unary(
        "rsqrt", ops.binary("add", s, ops.constant(eps, dtype), dtype), dtype))
    inputs = [x, m, rstd] + [w for w in (weight, bias) if w is not None]

    def fn(xv, mv, rv, *affine):
        out = ops.binary("mul", ops.binary("sub", xv, mv, dtype), rv, dtype)
        if weight is not None:
            out = ops.binary("mul", out, affine[0], dtype)
        if bias is not None:
            out = ops.binary("add", out, affine[-1], dtype)
        return out
    return pointwise(meta, inputs, dtype, fn)


from . import lowering_index, lowering_loss  # noqa: E402,F401  (cat, pad, gather, index; cross_entropy)
from . import lowering_random  # noqa: E402,F401  (rand, dropout: only with config.fallback_random = False)
from . import lowering_blas  # noqa: E402,F401  (linear, matmul: the fuser's BLAS externs)
