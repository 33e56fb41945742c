"""Tensor methods that are not operators: Python callables applied element by element (apply_,
map_, map2_), the legacy constructor ``Tensor.new``, layout and memory queries (dim_order,
const_data_ptr, is_shared ...), the conjugate transposes ``H``/``mH``, and the CPU answers to
device and memory requests for hardware ember does not have (pin_memory, xpu, record_stream ...),
raising as a CPU-only build of PyTorch does. Also the methods PyTorch removed but keeps as names
that raise (eig, symeig, lstsq, solve, reinforce), so a program that calls them fails the same way.
Also fill_diagonal_ (views and fill_, as ATen writes it) and the metadata-changing resize_/set_ family.

They are ``TENSOR_ATTRIBUTES``, not ``PYTHON_METHODS``: Python callables, storage rebinding and
metadata mutation have no place in the op language a saved program may call (ember/jit/ir/allowlist.py).
"""
from __future__ import annotations

import warnings

import numpy as np

OPS = []


def _apply_elementwise(self, name, fn, *others):
    if self.requires_grad:
        raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use var.detach().{name}() "
                           f"instead.")
    import ember
    arrays = [ember.broadcast_to(o, self.shape).to(self.dtype).numpy() for o in others]
    values = self.numpy()
    out = np.empty(values.shape, dtype=object)
    for index in np.ndindex(values.shape):
        out[index] = fn(*(a[index].item() for a in (values, *arrays)))
    result = ember.tensor(out.tolist(), dtype=self.dtype) if values.ndim else ember.tensor(out.item(),
                                                                                           dtype=self.dtype)
    with ember.no_grad():
        self.copy_(result)
    return self


def apply_(self, callable):
    """Replaces every element x by callable(x) (CPU tensors only; slow, as PyTorch warns)."""
    return _apply_elementwise(self, "apply_", callable)


def map_(self, tensor, callable):
    return _apply_elementwise(self, "map_", callable, tensor)


def map2_(self, x, y, callable):
    return _apply_elementwise(self, "map2_", callable, x, y)


def new(self, *args, **kwargs):
    """The legacy constructor with self's dtype: sizes, or data (``x.new(2, 3)``, ``x.new([1, 2])``)."""
    from ..._core.legacy import construct
    return construct(self.dtype, args, kwargs)


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory (by decreasing stride; ties keep dim order)."""
    strides = self.stride()
    return tuple(sorted(range(self.dim()), key=lambda d: -strides[d]))


def _conj_transpose(self):
    if self.dim() == 0:
        return self
    if self.dim() != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.")
    return self.adjoint()


def is_set_to(self, tensor):
    """True when both use the same memory with the same geometry."""
    return (self.data_ptr() == tensor.data_ptr() and tuple(self.shape) == tuple(tensor.shape)
            and tuple(self.stride()) == tuple(tensor.stride()) and self.dtype == tensor.dtype)


def _not_compiled(name):
    def method(self, *args, **kwargs):
        raise AssertionError(f"Torch not compiled with {name} enabled")
    method.__name__ = name.lower()
    return method


def _ipu(self, *args, **kwargs):
    raise RuntimeError("PyTorch is not linked with support for ipu devices")


def _record_stream(self, stream):
    raise RuntimeError("record_stream: ember has no streams on CPU tensors")


def _volatile(self):
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def _is_shared(self) -> bool:
    """CUDA memory counts as shared (PyTorch: "always True for CUDA tensors"); CPU memory once marked."""
    return self.device.type == "cuda" or self.__dict__.get("_shared", False)


def share_memory_(self):
    """ember's CPU memory is process memory: the tensor is marked shared, as a no-op move."""
    self.__dict__["_shared"] = True
    return self


def _restride(self, size, source=None, storage_offset=None, stride=None):
    """Make self the tensor of `size` (contiguous unless `stride`) over `source`'s storage (self's by
    default) from `storage_offset`; a storage too small for it is reallocated with the old bytes first."""
    from ..._core.storage import (contiguous_strides, cuda_storage_nbytes, make_strided, root_array,
                                  storage_offset_elements)
    if any(not isinstance(n, int) or n < 0 for n in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(size)}")
    arr = (source if source is not None else self)._data
    offset = storage_offset_elements(arr) if storage_offset is None else storage_offset
    stride = contiguous_strides(size) if stride is None else tuple(stride)
    needed = offset + 1 + sum((n - 1) * st for n, st in zip(size, stride)) if all(size) else offset
    if hasattr(arr, "__cuda_array_interface__"):   # CuPy: the storage is the allocation (views have no base)
        nbytes = cuda_storage_nbytes(arr)
        capacity = offset + arr.size if nbytes is None else nbytes // arr.itemsize
        if needed > capacity:
            import cupy
            grown = cupy.zeros(needed, dtype=arr.dtype)
            grown[:capacity] = make_strided(arr, (capacity,), (1,), 0)
            arr = grown
    elif needed > root_array(arr).size:   # grow: a new buffer holding the old storage (earlier views keep the old)
        root = root_array(arr)
        grown = np.zeros(needed, dtype=arr.dtype)
        grown[:root.size] = root.reshape(-1)
        arr = grown
    self._data = make_strided(arr, tuple(size), stride, offset)
    self._bump_version()
    return self


def resize_(self, *sizes, memory_format=None):
    """Reshape self in place to `sizes` over its own storage (contiguous), growing the storage if needed;
    elements past the old ones are uninitialised (zeros here)."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    size = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else tuple(sizes)
    if size == tuple(self.shape):   # same sizes: nothing changes, strides included
        return self
    return _restride(self, size)


def resize_as_(self, the_template, *, memory_format=None):
    return resize_(self, tuple(the_template.shape))


def _deprecated_resize(name, sizes_of):
    def method(self, *args):
        warnings.warn(f"non-inplace {name} is deprecated", UserWarning, stacklevel=2)
        return self.reshape(sizes_of(self, *args))
    method.__name__ = name
    return method


def set_(self, source=None, storage_offset=None, size=None, stride=None):
    """Make self a tensor over `source`'s memory: its geometry, or `size`/`stride` from `storage_offset`;
    with no source, an empty tensor. (ember has no Storage objects: the source is a tensor.)"""
    from ..._core.tensor import Tensor
    if source is None:
        return _restride(self, (0,), self.new_empty(0), 0)
    if not isinstance(source, Tensor):
        raise TypeError(f"set_(): argument 'source' must be Tensor, not {type(source).__name__}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"Could not set tensor of type {source.dtype.c10_name} to a tensor of type "
                           f"{self.dtype.c10_name}")
    if size is None:
        self._data = source._data
        self._version_counter = source._shared_version_counter()
        return self
    _restride(self, tuple(size), source, storage_offset, stride or None)
    self._version_counter = source._shared_version_counter()
    return self


def as_subclass(self, cls):
    """self's data as an instance of `cls` (a Tensor subclass), sharing memory, without autograd history."""
    from ..._core.tensor import Tensor, alias
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError(f"as_subclass(): argument 'cls' must be a Tensor subclass, not {cls!r}")
    out = alias(self, self._keys, cls)
    out._version_counter = self._shared_version_counter()
    return out


def fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal (all dims equal for more than 2-D); with wrap, a tall matrix's diagonal
    restarts every ncols + 1 rows (NumPy's fill_diagonal positions, which are PyTorch's). Written as
    masked_fill_ on self, so autograd and the compiler see an ordinary in-place op."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    import ember
    mask = np.zeros(tuple(self.shape), dtype=bool)
    np.fill_diagonal(mask, True, wrap=wrap)
    return self.masked_fill_(ember.tensor(mask, device=self.device), fill_value)


def module_load(self, other, assign=False):
    """What ``Module.load_state_dict`` stores for a parameter: `other` itself (its own class decides)."""
    return other


_REMOVED = {
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real "
           "tensors mimicking complex tensors.",
    "symeig": "The default behavior has changed from using the upper triangular portion of the matrix by "
              "default to using the lower triangular portion. Use torch.linalg.eigh.",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.",
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`.",
}


def _removed(name, hint):
    def method(self, *args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. {hint}")
    method.__name__ = name
    return method


def _reinforce(self, reward):
    raise RuntimeError("reinforce() was removed.\nUse torch.distributions instead.")


# set on Tensor but not admitted as methods of saved programs (see table/__init__.py)
TENSOR_ATTRIBUTES = {
    "apply_": apply_, "map_": map_, "map2_": map2_, "new": new, "dim_order": dim_order,
    "const_data_ptr": lambda self: self.data_ptr(),
    "H": property(_conj_transpose), "mH": property(lambda self: self.adjoint()),
    "is_set_to": is_set_to, "is_shared": _is_shared,
    "is_distributed": lambda self: False, "share_memory_": share_memory_,
    "xpu": _not_compiled("XPU"), "mtia": _not_compiled("MTIA"), "ipu": _ipu,
    "record_stream": _record_stream, "volatile": property(_volatile), "name": property(lambda self: None),
    "grad_dtype": property(lambda self: self.dtype), "module_load": module_load,
    "fill_diagonal_": fill_diagonal_, "resize_": resize_, "resize_as_": resize_as_, "set_": set_, "as_subclass": as_subclass,
    "resize": _deprecated_resize("resize", lambda self, *sizes: sizes[0] if len(sizes) == 1 else sizes),
    "resize_as": _deprecated_resize("resize_as", lambda self, other: tuple(other.shape)),
    "reinforce": _reinforce, **{name: _removed(name, hint) for name, hint in _REMOVED.items()},
}
