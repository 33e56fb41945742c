"""What a tensor looked like, in the two forms the compiler stack keeps of it.

- ``meta_like(t)``: a meta tensor with `t`'s shape, strides, dtype and requires_grad. It is the
  one per-node tensor fact of every graph, ``node.meta["val"]`` (make_fx, jit.trace, jit.script's
  profiling runs, dynamo, ShapeProp): it holds no data, and ops run on it compute only shapes.
  Built here from the tensor's slots, with no dispatch: capture makes one per recorded op.
- ``spec_of(t)``: the hashable record ``(class, dispatch keys, NumPy dtype, shape, byte strides)``
  that compiled code compares on every call: dynamo's TENSOR_MATCH guard and the jit graph
  executor's plan key (next, the fuser's kernel cache). It reads four slots (the guard's cost is
  measured by bench/dynamo_overhead.py). Two tensors have equal specs exactly when they have the
  same class, device and requires_grad (both are bits of the key set), dtype (NumPy dtypes map one
  to one onto ember's), shape and strides. Strides are NumPy's byte strides, not element strides:
  NumPy zeroes the strides of new empty arrays, so an empty tensor can have two specs for one
  ``stride()``; a finer key costs at most a recompilation, never a wrong reuse.

    spec_of(ember.ones(2, 3))     # (Tensor, 1, dtype('float32'), (2, 3), (12, 4))
    meta_like(x).stride() == x.stride() and meta_like(x).device.type == "meta"
"""
from __future__ import annotations

from .dispatch import AUTOGRAD_BIT, META_BIT
from .storage import MetaArray
from .tensor import _make


def spec_of(t) -> tuple:
    """``(class, keys, NumPy dtype, shape, byte strides)`` of tensor `t` (see the module docstring)."""
    data = t._data
    return (t.__class__, t._keys, data.dtype, data.shape, data.strides)


def meta_like(t):
    """A meta tensor with `t`'s shape, strides, dtype and requires_grad (`t` may be a meta tensor)."""
    data = t._data
    return _make(MetaArray(data.shape, t.stride(), data.dtype), META_BIT | (t._keys & AUTOGRAD_BIT))


def spec_strides(spec: tuple) -> tuple:
    """The element strides of a spec (as ``Tensor.stride()`` reports them, empty arrays aside)."""
    itemsize = spec[2].itemsize
    return tuple(s // itemsize for s in spec[4])
