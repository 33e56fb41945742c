"""View operators: results that share storage with their input.

Each op computes its view *geometry* — (shape, element strides, storage offset), exactly
PyTorch's — in a device-agnostic function, and `_view` builds the result with
`make_strided`, which works for NumPy arrays, MetaArrays and CuPy arrays alike. So one kernel
serves the CPU, Meta and CUDA keys, and a view shares its base's version counter.
"""
from __future__ import annotations

import numpy as np

from ..._core import dtype as _dt
from ..._core.storage import (make_strided, storage_offset_elements, MetaArray, root_array, contiguous_strides,
                              cuda_storage_nbytes)
from ..._core.tensor import Tensor, wrap, wrap_like

_ndarray = np.ndarray
from .. import rules


def geometry(self):
    """(shape, element strides, storage offset) of a tensor."""
    arr = self._data
    if arr.__class__ is _ndarray:
        if arr.base is None:  # owns its memory: it is the storage
            offset = 0
        else:
            cached = self.__dict__.get("_geom")  # set by _view: skips two address look-ups
            offset = cached[1] if cached is not None and cached[0] is arr else storage_offset_elements(arr)
        strides = arr.strides
        if arr.size == 0 and not any(strides):  # as Tensor.stride(): NumPy zeroes new empties' strides
            return arr.shape, self.stride(), offset
        item = arr.itemsize
        return arr.shape, tuple([s // item for s in strides]), offset
    if isinstance(arr, MetaArray):
        return arr.shape, arr.elem_strides, arr.offset
    return arr.shape, self.stride(), storage_offset_elements(arr)


def _view(self, shape, strides, offset) -> Tensor:
    """A tensor on self's storage with the given geometry, sharing self's version counter."""
    arr = self._data
    if arr.__class__ is _ndarray:  # fast path: built straight on the storage's buffer
        root = arr
        while root.base.__class__ is _ndarray:
            root = root.base
        if root.flags.c_contiguous:
            item = arr.itemsize
            try:
                data = _ndarray(shape, arr.dtype, buffer=root, offset=offset * item,
                                strides=tuple([st * item for st in strides]))
            except (TypeError, ValueError):
                data = None
            if data is not None:
                out = wrap(data)
                out.__dict__["_geom"] = (data, offset)
                out._version_counter = self._shared_version_counter()
                return out
    out = wrap_like(make_strided(arr, shape, strides, offset), self)
    out._version_counter = self._shared_version_counter()
    return out


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# ---------------------------------------------------------------------------------------
# view / reshape
# ---------------------------------------------------------------------------------------
def infer_size(shape, numel: int) -> tuple:
    """Replace one -1 in `shape` so it holds `numel` elements (ATen's infer_size)."""
    newsize, infer_dim = 1, None
    for i, s in enumerate(shape):
        if s == -1:
            if infer_dim is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer_dim = i
        elif s >= 0:
            newsize *= s
        else:
            raise RuntimeError(f"invalid shape dimension {s}")
    if numel == newsize or (infer_dim is not None and newsize > 0 and numel % newsize == 0):
        if infer_dim is None:
            return tuple(shape)
        if newsize == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                               "unspecified dimension size -1 can be any value and is ambiguous")
        out = list(shape)
        out[infer_dim] = numel // newsize
        return tuple(out)
    raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")


def compute_stride(oldshape, oldstride, newshape):
    """Strides that view (oldshape, oldstride) as newshape, or None (ATen's computeStride)."""
    if not oldshape:
        return (1,) * len(newshape)
    numel = _numel(oldshape)
    if numel == 0 and tuple(oldshape) == tuple(newshape):
        return tuple(oldstride)
    n = len(newshape)
    newstride = [0] * n
    if numel == 0:
        for d in range(n - 1, -1, -1):
            newstride[d] = 1 if d == n - 1 else max(newshape[d + 1], 1) * newstride[d + 1]
        return tuple(newstride)
    view_d = n - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1
                             and oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def view(self, size):
    """aten::view: same storage with a new shape; RuntimeError when the strides forbid it."""
    shape, strides, offset = geometry(self)
    size = infer_size(size, _numel(shape))
    if self._data.flags.c_contiguous and self._data.size:  # any shape views a non-empty contiguous tensor
        new = contiguous_strides(size)
    else:
        new = compute_stride(shape, strides, size)
    if new is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return _view(self, size, new, offset)


def _cuda_view_dtype(self, arr, sizes, strides, offset, dtype):
    import cupy
    new = dtype.itemsize
    cuda_storage_nbytes(arr)           # as_strided's bounds, before the base-less view hides them
    ptr = cupy.cuda.MemoryPointer(arr.data.mem, offset * new)
    out = wrap_like(cupy.ndarray(tuple(sizes), dtype.np, ptr, tuple(s * new for s in strides)), self)
    out._version_counter = self._shared_version_counter()
    return out


def view_dtype(self, dtype):
    """aten::view.dtype: reinterpret the bytes as another dtype (PyTorch's size rules)."""
    shape, strides, offset = geometry(self)
    old, new = self.dtype.itemsize, dtype.itemsize
    if old == new:
        sizes, new_strides, new_offset = shape, strides, offset
    else:
        name = f"{self.dtype.c10_name} to {dtype.c10_name}"
        if not shape:
            raise RuntimeError(f"self.dim() cannot be 0 to view {name} (different element sizes)")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 to view {name} (different element sizes), but "
                               f"got {strides[-1]}")
        if old > new:
            ratio = old // new
            sizes = shape[:-1] + (shape[-1] * ratio,)
            new_strides = tuple(s * ratio for s in strides[:-1]) + (1,)
            new_offset = offset * ratio
        else:
            ratio = new // old
            if shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view {name} (different "
                                   f"element sizes), but got {shape[-1]}")
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} to view {name} "
                                   f"(different element sizes), but got {offset}")
            for s in strides[:-1]:
                if s % ratio:
                    raise RuntimeError(f"self.stride(0) must be divisible by {ratio} to view {name} "
                                       f"(different element sizes), but got {s}")
            sizes = shape[:-1] + (shape[-1] // ratio,)
            new_strides = tuple(s // ratio for s in strides[:-1]) + (1,)
            new_offset = offset // ratio
    arr = self._data
    if isinstance(arr, MetaArray):
        out = wrap_like(MetaArray(sizes, new_strides, dtype.np, new_offset), self)
    else:
        root = root_array(arr)
        if not isinstance(arr, _ndarray):   # CUDA: the same bytes of device memory
            return _cuda_view_dtype(self, arr, sizes, new_strides, new_offset, dtype)
        if not root.flags.c_contiguous:
            raise NotImplementedError("view(dtype): tensor whose storage is not a plain buffer")
        # Built on the storage's bytes, so storage_offset() counts elements of the new dtype.
        out = wrap_like(np.ndarray(tuple(sizes), dtype.np, buffer=root, offset=new_offset * new,
                                   strides=tuple(s * new for s in new_strides)), self)
    out._version_counter = self._shared_version_counter()
    return out


def reshape(self, shape):
    """aten::reshape (composite): a view when the strides allow it, else a contiguous copy."""
    arr = self._data
    if arr.flags.c_contiguous:
        return _call("view", "default", self, shape)
    old, strides, offset = geometry(self)
    size = infer_size(shape, _numel(old))
    if compute_stride(old, strides, size) is not None:
        return _call("view", "default", self, size)
    return _call("view", "default", _call("clone", "default", self, memory_format="contiguous_format"), size)


def view_as(self, other):
    return _call("view", "default", self, other.shape)


def reshape_as(self, other):
    return _call("reshape", "default", self, other.shape)


_HANDLES: dict = {}     # (name, overload) -> the operator handle `_call` calls (looked up once: views are hot)


def _call(name, overload, *args, **kwargs):
    """Call another operator through the dispatcher (composites must, for autograd)."""
    handle = _HANDLES.get((name, overload))
    if handle is None:
        from ..registry import aten
        handle = _HANDLES[(name, overload)] = getattr(getattr(aten, name), overload)
    return handle(*args, **kwargs)


def flatten(self, start_dim=0, end_dim=-1):
    """aten::flatten.using_ints: reshape dims start_dim..end_dim into one."""
    shape = self.shape
    start = rules.wrap_dim(start_dim, len(shape))
    end = rules.wrap_dim(end_dim, len(shape))
    if not shape:
        return _call("reshape", "default", self, (1,))
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return self
    new = tuple(shape[:start]) + (_numel(shape[start:end + 1]),) + tuple(shape[end + 1:])
    return _call("reshape", "default", self, new)


def ravel(self):
    """aten::ravel: ``contiguous().view(-1)`` (a copy when self is not contiguous)."""
    return _call("view", "default", _call("contiguous", "default", self), (-1,))


def unflatten(self, dim, sizes):
    """aten::unflatten.int: split one dim into `sizes` (one may be -1)."""
    shape = self.shape
    d = rules.wrap_dim(dim, len(shape))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        inferred = infer_size(sizes, shape[d] if shape else 1)
    except RuntimeError:
        if sizes.count(-1) > 1:
            raise
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                           f"({shape[d] if shape else 1}) in the input tensor") from None
    new = tuple(shape[:d]) + inferred + tuple(shape[d + 1:])
    return _call("view", "default", self, new)


# ---------------------------------------------------------------------------------------
# dims: squeeze, unsqueeze, transpose, permute, movedim, t, adjoint
# ---------------------------------------------------------------------------------------
def squeeze(self):
    shape, strides, offset = geometry(self)
    keep = [i for i, s in enumerate(shape) if s != 1]
    return _view(self, [shape[i] for i in keep], [strides[i] for i in keep], offset)


def squeeze_dims(self, dim):
    """aten::squeeze.dims (and .dim): drop the listed dims that have size 1."""
    shape, strides, offset = geometry(self)
    if isinstance(dim, int):
        dim = (dim,)
    dims = rules.wrap_dims(dim, len(shape))
    if not shape:
        return _view(self, shape, strides, offset)
    keep = [i for i, s in enumerate(shape) if not (i in dims and s == 1)]
    return _view(self, [shape[i] for i in keep], [strides[i] for i in keep], offset)


def unsqueeze(self, dim):
    shape, strides, offset = geometry(self)
    d = rules.wrap_dim(dim, len(shape) + 1)
    new_stride = 1 if d >= len(shape) else shape[d] * strides[d]
    return _view(self, shape[:d] + (1,) + shape[d:], strides[:d] + (new_stride,) + strides[d:], offset)


def transpose(self, dim0, dim1):
    shape, strides, offset = geometry(self)
    n = len(shape)
    a, b = rules.wrap_dim(dim0, n), rules.wrap_dim(dim1, n)
    if not n or a == b:
        return _view(self, shape, strides, offset)
    shape, strides = list(shape), list(strides)
    shape[a], shape[b] = shape[b], shape[a]
    strides[a], strides[b] = strides[b], strides[a]
    return _view(self, shape, strides, offset)


def transpose_composite(self, dim0, dim1):
    """swapaxes / swapdims: transpose under another name."""
    return _call("transpose", "int", self, dim0, dim1)


def permute(self, dims):
    shape, strides, offset = geometry(self)
    n = len(shape)
    if len(dims) != n:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {n} is not equal to "
                           f"len(dims) = {len(dims)}")
    wrapped = [rules.wrap_dim(d, n) for d in dims]
    if len(set(wrapped)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _view(self, [shape[d] for d in wrapped], [strides[d] for d in wrapped], offset)


def movedim(self, source, destination):
    """aten::movedim.intlist (and .int): move dims to new positions, keeping the others' order."""
    if isinstance(source, int):
        source = (source,)
    if isinstance(destination, int):
        destination = (destination,)
    n = self.ndim
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
                           f"contain the same number of dims as destination ({list(destination)} dims)")
    src = [rules.wrap_dim(d, n) for d in source]
    dst = [rules.wrap_dim(d, n) for d in destination]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    order = [-1] * max(n, 0)
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    order = [o if o != -1 else next(rest) for o in order]
    return _call("permute", "default", self, order) if n else _call("alias", "default", self)


def t(self):
    n = self.ndim
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return transpose(self, 0, 1) if n == 2 else _view(self, *geometry(self))


def adjoint(self):
    """aten::adjoint: transpose of the last two dims; conjugated for complex (a copy here,
    since ember has no lazy-conjugate views; meta tensors have no values to conjugate). A
    composite: it runs for every device, so the conjugation goes through the dispatcher."""
    if self.ndim == 0:  # deprecated in PyTorch, still allowed
        out = _call("alias", "default", self)
    elif self.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    else:
        out = _call("transpose", "int", self, -2, -1)
    if self.is_complex() and not isinstance(out._data, MetaArray):
        return _call("conj_physical", "default", out)
    return out


def alias(self):
    return _view(self, *geometry(self))


# ---------------------------------------------------------------------------------------
# expand / broadcast / as_strided
# ---------------------------------------------------------------------------------------
def expand_geometry(shape, strides, size):
    """(sizes, strides) of expanding (shape, strides) to `size` (ATen's inferExpandGeometry)."""
    ndim, tdim = len(size), len(shape)
    if ndim < tdim:
        raise RuntimeError(f"expand(torch.FloatTensor{{{list(shape)}}}, size={list(size)}): the number of sizes "
                           f"provided ({ndim}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({tdim})")
    if tdim == 0:
        if any(s < 0 for s in size):
            raise RuntimeError(f"expand: invalid size {list(size)} for a 0-dim tensor")
        return tuple(size), (0,) * ndim
    out_sizes, out_strides = [0] * ndim, [0] * ndim
    for i in range(ndim - 1, -1, -1):
        dim = tdim - 1 - (ndim - 1 - i)
        sz = shape[dim] if dim >= 0 else 1
        st = strides[dim] if dim >= 0 else out_sizes[i + 1] * out_strides[i + 1]
        target = size[i]
        if target == -1:
            if dim < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            target = sz
        if sz != target:
            if sz != 1:
                raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing size "
                                   f"({sz}) at non-singleton dimension {i}.  Target sizes: {list(size)}.  "
                                   f"Tensor sizes: {list(shape)}")
            sz, st = target, 0
        out_sizes[i], out_strides[i] = sz, st
    if any(s < 0 for s in out_sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(out_sizes)}: {out_sizes}")
    return tuple(out_sizes), tuple(out_strides)


def expand(self, size, implicit=False):
    shape, strides, offset = geometry(self)
    sizes, new = expand_geometry(shape, strides, size)
    return _view(self, sizes, new, offset)


def expand_as(self, other):
    return _call("expand", "default", self, other.shape)


def broadcast_to(self, size):
    return _call("expand", "default", self, size)


def broadcast_tensors(tensors):
    shape = rules.broadcast_shapes(*[t.shape for t in tensors])
    return tuple(_call("expand", "default", t, shape) for t in tensors)


def _storage_elements(arr) -> int | None:
    if isinstance(arr, MetaArray):
        return None
    if isinstance(arr, np.ndarray):
        return root_array(arr).nbytes // arr.itemsize
    if not hasattr(arr, "__cuda_array_interface__"):
        return None
    nbytes = cuda_storage_nbytes(arr)
    return None if nbytes is None else nbytes // arr.itemsize


def as_strided(self, size, stride, storage_offset=None):
    """aten::as_strided: any geometry on self's storage (bounds checked like setStorage)."""
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape")
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    offset = geometry(self)[2] if storage_offset is None else storage_offset
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    avail = _storage_elements(self._data)
    if avail is not None:
        need = 0 if 0 in size else offset + 1 + sum((s - 1) * st for s, st in zip(size, stride))
        if need > avail:
            item = self._data.itemsize
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
                               f"and itemsize {item} requiring a storage size of {need * item} are out of bounds "
                               f"for storage of size {avail * item}")
    return _view(self, size, stride, offset)


# ---------------------------------------------------------------------------------------
# slice / select / narrow / unbind / diagonal / unfold
# ---------------------------------------------------------------------------------------
def slice_geometry(shape, strides, offset, dim, start, end, step):
    size = shape[dim]
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    length = (end - start + step - 1) // step
    shape, strides = list(shape), list(strides)
    offset += start * strides[dim]
    shape[dim] = length
    strides[dim] *= step
    return shape, strides, offset


def slice(self, dim=0, start=None, end=None, step=1):
    """aten::slice.Tensor: ``t[start:end:step]`` along dim."""
    shape, strides, offset = geometry(self)
    if not shape:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = rules.wrap_dim(dim, len(shape))
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return _view(self, *slice_geometry(shape, strides, offset, d, start, end, step))


def select(self, dim, index):
    """aten::select.int: drop dim, keeping position `index`."""
    shape, strides, offset = geometry(self)
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = rules.wrap_dim(dim, len(shape))
    size = shape[d]
    if index < -size or index >= size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(shape)} at dimension {d}")
    if index < 0:
        index += size
    return _view(self, shape[:d] + shape[d + 1:], strides[:d] + strides[d + 1:], offset + index * strides[d])


def narrow(self, dim, start, length):
    """aten::narrow (composite): `length` elements of dim from `start`, a slice view."""
    shape = self.shape
    if not shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = rules.wrap_dim(dim, len(shape))
    size = shape[d]
    if start < -size or start > size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return _call("slice", "Tensor", self, d, start, start + length, 1)


def narrow_tensor(self, dim, start, length):
    if start.ndim != 0 or start.dtype.category not in (_dt.INT, _dt.BOOL) or start.dtype.category == _dt.BOOL:
        raise RuntimeError("start must be an 0-dim integral Tensor.")
    return narrow(self, dim, int(start.item()), length)


def unbind(self, dim=0):
    shape, strides, offset = geometry(self)
    if not shape:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = rules.wrap_dim(dim, len(shape))
    sh, st = shape[:d] + shape[d + 1:], strides[:d] + strides[d + 1:]
    return tuple(_view(self, sh, st, offset + i * strides[d]) for i in range(shape[d]))


def diagonal_geometry(shape, strides, offset, off, d1, d2):
    if off >= 0:
        size = max(min(shape[d1], shape[d2] - off), 0)
    else:
        size = max(min(shape[d1] + off, shape[d2]), 0)
    if size > 0:
        offset += off * strides[d2] if off >= 0 else -off * strides[d1]
    keep = [i for i in range(len(shape)) if i != d1 and i != d2]
    return ([shape[i] for i in keep] + [size], [strides[i] for i in keep] + [strides[d1] + strides[d2]], offset)


def diagonal(self, offset=0, dim1=0, dim2=1):
    """aten::diagonal: the diagonal of dims (dim1, dim2) as the last dim of a view."""
    shape, strides, off = geometry(self)
    d1, d2 = rules.wrap_dim(dim1, len(shape)), rules.wrap_dim(dim2, len(shape))
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return _view(self, *diagonal_geometry(shape, strides, off, offset, d1, d2))


def unfold(self, dimension, size, step):
    """Tensor.unfold: all windows of `size` along `dimension`, `step` apart, as a new last dim."""
    shape, strides, offset = geometry(self)
    n = len(shape)
    d = rules.wrap_dim(dimension, n)
    dim_size = shape[d] if n else 1
    dim_stride = strides[d] if n else 1
    if size > dim_size:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {dim_size} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if not n:
        return _view(self, (size,), (1,), offset)
    count = (dim_size - size) // step + 1
    return _view(self, shape[:d] + (count,) + shape[d + 1:] + (size,),
                 strides[:d] + (dim_stride * step,) + strides[d + 1:] + (dim_stride,), offset)


# ---------------------------------------------------------------------------------------
# splitting: lists of views
# ---------------------------------------------------------------------------------------
def split(self, split_size, dim=0):
    """aten::split.Tensor: pieces of `split_size` along dim (the last may be smaller)."""
    if not self.ndim:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = rules.wrap_dim(dim, self.ndim)
    size = self.shape[d]
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    if split_size == 0 and size != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
    count = max((size + split_size - 1) // split_size, 1) if split_size else 1
    sizes = [split_size] * (count - 1) + [size - split_size * (count - 1)]
    return _pieces(self, d, sizes)


def _pieces(self, d, sizes):
    shape, strides, offset = geometry(self)
    out, start = [], 0
    for s in sizes:
        out.append(_view(self, *slice_geometry(shape, strides, offset, d, start, start + s, 1)))
        start += s
    return tuple(out)


def split_with_sizes(self, split_sizes, dim=0):
    if not self.ndim:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = rules.wrap_dim(dim, self.ndim)
    size = self.shape[d]
    if any(s < 0 for s in split_sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={list(split_sizes)}")
    if sum(split_sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={list(split_sizes)}")
    return _pieces(self, d, split_sizes)
