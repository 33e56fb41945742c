"""Random ops generated in the kernel (only with config.fallback_random = False; by default they
run their eager kernels, so compiled values equal eager's).

Each graph call draws one seed from ember's generator (an extern call inside the graph, so the
generator advances and ember.manual_seed makes the draws reproducible); element i of a random
tensor is philox_uniform(seed, i) (codegen_c's counter-based Philox): the same in every kernel
layout, thread count and fusion. The values are not eager's (PyTorch's inductor alike).
"""
from __future__ import annotations

from .._core import dtype as _dt
from .ir import Expr, Pointwise, contiguous_strides, cost_of, ops, strided_index
from .lowering import register

SEED_HIGH = 2 ** 62


def draw_seed():
    """A fresh seed from ember's generator: the one random draw a compiled graph call makes."""
    import ember
    return ember.randint(0, SEED_HIGH, (1,), dtype=ember.int64)


draw_seed.name = "draw_seed"        # how logs name an extern call's op


def _uniform(g, shape, dtype):
    """fn(index) -> a uniform draw for that element of a fresh random tensor of `shape`."""
    from .._core.tensor import wrap_meta
    seed = g.extern(draw_seed, [], {}, wrap_meta((1,), _dt.int64)).make_loader()
    strides = contiguous_strides(shape)
    return lambda index: ops.rand(seed([Expr()]), strided_index(index, strides), dtype)


@register("rand.default", "rand_like.default")
def rand(g, meta, *args, **kwargs):
    u = _uniform(g, tuple(meta.shape), meta.dtype)
    return Pointwise(tuple(meta.shape), meta.dtype, u, 2)


@register("dropout.default")
def dropout(g, meta, x, p, train):
    dtype = meta.dtype
    if not train or p == 0:
        return Pointwise(tuple(meta.shape), dtype, x.make_loader(), cost_of(x))
    u, load = _uniform(g, tuple(meta.shape), dtype), x.make_loader()
    scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)

    def inner(index):
        kept = ops.binary("ge", u(index), ops.constant(p, dtype), dtype)
        scaled = ops.binary("mul", load(index), ops.constant(scale, dtype), dtype)
        return ops.where(kept, scaled, ops.constant(0, dtype), dtype)
    return Pointwise(tuple(meta.shape), dtype, inner, cost_of(x) + 4)
