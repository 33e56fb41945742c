"""CPU kernels of tensor creation: from data, filled, ranges, eye, strided. Random kernels are in
`cpu/random.py`; the size/dtype/stride rules shared with the Meta kernels in `meta/creation.py`."""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.storage import make_strided, storage_offset_elements
from ..._core.tensor import Tensor, wrap
from ..meta import creation as rules
from .pointwise import ON_CUDA
from .from_data import tensor_from_data  # noqa: F401 - ember.tensor's kernel, re-exported with the family


# ---------------------------------------------------------------------------------------
# from data (ember.tensor itself: from_data.py)
# ---------------------------------------------------------------------------------------
def from_numpy(arr: np.ndarray) -> Tensor:
    """A tensor sharing `arr`'s memory (writes through either are seen by both)."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    _dt.from_numpy_dtype(arr.dtype)
    if any(s < 0 for s in arr.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                         "strides are not currently supported. (You can probably work around this by making "
                         "a copy of your array  with array.copy().) ")
    if arr.base is not None and arr.size and storage_offset_elements(arr):
        arr = _rebased(arr)
    return wrap(arr)


def _rebased(arr: np.ndarray) -> np.ndarray:
    """The same memory as `arr`, over a storage that starts at arr's first element: PyTorch's
    from_numpy gives views of NumPy arrays storage_offset() 0, and so do we."""
    item = arr.itemsize
    if any(st % item for st in arr.strides):
        return arr
    extent = (1 + sum((n - 1) * (st // item) for n, st in zip(arr.shape, arr.strides))) * item
    plain = arr.dtype.kind != "V"  # bfloat16 (ml_dtypes) has no array-interface type string
    iface = {"data": (arr.__array_interface__["data"][0], not arr.flags.writeable),
             "shape": (extent // item,) if plain else (extent,), "typestr": arr.dtype.str if plain else "|u1",
             "version": 3}
    root = np.asarray(_Holder(iface, arr))
    base = root if plain else root.view(arr.dtype)
    return np.ndarray(arr.shape, arr.dtype, buffer=base, strides=arr.strides)


class _Holder:
    """Keeps the original array alive under a rebased storage."""
    __slots__ = ("__array_interface__", "owner")

    def __init__(self, iface, owner):
        self.__array_interface__ = iface
        self.owner = owner


# ---------------------------------------------------------------------------------------
# filled factories
# ---------------------------------------------------------------------------------------
def _filled(size, dtype, value, op):
    rules.check_size(size, op)
    d = rules.factory_dtype(dtype)
    if value == 0:
        return wrap(np.zeros(size, d.np))
    return wrap(np.ones(size, d.np))


def zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_layout(layout, "zeros")
    return _filled(size, dtype, 0, "zeros")


def ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_layout(layout, "ones")
    return _filled(size, dtype, 1, "ones")


def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    # Zero-filled rather than uninitialised: deterministic, and as cheap as np.empty for NumPy.
    rules.check_layout(layout, "empty")
    return _filled(size, dtype, 0, "empty")


def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_layout(layout, "full")
    rules.check_size(size, "full")
    d = rules.fill_dtype(fill_value, dtype)
    return wrap(np.full(size, rules.scalar_value(fill_value, d), d.np))


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_strides(size, stride)
    rules.check_size(size, "empty_strided")
    d = rules.factory_dtype(dtype)
    return wrap(_strided_zeros(size, stride, d.np))


def _strided_zeros(size, stride, np_dtype):
    """A zero-filled array with the given shape and element strides over its own storage."""
    buf = np.zeros(rules.storage_size(size, stride), np_dtype)
    if buf.size == 0:
        return np.zeros(size, np_dtype)
    return make_strided(buf, size, stride, 0)


def scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    d = rules.factory_dtype(dtype)
    return wrap(np.array(rules.scalar_value(s, d), d.np))


# *_like and new_*: only metadata of self is read, so a meta `self` works with device="cpu".
def _like_array(self, dtype, memory_format, value):
    d = dtype or self.dtype
    strides = rules.like_strides(self, memory_format)
    shape = tuple(self.shape)
    if strides is None:
        return np.full(shape, value, d.np) if value is not None else np.zeros(shape, d.np)
    arr = _strided_zeros(shape, strides, d.np)
    if value is not None:
        arr[...] = value
    return arr


def zeros_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return wrap(_like_array(self, dtype, memory_format, None))


def ones_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return wrap(_like_array(self, dtype, memory_format, 1))


def empty_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return wrap(_like_array(self, dtype, memory_format, None))


def full_like(self, fill_value, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    d = dtype or self.dtype
    return wrap(_like_array(self, d, memory_format, rules.scalar_value(fill_value, d)))


def new_zeros(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap(np.zeros(rules.check_size(size, "new_zeros"), (dtype or self.dtype).np))


def new_ones(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap(np.ones(rules.check_size(size, "new_ones"), (dtype or self.dtype).np))


def new_empty(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap(np.zeros(rules.check_size(size, "new_empty"), (dtype or self.dtype).np))


def new_full(self, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    d = dtype or self.dtype
    return wrap(np.full(rules.check_size(size, "new_full"), rules.scalar_value(fill_value, d), d.np))


def new_empty_strided(self, size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_strides(size, stride, "new_empty_strided")
    rules.check_size(size, "new_empty_strided")
    return wrap(_strided_zeros(size, stride, (dtype or self.dtype).np))


# ---------------------------------------------------------------------------------------
# in-place fills
# ---------------------------------------------------------------------------------------
def fill_(self, value):
    """fill_.Scalar: every element set to `value` (checked for overflow like PyTorch)."""
    v = rules.scalar_value(value, self.dtype)
    self._data[...] = v
    return self


def fill_tensor_(self, value):
    """fill_.Tensor: `value` must be 0-d; it is converted like a copy (no overflow check)."""
    if value.ndim != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                           "dimensions.")
    v = value._data
    if v.dtype.kind == "c" and self._data.dtype.kind != "c":
        v = v.real
    np.copyto(self._data, v, casting="unsafe")
    return self


def zero_(self):
    self._data[...] = 0
    return self


# ---------------------------------------------------------------------------------------
# ranges
# ---------------------------------------------------------------------------------------
def arange(end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_step(0, end, 1, dtype)


def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_step(start, end, 1, dtype)


def arange_step(start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None):
    """Values ``start + i * step`` computed in the accumulate type (int64 for integers, float32 for
    half types, float64 for float32/float64) and cast, as ATen's arange kernel."""
    dtype, n, xstart, xstep = rules.arange_plan(start, end, step, dtype)
    idx = np.arange(n, dtype=np.int64)
    if dtype.category == _dt.INT:  # bounds truncated to integers first (a 0.5 step counts as 0)
        vals = xstart + idx * xstep
    elif dtype.itemsize == 2:
        vals = np.float32(xstart) + np.float32(xstep) * idx.astype(np.float32)
    else:
        vals = xstart + xstep * idx.astype(np.float64)
    return wrap(vals.astype(dtype.np))


def _scalar_of(x):
    return x.item() if isinstance(x, Tensor) else x


def _linspace_values(start, end, steps, dt: _dt.dtype) -> np.ndarray:
    """ATen's symmetric formula: the first half counts up from start, the second down from end."""
    start, end = _scalar_of(start), _scalar_of(end)
    if steps == 0:
        return np.zeros(0)
    if steps == 1:
        return np.array([start])
    if dt.category == _dt.INT:  # bounds cast to the integer type, step in double
        start, end = int(start.real if isinstance(start, complex) else start), \
            int(end.real if isinstance(end, complex) else end)
    work = np.complex128 if dt.category == _dt.COMPLEX else np.float64
    s, e = np.asarray(start, work), np.asarray(end, work)
    step = (e - s) / (steps - 1)
    idx = np.arange(steps)
    half = steps // 2
    return np.where(idx < half, s + step * idx, e - step * (steps - idx - 1))


def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    dt = rules.linspace_dtype(start, end, steps, dtype)
    return wrap(_cast(_linspace_values(start, end, steps, dt), dt))


def logspace(start, end, steps, base=10.0, dtype=None, layout=None, device=None, pin_memory=None):
    dt = rules.linspace_dtype(start, end, steps, dtype, "logspace")
    if ON_CUDA and dt in (_dt.float16, _dt.bfloat16) and steps > 1:
        return wrap(_logspace_in_half(_scalar_of(start), _scalar_of(end), steps, base, dt.np))
    work = _linspace_values(start, end, steps, dt if dt.category == _dt.COMPLEX else _dt.float64)
    return wrap(_cast(np.power(base, work), dt))


def _logspace_in_half(start, end, steps, base, half):
    """PyTorch's CUDA logspace in float16/bfloat16: the step and each exponent are computed in the
    dtype (c10's half arithmetic: float math rounded at every operation), the power in float32
    (its CPU kernel steps in double, so the two differ by the exponent's rounding)."""
    def rounded(x):
        return np.asarray(x, np.float32).astype(half).astype(np.float32)
    s, e = rounded(start), rounded(end)
    step = rounded(rounded(e - s) / rounded(steps - 1))
    index = np.arange(steps, dtype=np.float32)
    exponent = np.where(index < steps // 2, rounded(s + rounded(step * rounded(index))),
                        rounded(e - rounded(step * rounded(steps - 1 - index))))
    return np.power(rounded(base), exponent).astype(half)


def _cast(vals, dt):
    if dt.category == _dt.INT and vals.dtype.kind == "f":
        vals = np.trunc(vals)
    if dt.category != _dt.COMPLEX and vals.dtype.kind == "c":
        vals = vals.real
    return vals.astype(dt.np)


def eye(n, dtype=None, layout=None, device=None, pin_memory=None):
    return eye_m(n, n, dtype)


def eye_m(n, m, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_eye(n, m)
    return wrap(np.eye(n, m, dtype=rules.factory_dtype(dtype).np))


def _tri_indices(row, col, offset, dtype, lower, op):
    dt = rules.tri_indices_check(row, col, dtype, op)
    rows, cols = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    return wrap(np.stack([rows, cols]).astype(dt.np).reshape(2, -1))


def tril_indices(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    return _tri_indices(row, col, offset, dtype, True, "tril_indices")


def triu_indices(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    return _tri_indices(row, col, offset, dtype, False, "triu_indices")


# ---------------------------------------------------------------------------------------
# complex construction
# ---------------------------------------------------------------------------------------
def complex_(real, imag):
    dt = rules.complex_dtype(real, imag)
    out = np.empty(np.broadcast_shapes(real._data.shape, imag._data.shape), dt.np)
    out.real, out.imag = real._data, imag._data
    return wrap(out)


def polar(abs, angle):
    dt = rules.complex_dtype(abs, angle, "polar")
    a, t = abs._data, angle._data
    out = np.empty(np.broadcast_shapes(a.shape, t.shape), dt.np)
    out.real, out.imag = a * np.cos(t), a * np.sin(t)
    return wrap(out)
