"""CPU kernels of the special-function and number-theory pointwise ops: lgamma, digamma,
polygamma, i0, sinc, igamma/igammac, gcd/lcm, heaviside, nextafter, frexp.

NumPy has no gamma-family ufuncs (and ember does not depend on SciPy), so the array functions
here are written on NumPy: Lanczos for lgamma, the asymptotic series after an upward recurrence
for digamma, Euler-Maclaurin summation of the Hurwitz zeta function for polygamma, and the
series / continued fraction of the regularized incomplete gamma function. Each is accurate to a
few ulps of float64; float32 inputs are computed in float64 and rounded once.
"""
from __future__ import annotations

import math

import numpy as np

from ..._core import dtype as _dt
from ... import return_types as rt
from ..._core.tensor import wrap
from .. import rules
from .pointwise import finish, not_implemented
from .pointwise_binary import operands

_F64 = np.dtype(np.float64)

# Lanczos approximation, g = 7, n = 9 (accurate to ~1e-15 for x >= 0.5)
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
            1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
# (2k)! / B_2k for the Euler-Maclaurin tail of the Hurwitz zeta function
_ZETA_TAIL = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
              -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
              1.8152105401943546773e17, -7.1661652561756670113e18)


def _is_pole(x):
    """Non-positive integers, where the gamma function has its poles."""
    return (x <= 0) & (x == np.floor(x))


def lgamma_array(x):
    x = np.asarray(x, _F64)
    reflect = x < 0.5
    z = np.where(reflect, 1.0 - x, x) - 1.0   # Lanczos evaluates gamma(z + 1) for z >= -0.5
    series = np.full_like(z, _LANCZOS[0])
    for i, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (z + i)
    t = z + _LANCZOS_G + 0.5
    direct = _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(series)
    # reflection: lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    out = np.where(reflect, np.log(np.pi / np.abs(np.sin(np.pi * x))) - direct, direct)
    out = np.where(x == 1.0, 0.0, np.where(x == 2.0, 0.0, out))   # exact zeros, as libm gives
    return np.where(_is_pole(x) | np.isinf(x), np.inf, out)


def digamma_array(x):
    x = np.asarray(x, _F64)
    reflect = x < 0.5
    y = np.where(reflect, 1.0 - x, x)
    shift = np.zeros_like(y)
    while True:   # psi(y) = psi(y + 1) - 1/y until y >= 10, where the asymptotic series is exact
        small = y < 10.0
        if not small.any():
            break
        shift = shift - np.where(small, 1.0 / np.where(small, y, 1.0), 0.0)
        y = np.where(small, y + 1.0, y)
    inv2 = 1.0 / (y * y)
    tail = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 * (1 / 132)))))
    out = np.log(y) - 0.5 / y - tail + shift
    with np.errstate(all="ignore"):
        out = np.where(reflect, out - np.pi / np.tan(np.pi * x), out)
    # PyTorch: psi(+-0) = -+inf, nan at the negative integers, psi(inf) = inf, psi(-inf) = nan
    out = np.where(x == 0, np.copysign(np.inf, -x), np.where(_is_pole(x), np.nan, out))
    return np.where(x == np.inf, np.inf, np.where(x == -np.inf, np.nan, out))


def zeta_array(s, q):
    """Hurwitz zeta(s, q) = sum_k (q + k)^-s for an integer s > 1 (direct sum, then Euler-Maclaurin)."""
    q = np.asarray(q, _F64)
    a = q.copy()
    total = np.power(a, -s)
    b = total.copy()
    i = 0
    while True:
        more = (i < 9) | (a <= 9.0)
        if not more.any():
            break
        a = np.where(more, a + 1.0, a)
        b = np.where(more, np.power(a, -s), b)
        total = total + np.where(more, b, 0.0)
        i += 1
    w = a
    total = total + b * w / (s - 1.0) - 0.5 * b
    factor, k = 1.0, 0.0
    for denom in _ZETA_TAIL:
        factor *= s + k
        b = b / w
        total = total + factor * b / denom
        k += 1.0
        factor *= s + k
        b = b / w
        k += 1.0
    return np.where(_is_pole(q), np.inf, np.where(q == np.inf, 0.0, total))


def polygamma_array(n, x):
    if n == 0:
        return digamma_array(x)
    sign = 1.0 if n % 2 else -1.0
    return sign * math.factorial(n) * zeta_array(float(n + 1), x)


def igamma_array(a, x):
    """The regularized lower incomplete gamma function P(a, x)."""
    a, x = np.broadcast_arrays(np.asarray(a, _F64), np.asarray(x, _F64))
    ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    aa, xx = np.where(ok, a, 1.0), np.where(ok, x, 1.0)
    log_prefix = aa * np.log(xx) - xx - lgamma_array(aa)
    # series, converges fast for x < a + 1
    term = 1.0 / aa
    total = term.copy()
    ap = aa.copy()
    for _ in range(500):
        ap = ap + 1.0
        term = term * xx / ap
        total = total + term
        if np.all(np.abs(term) <= np.abs(total) * 1e-17):
            break
    lower_series = total * np.exp(log_prefix)
    # Lentz's continued fraction for Q(a, x), converges fast for x >= a + 1
    tiny = 1e-300
    b = xx + 1.0 - aa
    c = np.full_like(b, 1.0 / tiny)
    d = 1.0 / b
    h = d.copy()
    for i in range(1, 500):
        an = -i * (i - aa)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        if np.all(np.abs(delta - 1.0) <= 1e-16):
            break
    upper_fraction = np.exp(log_prefix) * h
    out = np.where(xx < aa + 1.0, lower_series, 1.0 - upper_fraction)
    # the edges, as PyTorch defines them
    out = np.where(ok, out, np.nan)
    out = np.where((x == 0) & (a > 0), 0.0, out)
    out = np.where((a == 0) & (x > 0), 1.0, out)
    out = np.where(np.isposinf(x) & (a > 0) & np.isfinite(a), 1.0, out)
    out = np.where(np.isposinf(a) & np.isfinite(x) & (x >= 0), 0.0, out)
    return np.where((a < 0) | (x < 0) | np.isnan(a) | np.isnan(x), np.nan, out)


# ---------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------
def _float_unary(array_fn, name, *, complex_name=None):
    """Math on floats: ints and bool go to the default float dtype; complex is refused."""
    def kernel(x):
        if x.dtype.is_complex:
            raise not_implemented(complex_name or f"{name}_vml_cpu", x.dtype)
        out_dt = rules.float_dtype(x.dtype).np
        return finish(array_fn(x._data), out_dt)
    kernel.__name__ = name
    return kernel


lgamma = _float_unary(lgamma_array, "lgamma")
digamma = _float_unary(digamma_array, "digamma", complex_name="digamma")
i0 = _float_unary(lambda a: np.i0(np.asarray(a, _F64)), "i0")


def polygamma(n, x):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if x.dtype.is_complex:
        raise not_implemented("polygamma", x.dtype)
    return finish(polygamma_array(n, x._data), rules.float_dtype(x.dtype).np)


def sinc(x):
    out_dt = rules.float_dtype(x.dtype).np
    arr = x._data
    if x.dtype.is_complex:
        z = arr * np.pi
        with np.errstate(all="ignore"):
            return finish(np.where(arr == 0, 1.0 + 0j, np.sin(z) / np.where(arr == 0, 1.0, z)), out_dt)
    return finish(np.sinc(np.asarray(arr, _F64)), out_dt)


def _incomplete_gamma(name, lower):
    def kernel(a, x):
        common, aa, xx = operands(a, x, name)
        if common.category != _dt.FLOAT:
            raise not_implemented(f"{name}_cpu", common)
        p = igamma_array(aa, xx)
        return finish(p if lower else 1.0 - p, common.np)
    kernel.__name__ = name
    return kernel


igamma = _incomplete_gamma("igamma", True)
igammac = _incomplete_gamma("igammac", False)


def _integer_binary(ufunc, name):
    """gcd/lcm: integer dtypes only; results are non-negative."""
    def kernel(a, b):
        common, x, y = operands(a, b, name)
        if common.category != _dt.INT:
            raise not_implemented(f"{name}_cpu", common)
        return finish(ufunc(x, y), common.np)
    kernel.__name__ = name
    return kernel


gcd = _integer_binary(np.gcd, "gcd")
lcm = _integer_binary(np.lcm, "lcm")


def heaviside(x, values):
    if x.dtype is not values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    if x.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    a, v = x._data, values._data
    rules.broadcast_shapes(a.shape, v.shape, op="heaviside")
    return finish(np.where(a == 0, v, (a > 0).astype(a.dtype)), x.dtype.np)


_INF_BITS = {"float16": 0x7C00, "bfloat16": 0x7F80, "float32": 0x7F800000}   # +inf's bits; above: NaN


def nextafter(a, b):
    """The next value after a towards b, stepped on the bits in the dtype's own width (no float32
    widening of half types; CuPy's float32 nextafter flushes subnormals, PyTorch's CUDA one does not)."""
    common, _, _ = operands(a, b, "nextafter")
    if common.category != _dt.FLOAT:
        raise not_implemented("nextafter_cpu", common)
    x = np.asarray(a._data if hasattr(a, "_data") else a).astype(common.np)
    y = np.asarray(b._data if hasattr(b, "_data") else b).astype(common.np)
    x, y = np.broadcast_arrays(x, y)
    size = common.itemsize
    unsigned, wide = np.dtype(f"u{size}"), np.dtype(f"i{2 * size}") if size < 8 else np.dtype(np.uint64)
    bits = x.view(unsigned).astype(wide)
    if size < 8:   # decided on the bits: CuPy's float32 comparisons treat subnormals as zero (bf16 widens to them)
        top = 1 << (8 * size - 1)
        sx, sy = x.view(f"i{size}").astype(wide), y.view(f"i{size}").astype(wide)
        kx, ky = np.where(sx >= 0, sx, -top - sx), np.where(sy >= 0, sy, -top - sy)   # ordered like the values
        inf = _INF_BITS[common.name]
        nan, zero = ((sx & (top - 1)) > inf) | ((sy & (top - 1)) > inf), (sx & (top - 1)) == 0
        x_below_y, x_positive, equal, y_negative = kx < ky, kx > 0, kx == ky, ky < 0
    else:
        nan, zero = np.isnan(x) | np.isnan(y), x == 0
        x_below_y, x_positive, equal, y_negative = x < y, x > 0, x == y, y < 0
    smallest_negative = (1 << (8 * size - 1)) | 1     # sign bit and the lowest mantissa bit
    step = np.where(zero, np.where(y_negative, np.array(smallest_negative, wide), np.array(1, wide)),
                    np.where(x_below_y == x_positive, bits + 1, bits - 1))
    out = step.astype(unsigned).view(common.np)
    out = np.where(equal, y, np.where(nan, np.array(np.nan, common.np), out))
    return wrap(np.ascontiguousarray(out))


def frexp(x):
    if x.dtype.category != _dt.FLOAT:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    arr = x._data
    mantissa, exponent = np.frexp(arr.astype(np.float32) if arr.dtype.itemsize == 2 else arr)
    return rt.frexp((finish(mantissa, x.dtype.np), wrap(exponent.astype(np.int32))))
