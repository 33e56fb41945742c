"""Meta kernels of the special-function ops (ember/ops/table/special_functions.py) whose
arguments differ from the plain unary/binary pointwise shape: polygamma's leading order and
frexp's two outputs."""
from __future__ import annotations

from ... import return_types as rt
from ..._core import dtype as _dt
from .pointwise import _out, unary_float


def polygamma(n, x):
    return unary_float(x)


def frexp(x):
    if x.dtype.category != _dt.FLOAT:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    return rt.frexp((_out(x.shape, x.dtype, x), _out(x.shape, _dt.int32, x)))
