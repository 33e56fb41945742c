"""Creation rules shared by the CPU and Meta kernels (sizes, dtypes, strides of new tensors), and
the Meta kernels of the creation and random families: shape, dtype and strides only."""
from __future__ import annotations

import math

import numpy as np

from ..._core import dtype as _dt
from ..._core.storage import contiguous_strides, is_non_overlapping_and_dense, MetaArray
from ..._core.tensor import Tensor, wrap_meta
from ..rules import infer_dense_strides


def not_implemented_for(kernel: str, d: _dt.dtype):
    return NotImplementedError(f'"{kernel}" not implemented for \'{d.c10_name}\'')


# ---------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------
def check_size(size, op: str) -> tuple:
    """A tuple of non-negative ints; RuntimeError for negative sizes, as PyTorch."""
    for s in size:
        if s < 0:
            raise RuntimeError(f"{op}: Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(size)


def check_layout(layout, op: str) -> None:
    if layout is not None and str(layout) not in ("strided", "torch.strided"):
        raise NotImplementedError(f"{op}: only the strided layout is supported, got {layout}")


def factory_dtype(dtype) -> _dt.dtype:
    return _dt.get_default_dtype() if dtype is None else _dt.check_supported(dtype)


def fill_dtype(value, dtype) -> _dt.dtype:
    """``full``'s dtype: bool -> bool, int -> int64, float -> default, complex -> default complex."""
    if dtype is not None:
        return _dt.check_supported(dtype)
    return _dt.scalar_dtype(value)


def like_strides(x: Tensor, memory_format) -> tuple | None:
    """Strides of ``*_like(x)``: x's own when x is dense (preserve_format), else dense strides in
    x's order; None (contiguous) for contiguous_format."""
    if memory_format in ("contiguous_format", "torch.contiguous_format"):
        return None
    if memory_format not in (None, "preserve_format", "torch.preserve_format"):
        raise NotImplementedError(f"memory_format={memory_format} is not supported")
    shape, strides = tuple(x.shape), x.stride()
    if is_non_overlapping_and_dense(shape, strides):
        return None if strides == contiguous_strides(shape) else strides
    dense = infer_dense_strides(shape, strides)
    return None if dense == contiguous_strides(shape) else dense


def storage_size(shape, strides) -> int:
    """Elements a storage needs to hold a tensor of this shape and these strides."""
    if any(s == 0 for s in shape):
        return 0
    return 1 + sum((n - 1) * st for n, st in zip(shape, strides))


def check_strides(size, stride, op="empty_strided"):
    if len(size) != len(stride):
        raise RuntimeError(f"{op}: dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    for s in stride:
        if s < 0:
            raise RuntimeError(f"{op}: as_strided: Negative strides are not supported at the moment, got "
                               f"strides: {list(stride)}")


def arange_plan(start, end, step, dtype):
    """(dtype, length, start, step) of ``arange`` as ATen computes them: the bounds are converted
    to the output's accumulate type first, and the length comes from doubles except for int64."""
    if dtype is None:
        any_float = any(isinstance(v, float) for v in (start, end, step))
        if any(isinstance(v, complex) for v in (start, end, step)):
            raise RuntimeError("arange: complex bounds are not supported")
        dtype = _dt.get_default_dtype() if any_float else _dt.int64
    dtype = _dt.check_supported(dtype)
    if dtype.category in (_dt.BOOL, _dt.COMPLEX):
        raise not_implemented_for("arange_cpu", dtype)
    if dtype.category == _dt.INT:
        for v in (start, end):
            if isinstance(v, float) and not math.isfinite(v):
                raise RuntimeError(f"unsupported range: {start} -> {end}")
        xstart, xend, xstep = int(start), int(end), int(step)
        if step == 0:
            raise RuntimeError("step must be nonzero")
        if xstep == 0 and dtype is _dt.int64:
            raise ValueError("step must be nonzero")
        if dtype is not _dt.int64:  # only int64 checks the truncated bounds; the others use doubles
            if not ((step > 0 and end >= start) or (step < 0 and end <= start)):
                raise RuntimeError("upper bound and larger bound inconsistent with step sign")
            return dtype, max(math.ceil((float(end) - float(start)) / float(step)), 0), xstart, xstep
    else:
        xstart, xend, xstep = float(start), float(end), float(step)
        if xstep == 0:
            raise RuntimeError("step must be nonzero")
        if not (math.isfinite(xstart) and math.isfinite(xend)):
            raise RuntimeError(f"unsupported range: {xstart} -> {xend}")
    if not ((xstep > 0 and xend >= xstart) or (xstep < 0 and xend <= xstart)):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is _dt.int64:
        n = -((xstart - xend) // xstep)  # ceil((end - start) / step), exact in integers
    else:
        n = math.ceil((float(end) - float(start)) / float(step))
    return dtype, max(int(n), 0), xstart, xstep


def linspace_dtype(start, end, steps, dtype, op="linspace"):
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v.ndim != 0:
            raise RuntimeError(f"{op} only supports 0-dimensional start and end tensors, but got {name} with "
                               f"{v.ndim} dimension(s).")
    if dtype is None:
        if any(isinstance(v, complex) or (isinstance(v, Tensor) and v.is_complex()) for v in (start, end)):
            dtype = _dt.default_complex_dtype()
        else:
            dtype = _dt.get_default_dtype()
    dtype = _dt.check_supported(dtype)
    if dtype is _dt.bool_:
        raise not_implemented_for(f"{op}_cpu", dtype)
    return dtype


def tri_indices_check(row, col, dtype, op):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    dtype = _dt.int64 if dtype is None else dtype
    if dtype not in (_dt.int32, _dt.int64):
        raise not_implemented_for(op, dtype)
    return dtype


def tri_count(row, col, offset, lower: bool) -> int:
    """Number of (i, j) with j - i <= offset (lower) or >= offset (upper)."""
    n = 0
    for i in range(row):
        if lower:
            n += max(0, min(col, i + offset + 1))
        else:
            n += max(0, col - max(0, i + offset))
    return n


# ---------------------------------------------------------------------------------------
# scalars into a dtype, with c10's overflow check
# ---------------------------------------------------------------------------------------
def scalar_value(value, dt: _dt.dtype):
    """`value` converted to `dt` as a NumPy scalar; RuntimeError when it overflows the type, like
    c10's checked_convert (uint8 also takes [-255, -1], wrapping as two's complement)."""
    npd = dt.np
    cat = dt.category
    if cat == _dt.BOOL:
        return np.bool_(value != 0)
    if isinstance(value, complex) and cat != _dt.COMPLEX:
        if value.imag != 0:
            raise _overflow(dt)
        value = value.real
    if cat == _dt.BOOL:
        return np.bool_(value != 0)
    if cat == _dt.INT:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _overflow(dt)
            value = int(value)  # truncates toward zero, as a C cast
        info = np.iinfo(npd)
        value = int(value)
        lo = -int(info.max) if not dt.is_signed else int(info.min)
        if value > info.max or value < lo:
            raise _overflow(dt)
        return np.array(value).astype(npd)[()] if value < 0 and not dt.is_signed else npd.type(value)
    # floating / complex: finite values beyond the type's range overflow; inf and nan pass
    limit = float(_dt.finfo(dt).max)
    parts = (value.real, value.imag) if isinstance(value, complex) else (float(value),)
    for p in parts:
        if math.isfinite(p) and abs(p) > limit:
            raise _overflow(dt)
    return np.array(value).astype(npd)[()]


def _overflow(dt):
    return RuntimeError(f"value cannot be converted to type {dt.c_type} without overflow")


def complex_dtype(real, imag, op="complex"):
    """complex/polar: both inputs float32 or float64 of one dtype (half gives complex32: absent)."""
    for t in (real, imag):
        if t.dtype not in (_dt.float16, _dt.float32, _dt.float64):
            raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                               f"{real.dtype.c10_name} and {imag.dtype.c10_name}")
    if real.dtype is not imag.dtype:
        raise RuntimeError(f"Expected object of scalar type {real.dtype.c10_name} but got scalar type "
                           f"{imag.dtype.c10_name} for second argument")
    if real.dtype is _dt.float16:
        raise NotImplementedError(f"{op}: complex32 (ComplexHalf) is not supported")
    return real.dtype.to_complex()


# ---------------------------------------------------------------------------------------
# Meta kernels
# ---------------------------------------------------------------------------------------
def filled(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """zeros / ones / empty / rand / randn on the meta device."""
    check_layout(layout, "factory")
    return wrap_meta(check_size(size, "factory"), factory_dtype(dtype))


def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap_meta(check_size(size, "full"), fill_dtype(fill_value, dtype))


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    check_strides(size, stride)
    return wrap_meta(check_size(size, "empty_strided"), factory_dtype(dtype), stride)


def like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    """zeros_like / empty_like / rand_like ... on meta."""
    return wrap_meta(tuple(self.shape), dtype or self.dtype, like_strides(self, memory_format))


def full_like(self, fill_value, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return like(self, dtype, layout, device, pin_memory, memory_format)


def new_filled(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap_meta(check_size(size, "new"), dtype or self.dtype)


def new_full(self, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap_meta(check_size(size, "new_full"), dtype or self.dtype)


def new_empty_strided(self, size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    check_strides(size, stride)
    return wrap_meta(check_size(size, "new_empty_strided"), dtype or self.dtype, stride)


def scalar_tensor(s, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap_meta((), factory_dtype(dtype))


def arange(end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_step(0, end, 1, dtype)


def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return arange_step(start, end, 1, dtype)


def arange_step(start, end, step=1, dtype=None, layout=None, device=None, pin_memory=None):
    dtype, n, _, _ = arange_plan(start, end, step, dtype)
    return wrap_meta((n,), dtype)


def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap_meta((steps,), linspace_dtype(start, end, steps, dtype))


def logspace(start, end, steps, base=10.0, dtype=None, layout=None, device=None, pin_memory=None):
    return wrap_meta((steps,), linspace_dtype(start, end, steps, dtype, "logspace"))


def eye(n, dtype=None, layout=None, device=None, pin_memory=None):
    return eye_m(n, n, dtype)


def eye_m(n, m, dtype=None, layout=None, device=None, pin_memory=None):
    check_eye(n, m)
    return wrap_meta((n, m), factory_dtype(dtype))


def check_eye(n, m):
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")


def tril_indices(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = tri_indices_check(row, col, dtype, "tril_indices")
    return wrap_meta((2, tri_count(row, col, offset, True)), dtype)


def triu_indices(row, col, offset=0, dtype=None, layout=None, device=None, pin_memory=None):
    dtype = tri_indices_check(row, col, dtype, "triu_indices")
    return wrap_meta((2, tri_count(row, col, offset, False)), dtype)


def inplace_same(self, *args):
    """fill_ / zero_ / uniform_ ... on meta: nothing to write."""
    return self


def is_meta(x) -> bool:
    return isinstance(x, Tensor) and isinstance(x._data, MetaArray)


def fill_(self, value):
    scalar_value(value, self.dtype)
    return self


def fill_tensor_(self, value):
    if value.ndim != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} "
                           "dimensions.")
    return self


def complex_(real, imag):
    from .. import rules as _rules
    return wrap_meta(_rules.broadcast_shapes(real.shape, imag.shape), complex_dtype(real, imag))


def polar(abs, angle):
    from .. import rules as _rules
    return wrap_meta(_rules.broadcast_shapes(abs.shape, angle.shape), complex_dtype(abs, angle, "polar"))
