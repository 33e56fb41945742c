"""CPU kernels of tensor creation: from data, filled, ranges, random."""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap


def tensor_from_data(data, dtype=None):
    """``ember.tensor(data)``: copy nested lists / numbers / arrays into a new CPU tensor,
    inferring the dtype as PyTorch does (Python floats -> the default dtype, ints -> int64)."""
    if isinstance(data, Tensor):
        arr = np.array(data._data)
    elif isinstance(data, np.ndarray):
        arr = np.array(data)
    else:
        inferred = _infer_dtype(data)
        arr = np.array(_to_python(data), dtype=(dtype or inferred).np)
    if dtype is not None:
        arr = arr.astype(_dt.check_supported(dtype).np)
    elif arr.dtype not in _dt._FROM_NP:
        _dt.from_numpy_dtype(arr.dtype)  # raises TypeError for unsupported
    return wrap(np.ascontiguousarray(arr))


def _to_python(data):
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, (list, tuple)):
        return [_to_python(x) for x in data]
    return data


def _infer_dtype(data):
    kinds = set()

    def visit(x):
        if isinstance(x, Tensor):
            kinds.add(x.dtype)
        elif isinstance(x, (list, tuple)):
            for v in x:
                visit(v)
        elif isinstance(x, np.ndarray):
            kinds.add(_dt.from_numpy_dtype(x.dtype))
        elif isinstance(x, (bool, np.bool_)):
            kinds.add(_dt.bool_)
        elif isinstance(x, (int, np.integer)):
            kinds.add(_dt.int64)
        elif isinstance(x, (float, np.floating)):
            kinds.add(_dt.get_default_dtype())
        elif isinstance(x, (complex, np.complexfloating)):
            kinds.add(_dt.default_complex_dtype())
        else:
            raise TypeError(f"tensor(): could not infer dtype of {type(x).__name__}")
    visit(data)
    if not kinds:
        return _dt.get_default_dtype()
    cat = max(k.category for k in kinds)
    if cat == _dt.COMPLEX:
        return _dt.default_complex_dtype()
    if cat == _dt.FLOAT:
        return _dt.get_default_dtype()
    return _dt.int64 if cat == _dt.INT else _dt.bool_


def from_numpy(arr: np.ndarray) -> Tensor:
    """A tensor sharing `arr`'s memory (writes through either are seen by both)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    _dt.from_numpy_dtype(arr.dtype)
    if any(s < 0 for s in arr.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making "
                         "a copy of your array  with array.copy().) ")
    return wrap(arr)
