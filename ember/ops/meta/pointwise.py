"""Meta kernels of the pointwise family: output shape by broadcasting, dtype by PyTorch's
promotion, contiguous strides. The same rules the CPU kernels follow (`ember.ops.rules`)."""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap_meta
from .. import rules


def _shape(x):
    return x.shape if isinstance(x, Tensor) else ()


def unary_float(x):
    return wrap_meta(x.shape, rules.float_dtype(x.dtype))


def unary_same(x):
    return wrap_meta(x.shape, x.dtype)


def unary_real(x):
    """abs/angle of complex give the real dtype."""
    return wrap_meta(x.shape, x.dtype.to_real())


def unary_bool(x):
    return wrap_meta(x.shape, _dt.bool_)


def binary(a, b, *_ignored):
    """add/sub/mul/maximum...: broadcast shape, promoted dtype (extra scalar args ignored)."""
    return wrap_meta(rules.broadcast_shapes(_shape(a), _shape(b)), rules.common_dtype(a, b))


def binary_float(a, b, *_ignored):
    """true division, atan2...: promoted dtype, integers to the default float."""
    return wrap_meta(rules.broadcast_shapes(_shape(a), _shape(b)), rules.float_dtype(rules.common_dtype(a, b)))


def binary_bool(a, b, *_ignored):
    """comparisons and logical ops."""
    return wrap_meta(rules.broadcast_shapes(_shape(a), _shape(b)), _dt.bool_)


def ternary(a, b, c, *_ignored):
    """lerp/addcmul/where-like ops over three operands."""
    return wrap_meta(rules.broadcast_shapes(_shape(a), _shape(b), _shape(c)), rules.common_dtype(a, b, c))
