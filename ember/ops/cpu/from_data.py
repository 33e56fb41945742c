"""``ember.tensor(data)``: nested Python sequences of numbers into a new CPU tensor, as
PyTorch's ``tensor_new.cpp`` does it.

* The dtype, when not given, is the promotion of every leaf's dtype (``torch.promote_types``):
  Python floats give the default dtype, ints int64, bools bool, complex the default complex
  dtype; NumPy scalars and arrays and one-element tensors give their own dtype, so
  ``tensor(np.float64(1.5))`` is float64 and ``tensor([np.int32(1), 2])`` is int64.
* Every number is converted with PyTorch's checked conversion: into an integer dtype, NaN,
  infinities and values out of range raise RuntimeError ("value cannot be converted to type
  int8 without overflow"), except that uint8 takes negative integers down to -255 by wrapping
  (``tensor([-1], dtype=uint8)`` is 255); floating dtypes round to inf on overflow.
* Shapes come from the first element of each level; a sequence of another length raises
  ValueError "expected sequence of length 2 at dim 1 (got 1)"; leaves that are not numbers
  raise PyTorch's exception types.

Tensors and NumPy arrays given as `data` itself are copied and cast without those checks
(PyTorch's ``tensor(ndarray, dtype=int64)`` casts NaN as C does, and so does ember).
"""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap

_SEQUENCES = (list, tuple, range)


def tensor_from_data(data, dtype=None) -> Tensor:
    if isinstance(data, Tensor):
        arr = np.array(data.numpy(force=True))
    elif isinstance(data, np.ndarray):
        _dt.from_numpy_dtype(data.dtype)  # TypeError for dtypes ember lacks
        arr = np.array(data)
    else:
        if isinstance(data, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
        sizes = _sizes(data)
        leaves, inferred = [], None
        _collect(data, sizes, 0, leaves, dtype)
        for _, d in leaves:
            inferred = d if inferred is None else _dt.promote_types(inferred, d)
        inferred = inferred or _dt.get_default_dtype()
        if inferred.category == _dt.COMPLEX and _dt.get_default_dtype() is _dt.bfloat16 and dtype is None:
            raise RuntimeError("invalid default scalar type for complex")
        target = dtype or inferred
        arr = _checked_array([v for v, _ in leaves], inferred, target).reshape(sizes)
    if dtype is not None:
        arr = arr.astype(_dt.check_supported(dtype).np)
    if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d arrays 1-d)
        arr = arr.copy(order="C")
    return wrap(arr)


def _sizes(data) -> list:
    """The shape, read along the first element of every level (PyTorch's compute_sizes)."""
    sizes = []
    x = data
    while True:
        if isinstance(x, np.ndarray):
            return sizes + list(x.shape)
        if isinstance(x, str):
            raise ValueError("too many dimensions 'str'")
        if not isinstance(x, _SEQUENCES):
            return sizes
        sizes.append(len(x))
        if not len(x):
            return sizes
        x = x[0]


def _collect(x, sizes, dim, leaves, dtype):
    """Append (value, dtype) for every number under `x`, checking lengths against `sizes`."""
    if dim == len(sizes):
        leaves.append(_leaf(x, dtype))
        return
    if isinstance(x, np.ndarray):
        if list(x.shape) != sizes[dim:]:
            raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(x)})")
        d = _dt.from_numpy_dtype(x.dtype)
        leaves.extend((v, d) for v in x.ravel().tolist())
        return
    if not isinstance(x, _SEQUENCES):
        raise TypeError("not a sequence")
    if len(x) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(x)})")
    for item in x:
        _collect(item, sizes, dim + 1, leaves, dtype)


def _leaf(x, dtype):
    """(Python number, its dtype) for one element."""
    cls = x.__class__
    if cls is float:
        return x, _dt.get_default_dtype()
    if cls is int:
        return x, _dt.int64
    if cls is bool:
        return x, _dt.bool_
    if cls is complex:
        return x, _dt.default_complex_dtype()
    if isinstance(x, (np.generic, np.ndarray)) and x.ndim == 0 and x.dtype.kind in "biufc":
        if dtype is not None and dtype.category == _dt.INT and x.dtype.kind in "bfc" and not isinstance(x, float):
            # PyTorch reads an integer through __index__, which only NumPy's integers (and
            # float64, a Python float) have
            raise TypeError(f"'numpy.{type(x).__name__}' object cannot be interpreted as an integer")
        return x.item(), _dt.from_numpy_dtype(x.dtype)
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return x.item(), x.dtype
    for base in (bool, int, float, complex):  # subclasses of the number types (IntEnum ...)
        if isinstance(x, base):
            return _leaf(base(x), dtype)
    if dtype is not None or isinstance(x, _SEQUENCES + (np.ndarray,)):
        # PyTorch only infers without a dtype; storing the value fails instead (a sequence
        # where the shape says a number: stored as one)
        if dtype is None or dtype.category in (_dt.INT, _dt.BOOL):
            raise TypeError(f"'{type(x).__name__}' object cannot be interpreted as an integer")
        raise TypeError(f"must be real number, not {type(x).__name__}")
    if isinstance(x, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


# (low, high) each integer dtype takes from Python integers: uint8 lets -255..-1 wrap (c10's
# overflows(): "allow for negative numbers to wrap using two's complement arithmetic").
_INT_RANGE = {"uint8": (-255, 255), "int8": (-128, 127), "int16": (-(1 << 15), (1 << 15) - 1),
              "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}


def _checked_array(values, inferred, target) -> np.ndarray:
    """The numbers as an array of `target`'s NumPy dtype, converted as c10's checked_convert."""
    cat = inferred.category
    if cat == _dt.COMPLEX and target.category in (_dt.INT, _dt.FLOAT):
        raise TypeError("'complex' object cannot be interpreted as an integer" if target.category == _dt.INT
                        else "must be real number, not complex")
    wide = {_dt.BOOL: np.bool_, _dt.INT: np.int64, _dt.FLOAT: np.float64, _dt.COMPLEX: np.complex128}[cat]
    try:
        arr = np.array(values, dtype=wide)
    except OverflowError:  # a Python int beyond int64: fine for floating and bool targets only
        if target.category == _dt.INT:
            raise ValueError("Overflow when unpacking long long") from None
        arr = np.array([float(v) for v in values], dtype=np.float64)
    if target.category == _dt.INT and arr.size:
        low, high = _INT_RANGE[target.name]
        if arr.dtype.kind == "f":
            low = 0 if target is _dt.uint8 else low  # a float never wraps
            ok = (arr >= low) & (arr <= high)        # False for NaN
        elif arr.dtype.kind == "i":
            ok = (arr >= low) & (arr <= high)
        else:
            ok = True
        if not np.all(ok):
            raise RuntimeError(f"value cannot be converted to type {target.name} without overflow")
    if target.np is None:
        return arr
    return arr.astype(target.np)
