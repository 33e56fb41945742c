"""Legacy constructors: ``ember.Tensor(2, 3)``, ``ember.Tensor(data)``, ``ember.FloatTensor(...)``, ``LongTensor``...

As in PyTorch, ``XTensor(*sizes)`` (or an ``ember.Size``) makes an uninitialised tensor of X's dtype,
``XTensor(sequence or ndarray)`` copies data converted to it, ``XTensor(tensor)`` aliases a tensor
of that dtype, and ``XTensor()`` is empty. The typed names are not classes of their own: every
result is an ``ember.Tensor``, and ``isinstance(t, ember.LongTensor)`` asks whether `t` is an
int64 CPU tensor (``ember.Tensor`` itself uses the default dtype).
"""
from __future__ import annotations

import numbers

import numpy as np

from . import dtype as _dt
from .tensor import Tensor, Size


def _sizes(args):
    for i, a in enumerate(args):
        if isinstance(a, bool) or not isinstance(a, (numbers.Integral, np.integer)):
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got {type(a).__name__}\"")
    for a in args:
        if a < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {a}: {list(args)}")
    return tuple(int(a) for a in args)


def construct(dtype, args, kwargs):
    """A tensor built from a legacy constructor's arguments (`dtype` None: the default dtype)."""
    import ember
    dtype = dtype or _dt.get_default_dtype()
    unknown = set(kwargs) - {"device"}
    if unknown:
        raise TypeError(f"new() received an invalid combination of arguments: unexpected keyword "
                        f"{sorted(unknown)[0]!r} (accepted: *sizes or data, and device)")
    device = kwargs.get("device")
    if device is not None and ember.device(device).type != "cpu":
        raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {ember.device(device).type} "
                           f"was passed")
    if len(args) == 1 and not isinstance(args[0], Size):
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype != dtype:
                raise TypeError(f"expected a tensor of dtype {dtype} (got {data.dtype})")
            return data.detach()
        if isinstance(data, str):
            raise TypeError("new(): invalid data type 'str'")
        if isinstance(data, (list, tuple, np.ndarray)):
            return ember.tensor(data, dtype=dtype)
        if isinstance(data, numbers.Number) and not isinstance(data, (numbers.Integral, np.integer)):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    sizes = _sizes(tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else args)
    return ember.empty(sizes if sizes else (0,), dtype=dtype)


class _LegacyType(type):
    """The metaclass of the typed constructors: ``isinstance`` checks the dtype and the CPU."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.is_cpu

    def __call__(cls, *args, **kwargs):
        return construct(cls.dtype, args, kwargs)

    def __repr__(cls):
        return f"<class 'ember.{cls.__name__}'>"


def _legacy(name, dtype):
    return _LegacyType(name, (), {"dtype": dtype, "__doc__": f"Legacy constructor of {dtype} CPU tensors."})


FloatTensor, DoubleTensor = _legacy("FloatTensor", _dt.float32), _legacy("DoubleTensor", _dt.float64)
HalfTensor, BFloat16Tensor = _legacy("HalfTensor", _dt.float16), _legacy("BFloat16Tensor", _dt.bfloat16)
LongTensor, IntTensor = _legacy("LongTensor", _dt.int64), _legacy("IntTensor", _dt.int32)
ShortTensor, CharTensor = _legacy("ShortTensor", _dt.int16), _legacy("CharTensor", _dt.int8)
ByteTensor, BoolTensor = _legacy("ByteTensor", _dt.uint8), _legacy("BoolTensor", _dt.bool_)
