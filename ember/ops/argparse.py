"""Argument conversion used by the generated bindings: each helper either returns the value in
the form kernels expect (Python int, tuple of ints, ember dtype...) or raises PyTorch's
TypeError naming the op, the argument and what was expected. They only run when the
fast ``__class__`` check in the binding fails.
"""
from __future__ import annotations

import numbers

import numpy as np

from .._core import dtype as _dt
from .._core.device import device as _device
from .._core.tensor import Tensor

NUMBER_TYPES = frozenset((int, float, bool, complex))


def _type_name(x) -> str:
    return type(x).__name__


def arg_error(op: str, name: str, pos: int, expected: str, got) -> TypeError:
    where = f"argument '{name}' (position {pos + 1})" if pos >= 0 else f"argument '{name}'"
    return TypeError(f"{op}(): {where} must be {expected}, not {_type_name(got)}")


def to_tensor_arg(x, op, name, pos):
    raise arg_error(op, name, pos, "Tensor", x)


def to_number(x, op, name, pos):
    """A Python number from a number-like (NumPy scalar, one-element tensor)."""
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, numbers.Complex):
        return complex(x)
    if isinstance(x, Tensor) and x.numel() == 1 and x.ndim == 0:
        return x.item()
    raise arg_error(op, name, pos, "Number", x)


def to_tensor_or_number(x, op, name, pos):
    """A Tensor argument that also takes Python numbers (add's `other`): NumPy scalars and
    one-element arrays become numbers; anything else is "must be Tensor" like PyTorch."""
    if isinstance(x, (numbers.Number, np.bool_)) and not isinstance(x, Tensor):
        return to_number(x, op, name, pos)
    if hasattr(type(x), "__ember_dispatch__"):  # an fx Proxy: dispatched through its keys
        return x
    raise arg_error(op, name, pos, "Tensor", x)


def to_int(x, op, name, pos):
    if isinstance(x, (bool, np.bool_)):
        raise arg_error(op, name, pos, "int", x)
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, Tensor) and x.numel() == 1 and not x.is_floating_point() and not x.is_complex():
        return int(x.item())
    raise arg_error(op, name, pos, "int", x)


def to_float(x, op, name, pos):
    if isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_)):
        return float(x)
    if isinstance(x, Tensor) and x.numel() == 1:
        return float(x.item())
    raise arg_error(op, name, pos, "float", x)


def to_bool(x, op, name, pos):
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    raise arg_error(op, name, pos, "bool", x)


def to_int_list(x, op, name, pos, size=None):
    """A tuple of ints; a single int is accepted (and repeated to `size` when given)."""
    if x.__class__ is tuple:        # already a tuple of ints (t.view(16)'s sizes): itself, no copy
        for v in x:
            if v.__class__ is not int:
                break
        else:
            return x
    if x.__class__ is tuple or x.__class__ is list:
        out = []
        for v in x:
            if v.__class__ is not int:
                if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
                    v = int(v)
                elif isinstance(v, Tensor) and v.numel() == 1 and v.dtype.category == _dt.INT:
                    v = int(v.item())
                else:
                    raise TypeError(f"{op}(): argument '{name}' (position {pos + 1}) must be tuple of ints, "
                                    f"but found element of type {_type_name(v)} at pos {len(out)}")
            out.append(v)
        return tuple(out)
    if isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_)):
        return (int(x),) * (size or 1)
    if isinstance(x, Tensor) and x.ndim <= 1 and x.dtype.category == _dt.INT:
        return tuple(int(v) for v in x.tolist()) if x.ndim else (int(x.item()),)
    if isinstance(x, (np.ndarray,)) or hasattr(x, "__iter__") and not isinstance(x, (str, bytes, Tensor)):
        return to_int_list(list(x), op, name, pos, size)
    raise arg_error(op, name, pos, "tuple of ints", x)


def to_float_list(x, op, name, pos, size=None):
    if isinstance(x, numbers.Real):
        return (float(x),) * (size or 1)
    if isinstance(x, (list, tuple)):
        return tuple(to_float(v, op, name, pos) for v in x)
    raise arg_error(op, name, pos, "tuple of floats", x)


def to_tensor_list(x, op, name, pos):
    if isinstance(x, (list, tuple)):
        for i, v in enumerate(x):
            if not isinstance(v, Tensor) and not hasattr(type(v), "__ember_dispatch__"):  # (an fx Proxy may)
                raise TypeError(f"{op}(): argument '{name}' (position {pos + 1}) must be tuple of Tensors, "
                                f"not {_type_name(v)}")
        return x
    raise TypeError(f"{op}(): argument '{name}' (position {pos + 1}) must be tuple of Tensors, not {_type_name(x)}")


# Python's scalar types stand for dtypes (float is float64); strings and NumPy dtypes are
# refused, as PyTorch refuses them.
PYTHON_TYPE_DTYPES = _dt.PYTHON_TYPE_DTYPES


def to_out_tensors(x, n, op, pos):
    """``out=(values, indices)`` of an op with several results: a tuple or list of n tensors."""
    if not isinstance(x, (tuple, list)):
        raise TypeError(f"{op}() received an invalid combination of arguments - got out={_type_name(x)}, but "
                        f"expected a tuple of {n} Tensors")
    if len(x) != n:
        raise TypeError(f"expected tuple of {n} elements but got {len(x)}")
    for i, t in enumerate(x):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument {pos}, but got {_type_name(t)}")
    return x


def to_dtype(x, op, name, pos):
    if isinstance(x, _dt.dtype):
        return x
    d = PYTHON_TYPE_DTYPES.get(x) if isinstance(x, type) else None
    if d is not None:
        return d
    raise arg_error(op, name, pos, "torch.dtype", x)


def optional_dtype(x, op, name="dtype", pos=-1):
    """A ``dtype=`` argument of a Python-level function: None, an ember dtype or a Python type."""
    return x if x is None or x.__class__ is _dt.dtype else to_dtype(x, op, name, pos)


def to_device(x, op, name, pos):
    if isinstance(x, _device):
        return x
    if isinstance(x, (str, int)):
        return _device(x)
    raise arg_error(op, name, pos, "torch.device", x)


def to_memory_format(x, op, name, pos):
    """ember's memory formats are the strings ``ember.contiguous_format`` / ``preserve_format``."""
    if isinstance(x, str):
        return x
    raise arg_error(op, name, pos, "torch.memory_format", x)


def to_str(x, op, name, pos):
    if isinstance(x, str):
        return x
    raise arg_error(op, name, pos, "str", x)


def passthrough(x, op, name, pos):
    return x
