"""Fake tensors: shape, dtype, strides, device and requires_grad, no data (PyTorch's torch._subclasses.fake_tensor).

    mode = FakeTensorMode()
    x = mode.from_tensor(ember.randn(1000, 1000))        # FakeTensor(..., size=(1000, 1000))
    with mode:
        w = ember.empty(1000, 10, device="cuda")         # a fake cuda tensor: no GPU needed
        y = (x.to("cuda") @ w).relu()                    # FakeTensor(..., device='cuda:0', size=(1000, 10))
        y.sum().backward()                               # fake gradients of the right shapes
        ember.nonzero(y)                                 # DynamicOutputShapeException: aten::nonzero

Tensors made inside the mode without dispatch keep their real value as ``constant`` (see
`_fake_created`); ops do not propagate constants (PyTorch computes on small constants).

How: a fake tensor is a `FakeTensor` whose ``_data`` is a `FakeArray` — a `MetaArray` that also
holds the fake device and the `FakeStorage` it is a view of — and whose key set is {Fake, Meta}.
The Fake dispatch key (ember/_core/dispatch.py) sits below autograd, as the Python key of
PyTorch's FakeTensor does, so autograd records fake ops as it records real ones. Its kernel,
`fake_kernel` in _fake_dispatch.py (the key's boxed fallback, for every op of the table):

1. checks the arguments: a real tensor next to a fake one is PyTorch's AssertionError (unless the
   mode allows non-fake inputs: then it is converted); ops the op-properties table marks
   data-dependent raise `DataDependentOutputException` / `DynamicOutputShapeException`;
2. computes the output device by PyTorch's rules (a ``device`` argument; else the inputs' common
   device, where a 0-d cpu tensor gives way; copy-like ops keep their first argument's);
3. runs the op's Meta kernel ("kernel invocation": fakes report device meta meanwhile, so the
   kernel sees what it sees for meta tensors) — or, for a composite op, its parts, each through
   this kernel — and wraps each result as a FakeTensor on that device. A view's result shares its
   input's FakeStorage (from the schema's alias annotation), like PyTorch's views share storage;
4. caches the result's metadata by (op, the arguments' metadata and values, default dtype):
   `FakeTensorMode.cache_info()`. Random, composite and metadata-mutating calls bypass it.

Inside ``with FakeTensorMode():`` the Fake key is in the thread's include set, so factory functions
(``ember.empty``, ``randn`` ...) and tensors made without dispatch (``ember.tensor``, ``from_numpy``)
come out fake, and an op on a real tensor raises. Fake tensors keep working outside the mode.
"""
from __future__ import annotations

import collections
import threading
import weakref

from .._core import tensor as _tensor_mod
from .._core.device import device as _device, META
from .._core.dispatch import (DispatchKey, FAKE_BIT, META_BIT, BACKEND_MASK, AUTOGRAD_BIT, register_fallback, tls)
from .._core.storage import MetaArray, root_array
from .._core.tensor import Tensor

_FAKE_KEYS = FAKE_BIT | META_BIT
_CUDA0 = _device("cuda", 0)


# ---------------------------------------------------------------------------------------
# errors (PyTorch's names; every one is a RuntimeError naming the op)
# ---------------------------------------------------------------------------------------
class DataDependentOutputException(RuntimeError):
    """The op's result depends on the tensors' values, which fake tensors do not have."""

    def __init__(self, func, what="its result depends on the data"):
        self.func = func
        name = getattr(func, "name", func)
        super().__init__(f"{name}: {what}, and fake tensors have no data ({type(self).__name__})")


class DynamicOutputShapeException(DataDependentOutputException):
    """The op's result *shape* depends on the data (nonzero, boolean-mask indexing, unique ...)."""

    def __init__(self, func):
        super().__init__(func, "the shape of its result depends on the data")


class FakeTensorDeviceMismatchError(RuntimeError):
    def __init__(self, func, common_device, device):
        self.func, self.common_device, self.device = func, common_device, device
        super().__init__(f"{func.name}: Expected all tensors to be on the same device, but found at least two "
                         f"devices, {common_device} and {device}!")


# ---------------------------------------------------------------------------------------
# the tensor
# ---------------------------------------------------------------------------------------
class FakeStorage:
    """The identity of a fake tensor's memory: views of one tensor share it. It has no bytes."""

    __slots__ = ("mode", "__weakref__")

    def __init__(self, mode):
        self.mode = mode


class FakeArray(MetaArray):
    """A fake tensor's ``_data``: a MetaArray with the fake device and the FakeStorage it views.
    Everything that shares ``_data`` (``detach``, ``.data``, autograd's saved outputs) shares both."""

    __slots__ = ("device", "storage")

    def __init__(self, meta: MetaArray, device, storage: FakeStorage):
        MetaArray.__init__(self, meta.shape, meta.elem_strides, meta.dtype, meta.offset)
        self.device = device
        self.storage = storage


class _ThreadState(threading.local):
    def __init__(self):
        self.modes = []         # entered FakeTensorModes, innermost last
        self.in_kernel = 0      # > 0 while a Meta kernel runs on fake tensors


_state = _ThreadState()


class FakeTensor(Tensor):
    """A tensor with metadata and no data. ``device`` is its fake device (meta while a Meta kernel
    runs on it, as in PyTorch); reading values raises `DataDependentOutputException`."""

    __slots__ = ()

    @property
    def fake_device(self):
        return self._data.device

    @property
    def fake_mode(self):
        return self._data.storage.mode

    @property
    def device(self):
        return META if _state.in_kernel else self._data.device

    @property
    def is_meta(self):
        return self.device.type == "meta"

    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def get_device(self):
        d = self.device
        return d.index if d.type == "cuda" else -1

    def untyped_storage(self):
        """The FakeStorage: ``a.untyped_storage() is b.untyped_storage()`` when a and b alias."""
        return self._data.storage

    def item(self):
        constant = self.__dict__.get("constant")
        if constant is not None and constant.numel() == 1:     # ember.tensor(3.0) made in the mode
            return constant.item()
        raise DataDependentOutputException("aten::_local_scalar_dense")

    def tolist(self):
        raise DataDependentOutputException("aten::_local_scalar_dense")

    def numpy(self, *, force=False):
        raise RuntimeError(".numpy() is not supported for tensor subclasses.")

    def __format__(self, spec):
        return self.item().__format__(spec) if spec else repr(self)


def is_fake(t) -> bool:
    """Whether `t` is a fake tensor."""
    return isinstance(t, FakeTensor)


def _normalize_device(d):
    """PyTorch's fake devices: a cuda device without an index is cuda:0."""
    return _CUDA0 if d.type == "cuda" and d.index is None else d


def _make_fake(meta: MetaArray, keys: int, device, storage) -> FakeTensor:
    t = object.__new__(FakeTensor)
    t._data = FakeArray(meta, device, storage)
    t._keys = (keys & ~BACKEND_MASK) | _FAKE_KEYS
    return t


# ---------------------------------------------------------------------------------------
# the mode
# ---------------------------------------------------------------------------------------
CacheInfo = collections.namedtuple("CacheInfo", "hits misses bypasses size")


class FakeTensorMode:
    """Context manager: inside, factory functions give fake tensors and ops refuse real ones.
    ``from_tensor(t)`` makes the fake of a real tensor (the same fake for the same tensor)."""

    def __init__(self, *, allow_non_fake_inputs: bool = False, cache: bool = True):
        self.allow_non_fake_inputs = allow_non_fake_inputs
        self.cache_enabled = cache
        self._cache: dict = {}
        self._hits = self._misses = 0
        self._bypasses = collections.Counter()
        self._fakes: dict = {}       # id(real tensor) -> (weakref to it, its fake)
        self._storages: dict = {}    # id(real storage) -> (weakref to it, FakeStorage)

    def __enter__(self):
        _state.modes.append(self)
        tls.include |= FAKE_BIT
        return self

    def __exit__(self, *exc):
        _state.modes.remove(self)
        if not _state.modes:
            tls.include &= ~FAKE_BIT
        return False

    # -- conversion -------------------------------------------------------------------------
    def from_tensor(self, t: Tensor, *, static_shapes=None) -> FakeTensor:
        """The fake of `t`: same shape, strides, storage offset, dtype, device and requires_grad;
        views of one real storage become views of one FakeStorage. Shapes are static (ember has
        no symbolic shapes; PyTorch's mode without a ShapeEnv is the same)."""
        if isinstance(t, FakeTensor):
            if t.fake_mode is not self:
                raise AssertionError(f"Mixing fake modes NYI: {t.fake_mode} vs {self}")
            return t
        if not isinstance(t, Tensor):
            raise TypeError(f"from_tensor(): expected a Tensor, got {type(t).__name__}")
        entry = self._fakes.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry[1]
        data = t._data
        meta = MetaArray(data.shape, t.stride(), data.dtype, t.storage_offset())
        fake = _make_fake(meta, t._keys & AUTOGRAD_BIT, _normalize_device(t.device), self._storage_of(data))
        self._fakes[id(t)] = (weakref.ref(t, self._forget(self._fakes, id(t))), fake)
        return fake

    def _storage_of(self, data) -> FakeStorage:
        if isinstance(data, MetaArray):         # meta tensors share no memory
            return FakeStorage(self)
        root = root_array(data) if hasattr(data, "base") else data
        entry = self._storages.get(id(root))
        if entry is not None and entry[0]() is root:
            return entry[1]
        storage = FakeStorage(self)
        try:
            self._storages[id(root)] = (weakref.ref(root, self._forget(self._storages, id(root))), storage)
        except TypeError:                       # a buffer that takes no weak references: not memoised
            pass
        return storage

    @staticmethod
    def _forget(table, key):
        return lambda ref: table.pop(key, None) if table.get(key, (None,))[0] is ref else None

    # -- the cache ----------------------------------------------------------------------------
    def cache_info(self) -> CacheInfo:
        """(hits, misses, bypasses {reason: count}, size) of this mode's cache of op results."""
        return CacheInfo(self._hits, self._misses, dict(self._bypasses), len(self._cache))

    def cache_clear(self) -> None:
        self._cache.clear()
        self._hits = self._misses = 0
        self._bypasses.clear()

    def __repr__(self):
        return f"<FakeTensorMode at {id(self):#x}>"


def _current_mode():
    return _state.modes[-1] if tls.include & FAKE_BIT and _state.modes else None


def _fake_created(t: Tensor) -> Tensor:
    """A tensor made without dispatch (``ember.tensor``, ``from_numpy``) inside a mode: its fake, which
    keeps the real tensor as ``constant`` (PyTorch's constant fakes): make_fx records the real one,
    and ``item()`` of a one-element constant answers until an in-place op writes the fake."""
    mode = _current_mode()
    if mode is None:
        return t
    fake = mode.from_tensor(t)
    fake.constant = t
    return fake


_FAKE_CLASSES: dict = {Tensor: FakeTensor}


def _fake_class(cls):
    """FakeTensor for Tensor; for a subclass (nn.Parameter), a class that is both: isinstance(p, Parameter)
    holds for the fake of a parameter, as in PyTorch."""
    fake = _FAKE_CLASSES.get(cls)
    if fake is None:
        fake = cls if issubclass(cls, FakeTensor) else type(f"Fake{cls.__name__}", (FakeTensor, cls), {"__slots__": ()})
        _FAKE_CLASSES[cls] = fake
    return fake


_tensor_mod.fake_created[0] = _fake_created
_tensor_mod.fake_class[0] = _fake_class


from . import _fake_dispatch  # noqa: E402  (the Fake key's kernel: needs the classes above)

register_fallback(DispatchKey.Fake, _fake_dispatch.fake_kernel)
