"""``Tensor.__getitem__`` / ``__setitem__`` and ``ember.nonzero(as_tuple=)``: Python-level API over
the indexing operators of ember/ops/table/indexing.py.

Subscripts decompose into operators the way PyTorch's ``applySlicing`` does, so tracers and
profilers see them: ints -> ``select.int``, slices -> ``slice.Tensor``, None / bools ->
``unsqueeze``, then any tensor indices -> ``index.Tensor`` (a copy) or ``index_put_``.
Plain CPU tensors (no other dispatch key active) take a fast path straight to NumPy, whose
basic indexing gives exactly PyTorch's views for ints and slices.

``install()`` (called by ``ops.table.register_all``) puts them on Tensor and in ``ember``'s namespace.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np

from .._core import dtype as _dt
from .._core import dispatch as _dispatch
from .._core.dispatch import CPU_BIT
from .._core.tensor import Tensor, wrap, wrap_meta
from .registry import aten, export, METHODS
from .cpu import indexing as cpu
from .meta import indexing as meta

_tls = _dispatch.tls


# ---------------------------------------------------------------------------------------
# subscripts: parsing
# ---------------------------------------------------------------------------------------
_INDEX_ERROR = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices "
                "(got {})")


def _as_items(index) -> tuple:
    """The index as a tuple of items (PyTorch's treatSequenceAsTuple for lists)."""
    if index.__class__ is tuple:
        return index
    if isinstance(index, (list,)) and len(index) < 32 and any(
            isinstance(v, (Tensor, list, tuple, slice, np.ndarray)) or v is None or v is Ellipsis for v in index):
        warnings.warn("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
                      "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted "
                      "as tensor index, x[torch.tensor(seq)], which will result either in an error or a different "
                      "result", UserWarning, stacklevel=3)
        return tuple(index)
    return (index,)


def _to_index_tensor(obj, like: Tensor) -> Tensor:
    """A list / NumPy array index as a tensor on `like`'s device."""
    if isinstance(obj, Tensor):
        t = obj
    else:
        arr = np.asarray(obj)
        if arr.dtype.kind not in "biuf" or arr.dtype not in _dt._FROM_NP:
            raise TypeError(f"can't convert an index of type {type(obj).__name__} to a tensor")
        if arr.dtype.kind != "b" and arr.dtype != np.uint8:  # PyTorch: sequences index as Long (floats truncate)
            arr = arr.astype(np.int64)
        t = wrap(np.ascontiguousarray(arr))
    if t._keys & _dispatch.BACKEND_MASK != like._keys & _dispatch.BACKEND_MASK:
        t = t.to(like.device)
    return t


def _is_mask(t: Tensor) -> bool:
    return t.dtype is _dt.bool_ or t.dtype is _dt.uint8


def _count_specified(items) -> int:
    n = 0
    for it in items:
        if isinstance(it, Tensor):
            n += it.ndim if _is_mask(it) else 1
        elif isinstance(it, (list, range, np.ndarray)):
            a = np.asarray(it)
            n += a.ndim if a.dtype.kind == "b" else 1
        elif not (it is None or it is Ellipsis or it is True or it is False or isinstance(it, np.bool_)):
            n += 1
    return n


def _bool_index(value: bool, like: Tensor) -> Tensor:
    t = wrap(np.zeros(1 if value else 0, dtype=np.int64))
    return t if like._keys & CPU_BIT else t.to(like.device)


def _apply_slicing(self: Tensor, items):
    """(view after the basic items, the tensor indices per dim of that view or None)."""
    ndim = self.ndim
    specified = _count_specified(items)
    if specified > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    result = self
    dim = real_dim = 0
    tensors = {}
    for it in items:
        cls = it.__class__
        if cls is slice:
            if result.ndim == 0:
                raise IndexError("slice() cannot be applied to a 0-dim tensor.")
            start, stop, step = it.start, it.stop, it.step
            step = 1 if step is None else _index_int(step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < 0:
                raise ValueError("step must be greater than zero")
            # omitted bounds as PyTorch's indexing passes them to aten::slice (and its tracer records them)
            start = 0 if start is None else _index_int(start)
            stop = _INT64_MAX if stop is None else _index_int(stop)
            # a full slice is no op -- unless a bound is a traced size, which the trace must keep
            if not (start.__class__ is int and start == 0 and stop.__class__ is int and stop == _INT64_MAX
                    and step.__class__ is int and step == 1):
                result = aten.slice.Tensor(result, dim, start, stop, step)
            dim += 1
            real_dim += 1
        elif it is None:
            result = aten.unsqueeze.default(result, dim)
            dim += 1
        elif it is Ellipsis:
            dim += ndim - specified
            real_dim += ndim - specified
        elif cls is bool or cls is np.bool_:
            result = aten.unsqueeze.default(result, dim)
            tensors[dim] = _bool_index(bool(it), result)
            dim += 1
        elif isinstance(it, Tensor) and it.ndim == 0 and it.dtype.category in (_dt.INT, _dt.BOOL):
            if _is_mask(it):
                result = aten.unsqueeze.default(result, dim)
                tensors[dim] = _bool_index(bool(it.item()), result)
                dim += 1
            else:
                result = _select(result, dim, int(it.item()), real_dim)
                real_dim += 1
        elif isinstance(it, (Tensor, list, range, np.ndarray)) and not (isinstance(it, np.ndarray) and it.ndim == 0):
            t = _to_index_tensor(it, self)
            tensors[dim] = t
            n = t.ndim if _is_mask(t) else 1
            dim += n
            real_dim += n
        elif isinstance(it, (float, complex, np.floating)):
            raise IndexError(_INDEX_ERROR.format(type(it).__name__))
        else:
            try:
                i = _index_int(it)
            except TypeError:
                raise TypeError(_INDEX_ERROR.format(type(it).__name__)) from None
            result = _select(result, dim, i, real_dim)
            real_dim += 1
    if not tensors:
        return result, None
    return result, [tensors.get(d) for d in range(max(tensors) + 1)]


_INT64_MAX = (1 << 63) - 1


def _index_int(value):
    """``operator.index(value)``, except that an int subclass is kept as it is: a traced size
    (ember.jit._sizes.TracedInt) must reach the slice/select op to be recorded, and
    operator.index would turn it into a plain int (comparisons and the kernels treat it as one)."""
    if isinstance(value, int) and value.__class__ is not bool:
        return value
    return operator.index(value)


def _select(t, dim, i, real_dim):
    if t.ndim == 0:
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in "
                         "C++ to convert a 0-dim tensor to a number")
    n = t.shape[dim]
    if i < -n or i >= n:
        raise IndexError(f"index {i} is out of bounds for dimension {real_dim} with size {n}")
    return aten.select.int(t, dim, i)


# ---------------------------------------------------------------------------------------
# __getitem__
# ---------------------------------------------------------------------------------------
def _np_basic(arr, index):
    """NumPy's view for ints / slices / None / one Ellipsis, with PyTorch's geometry (a None
    dim gets the stride unsqueeze gives it, not NumPy's 0), or None when the index needs the
    general path. Raises PyTorch's out-of-bounds IndexError."""
    cls = index.__class__
    if cls is int:
        if not arr.ndim:
            return None
        n = arr.shape[0]
        if index < -n or index >= n:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {n}")
        return arr[index, ...]
    if cls is slice:
        step = index.step
        if not arr.ndim or (step is not None and (step.__class__ is not int or step <= 0)):
            return None
        out = arr[index]
        return out if out.size else None  # NumPy puts empty slices at offset 0; PyTorch clamps start
    if cls is tuple:
        items = index
    elif index is None or index is Ellipsis:
        items = (index,)
    else:
        return None
    specified = 0
    ellipsis = False
    for it in items:
        c = it.__class__
        if c is int or c is slice:
            specified += 1
        elif it is Ellipsis:
            if ellipsis:
                return None
            ellipsis = True
        elif it is not None:
            return None
    ndim = arr.ndim
    if specified > ndim:
        return None
    shape, strides = arr.shape, arr.strides
    k = pos = 0  # next original dim, next output dim
    nones = None
    for it in items:
        c = it.__class__
        if c is int:
            if it < -shape[k] or it >= shape[k]:
                raise IndexError(f"index {it} is out of bounds for dimension {k} with size {shape[k]}")
            k += 1
        elif c is slice:
            if it.step is not None and (it.step.__class__ is not int or it.step <= 0):
                return None
            k += 1
            pos += 1
        elif it is None:
            # unsqueeze's stride: size * stride of the next unconsumed original dim
            (nones := nones or []).append((pos, shape[k] * strides[k] if k < ndim else arr.itemsize))
            pos += 1
        else:
            k += ndim - specified
            pos += ndim - specified
    out = arr[items] if ellipsis else arr[items + (Ellipsis,)]
    if not out.size:
        return None
    if nones:
        if not out.flags.c_contiguous:
            return None
        st = list(out.strides)
        for p, stride in nones:
            st[p] = stride
        out = np.ndarray(out.shape, out.dtype, out, 0, tuple(st))
    return out


def getitem(self, index):
    """``t[index]``: PyTorch's basic (view) and advanced (copy) indexing."""
    if self._keys == CPU_BIT and not _tls.include:
        arr = self._data
        out = _np_basic(arr, index)
        if out is not None:
            t = wrap(out)
            t._version_counter = self._shared_version_counter()
            return t
        if index.__class__ is Tensor and index._keys == CPU_BIT:
            idx = index._data
            kind = idx.dtype.kind
            if kind == "b" and 0 < idx.ndim <= arr.ndim and idx.shape == arr.shape[:idx.ndim]:
                return wrap(arr[idx])
            if kind == "i" and idx.dtype.itemsize >= 4 and idx.ndim and arr.ndim:
                try:
                    return wrap(arr[idx])
                except IndexError:  # NumPy checked the bounds (negative indices wrap, as in PyTorch)
                    cpu._bounds(idx, arr.shape[0], 0, exc=IndexError)
                    raise
    return _getitem_general(self, index)


def _getitem_general(self, index):
    result, tensors = _apply_slicing(self, _as_items(index))
    if tensors is not None:
        return aten.index.Tensor(result, tensors)
    if result is self:
        return aten.alias.default(self)
    return result


# ---------------------------------------------------------------------------------------
# __setitem__
_NUMBERS = (int, float, bool, complex, np.number, np.bool_)


def _value_tensor(self, value):
    """The value of ``t[i] = value`` as a tensor: numbers become 0-d tensors of self's dtype."""
    if isinstance(value, Tensor):
        return value
    if not isinstance(value, _NUMBERS):
        raise TypeError(f"can't assign a {type(value).__name__} to a torch.{self.dtype.c10_name}Tensor")
    if isinstance(value, (np.number, np.bool_)):
        value = value.item()
    v = meta.checked_scalar(value, self.dtype)
    if self._keys & _dispatch.META_BIT:
        t = wrap_meta((), self.dtype)
        t._wrapped_number = True        # a number: a fake `self` takes it as one (no real tensor mixed in)
        t.constant = wrap(cpu._scalar_array(v, self.dtype.np))  # its value: a trace on fakes records this
        return t
    t = wrap(cpu._scalar_array(v, self.dtype.np))
    return t if self._keys & CPU_BIT else t.to(self.device)


def _fast_scalar(value, d, arr):
    v = meta.checked_scalar(value, d)
    if v.__class__ is int and v < 0 and arr.dtype.kind == "u":
        v += 1 << (8 * arr.itemsize)  # c10 lets negative numbers wrap around for unsigned types
    return v


def _strip_leading_ones(value: Tensor) -> Tensor:
    """PyTorch drops a value's leading size-1 dims before copying (``x[0] = ones(1, 4)``)."""
    shape = value.shape
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    if k == 0:
        return value
    for _ in range(k):
        value = aten.select.int(value, 0, 0)
    return value


def setitem(self, index, value):
    """``t[index] = value``: copy into the view (basic) or ``index_put_`` (advanced), in place."""
    if self._keys == CPU_BIT and not _tls.include:
        cls = value.__class__
        if cls is float or cls is int or cls is bool:
            arr = self._data
            target = None
            if index.__class__ is Tensor and index._keys == CPU_BIT:
                idx = index._data
                if idx.dtype.kind == "b" and 0 < idx.ndim <= arr.ndim and idx.shape == arr.shape[:idx.ndim]:
                    arr[idx] = _fast_scalar(value, self.dtype, arr)
                    self._bump_version()
                    return
            else:
                target = _np_basic(arr, index)
            if target is not None:
                target[...] = _fast_scalar(value, self.dtype, arr)
                self._bump_version()
                return
    if index is False:  # PyTorch: assigning through a False index writes nothing
        _value_tensor(self, value)
        return
    v = _value_tensor(self, value)
    result, tensors = _apply_slicing(self, _as_items(index))
    v = _strip_leading_ones(v)
    if tensors is None:
        result.copy_(v)
    else:
        aten.index_put_.default(result, tensors, v, False)


# ---------------------------------------------------------------------------------------
# nonzero(as_tuple=...)
# ---------------------------------------------------------------------------------------
def nonzero(input, *, out=None, as_tuple=False):
    """``ember.nonzero``: an [n, ndim] int64 tensor, or (with as_tuple) one 1-D tensor per dim."""
    if as_tuple:
        return tuple(aten.nonzero_numpy.default(input))
    if out is not None:
        return aten.nonzero.out(input, out=out)
    return aten.nonzero.default(input)


def _nonzero_method(self, *, as_tuple=False):
    return nonzero(self, as_tuple=as_tuple)


def install() -> None:
    export("", "nonzero", nonzero)
    for name, fn in (("__getitem__", getitem), ("__setitem__", setitem), ("nonzero", _nonzero_method)):
        METHODS[name] = fn
        setattr(Tensor, name, fn)
