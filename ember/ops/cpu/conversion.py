"""Kernels that copy or convert a whole tensor: _to_copy (dtype/device), clone, contiguous, copy_."""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.tensor import wrap, wrap_meta, _make
from ..._core.dispatch import CUDA_BIT
from ..._core.storage import MetaArray, is_non_overlapping_and_dense, device_to_host


def _cast(arr, np_dtype):
    if arr.dtype.kind == "c" and np_dtype.kind != "c":
        arr = arr.real
    return arr.astype(np_dtype)


def to_copy(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    """CPU (and CUDA) kernel of aten::_to_copy: a new tensor with another dtype and/or device."""
    arr = self._data
    if isinstance(arr, MetaArray):
        if device is not None and device.type != "meta":
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        return to_copy_meta(self, dtype, layout, device)
    target = _dt.check_supported(dtype).np if dtype is not None else arr.dtype
    kind = "cpu" if device is None else device.type
    if kind == "meta":
        return to_copy_meta(self, dtype, layout, device, memory_format=memory_format)
    if not isinstance(arr, np.ndarray):  # CUDA source
        if kind == "cpu" and device is not None:
            arr = device_to_host(arr)
        else:
            if arr.dtype.kind == "f" and target.kind == "u":   # as on the CPU: -3.0 -> 253, not CUDA's 0
                arr = arr.astype(np.int64)
            from ..._cuda.fused import cast     # float32 <-> half in one launch, else CuPy's astype
            out = cast(arr, target)
            return _make(_cast(arr, target) if out is None else out, CUDA_BIT)    # (astype copies: one pass)
    if kind == "cuda":
        import cupy
        with cupy.cuda.Device(device.index or 0):
            return _make(cupy.asarray(np.asarray(_cast(arr, target), order="C")), CUDA_BIT)  # (0-d stays 0-d)
    order = "C" if memory_format == "contiguous_format" else "K"
    if arr.dtype is target:
        return wrap(np.array(arr, order=order, copy=True))
    if arr.dtype.kind == "c" and target.kind != "c":
        arr = arr.real
    return wrap(arr.astype(target, order=order))     # (astype copies: one pass, not astype and a copy)


def to_copy_meta(self, dtype=None, layout=None, device=None, pin_memory=None, non_blocking=False, memory_format=None):
    if device is not None and device.type not in ("meta",):
        if self.is_meta:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    from ..meta.creation import like_strides  # preserve_format: dense inputs keep their strides
    return wrap_meta(self.shape, dtype or self.dtype, like_strides(self, memory_format))


def clone(self, memory_format=None):
    arr = self._data
    if isinstance(arr, MetaArray):
        return clone_meta(self, memory_format)
    if isinstance(arr, np.ndarray):
        return wrap(np.array(arr, order="C" if memory_format == "contiguous_format" else "K", copy=True))
    return _make(arr.copy(order="C" if memory_format == "contiguous_format" else "K"), CUDA_BIT)


def clone_meta(self, memory_format=None):
    arr = self._data
    dense = is_non_overlapping_and_dense(arr.shape, arr.elem_strides)
    strides = arr.elem_strides if memory_format is None and dense else None
    return wrap_meta(arr.shape, self.dtype, strides)


def contiguous(self, memory_format="contiguous_format"):
    """self when already contiguous (no copy), else a row-major copy."""
    arr = self._data
    if arr.flags.c_contiguous:
        return self
    if isinstance(arr, MetaArray):
        return wrap_meta(arr.shape, self.dtype)
    if isinstance(arr, np.ndarray):
        return wrap(np.ascontiguousarray(arr))
    return _make(arr.copy(order="C"), CUDA_BIT)


def copy_(self, src, non_blocking=False):
    """Write `src` (broadcast to self's shape, cast to self's dtype) into self."""
    from .. import rules
    shape = rules.broadcast_shapes(self.shape, src.shape, op="copy_")
    if shape != tuple(self.shape):
        raise RuntimeError(f"copy_(): output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")
    dst = self._data
    if isinstance(dst, MetaArray):
        return self
    s = src._data
    if isinstance(s, MetaArray):
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    if isinstance(dst, np.ndarray):
        if not isinstance(s, np.ndarray):
            s = device_to_host(s)
        if np.shares_memory(dst, s):
            s = s.copy()
        if dst.dtype.kind != "c" and s.dtype.kind == "c":
            s = s.real
        np.copyto(dst, s, casting="unsafe")
    else:
        import cupy
        s = cupy.asarray(s)
        if s.dtype.kind == "f" and dst.dtype.kind == "u":   # wrap as on the CPU (to_copy's rule), not saturate
            s = s.astype(np.int64)
        cupy.copyto(dst, s.astype(dst.dtype))
    return self


def detach(self):
    """The same storage and version counter, without autograd history."""
    from ..._core.dispatch import BACKEND_MASK
    from ..._core.tensor import alias
    out = alias(self, self._keys & BACKEND_MASK)
    out._version_counter = self._shared_version_counter()
    return out
