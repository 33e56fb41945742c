"""Python operators on Tensor, as a table: dunder -> (op binding name, reflected?).

Reflected operators (``2 - t``) call the op with the operands swapped; the kernels of these
ops accept a Python number in either position.
"""
import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import wrap

DUNDERS = {
    "__add__": ("add", False), "__radd__": ("add", True), "__iadd__": ("add_", False),
    "__sub__": ("sub", False), "__rsub__": ("rsub", False), "__isub__": ("sub_", False),
    "__mul__": ("mul", False), "__rmul__": ("mul", True), "__imul__": ("mul_", False),
    "__truediv__": ("div", False), "__rtruediv__": ("div", True), "__itruediv__": ("div_", False),
    "__floordiv__": ("floor_divide", False), "__rfloordiv__": ("floor_divide", True),
    "__ifloordiv__": ("floor_divide_", False),
    "__mod__": ("remainder", False), "__rmod__": ("remainder", True), "__imod__": ("remainder_", False),
    "__pow__": ("pow", False), "__rpow__": ("pow", True), "__ipow__": ("pow_", False),
    "__matmul__": ("matmul", False), "__rmatmul__": ("matmul", True),
    "__and__": ("bitwise_and", False), "__rand__": ("bitwise_and", True), "__iand__": ("bitwise_and_", False),
    "__or__": ("bitwise_or", False), "__ror__": ("bitwise_or", True), "__ior__": ("bitwise_or_", False),
    "__xor__": ("bitwise_xor", False), "__rxor__": ("bitwise_xor", True), "__ixor__": ("bitwise_xor_", False),
    "__lshift__": ("bitwise_left_shift", False), "__rlshift__": ("bitwise_left_shift", True),
    "__rshift__": ("bitwise_right_shift", False), "__rrshift__": ("bitwise_right_shift", True),
    "__ilshift__": ("bitwise_left_shift_", False), "__irshift__": ("bitwise_right_shift_", False),
    "__neg__": ("neg", False), "__pos__": ("positive", False), "__abs__": ("abs", False),
    "__invert__": ("__invert__", False),  # a Python method: TypeError for float, like torch
    "__eq__": ("eq", False), "__ne__": ("ne", False), "__lt__": ("lt", False), "__le__": ("le", False),
    "__gt__": ("gt", False), "__ge__": ("ge", False),
    "__getitem__": ("_getitem", False), "__setitem__": ("_setitem", False),
}


_NUMBERS = (int, float, bool, complex)


def install(tensor_cls, methods: dict) -> None:
    """Attach every dunder whose op exists."""
    for dunder, (name, reflected) in DUNDERS.items():
        fn = methods.get(name)
        if fn is None:
            continue
        if reflected:
            def make(f):
                def reflected_op(self, other):
                    if isinstance(other, tensor_cls):
                        return f(other, self)
                    if isinstance(other, (*_NUMBERS, np.number, np.bool_)):
                        return f(_scalar_tensor(other, self), self)
                    return NotImplemented
                return reflected_op
            method = make(fn)
        elif dunder in ("__eq__", "__ne__"):
            def make(f):
                def compare(self, other):
                    if isinstance(other, (tensor_cls, *_NUMBERS, np.number, np.bool_)):
                        return f(self, other)
                    return NotImplemented
                return compare
            method = make(fn)
        else:
            method = fn
        setattr(tensor_cls, dunder, method)


_WIDE = {_dt.FLOAT: _dt.float64, _dt.COMPLEX: _dt.complex128}


def _scalar_tensor(value, like):
    """A 0-d tensor for a Python number on `like`'s device (promotes like a wrapped number)."""
    if isinstance(value, (np.number, np.bool_)):
        value = value.item()
    # stored in double precision, as ATen's wrapped_scalar_tensor stores it: a float rounded to the
    # default dtype first would lose digits against a float64 tensor (2/sqrt(pi) * t)
    dtype = _dt.scalar_dtype(value)
    arr = np.array(value, dtype=_WIDE.get(dtype.category, dtype).np)
    t = wrap(arr) if like.is_cpu else wrap(arr).to(like.device)
    t._wrapped_number = True  # promotes like a Python number, not like a 0-d tensor
    return t
