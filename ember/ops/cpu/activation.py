"""CPU kernels of the activation family (relu, gelu, elu, softplus, hardtanh, prelu, glu ...).

Most activations are defined for floating dtypes only (PyTorch raises NotImplementedError
otherwise); float16/bfloat16 are computed in float32 and rounded once, like PyTorch's CPU
kernels. relu, relu6, hardtanh and threshold also take integers and keep the input dtype.
Formulas follow ATen's kernels (Activation.cpp, native/cpu/Activation.cpp) so edge cases (NaN,
threshold boundaries) agree. Shared dtype/argument rules: `ember.ops.meta.activation`.
"""
from __future__ import annotations

import math

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import wrap
from .. import native
from ..meta import activation as R
from .pointwise import ON_CUDA, finish
from .special_math import erf_array

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_FAST = (_F32, _F64)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT1_2 = math.sqrt(0.5)
_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715


def _floating(fn, name: str, kernel_name: str, complex_ok: bool = False, check=None):
    """A float-only activation: `fn(array, *scalars)` runs on float32/float64 (or complex when
    allowed) directly; halves run in float32 and are rounded back."""
    def kernel(x, *args):
        arr = x._data
        dt = arr.dtype
        if dt is _F32 or dt is _F64:  # the hot path
            if check is not None:
                check(x, *args)
            return wrap(fn(arr, *args))
        R.check_float(x, kernel_name, complex_ok)
        if check is not None:
            check(x, *args)
        if dt.kind == "c":
            return wrap(fn(arr, *args))
        return finish(fn(arr.astype(_F32), *args), dt)
    kernel.__name__ = name
    return kernel


def _scalar(v, np_dtype):
    """A Python number converted to `np_dtype` as C++ converts it (ints wrap, floats truncate)."""
    return np.array(v).astype(np_dtype)


# ---------------------------------------------------------------------------------------
# clamp-like: relu, relu6, hardtanh, threshold (integers allowed, dtype kept)
# ---------------------------------------------------------------------------------------
def relu(x):
    """max(x, 0); NaN stays NaN."""
    arr = x._data
    if arr.dtype.kind not in "fiu" and x.dtype.category != _dt.FLOAT:
        R.check_clamp_like(x, "relu")
    fn = native.kernel("relu_fwd", arr.dtype) if arr.flags.c_contiguous else None
    if fn is not None:   # one C pass, ~3x faster than np.maximum here; keeps -0.0 as PyTorch does
        out = np.empty_like(arr)
        fn(arr, out, arr.size)
        return wrap(out)
    res = np.maximum(arr, np.zeros((), arr.dtype))
    if arr.dtype.kind not in "iub":   # x < 0 ? 0 : x keeps -0.0, as PyTorch's relu does
        np.copyto(res, arr, where=arr == 0)
    return wrap(res)


def hardtanh(x, min_val=-1, max_val=1):
    """min(max(x, min_val), max_val) in x's dtype (integer limits truncated, like ATen)."""
    lo, hi = R.hardtanh_limits(x, min_val, max_val)
    arr = x._data
    dt = arr.dtype
    return wrap(np.minimum(np.maximum(arr, _scalar(lo, dt)), _scalar(hi, dt)))


def relu6(x):
    return hardtanh(x, 0, 6)


def threshold(x, threshold, value):
    """x <= threshold ? value : x, both scalars converted to x's dtype first."""
    R.check_threshold(x, threshold, value)
    arr = x._data
    dt = arr.dtype
    # (astype: CuPy's where gives float32 for two bfloat16 operands; a no-op elsewhere)
    return wrap(np.where(arr <= _scalar(threshold, dt), _scalar(value, dt), arr).astype(dt, copy=False))


# ---------------------------------------------------------------------------------------
# float-only activations
# ---------------------------------------------------------------------------------------
def _leaky_relu(a, negative_slope=0.01):
    return np.where(a > 0, a, a * negative_slope)


def _elu(a, alpha=1, scale=1, input_scale=1):
    # ATen: x <= 0 ? (exp(x * input_scale) - 1) * alpha * scale : x * scale
    return np.where(a > 0, a * scale, np.expm1(a * input_scale) * (alpha * scale))


def _selu(a):
    return _elu(a, _SELU_ALPHA, _SELU_SCALE, 1)


_erf_scalar = np.frompyfunc(math.erf, 1, 1)


def _erf(a):
    """erf in float64, rounded to a's dtype. Small arrays use libm's erf element by element,
    which is faster than erf_array's fixed cost there (both are accurate to float64)."""
    if a.size <= 256:
        return np.asarray(_erf_scalar(a.astype(_F64)), dtype=_F64).astype(a.dtype)
    return erf_array(a)


def _gelu(a, approximate="none"):
    if a.flags.c_contiguous:   # one C loop (ember/ops/native.py) instead of ~20 NumPy passes
        fn = native.kernel("gelu_tanh_fwd" if approximate == "tanh" else "gelu_fwd", a.dtype)
        if fn is not None:
            out = np.empty_like(a)
            fn(a, out, a.size)
            return out
    if approximate == "tanh":
        inner = _GELU_BETA * (a + _GELU_KAPPA * (a * a * a))
        return 0.5 * a * (1 + np.tanh(inner))
    return a * 0.5 * (1 + _erf(a * _SQRT1_2))


def _silu(a):
    return a / (1 + np.exp(-a))


def _mish(a):
    return a * np.tanh(np.log1p(np.exp(a)))


def _softplus(a, beta=1, threshold=20):
    z = a * beta
    return np.where(z > threshold, a, np.log1p(np.exp(z)) / beta)


# PyTorch's CUDA kernels multiply by 1/6 as a float32 constant, in float64 too (its CPU ones divide by 6)
_SIXTH_F32 = float(np.float32(1) / np.float32(6))


def _hardsigmoid(a):
    clamped = np.minimum(np.maximum(a + 3, 0), 6)
    return clamped * _SIXTH_F32 if ON_CUDA else clamped / 6


def _hardswish(a):
    scaled = a * np.minimum(np.maximum(a + 3, 0), 6)
    return scaled * _SIXTH_F32 if ON_CUDA else scaled / 6


def _log_sigmoid(a):
    # stable: min(x, 0) - log1p(exp(-|x|))
    return np.minimum(a, 0) - np.log1p(np.exp(-np.abs(a)))


def _hardshrink(a, lambd=0.5):
    return np.where((a >= -lambd) & (a <= lambd), np.zeros((), a.dtype), a)


def _softshrink(a, lambd=0.5):
    return np.where(a > lambd, a - lambd, np.where(a < -lambd, a + lambd, a * 0))


leaky_relu = _floating(_leaky_relu, "leaky_relu", "leaky_relu_cpu")
elu = _floating(_elu, "elu", "elu_cpu")
selu = _floating(_selu, "selu", "elu_cpu")
_gelu_kernel = _floating(_gelu, "gelu", "GeluKernelImpl", check=R.check_gelu)
_GELU_INF_NAN = (_F32, _dt.bfloat16.np)
_avx512 = []


def _nan_at_inf() -> bool:
    """PyTorch's vectorized exact-gelu float32/bfloat16 CPU kernel gives NaN at +inf where it runs
    its AVX-512 code (float64/half, and its AVX2 code, give inf): it picks AVX-512 on a CPU with
    avx512f/bw/vl/dq (torch.backends.cpu.get_cpu_capability())."""
    if not _avx512:
        from ..._inductor.machine import cpu_flags
        _avx512.append({"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(cpu_flags()))
    return _avx512[0]


def gelu(x, approximate="none"):
    """x * Phi(x) (exact, with erf) or its tanh approximation."""
    out = _gelu_kernel(x, approximate)
    if approximate == "none" and x._data.dtype in _GELU_INF_NAN and (ON_CUDA or _nan_at_inf()):
        out._data[x._data == np.inf] = np.nan
    return out


silu = _floating(_silu, "silu", "silu_cpu", complex_ok=True)
mish = _floating(_mish, "mish", "mish_cpu")
softplus = _floating(_softplus, "softplus", "softplus_cpu")
hardsigmoid = _floating(_hardsigmoid, "hardsigmoid", "hardsigmoid_cpu")
hardswish = _floating(_hardswish, "hardswish", "hardswish_cpu")
log_sigmoid = _floating(_log_sigmoid, "log_sigmoid", "log_sigmoid_cpu")
hardshrink = _floating(_hardshrink, "hardshrink", "hardshrink_cpu")
softshrink = _floating(_softshrink, "softshrink", "softshrink_check", check=R.check_softshrink)


def celu(x, alpha=1.0):
    """elu(x, alpha, 1, 1/alpha)."""
    inv = R.check_celu(alpha)
    return elu(x, alpha, 1, inv)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def prelu(x, weight):
    """x > 0 ? x : weight * x, with weight broadcast over the channel dim (dim 1)."""
    wshape = R.prelu_weight_shape(x, weight)
    arr, w = x._data, weight._data.reshape(wshape)
    dt = arr.dtype
    if dt not in _FAST:
        arr, w = arr.astype(_F32), w.astype(_F32)
    return finish(np.where(arr > 0, arr, w * arr), dt)


def glu(x, dim=-1):
    """a * sigmoid(b), where a and b are the two halves of x along `dim`."""
    dim = R.glu_dim(x, dim)
    arr = x._data
    dt = arr.dtype
    if dt not in _FAST:
        arr = arr.astype(_F32)
    a, b = np.split(arr, 2, axis=dim)
    return finish(a * _sigmoid(b), dt)
