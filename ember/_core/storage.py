"""What sits under a Tensor: a NumPy array on CPU, a `MetaArray` (shape only) on Meta.

A CPU tensor's ``_data`` is an ndarray that may be a view into a larger buffer; the buffer
that owns the memory is the *storage*. Views made by ember are ndarrays built directly on that
buffer with PyTorch's strides (`make_strided`), so ``stride()``, ``storage_offset()`` and
aliasing are exactly PyTorch's.
"""
from __future__ import annotations

import sys
from math import prod

import numpy as np

ndarray = np.ndarray


def device_to_host(arr):
    """CuPy array `arr` copied to a NumPy array, raising first an error that a CUDA kernel found
    since the last report (ember/_cuda/device_checks.py: the host synchronises here anyway)."""
    out = arr.get()
    report_device_errors()
    return out


def report_device_errors() -> None:
    """Raise the first error the device checks found since the last report, if any; costs a
    dictionary lookup while no check is pending (and until CUDA is used)."""
    checks = sys.modules.get("ember._cuda.device_checks")
    if checks is not None and checks.pending:
        checks.raise_pending()


def root_array(arr: np.ndarray) -> np.ndarray:
    """The ndarray that owns `arr`'s memory (the storage), following ``.base``."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


def data_address(arr) -> int:
    if isinstance(arr, np.ndarray):
        return arr.__array_interface__["data"][0]
    # CuPy: asked of the class, since the instance's attribute builds the whole interface dict
    if getattr(type(arr), "__cuda_array_interface__", None) is not None:
        return arr.data.ptr
    return arr.data_ptr()


def storage_offset_elements(arr) -> int:
    """Element offset of `arr`'s first element inside its storage."""
    if isinstance(arr, MetaArray):
        return arr.offset
    if not isinstance(arr, np.ndarray):  # CuPy
        return (arr.data.ptr - arr.data.mem.ptr) // arr.itemsize
    root = root_array(arr)
    return (data_address(arr) - data_address(root)) // arr.itemsize


def contiguous_strides(shape) -> tuple:
    """Row-major element strides for `shape` (PyTorch's: size-1 dims get the next stride)."""
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(strides))


def make_strided(arr, shape, strides, offset):
    """A view of `arr`'s storage with element `strides` and element `offset` into the storage.

    Works for NumPy (built on the owning buffer) and MetaArray; writes through the view alias.
    """
    if isinstance(arr, MetaArray):
        return MetaArray(tuple(shape), tuple(strides), arr.dtype, offset)
    item = arr.itemsize
    byte_strides = tuple(s * item for s in strides)
    if isinstance(arr, np.ndarray):
        root = root_array(arr)
        if root.flags.c_contiguous:  # the root may have another dtype (after view(dtype)): bytes are bytes
            try:
                return np.ndarray(tuple(shape), arr.dtype, buffer=root, offset=offset * item,
                                  strides=byte_strides)
            except (TypeError, ValueError):
                pass
        # A foreign or unusual buffer: describe the view relative to this array's pointer.
        iface = dict(arr.__array_interface__)
        iface.update(data=(iface["data"][0] + (offset - storage_offset_elements(arr)) * item,
                           not arr.flags.writeable),
                     shape=tuple(shape), strides=byte_strides)
        iface.pop("mask", None)
        view = np.asarray(_InterfaceHolder(iface, arr))
        # the interface's typestr cannot name extension dtypes (ml_dtypes' bfloat16 comes back as V2)
        return view if view.dtype == arr.dtype else view.view(arr.dtype)
    return _cuda_strided(arr, tuple(shape), byte_strides, offset)


def cuda_storage_nbytes(arr):
    """The bytes of a CuPy array's storage: its allocation as first made, or None where unknown.

    CuPy's pool rounds an allocation up (512 bytes), so the size is taken from the array that owns
    it (no `.base`, at the allocation's start, contiguous) and kept on the allocation object, before
    `_cuda_strided` or `view(dtype)` make base-less views of it (for as_strided's bounds check)."""
    mem = arr.data.mem
    nbytes = getattr(mem, "ember_nbytes", None)
    if nbytes is None:
        root = arr
        while root.base is not None:
            root = root.base
        if root.data.ptr != mem.ptr or not root.flags.c_contiguous:
            return None
        nbytes = root.nbytes
        try:
            mem.ember_nbytes = nbytes
        except AttributeError:        # memory CuPy does not own (DLPack, a raw pointer): no attributes
            return None
    return nbytes


def _cuda_strided(arr, shape, byte_strides, offset):
    """make_strided of a CuPy array: a view at `offset` elements from the start of its allocation."""
    import cupy
    item = arr.itemsize
    here = arr.data.ptr - arr.data.mem.ptr
    if offset * item == here and arr.flags.c_contiguous and arr.size == prod(shape) and byte_strides == tuple(
            s * item for s in contiguous_strides(shape)):
        return arr.reshape(shape)            # the common view: CuPy's own reshape, a fraction of the cost
    cuda_storage_nbytes(arr)                 # the size, while `arr` still shows it (the view has no base)
    if not arr.data.mem.ptr:   # an empty allocation has no address to offset from
        return cupy.ndarray(shape, arr.dtype, arr.data, byte_strides)
    return cupy.ndarray(shape, arr.dtype, cupy.cuda.MemoryPointer(arr.data.mem, offset * item), byte_strides)


class _InterfaceHolder:
    __slots__ = ("__array_interface__", "owner")

    def __init__(self, iface, owner):
        self.__array_interface__ = iface
        self.owner = owner


class MetaArray:
    """Shape, strides and dtype with no data: the `_data` of a tensor on the meta device.

    It answers the attribute reads a Tensor makes of an ndarray (shape, strides in bytes,
    dtype, ndim, size, itemsize, flags.c_contiguous).
    """

    __slots__ = ("shape", "elem_strides", "dtype", "offset")
    base = None  # as an ndarray owning its memory: meta arrays never alias memory

    def __init__(self, shape, elem_strides=None, dtype=np.dtype(np.float32), offset=0):
        self.shape = tuple(shape)
        self.elem_strides = contiguous_strides(self.shape) if elem_strides is None else tuple(elem_strides)
        self.dtype = dtype
        self.offset = offset

    @property
    def strides(self):
        return tuple(s * self.dtype.itemsize for s in self.elem_strides)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.itemsize

    @property
    def flags(self):
        return _MetaFlags(is_contiguous(self.shape, self.elem_strides))

    def __repr__(self):
        return f"MetaArray(shape={self.shape}, strides={self.elem_strides}, dtype={self.dtype})"


class _MetaFlags:
    __slots__ = ("c_contiguous",)

    def __init__(self, c):
        self.c_contiguous = c


def is_contiguous(shape, strides) -> bool:
    """PyTorch's rule: strides are row-major, ignoring size-1 dims; empty tensors are contiguous."""
    if 0 in shape:
        return True
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1:
            if stride != expected:
                return False
            expected *= size
    return True


def is_non_overlapping_and_dense(shape, strides) -> bool:
    """Every element at its own address and no gaps, in some order of the dims (element strides)."""
    expected = 1
    for i in sorted(range(len(shape)), key=lambda i: (strides[i], shape[i])):
        if shape[i] == 1:
            continue
        if strides[i] != expected:
            return False
        expected *= shape[i]
    return True
