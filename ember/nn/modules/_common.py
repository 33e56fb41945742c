"""Helpers shared by the nn files: tuple expansion (``_pair``), factory kwargs, hook handles,
``_IncompatibleKeys``, ``Module.to``'s argument parsing and ``typename``."""
from __future__ import annotations

import collections.abc
from collections import OrderedDict, namedtuple
from itertools import repeat

from ..._core.tensor import Tensor
from ..._core import dtype as _dt
from ..._core.device import device as _device


def _ntuple(n, name):
    def parse(x):
        if isinstance(x, collections.abc.Iterable) and not isinstance(x, str):
            return tuple(x)
        return tuple(repeat(x, n))
    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")


def _reverse_repeat_tuple(t, n):
    """(a, b) -> (b, b, a, a) for n=2: F.pad's order for per-dimension padding."""
    return tuple(x for x in reversed(t) for _ in range(n))


def empty(*shape, device=None, dtype=None):
    """``ember.empty`` honouring optional factory kwargs."""
    from ... import empty as _empty
    kw = {}
    if device is not None:
        kw["device"] = device
    if dtype is not None:
        kw["dtype"] = dtype
    return _empty(*shape, **kw)


def _typename(obj) -> str:
    """PyTorch's ``torch.typename``: 'ember.FloatTensor' for tensors, the qualified class otherwise."""
    if isinstance(obj, Tensor):
        return f"ember.{_TENSOR_TYPES.get(obj.dtype, 'Tensor')}"
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


_TENSOR_TYPES = {_dt.float32: "FloatTensor", _dt.float64: "DoubleTensor", _dt.float16: "HalfTensor",
                 _dt.bfloat16: "BFloat16Tensor", _dt.int64: "LongTensor", _dt.int32: "IntTensor",
                 _dt.int16: "ShortTensor", _dt.int8: "CharTensor", _dt.uint8: "ByteTensor",
                 _dt.bool_: "BoolTensor"}


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


# ------------------------------------------------------------------------------------------------
# Module state version: one counter for every Module of the process, bumped by each write to a
# module's state (Module.__setattr__/__delattr__, and the dicts below: the instance __dict__,
# _parameters, _buffers, _modules and the forward hook dicts). Compiled-code guards (ember/_dynamo/
# module_guards.py) skip re-reading a module tree while the counter is where their last full check
# left it. Writes that reach a module's dict through C without calling these methods (only
# ``object.__setattr__(module, ...)``) are the one way around it.

STATE_VERSION = [0]


def _tracked(base):
    """A `base` (dict / OrderedDict) subclass whose every mutating method bumps STATE_VERSION first."""
    def bump(name):
        method = getattr(base, name)

        def mutate(self, *args, **kwargs):
            STATE_VERSION[0] += 1
            return method(self, *args, **kwargs)
        mutate.__name__ = name
        return mutate
    names = ["__setitem__", "__delitem__", "__ior__", "pop", "popitem", "clear", "update", "setdefault"]
    if base is OrderedDict:
        names.append("move_to_end")
    namespace = {name: bump(name) for name in names}
    # pickles and copies as the plain base type (Module.__setstate__ tracks again)
    namespace["__reduce__"] = lambda self: (base, (base(self),))
    namespace["__slots__"] = ()
    return type(f"Tracked{base.__name__}", (base,), namespace)


TrackedDict = _tracked(dict)
TrackedOrderedDict = _tracked(OrderedDict)
TRACKED_TYPES = (TrackedDict, TrackedOrderedDict)


def is_tracked(value) -> bool:
    """`value` is one of the tracked dicts (by identity of its type: runs no metaclass __eq__)."""
    cls = type(value)
    return cls is TrackedDict or cls is TrackedOrderedDict


class RemovableHandle:
    """Returned by ``register_*_hook``: ``handle.remove()`` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self._dicts = [hooks_dict] + ([extra_dict] if extra_dict is not None else [])
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        for d in self._dicts:
            if isinstance(d, dict):
                d.pop(self.id, None)
            else:
                d.discard(self.id)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _parse_to(*args, **kwargs):
    """Parse ``Module.to``'s arguments into (device, dtype, non_blocking)."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    if dtype is not None:
        dtype = _dt.dtype_arg(dtype, "to", "dtype", -1)  # float / int ... are float64 / int64
    non_blocking = kwargs.pop("non_blocking", False)
    kwargs.pop("memory_format", None)
    kwargs.pop("copy", None)
    if kwargs:
        raise TypeError(f"to() received an invalid keyword argument '{next(iter(kwargs))}'")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, _dt.dtype):
            dtype = a
        elif isinstance(a, type) and a in _dt.PYTHON_TYPE_DTYPES:
            dtype = _dt.PYTHON_TYPE_DTYPES[a]
        elif isinstance(a, (str, _device, int)) and not isinstance(a, bool):
            device = _device(a) if not isinstance(a, int) else _device("cuda", a)
        elif isinstance(a, bool):
            non_blocking = a
        else:
            raise TypeError(f"to() received an invalid combination of arguments: got {type(a).__name__}")
    if device is not None:
        device = _device(device)
    return device, dtype, non_blocking


def weight_and_bias(module, weight_shape, bias_shape, *, weight: bool = True, bias: bool = True,
                    device=None, dtype=None) -> None:
    """Register ``module.weight`` / ``module.bias`` as uninitialised Parameters of the given
    shapes, or as None (still listed, as PyTorch does) when switched off."""
    from ..parameter import Parameter
    for name, shape, on in (("weight", weight_shape, weight), ("bias", bias_shape, weight and bias)):
        if on:
            setattr(module, name, Parameter(empty(shape, device=device, dtype=dtype)))
        else:
            module.register_parameter(name, None)


def reset_kaiming(weight, bias) -> None:
    """PyTorch's default init of Linear and Conv: kaiming_uniform_(a=sqrt(5)) for the weight,
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias."""
    import math
    from .. import init
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)
