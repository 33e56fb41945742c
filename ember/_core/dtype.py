"""dtypes and PyTorch's type-promotion rules.

A `dtype` is a small immutable object that knows its NumPy counterpart. Promotion follows
c10's `promoteTypes` and ATen's `ResultTypeState`: operands are ranked as dimensioned tensors,
zero-dim tensors and wrapped Python numbers, and a lower rank only wins when it belongs to a
higher *category* (bool < integer < floating < complex).

    >>> promote_types(uint8, int8)
    ember.int16
    >>> result_type(tensor([1, 2], dtype=int32), 2.5)
    ember.float32
"""
from __future__ import annotations

import numpy as np

try:  # bfloat16 on CPU needs ml_dtypes (an optional extra): NumPy has no such type.
    import ml_dtypes as _ml_dtypes
    _BF16_NP = np.dtype(_ml_dtypes.bfloat16)
except ImportError:  # pragma: no cover - exercised only without the extra
    _ml_dtypes = None
    _BF16_NP = None

BOOL, INT, FLOAT, COMPLEX = 0, 1, 2, 3  # promotion categories


class dtype:
    """A tensor element type, e.g. ``ember.float32``."""

    __slots__ = ("name", "itemsize", "category", "is_signed", "np", "_rank", "scalar_type_code", "c10_name", "cpp_type", "c_type")

    def __init__(self, name, np_dtype, category, itemsize, is_signed, rank):
        self.name = name
        self.np = np_dtype
        self.category = category
        self.itemsize = itemsize
        self.is_signed = is_signed
        self._rank = rank

    @property
    def is_floating_point(self) -> bool:
        return self.category == FLOAT

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX

    def to_real(self) -> "dtype":
        """complex64 -> float32, complex128 -> float64, others unchanged."""
        return {complex64: float32, complex128: float64}.get(self, self)

    def to_complex(self) -> "dtype":
        """float32 -> complex64, float64 -> complex128, others unchanged."""
        return {float64: complex128, float32: complex64, float16: complex64, bfloat16: complex64}.get(self, self)

    def __repr__(self):
        return "ember." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


def _dtype_by_name(name):
    return _BY_NAME[name]


bool_ = dtype("bool", np.dtype(np.bool_), BOOL, 1, False, 0)
uint8 = dtype("uint8", np.dtype(np.uint8), INT, 1, False, 1)
int8 = dtype("int8", np.dtype(np.int8), INT, 1, True, 2)
int16 = dtype("int16", np.dtype(np.int16), INT, 2, True, 3)
int32 = dtype("int32", np.dtype(np.int32), INT, 4, True, 4)
int64 = dtype("int64", np.dtype(np.int64), INT, 8, True, 5)
float16 = dtype("float16", np.dtype(np.float16), FLOAT, 2, True, 6)
bfloat16 = dtype("bfloat16", _BF16_NP, FLOAT, 2, True, 7)
float32 = dtype("float32", np.dtype(np.float32), FLOAT, 4, True, 8)
float64 = dtype("float64", np.dtype(np.float64), FLOAT, 8, True, 9)
complex64 = dtype("complex64", np.dtype(np.complex64), COMPLEX, 8, True, 10)
complex128 = dtype("complex128", np.dtype(np.complex128), COMPLEX, 16, True, 11)

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64,
              complex64, complex128)
_BY_NAME = {d.name: d for d in ALL_DTYPES}

# A dtype's number and its three spellings in PyTorch's messages, one row per dtype:
#   code      c10::ScalarType's enum value (a schema default `dtype=4` is long; TorchScript prints it)
#   c10_name  c10::ScalarType's name ("expected scalar type Float", "FloatTensor", JIT's "Float(2, 3)")
#   cpp_type  the demangled C++ type ("Expected out tensor to have dtype long int", "out of bounds for short int")
#   c_type    the type as ATen's source spells it ("value cannot be converted to type int64_t without overflow")
_SPELLINGS = (
    (bool_, 11, "Bool", "bool", "bool"),
    (uint8, 0, "Byte", "unsigned char", "uint8_t"),
    (int8, 1, "Char", "signed char", "int8_t"),
    (int16, 2, "Short", "short int", "int16_t"),
    (int32, 3, "Int", "int", "int"),
    (int64, 4, "Long", "long int", "int64_t"),
    (float16, 5, "Half", "c10::Half", "c10::Half"),
    (bfloat16, 15, "BFloat16", "c10::BFloat16", "c10::BFloat16"),
    (float32, 6, "Float", "float", "float"),
    (float64, 7, "Double", "double", "double"),
    (complex64, 9, "ComplexFloat", "c10::complex<float>", "c10::complex<float>"),
    (complex128, 10, "ComplexDouble", "c10::complex<double>", "c10::complex<double>"),
)
for _d, _code, _c10, _cpp, _c in _SPELLINGS:
    _d.scalar_type_code, _d.c10_name, _d.cpp_type, _d.c_type = _code, _c10, _cpp, _c
BY_SCALAR_TYPE_CODE = {d.scalar_type_code: d for d in ALL_DTYPES}
ALIASES = {"bool": bool_, "half": float16, "float": float32, "double": float64, "short": int16,
           "int": int32, "long": int64, "cfloat": complex64, "cdouble": complex128,
           "complex32": None}

# NumPy dtype -> ember dtype; NumPy dtypes of builtin types are singletons, so a dict works.
_FROM_NP = {d.np: d for d in ALL_DTYPES if d.np is not None}


def from_numpy_dtype(np_dtype) -> dtype:
    """The ember dtype of a NumPy dtype; TypeError for types ember does not have."""
    try:
        return _FROM_NP[np_dtype]
    except KeyError:
        pass
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types "
                        "are: float64, float32, float16, complex64, complex128, int64, int32, int16, "
                        "int8, uint8, and bool.") from None


def check_supported(d: dtype) -> dtype:
    if d.np is None:
        raise RuntimeError(f"{d} needs the ml_dtypes package on CPU: pip install 'ember[bf16]'")
    return d


# ---------------------------------------------------------------------------------------
# promotion
# ---------------------------------------------------------------------------------------
def _promote_pair(a: dtype, b: dtype) -> dtype:
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == COMPLEX and lo.category == FLOAT and lo is float64:
            return complex128
        return hi
    cat = a.category
    if cat == INT:
        if a is uint8 or b is uint8:
            other = b if a is uint8 else a
            return int16 if other is int8 else other
        return a if a._rank > b._rank else b
    if cat == FLOAT:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a._rank > b._rank else b
    return a if a._rank > b._rank else b


_PROMOTE = {(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


# Python's scalar types stand for dtypes in dtype arguments (PyTorch's rule: float is float64
# whatever the default dtype, complex is complex128).
PYTHON_TYPE_DTYPES = {float: float64, int: int64, bool: bool_, complex: complex128}


def dtype_arg(x, fn: str, name: str, pos: int) -> dtype:
    """A dtype argument of a dtype utility: an ember dtype or a Python type, else TypeError."""
    if isinstance(x, dtype):
        return x
    d = PYTHON_TYPE_DTYPES.get(x) if isinstance(x, type) else None
    if d is None:
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be torch.dtype, not {type(x).__name__}")
    return d


def promote_types(type1: dtype, type2: dtype) -> dtype:
    """The smallest dtype both can be cast to, as ``torch.promote_types``."""
    try:
        return _PROMOTE[type1, type2]
    except (KeyError, TypeError):  # not two ember dtypes (Python types are fine, anything else is not)
        return _PROMOTE[dtype_arg(type1, "promote_types", "type1", 1), dtype_arg(type2, "promote_types", "type2", 2)]


class _DefaultDtype:
    value = float32


_default = _DefaultDtype()


def get_default_dtype() -> dtype:
    """The dtype of Python floats turned into tensors (float32 unless changed)."""
    return _default.value


def set_default_dtype(d: dtype) -> None:
    """Set the default floating dtype; only float16/bfloat16/float32/float64 are allowed."""
    if not isinstance(d, dtype) or d.category != FLOAT:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default.value = d


def default_complex_dtype() -> dtype:
    return complex128 if _default.value is float64 else complex64


def scalar_dtype(value) -> dtype:
    """The dtype a Python number gets when it is wrapped into a tensor."""
    t = value.__class__
    if t is bool:
        return bool_
    if t is int:
        return int64
    if t is float:
        return _default.value
    if t is complex:
        return default_complex_dtype()
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, (int, np.integer)):
        return int64
    if isinstance(value, (float, np.floating)):
        return _default.value
    if isinstance(value, (complex, np.complexfloating)):
        return default_complex_dtype()
    raise TypeError(f"expected a number, got {type(value).__name__}")


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        return higher.to_complex() if higher.category == FLOAT else lower
    if higher.category == FLOAT:
        return higher
    if higher is bool_ or lower.category == FLOAT:
        return _PROMOTE[higher, lower]
    return higher


def result_type(*operands) -> dtype:
    """PyTorch's result type of tensors and Python numbers (wrapped numbers rank lowest).

    >>> result_type(tensor([1], dtype=uint8), 1000)
    ember.uint8
    """
    dim_result = zero_result = wrapped_result = None
    for x in operands:
        if hasattr(x, "_keys") and x._wrapped_number:  # `2 * t`: the number, as a 0-d tensor
            dt = x.dtype     # held in double precision; it promotes as the Python number would
            if dt.category == FLOAT:
                dt = get_default_dtype()
            elif dt.category == COMPLEX:
                dt = default_complex_dtype()
            wrapped_result = dt if wrapped_result is None else _PROMOTE[wrapped_result, dt]
        elif hasattr(x, "_keys"):  # a Tensor (no import: tensor.py imports this module)
            dt = x.dtype
            if x.ndim:
                dim_result = dt if dim_result is None else _PROMOTE[dim_result, dt]
            else:
                zero_result = dt if zero_result is None else _PROMOTE[zero_result, dt]
        elif isinstance(x, dtype):
            dim_result = x if dim_result is None else _PROMOTE[dim_result, x]
        else:
            dt = scalar_dtype(x)
            wrapped_result = dt if wrapped_result is None else _PROMOTE[wrapped_result, dt]
    out = _combine(dim_result, _combine(zero_result, wrapped_result))
    if out is None:
        raise TypeError("result_type() needs at least one tensor or number")
    return out


def can_cast(from_: dtype, to: dtype) -> bool:
    """Whether an op may write a `from_` result into a `to` output (``torch.can_cast``)."""
    if from_.__class__ is not dtype or to.__class__ is not dtype:
        from_, to = dtype_arg(from_, "can_cast", "from_", 1), dtype_arg(to, "can_cast", "to", 2)
    if from_.category == COMPLEX and to.category != COMPLEX:
        return False
    if from_.category == FLOAT and to.category in (INT, BOOL):
        return False
    if from_.category != BOOL and to is bool_:
        return False
    return True


# ---------------------------------------------------------------------------------------
# finfo / iinfo
# ---------------------------------------------------------------------------------------
class finfo:
    """Machine limits of a floating dtype, like ``torch.finfo``."""

    def __init__(self, type: dtype | None = None):
        type = type or get_default_dtype()
        if type.category not in (FLOAT, COMPLEX):
            raise TypeError(f"torch.finfo() requires a floating point input type. Use torch.iinfo to "
                            f"handle '{type}'")
        real = type.to_real()
        info = _ml_dtypes.finfo(real.np) if real is bfloat16 else np.finfo(real.np)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # PyTorch's: an exact power of ten
        self.dtype = real.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, like ``torch.iinfo``."""

    def __init__(self, type: dtype):
        if type.category not in (INT, BOOL) or type is bool_:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo to "
                            f"handle '{type}'")
        info = np.iinfo(type.np)
        self.bits, self.min, self.max, self.dtype = int(info.bits), int(info.min), int(info.max), type.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
