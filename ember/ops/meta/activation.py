"""Rules and Meta kernels of the activation family.

The `check_*` functions read only dtypes, shapes and scalar arguments, so the CPU kernels
(`ember.ops.cpu.activation`) call them too: both devices raise PyTorch's errors alike. An
activation keeps its input's shape and dtype (glu halves one dim).
"""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import wrap_meta
from .. import rules
from .comparison import check_scalar_fits, not_implemented

_FLOAT, _COMPLEX, _BOOL = _dt.FLOAT, _dt.COMPLEX, _dt.BOOL


def check_float(x, kernel: str, complex_ok: bool = False) -> None:
    """Floating-only kernels raise PyTorch's NotImplementedError for other dtypes."""
    cat = x.dtype.category
    if cat != _FLOAT and not (complex_ok and cat == _COMPLEX):
        raise not_implemented(kernel, x.dtype)


def check_clamp_like(x, op: str) -> None:
    """relu/hardtanh are clamps: no bool, no complex."""
    cat = x.dtype.category
    if cat == _BOOL:
        raise RuntimeError("Boolean inputs not supported for relu" if op == "relu"
                           else "Bool inputs not supported for hardtanh")
    if cat == _COMPLEX:
        raise NotImplementedError("clamp is not supported for complex types")


def hardtanh_limits(x, min_val, max_val) -> tuple:
    """hardtanh keeps the input dtype: integer inputs use the limits truncated to integers."""
    check_clamp_like(x, "hardtanh")
    if x.dtype.category == _dt.INT:
        min_val, max_val = int(min_val), int(max_val)
        if x.dtype is _dt.uint8 and (min_val < 0 or max_val < 0):
            raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
        check_scalar_fits(min_val, x.dtype)
        check_scalar_fits(max_val, x.dtype)
    return min_val, max_val


def check_threshold(x, threshold, value) -> None:
    if x.dtype.category in (_BOOL, _COMPLEX):
        raise not_implemented("threshold_cpu", x.dtype)
    check_scalar_fits(threshold, x.dtype)
    check_scalar_fits(value, x.dtype)


def check_gelu(x, approximate: str) -> None:
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    check_float(x, "GeluKernelImpl")


def check_celu(alpha) -> float:
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return 1.0 / alpha


def check_softshrink(x, lambd) -> None:
    check_float(x, "softshrink_check")
    hi = _dt.finfo(x.dtype).max
    if not 0 <= lambd <= hi:
        raise RuntimeError(f"lambda must be in range [0, {hi:g}] for input dtype {x.dtype.c10_name}, but "
                           f"found {lambd:g}")


def prelu_weight_shape(x, weight) -> tuple:
    """The shape `weight` is viewed as to broadcast over x's channel dim (dim 1)."""
    if x.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {x.dtype.c10_name} and "
                           f"{weight.dtype.c10_name}")
    n = weight.numel()
    if n != 1:
        if x.ndim == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = x.shape[1] if x.ndim > 1 else 1
        if channels != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{n} and channel size = {channels}.")
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.ndim}")
    check_float(x, "prelu_cpu")
    if x.ndim == weight.ndim:
        return tuple(weight.shape)
    return tuple(n if i == 1 else 1 for i in range(x.ndim))


def glu_dim(x, dim: int) -> int:
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    dim = rules.wrap_dim(dim, x.ndim)
    if x.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size {x.shape[dim]}")
    check_float(x, "glu_cpu")
    return dim


# ---------------------------------------------------------------------------------------
# Meta kernels
# ---------------------------------------------------------------------------------------
def _same(x):
    return wrap_meta(x.shape, x.dtype, rules.pointwise_strides(x.shape, (x,)))   # laid out like x, as on CPU


def float_unary(kernel_name: str, complex_ok: bool = False):
    """Meta kernel of a float-only activation whose extra arguments are plain scalars."""
    def kernel(x, *_scalars):
        check_float(x, kernel_name, complex_ok)
        return _same(x)
    kernel.__name__ = kernel_name
    return kernel


def relu(x):
    check_clamp_like(x, "relu")
    return _same(x)


def relu6(x):
    hardtanh_limits(x, 0, 6)
    return _same(x)


def hardtanh(x, min_val=-1, max_val=1):
    hardtanh_limits(x, min_val, max_val)
    return _same(x)


def threshold(x, threshold, value):
    check_threshold(x, threshold, value)
    return _same(x)


def gelu(x, approximate="none"):
    check_gelu(x, approximate)
    return _same(x)


def celu(x, alpha=1.0):
    check_celu(alpha)
    check_float(x, "elu_cpu")
    return _same(x)


def softshrink(x, lambd=0.5):
    check_softshrink(x, lambd)
    return _same(x)


def prelu(x, weight):
    prelu_weight_shape(x, weight)
    return _same(x)


def glu(x, dim=-1):
    dim = glu_dim(x, dim)
    shape = list(x.shape)
    shape[dim] //= 2
    return wrap_meta(tuple(shape), x.dtype)
