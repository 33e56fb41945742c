"""Meta kernels of the pointwise family: output shape by broadcasting, dtype by PyTorch's
promotion, strides in the operands' dim order (TensorIterator's rule: `rules.pointwise_strides`). The same rules the CPU kernels follow (`ember.ops.rules` and the
`check_*` helpers of the CPU modules). Like PyTorch's Meta kernels they do not refuse dtypes
that only the CPU kernel lacks (erf of complex ...), but do raise the RuntimeErrors PyTorch
raises before dispatching to a kernel (neg of bool, deg2rad of complex ...)."""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.storage import MetaArray
from ..._core.tensor import Tensor, wrap_meta, _make
from ..._core.dispatch import META_BIT
from .. import rules
from ..cpu import pointwise as cpu
from ..cpu import pointwise_binary as cpub


def _shape(x):
    return x.shape if isinstance(x, Tensor) else ()


def _out(shape, dtype, *operands):
    """A pointwise result laid out like its operands (so meta results have the CPU results' strides)."""
    return wrap_meta(shape, dtype, rules.pointwise_strides(shape, operands))


def unary_float(x):
    return _out(x.shape, rules.float_dtype(x.dtype), x)


def unary_same(x, *_ignored):
    return _out(x.shape, x.dtype, x)


def unary_real(x):
    """abs/angle of complex give the real dtype."""
    return _out(x.shape, x.dtype.to_real(), x)


def unary_bool(x):
    return _out(x.shape, _dt.bool_, x)


def _no_complex(op):
    def kernel(x):
        if x.is_complex():
            raise RuntimeError(f"{op} is not supported for complex tensors.")
        return unary_float(x)
    return kernel


deg2rad = _no_complex("deg2rad")
rad2deg = _no_complex("rad2deg")


def neg(x):
    cpu.check_not_bool(x, cpu.NEG_BOOL)
    return unary_same(x)


def positive(x):
    cpu.check_not_bool(x, "The `+` operator, on a bool tensor is not supported.")
    return x


def abs_(x):
    if x.is_complex():
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return x


def square(x):
    return _out(x.shape, _dt.int64 if x.dtype is _dt.bool_ else x.dtype, x)


def angle(x):
    return unary_real(x) if x.is_complex() else unary_float(x)


def conj(x):
    return x if not x.is_complex() else unary_same(x)


def resolve_conj(x):
    return x


def _part_view(x, part):
    arr = x._data
    out = _make(MetaArray(arr.shape, tuple(2 * s for s in arr.elem_strides), x.dtype.to_real().np,
                          2 * arr.offset + part), META_BIT)
    out._version_counter = x._shared_version_counter()
    return out


def real(x):
    return x if not x.is_complex() else _part_view(x, 0)


def imag(x):
    cpu.check_complex_for_imag(x)
    return _part_view(x, 1)


def binary(a, b, *_ignored):
    """add/sub/mul/maximum...: broadcast shape, promoted dtype (extra scalar args ignored)."""
    return _out(rules.broadcast_shapes(_shape(a), _shape(b)), rules.common_dtype(a, b), a, b)


def binary_float(a, b, *_ignored):
    """true division, atan2...: promoted dtype, integers to the default float."""
    return _out(rules.broadcast_shapes(_shape(a), _shape(b)), rules.float_dtype(rules.common_dtype(a, b)), a, b)


def binary_bool(a, b, *_ignored):
    """comparisons and logical ops."""
    return _out(rules.broadcast_shapes(_shape(a), _shape(b)), _dt.bool_, a, b)


def ternary(a, b, c, *_ignored):
    """lerp/addcmul/where-like ops over three operands."""
    return _out(rules.broadcast_shapes(_shape(a), _shape(b), _shape(c)), rules.common_dtype(a, b, c), a, b, c)


def _check_alpha(common, alpha):
    """PyTorch's Meta kernels refuse an alpha the common dtype cannot hold with ValueError."""
    if (isinstance(alpha, float) and common.category <= _dt.INT) or \
            (isinstance(alpha, complex) and common.category != _dt.COMPLEX):
        target = int if common.category <= _dt.INT else float
        raise ValueError(f"alpha argument of type {type(alpha)} cannot be safely cast to type {target}!")
    cpub._check_alpha(common, alpha, "")


def add(a, b, alpha=1):
    if not (alpha.__class__ is int and alpha == 1):
        _check_alpha(rules.common_dtype(a, b), alpha)
    return binary(a, b)


def sub(a, b, alpha=1):
    if isinstance(a, Tensor) and isinstance(b, Tensor):  # PyTorch's Meta kernel checks two tensors only
        cpub.check_sub(a, b)
    if not (alpha.__class__ is int and alpha == 1):
        _check_alpha(rules.common_dtype(a, b), alpha)
    return binary(a, b)


def rsub(a, b, alpha=1):
    return sub(b, a, alpha)


def div_mode(a, b, rounding_mode=None):
    cpub.check_rounding_mode(rounding_mode, ValueError)
    return binary_float(a, b) if rounding_mode is None else binary(a, b)


def floor_divide(a, b):
    common = rules.common_dtype(a, b)
    if common.category in (_dt.COMPLEX, _dt.BOOL):
        raise RuntimeError(f"ember.{common.name} not supported for floor_divide")
    return binary(a, b)


def float_power(a, b):
    return _out(rules.broadcast_shapes(_shape(a), _shape(b)), cpub.float_power_dtype(a, b), a, b)


def float_power_(self, exponent):
    cpub.check_float_power_(self, exponent)
    rules.broadcast_shapes(self.shape, _shape(exponent))
    return self


def lerp(self, end, weight):
    cpub.check_lerp(self, end, weight)
    return _out(rules.broadcast_shapes(self.shape, end.shape, _shape(weight)), self.dtype, self, end, weight)


def pow(a, b):
    """PyTorch's Meta pow promotes bool ** bool to int64."""
    common = rules.common_dtype(a, b)
    return _out(rules.broadcast_shapes(_shape(a), _shape(b)), _dt.int64 if common is _dt.bool_ else common, a, b)


def addcdiv(self, tensor1, tensor2, value=1):
    if tensor1.dtype.category == _dt.INT and tensor2.dtype.category == _dt.INT:  # Meta: bool passes
        cpub.check_addcdiv(tensor1, tensor2)
    return ternary(self, tensor1, tensor2)
