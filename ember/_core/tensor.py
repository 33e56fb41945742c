"""The Tensor: a strided view over a storage, with dispatch keys and a version counter.

Most methods (``add``, ``sum``, ``view`` ...) are not written here: they are generated from the
operator table (`ember/ops/codegen.py`) and attached to this class at import. What lives here
is what is not an operator: metadata (shape, strides, dtype, device), conversion to Python and
NumPy, the version counter, and the Python protocols.

A tensor's ``_keys`` is its dispatch key set: its backend's bit, plus Autograd when it
requires grad.
"""
from __future__ import annotations

import numpy as np

from . import dtype as _dt
from .device import device as _device, CPU, META
from .dispatch import CPU_BIT, META_BIT, CUDA_BIT, AUTOGRAD_BIT, INFERENCE_BIT, FAKE_BIT, BACKEND_MASK, tls
from .storage import MetaArray, storage_offset_elements, data_address, contiguous_strides, device_to_host, \
    report_device_errors

_FROM_NP = _dt._FROM_NP
_CUDA_DEVICES: dict = {}   # index -> ember.device("cuda", index): devices are immutable, made once each
_ndarray = np.ndarray


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``ember.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self):
        return f"ember.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        r = tuple.__getitem__(self, item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))


class _VersionCounter:
    __slots__ = ("value",)

    def __init__(self):
        self.value = 0


class Tensor:
    """An n-dimensional array on a device, dispatched through ember's dispatcher."""

    __slots__ = ("_data", "_keys", "__dict__", "__weakref__")
    __array_priority__ = 1000  # make NumPy defer to our reflected operators
    # Most tensors never set these: they read as None from the class until a tensor sets its own
    # (in its __dict__), so an op stores nothing for them. Class defaults rather than slots with a
    # __getattr__ fallback: reading an unset slot raises an AttributeError inside CPython before
    # __getattr__ runs (~1.3 us, several times per recorded autograd op).
    _version_counter = None
    _autograd = None
    _wrapped_number = None

    def __new__(cls, *args, **kwargs):
        # ``ember.Tensor(2, 3)`` / ``ember.Tensor(data)``: the legacy constructor. Ops never come here
        # (they build tensors with object.__new__), so this costs the hot path nothing.
        from .legacy import construct
        t = construct(None, args, kwargs)
        if cls is not Tensor:  # a subclass without its own __new__: same storage, its class
            sub = object.__new__(cls)
            sub._data, sub._keys = t._data, t._keys
            t = sub
        return t

    # -- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        """The shape, or the size of one dimension."""
        shape = self._data.shape
        if dim is None:
            return Size(shape)
        return shape[_wrap_dim(dim, len(shape), "size")]

    @property
    def dtype(self) -> _dt.dtype:
        return _FROM_NP[self._data.dtype]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.size * self._data.itemsize

    def stride(self, dim=None):
        """Strides in elements, as PyTorch reports them."""
        arr = self._data
        if isinstance(arr, MetaArray):
            strides = arr.elem_strides
        elif arr.size == 0 and not any(arr.strides):
            # NumPy zeroes the strides of new empty arrays; PyTorch keeps row-major ones. (Views
            # of empty tensors keep the strides their op computed, as in PyTorch.)
            strides = contiguous_strides(arr.shape)
        else:
            item = arr.itemsize
            strides = tuple([s // item for s in arr.strides])   # (a list: no generator to resume per dim)
        if dim is None:
            return strides
        return strides[_wrap_dim(dim, len(strides), "stride")]

    def storage_offset(self) -> int:
        return storage_offset_elements(self._data)

    def data_ptr(self) -> int:
        if self._keys & META_BIT:
            return 0
        return data_address(self._data)

    def is_contiguous(self, memory_format=None) -> bool:
        return bool(self._data.flags.c_contiguous)

    @property
    def device(self) -> _device:
        keys = self._keys
        if keys & CPU_BIT:
            return CPU
        if keys & META_BIT:
            return META
        index = self._data.data.device_id      # (CuPy's ndarray.device makes a Device object a call)
        dev = _CUDA_DEVICES.get(index)
        if dev is None:
            dev = _CUDA_DEVICES[index] = _device("cuda", index)
        return dev

    @property
    def is_cuda(self) -> bool:
        return bool(self._keys & CUDA_BIT)

    @property
    def is_cpu(self) -> bool:
        return bool(self._keys & CPU_BIT)

    @property
    def is_meta(self) -> bool:
        return bool(self._keys & META_BIT)

    # the other backends PyTorch names: an ember tensor is never on them
    is_xpu = is_mps = is_ipu = is_xla = is_mtia = is_maia = is_vulkan = is_mkldnn = property(lambda self: False)
    is_sparse = is_sparse_csr = is_quantized = is_nested = property(lambda self: False)

    def to_sparse(self, sparse_dim=None):
        """A sparse COO copy of the nonzero entries (ember/sparse.py)."""
        from ..sparse import to_sparse
        return to_sparse(self, sparse_dim)

    @property
    def layout(self):
        return "strided"

    def is_floating_point(self) -> bool:
        return self.dtype.category == _dt.FLOAT

    def is_complex(self) -> bool:
        return self.dtype.category == _dt.COMPLEX

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    def get_device(self) -> int:
        return -1 if not self._keys & CUDA_BIT else self._data.data.device_id

    # -- version counter (bumped by every in-place op; shared by views) ----------------------
    @property
    def _version(self) -> int:
        if self._keys & INFERENCE_BIT:
            raise RuntimeError("Inference tensors do not track version counter.")
        vc = self._version_counter
        return 0 if vc is None else vc.value

    def is_inference(self) -> bool:
        """Whether this tensor was made inside ``inference_mode`` (or is a view of one that was)."""
        return bool(self._keys & INFERENCE_BIT)

    def _shared_version_counter(self) -> _VersionCounter:
        vc = self._version_counter
        if vc is None:
            vc = self._version_counter = _VersionCounter()
        return vc

    def _bump_version(self) -> None:
        vc = self._version_counter
        if vc is None:
            vc = self._version_counter = _VersionCounter()
        vc.value += 1

    # -- autograd metadata (the engine lives in ember.autograd) ------------------------------
    @property
    def requires_grad(self) -> bool:
        return bool(self._keys & AUTOGRAD_BIT)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True):
        """Set whether autograd records operations on this tensor (in place)."""
        if requires_grad and self.dtype.category not in (_dt.FLOAT, _dt.COMPLEX):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if requires_grad and self._keys & INFERENCE_BIT and not tls.include & INFERENCE_BIT:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if requires_grad:
            self._keys |= AUTOGRAD_BIT
        else:
            if self.grad_fn is not None:
                raise RuntimeError("you can only change requires_grad flags of leaf variables. If you want to "
                                   "use a computed variable in a subgraph that doesn't require differentiation "
                                   "use var_no_grad = var.detach().")
            self._keys &= ~AUTOGRAD_BIT
        return self

    @property
    def grad_fn(self):
        meta = self._autograd
        return None if meta is None else meta.grad_fn

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    # ``grad`` (with its checking setter), backward and hooks are installed by ember.autograd at its
    # import (autograd/tensor_methods.py): _core never imports autograd.

    @property
    def data(self):
        """The same storage as a tensor that does not require grad."""
        out = alias(self, self._keys & ~AUTOGRAD_BIT)
        out._version_counter = None
        return out

    @data.setter
    def data(self, value):
        self._data = value._data
        self._keys = (self._keys & ~BACKEND_MASK) | (value._keys & BACKEND_MASK)

    # -- conversion to Python / NumPy --------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The NumPy array sharing this tensor's memory (CPU tensors only)."""
        if not self._keys & CPU_BIT:
            if force and self._keys & CUDA_BIT:
                return device_to_host(self._data)
            raise TypeError(f"can't convert {self.device.type} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        if self._keys & AUTOGRAD_BIT and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                               "instead.")
        return self._data

    def item(self):
        """The value of a one-element tensor as a Python number."""
        arr = self._data
        if arr.size != 1:
            raise RuntimeError(f"a Tensor with {arr.size} elements cannot be converted to Scalar")
        if self._keys & META_BIT:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        if not self._keys & CPU_BIT:
            arr = device_to_host(arr)
        return arr.reshape(()).item() if arr.dtype != _BF16 else float(arr.reshape(())).__float__()

    def tolist(self):
        """Nested Python lists of numbers (a number for a 0-d tensor)."""
        if self._keys & META_BIT:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        arr = self._data if self._keys & CPU_BIT else device_to_host(self._data)
        if arr.dtype == _BF16:
            arr = arr.astype(np.float32)
        return arr.tolist()

    def __array__(self, dtype=None, copy=None):
        arr = self.numpy(force=True) if self._keys & CPU_BIT else self.numpy()
        if dtype is not None and dtype != arr.dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __dlpack__(self, stream=None, **kwargs):
        if self._keys & AUTOGRAD_BIT:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        if self._keys & CUDA_BIT:
            report_device_errors()     # another library reads the memory next
        return self._data.__dlpack__(**({} if stream is None else {"stream": stream}), **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __len__(self):
        if not self._data.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __delitem__(self, index):
        raise TypeError("Tensor does not support deleting items")

    def __iter__(self):
        if not self._data.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def _scalar(self, what):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        v = self.item()
        if what != "complex" and isinstance(v, complex):
            if v.imag != 0:  # PyTorch's checked conversion of a complex value to a real type
                raise RuntimeError(f"value cannot be converted to type {'int64_t' if what == 'int' else 'double'} "
                                   "without overflow")
            v = v.real
        return v

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'more than one value' if self._data.size else 'no values'} is ambiguous")
        return bool(self.item())

    def _warn_if_requires_grad(self):
        if self.requires_grad:      # PyTorch 2.13 warns in float() and complex() (not item, int, bool)
            import warnings
            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
                          "behavior.\nConsider using tensor.detach() first.", UserWarning, stacklevel=3)

    def __float__(self):
        self._warn_if_requires_grad()
        return float(self._scalar("float"))

    def __int__(self):
        return int(self._scalar("int"))

    def __complex__(self):
        self._warn_if_requires_grad()
        return complex(self._scalar("complex"))

    def __index__(self):
        if self.dtype.category not in (_dt.INT, _dt.BOOL) or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __hash__(self):
        return id(self)

    def __repr__(self, *, tensor_contents=None):
        from .tensor_str import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec):
        if self._data.ndim == 0 and not self._keys & META_BIT:
            return self.item().__format__(spec)
        return object.__format__(self, spec) if spec else repr(self)

    def __reduce_ex__(self, proto):
        # Pickling (used by deepcopy and multiprocessing): rebuild from a NumPy copy.
        return (_rebuild, (np.array(self.numpy(force=True)), self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        out = self.clone() if not self.requires_grad else self.detach().clone().requires_grad_(True)
        if type(self) is not Tensor:
            out = type(self).__new__(type(self), out) if hasattr(type(self), "_from_tensor") else out
        memo[id(self)] = out
        return out

    @property
    def T(self):
        return self.permute(*range(self._data.ndim - 1, -1, -1))

    @property
    def mT(self):
        if self._data.ndim < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                               f"{self._data.ndim}-D tensor.")
        return self.transpose(-2, -1)


_BF16 = _dt.bfloat16.np


def _rebuild(arr, requires_grad):
    return _make(arr, CPU_BIT | (AUTOGRAD_BIT if requires_grad else 0))


def _make(data, keys: int) -> Tensor:
    t = object.__new__(Tensor)
    t._data = data
    t._keys = keys
    return t


def alias(t: Tensor, keys: int, cls=Tensor) -> Tensor:
    """A new `cls` object over `t`'s storage with dispatch keys `keys` (detach, ``.data``, autograd's
    saved outputs, ``nn.Parameter(t)``). A fake tensor's alias is fake: of the fake class of `cls`,
    with the Fake key (its fake device and storage live in its ``_data``)."""
    fake = t._keys & FAKE_BIT
    out = object.__new__(fake_class[0](cls) if fake else cls)
    out._data = t._data
    out._keys = keys | fake
    return out


def wrap(arr) -> Tensor:
    """A CPU tensor around an ndarray (NumPy scalars become 0-d arrays). The hot path of every
    CPU kernel: two attribute stores."""
    if arr.__class__ is not _ndarray:
        arr = np.asarray(arr)
    t = object.__new__(Tensor)
    t._data = arr
    t._keys = CPU_BIT
    return t


def created(t: Tensor) -> Tensor:
    """`t`, a tensor made without dispatching (``ember.tensor``, ``from_numpy`` ...), marked as
    an inference tensor when made inside ``inference_mode`` (dispatched ops are marked by the
    Inference key's kernel)."""
    include = tls.include
    if include & INFERENCE_BIT:
        t._keys |= INFERENCE_BIT
    if include & FAKE_BIT:      # inside a FakeTensorMode: a fake tensor, as PyTorch's torch.tensor gives
        t = fake_created[0](t)
    return t


# set by ember/_functorch/fake_tensor.py at its import: the fake of a tensor `created` in its mode, and
# the fake class of a Tensor class (FakeTensor for Tensor)
fake_created: list = [None]
fake_class: list = [None]


def wrap_meta(shape, dt: _dt.dtype, strides=None) -> Tensor:
    """A meta tensor with the given shape, ember dtype and (default contiguous) strides."""
    return _make(MetaArray(shape, strides, dt.np), META_BIT)


def wrap_like(arr, like: Tensor) -> Tensor:
    """A tensor on the same backend as `like` around `arr` (an ndarray, CuPy array or MetaArray)."""
    if arr.__class__ is not _ndarray and like._keys & CPU_BIT:
        arr = np.asarray(arr)
    t = object.__new__(Tensor)
    t._data = arr
    t._keys = like._keys & BACKEND_MASK
    return t


def _wrap_dim(dim, ndim, op):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim + n if dim < 0 else dim
