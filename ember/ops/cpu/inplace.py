"""Direct in-place CPU kernels for the updates optimisers make every step.

The registry derives ``add_`` and friends from the functional kernel (compute, check, copy
back). For a float tensor updated with operands of its own dtype, these write through a
NumPy ufunc's ``out=`` instead: one pass, no temporary the size of the result. Anything else
(promotion, broadcasting beyond self's shape, half types) returns None and takes the derived
path, which raises PyTorch's errors.
"""
from __future__ import annotations

import numpy as np

from ..._core.tensor import Tensor
from .. import native

_FAST_KINDS = frozenset("fc")
_HALF = {np.dtype(np.float16)}


def _operand(v, dtype):
    """v's ndarray when it is a tensor of `dtype`, a Python float/int as is, else None."""
    if v.__class__ is Tensor or isinstance(v, Tensor):
        d = v._data
        return d if d.__class__ is np.ndarray and d.dtype is dtype else None
    if v.__class__ is float or v.__class__ is int:
        return v
    return None


def _add(x, y, alpha=1):
    if alpha != 1 and alpha.__class__ in (float, int) and y.__class__ is np.ndarray and y.shape == x.shape and x.flags.c_contiguous \
            and y.flags.c_contiguous and y.dtype is x.dtype and not np.may_share_memory(x, y):
        fn = native.kernel("axpy", x.dtype)     # float32/float64 with a C compiler: one fused pass,
        if fn is not None:                      # bit-equal to ATen's fmadd (see native_kernels.axpy)
            fn(x, y, x.size, float(alpha))
            return
    np.add(x, y if alpha == 1 else np.multiply(y, alpha), out=x)


def _sub(x, y, alpha=1):
    if alpha != 1 and alpha.__class__ in (float, int):
        return _add(x, y, -alpha)           # ATen's sub is add with -alpha: the same fmadd
    np.subtract(x, y if alpha == 1 else np.multiply(y, alpha), out=x)


def _addcmul(x, t1, t2, value=1):
    np.add(x, np.multiply(np.multiply(t1, value), t2) if value != 1 else np.multiply(t1, t2), out=x)


def _addcdiv(x, t1, t2, value=1):
    np.add(x, np.true_divide(np.multiply(t1, value), t2) if value != 1 else np.true_divide(t1, t2), out=x)


# op name -> (number of tensor-or-number operands, update(x, *operands, *scalars))
FAST = {
    "add_": (1, _add),
    "sub_": (1, _sub),
    "mul_": (1, lambda x, y: np.multiply(x, y, out=x)),
    "div_": (1, lambda x, y: np.true_divide(x, y, out=x)),
    "addcmul_": (2, _addcmul),
    "addcdiv_": (2, _addcdiv),
}


def fast_path(op_name):
    """An in-place kernel for `op_name` that returns None when it does not apply."""
    spec = FAST.get(op_name)
    if spec is None:
        return None
    n_operands, update = spec

    def run(self, *args):
        x = self._data
        if x.__class__ is not np.ndarray or x.dtype.kind not in _FAST_KINDS or x.dtype in _HALF \
                or not x.flags.writeable:
            return None
        operands = []
        for v in args[:n_operands]:
            d = _operand(v, x.dtype)
            if d is None:
                return None
            operands.append(d)
        scalars = args[n_operands:]
        for s in scalars:
            if s.__class__ is not int and s.__class__ is not float:
                return None
        try:
            update(x, *operands, *scalars)
        except (ValueError, TypeError):  # not broadcastable into self, or a casting problem:
            return None                  # the derived kernel raises PyTorch's error (nothing written)
        return self
    return run
