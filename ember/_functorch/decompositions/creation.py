"""Decompositions of factories (ember/ops/table/creation.py) into full, full_like, empty_strided,
empty.memory_format, arange.start_step, rand and randn, and of the filling in-place rows into
``copy_``. ``*_like`` results keep eager's strides (``like_strides``: the input's when dense)."""
from __future__ import annotations

from ...ops.meta import creation as rules
from ._ops import aten, to


def _default(dtype):
    from ... import get_default_dtype
    return get_default_dtype() if dtype is None else dtype


def zeros(size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.full.default(list(size), 0, dtype=_default(dtype), device=device)


def ones(size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.full.default(list(size), 1, dtype=_default(dtype), device=device)


def zeros_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aten.full_like.default(self, 0, dtype=dtype, device=device, memory_format=memory_format)


def ones_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return aten.full_like.default(self, 1, dtype=dtype, device=device, memory_format=memory_format)


def empty_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    strides = rules.like_strides(self, memory_format)
    if strides is None:
        strides = rules.contiguous_strides(tuple(self.shape))
    return aten.empty_strided.default(list(self.shape), list(strides), dtype=dtype or self.dtype,
                                      device=device or self.device)


def _new_dtype(self, dtype):
    return self.dtype if dtype is None else dtype


def new_zeros(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.full.default(list(size), 0, dtype=_new_dtype(self, dtype), device=device or self.device)


def new_ones(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.full.default(list(size), 1, dtype=_new_dtype(self, dtype), device=device or self.device)


def new_full(self, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.full.default(list(size), fill_value, dtype=_new_dtype(self, dtype), device=device or self.device)


def new_empty(self, size, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.empty.memory_format(list(size), dtype=_new_dtype(self, dtype), device=device or self.device)


def new_empty_strided(self, size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.empty_strided.default(list(size), list(stride), dtype=_new_dtype(self, dtype),
                                      device=device or self.device)


def arange_end(end, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.arange.start_step(0, end, 1, dtype=dtype, device=device)


def arange_start(start, end, dtype=None, layout=None, device=None, pin_memory=None):
    return aten.arange.start_step(start, end, 1, dtype=dtype, device=device)


def _linspace_float64(start, end, steps, dt, device):
    """ATen's symmetric formula in float64: start + i*step for the first half, end - (n-1-i)*step after."""
    from ... import float64, int64
    if steps == 0:
        return aten.full.default([0], 0, dtype=float64, device=device)
    if steps == 1:
        return aten.full.default([1], start, dtype=float64, device=device)
    if not dt.is_floating_point:       # integer: bounds truncated to integers first
        start, end = int(start), int(end)
    step = (float(end) - float(start)) / (steps - 1)
    index = aten.arange.start_step(0, steps, 1, dtype=int64, device=device)
    up = aten.add.Tensor(aten.mul.Tensor(to(index, float64), step), float(start))
    down = aten.sub.Tensor(aten.full.default([steps], float(end), dtype=float64, device=device),
                           aten.mul.Tensor(to(aten.sub.Tensor(aten.neg.default(index), 1 - steps), float64), step))
    return aten.where.self(aten.lt.Tensor(index, steps // 2), up, down)


def _cast_like_eager(values, dt):
    if not dt.is_floating_point:
        values = aten.trunc.default(values)
    return to(values, dt)


def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None):
    dt = rules.linspace_dtype(start, end, steps, dtype)
    if dt.is_complex or isinstance(start, complex) or isinstance(end, complex):
        raise NotImplementedError("linspace: complex bounds have no decomposition (the core set is real-valued)")
    return _cast_like_eager(_linspace_float64(start, end, steps, dt, device), dt)


def logspace(start, end, steps, base=10.0, dtype=None, layout=None, device=None, pin_memory=None):
    dt = rules.linspace_dtype(start, end, steps, dtype, "logspace")
    if dt.is_complex or isinstance(start, complex) or isinstance(end, complex):
        raise NotImplementedError("logspace: complex bounds have no decomposition (the core set is real-valued)")
    from ... import float64
    work = _linspace_float64(start, end, steps, float64, device)
    return _cast_like_eager(aten.pow.Scalar(float(base), work), dt)


def eye_m(n, m, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_eye(n, m)
    from ... import int64
    row = aten.unsqueeze.default(aten.arange.start_step(0, n, 1, dtype=int64, device=device), -1)
    col = aten.arange.start_step(0, m, 1, dtype=int64, device=device)
    return to(aten.eq.Tensor(row, col), rules.factory_dtype(dtype))


def eye(n, dtype=None, layout=None, device=None, pin_memory=None):
    return eye_m(n, n, dtype, layout, device, pin_memory)


def _laid_out_like(values, self, memory_format):
    """`values` (contiguous) with the strides eager's ``*_like`` gives: permuted into the
    physical order, copied, permuted back."""
    strides = rules.like_strides(self, memory_format)
    if strides is None:
        return values
    order = sorted(range(self.dim()), key=lambda d: (-strides[d], -d))
    inverse = [order.index(d) for d in range(self.dim())]
    physical = aten.clone.default(aten.permute.default(values, order), memory_format=_contiguous())
    result = aten.permute.default(physical, inverse)
    if tuple(result.stride()) != tuple(strides):
        raise NotImplementedError(f"*_like: strides {strides} are no permutation of dense strides")
    return result


def _contiguous():
    from ... import contiguous_format
    return contiguous_format


def rand_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    values = aten.rand.default(list(self.shape), dtype=dtype or self.dtype, device=device or self.device)
    return _laid_out_like(values, self, memory_format)


def randn_like(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    values = aten.randn.default(list(self.shape), dtype=dtype or self.dtype, device=device or self.device)
    return _laid_out_like(values, self, memory_format)


def fill_scalar(self, value):
    return aten.copy_.default(self, aten.full_like.default(self, value))


def fill_tensor(self, value):
    if value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                           f"dimensions.")
    return aten.copy_.default(self, aten.expand.default(value, list(self.shape)))


def zero_(self):
    return aten.copy_.default(self, zero(self))


def zero(self):          # functionalisation's form of zero_
    return aten.full_like.default(self, 0)


DECOMPOSITIONS = {
    "zeros": zeros, "ones": ones, "zeros_like": zeros_like, "ones_like": ones_like, "empty_like": empty_like,
    "new_zeros": new_zeros, "new_ones": new_ones, "new_full": new_full, "new_empty": new_empty,
    "new_empty_strided": new_empty_strided, "arange": arange_end, "arange.start": arange_start,
    "linspace": linspace, "logspace": logspace, "eye": eye, "eye.m": eye_m, "rand_like": rand_like,
    "randn_like": randn_like, "fill_.Scalar": fill_scalar, "fill_.Tensor": fill_tensor, "zero_": zero_, "zero": zero,
}
