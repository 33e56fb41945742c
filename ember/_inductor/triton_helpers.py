"""What every generated Triton kernel imports (codegen_triton.HEADER): the combine functions of its
reductions, Python's integer/float division rules, and `libdevice`.

NaN propagates through max/min as in eager (nanmax: `a` when it is NaN or larger); argmax/argmin
pick the first index of the extreme, a NaN counting as the extreme. Welford partial results
(mean, m2, count) merge by Chan's formula.

`libdevice` is Triton's CUDA libdevice binding; under TRITON_INTERPRET=1 (CI on a CPU, where
Triton's interpreter has no extern functions) it is a namespace of the same names computed by NumPy
on the interpreter's arrays, so the generated source is the same text either way.
"""
import os

import numpy as np
import triton
import triton.language as tl


@triton.jit
def div_rn(a, b):
    """IEEE division: tl.div_rn in float32 (Triton's `/` is approximate there); float64's `/` is exact."""
    if b.dtype == tl.float64:
        return a / b
    else:
        return tl.div_rn(a, b)


@triton.jit
def sqrt_rn(x):
    if x.dtype == tl.float64:
        return tl.sqrt(x)
    else:
        return tl.sqrt_rn(x)


@triton.jit
def nanmax(a, b):
    return tl.where((a != a) | (a > b), a, b)


@triton.jit
def nanmin(a, b):
    return tl.where((a != a) | (a < b), a, b)


@triton.jit
def prod(a, b):
    return a * b


@triton.jit
def argmax(va, ia, vb, ib):
    an = va != va
    bn = vb != vb
    pick = (an & ~bn) | (va > vb) | (((va == vb) | (an & bn)) & (ia < ib))
    return tl.where(pick, va, vb), tl.where(pick, ia, ib)


@triton.jit
def argmin(va, ia, vb, ib):
    an = va != va
    bn = vb != vb
    pick = (an & ~bn) | (va < vb) | (((va == vb) | (an & bn)) & (ia < ib))
    return tl.where(pick, va, vb), tl.where(pick, ia, ib)


@triton.jit
def welford(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    n = n_a + n_b
    w = tl.where(n == 0, 0.0, n_b / tl.where(n == 0, 1.0, n))
    d = mean_b - mean_a
    return mean_a + d * w, m2_a + m2_b + d * d * n_a * w, n


@triton.jit
def int_floordiv(a, b):
    safe = tl.where(b == 0, 1, b)
    q = a // safe
    q = tl.where((a % safe != 0) & ((a < 0) != (safe < 0)), q - 1, q)
    return tl.where(b == 0, 0, q)


@triton.jit
def int_remainder(a, b):
    safe = tl.where(b == 0, 1, b)
    r = a % safe
    r = tl.where((r != 0) & ((r < 0) != (safe < 0)), r + safe, r)
    return tl.where(b == 0, 0, r)


@triton.jit
def int_fmod(a, b):
    return tl.where(b == 0, 0, a % tl.where(b == 0, 1, b))


@triton.jit
def int_truncdiv(a, b):
    return tl.where(b == 0, 0, a // tl.where(b == 0, 1, b))


@triton.jit
def float_remainder(a, b):
    mod = libdevice.fmod(a, b)
    fixed = tl.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)
    return tl.where(b == 0, mod, tl.where(mod != 0, fixed, libdevice.copysign(mod * 0, b)))


@triton.jit
def float_floordiv(a, b):
    mod = libdevice.fmod(a, b)
    div = div_rn(a - mod, b)
    div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1, div)
    fl = tl.floor(div)
    fl = tl.where(div - fl > 0.5, fl + 1, fl)
    fl = tl.where(div == 0, libdevice.copysign(div * 0, div_rn(a, b)), fl)
    return tl.where(b == 0, div_rn(a, b), fl)


@triton.jit
def set_error(err, bad, bit: tl.constexpr):
    """OR `bit` into the kernel's error word wherever `bad` holds (codegen_c.KERNEL_ERRORS)."""
    tl.atomic_or(err + tl.zeros_like(bad.to(tl.int32)), bit, mask=bad)


class _NumpyLibdevice:
    """libdevice's functions on the interpreter's NumPy arrays (TRITON_INTERPRET=1 only)."""
    _NAMES = {"tanh": np.tanh, "erf": None, "erfc": None, "log1p": np.log1p, "expm1": np.expm1,
              "log10": np.log10, "exp2": np.exp2, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
              "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh, "acosh": np.arccosh,
              "atanh": np.arctanh, "nearbyint": np.rint, "trunc": np.trunc, "pow": np.power, "atan2": np.arctan2,
              "copysign": np.copysign, "fmod": np.fmod, "isinf": np.isinf, "isnan": np.isnan}

    def __getattr__(self, name):
        import math
        from triton.runtime.interpreter import TensorHandle
        fn = self._NAMES[name]
        if fn is None:
            fn = np.vectorize(getattr(math, name))

        def call(*args, _semantic=None):
            first = next(a for a in args if isinstance(a, tl.tensor))
            arrays = [a.handle.data if isinstance(a, tl.tensor) else a for a in args]
            out = np.asarray(fn(*arrays))
            dtype = first.dtype if out.dtype != np.bool_ else tl.int1
            if out.dtype != np.bool_:
                out = out.astype(first.handle.data.dtype)
            return tl.tensor(TensorHandle(out, dtype.scalar), first.type.with_element_ty(dtype.scalar)
                             if first.type.is_block() else dtype)
        return call


if os.environ.get("TRITON_INTERPRET") == "1":
    libdevice = _NumpyLibdevice()
else:
    from triton.language.extra import libdevice  # noqa: F401
