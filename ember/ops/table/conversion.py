"""Conversion operators: dtype/device copies, clone, contiguous, copy_, detach; and the Python
``Tensor.to`` / ``.float()`` / ``.cpu()`` family that parses its arguments and calls them."""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.device import device as _device
from ..._core.dispatch import BACKEND_MASK
from ..._core.tensor import Tensor
from ..codegen import _device_bit
from ..registry import Op, aten
from ..argparse import optional_dtype, PYTHON_TYPE_DTYPES
from ..cpu import conversion as cpu

OPS = [
    Op("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
       "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
       cpu=cpu.to_copy, cuda=cpu.to_copy, meta=cpu.to_copy_meta, variants="function"),
    Op("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", cpu=cpu.clone, cuda=cpu.clone,
       meta=cpu.clone_meta),
    Op("contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format) -> Tensor(a)",
       cpu=cpu.contiguous, cuda=cpu.contiguous, meta=cpu.contiguous, variants="method"),
    Op("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
       cpu=cpu.copy_, cuda=cpu.copy_, meta=cpu.copy_, variants="method"),
    # a kernel, not a composite: it makes no dispatcher call, so make_fx records it only as an op
    Op("detach(Tensor(a) self) -> Tensor(a)", cpu=cpu.detach, cuda=cpu.detach, meta=cpu.detach),
]


def _parse_to(args, kwargs):
    dtype = optional_dtype(kwargs.pop("dtype", None), "to")
    device = kwargs.pop("device", None)
    for a in args:
        if isinstance(a, _dt.dtype):
            dtype = a
        elif a in PYTHON_TYPE_DTYPES and isinstance(a, type):  # t.to(float) is float64
            dtype = PYTHON_TYPE_DTYPES[a]
        elif isinstance(a, (str, _device, int)) and not isinstance(a, bool):
            device = _device(a)
        elif isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        else:
            raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
    copy = kwargs.pop("copy", False)
    kwargs.pop("non_blocking", None)
    memory_format = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return (dtype, _device(device) if device is not None else None, copy, memory_format)


def to(self, *args, **kwargs):
    """``t.to(dtype)``, ``t.to(device)``, ``t.to(device, dtype)``, ``t.to(other)``; returns self
    when nothing changes and ``copy=False``."""
    if not kwargs and len(args) == 1 and args[0].__class__ is _dt.dtype:
        # t.to(dtype) -- .float()/.half(), a formula's cast -- needs no parsing
        dtype = args[0]
        if dtype is self.dtype:
            return self
        return aten._to_copy.default(self, dtype=dtype, device=None, memory_format=None)
    if not kwargs and len(args) == 2 and args[0].__class__ is _device and args[1].__class__ is _dt.dtype:
        # t.to(device, dtype) -- the gradient of a cast (ToCopyBackward0: ~120 a GPT-2 step) -- needs none
        # either, nor the binding: the handle is called with the key set the binding would compute
        device, dtype = args
        if device is self.device or device == self.device:
            if dtype is self.dtype:
                return self
        keys = (self._keys & ~BACKEND_MASK) | _device_bit(device)
        return aten._to_copy.default.call(keys, self, dtype, None, device, None, False, None)
    dtype, device, copy, memory_format = _parse_to(args, kwargs)
    same_dtype = dtype is None or dtype is self.dtype
    same_device = device is None or device == self.device
    if same_dtype and same_device and not copy:
        return self
    return aten._to_copy.default(self, dtype=dtype, device=device, memory_format=memory_format)


def pin_memory(self, device=None):
    """A copy in page-locked host memory (CuPy's pinned pool), so that ``.to("cuda",
    non_blocking=True)`` can overlap the copy; needs a GPU, as in PyTorch."""
    from ... import cuda
    if not self.is_cpu:
        raise RuntimeError(f"cannot pin '{self.device.type}' memory: only dense CPU tensors can be pinned")
    if not cuda.is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    import cupyx
    arr = self._data
    pinned = cupyx.empty_pinned(arr.shape, arr.dtype)
    pinned[...] = arr
    from ..._core.tensor import wrap
    return wrap(pinned)


def is_pinned(self, device=None) -> bool:
    """Whether this CPU tensor's memory is page-locked (made by `pin_memory`)."""
    if not self.is_cpu:
        return False
    from ..._core.storage import root_array
    return type(root_array(self._data).base).__name__ == "PinnedMemoryPointer"


def _typed(d):
    def convert(self, memory_format=None):
        return to(self, d)
    convert.__name__ = d.name
    return convert


_BY_TYPE_NAME = {f"{prefix}.{d.c10_name}Tensor": d for d in _dt.ALL_DTYPES for prefix in ("ember", "torch")}


def _type(self, dtype=None, non_blocking=False):
    """``t.type()``: the type name (``ember.FloatTensor``); ``t.type(dtype or name)``: converted."""
    if dtype is None:
        return f"ember.{self.dtype.c10_name}Tensor"
    if isinstance(dtype, str) and dtype in _BY_TYPE_NAME:
        dtype = _BY_TYPE_NAME[dtype]
    if not isinstance(dtype, _dt.dtype):  # PyTorch takes no Python type here (t.type(float) is an error)
        raise ValueError(f"invalid type: '{getattr(dtype, '__name__', dtype)}'")
    return to(self, dtype)


PYTHON_METHODS = {
    "to": to, "type": _type,
    "float": _typed(_dt.float32), "double": _typed(_dt.float64), "half": _typed(_dt.float16),
    "bfloat16": _typed(_dt.bfloat16), "long": _typed(_dt.int64), "int": _typed(_dt.int32),
    "short": _typed(_dt.int16), "char": _typed(_dt.int8), "byte": _typed(_dt.uint8), "bool": _typed(_dt.bool_),
    "cfloat": _typed(_dt.complex64), "cdouble": _typed(_dt.complex128),
    "cpu": lambda self, memory_format=None: to(self, "cpu"),
    "cuda": lambda self, device=None, non_blocking=False, memory_format=None: to(
        self, _device("cuda", device if isinstance(device, int) else None) if not isinstance(device, (str, _device)) else device),
    "type_as": lambda self, other: to(self, other.dtype),
    "pin_memory": pin_memory, "is_pinned": is_pinned,
    "detach_": None,
}
del PYTHON_METHODS["detach_"]
