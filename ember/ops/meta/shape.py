"""Shape rules of the copying shape ops (cat, stack, repeat, flip, roll, tril, diag ...) and their
Meta kernels. The CPU kernels (`ember/ops/cpu/shape.py`) call the same rules, so both devices
agree on shapes, dtypes and errors. (View ops need no separate Meta kernel: their geometry code
in `ember/ops/cpu/views.py` works on MetaArrays too.)
"""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import wrap_meta
from .. import rules

_PROMOTE = _dt._PROMOTE


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


# ---------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------
def cat_rule(tensors, dim):
    """(output shape, dtype, wrapped dim, tensors that take part) of cat.

    Legacy behaviour kept from PyTorch: 1-D empty tensors are skipped whatever their shape,
    but still take part in dtype promotion."""
    if not tensors:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    dtype = tensors[0].dtype
    ref = None
    for i, t in enumerate(tensors):
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
        if t.dtype is not dtype:
            dtype = _PROMOTE[dtype, t.dtype]
        if ref is None and not (t.ndim == 1 and t.shape[0] == 0):
            ref = t
    if ref is None:  # every input is a legacy empty tensor (dim is not even checked)
        return (0,), dtype, 0, []
    d = rules.wrap_dim(dim, ref.ndim)
    parts, total = [], 0
    ref_shape = ref.shape
    for i, t in enumerate(tensors):
        shape = t.shape
        if t.ndim == 1 and shape[0] == 0:
            continue
        if len(shape) != len(ref_shape):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(ref_shape)} and {len(shape)}")
        for k, (a, b) in enumerate(zip(ref_shape, shape)):
            if k != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {a} but got "
                                   f"size {b} for tensor number {i} in the list.")
        total += shape[d]
        parts.append(t)
    rules.check_same_device("cat", *tensors)
    out = list(ref_shape)
    out[d] = total
    return tuple(out), dtype, d, parts


def stack_rule(tensors, dim):
    """(output shape, dtype, wrapped dim) of stack."""
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    first = tensors[0].shape
    for i, t in enumerate(tensors[1:], 1):
        if t.shape != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 and "
                               f"{list(t.shape)} at entry {i}")
    d = rules.wrap_dim(dim, len(first) + 1)
    rules.check_same_device("stack", *tensors)
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dtype:
            dtype = _PROMOTE[dtype, t.dtype]
    return tuple(first[:d]) + (len(tensors),) + tuple(first[d:]), dtype, d


def repeat_rule(shape, repeats):
    """Output shape of repeat (and the input shape padded with leading ones)."""
    if len(repeats) < len(shape):
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    out = tuple(p * r for p, r in zip(padded, repeats))
    bad = [s for s in out if s < 0]
    if bad:
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad[0]}: {list(out)}")
    return out, padded


def repeat_interleave_rule(self, repeats, dim, output_size):
    """(output shape, dim or None for flattened, repeats as int or list) of repeat_interleave."""
    if isinstance(repeats, int):
        if repeats < 0:
            raise RuntimeError("Repeats must be non-negative")
        reps = repeats
    else:
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats.dtype not in (_dt.int64, _dt.int32):
            raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{repeats.dtype.c10_name}'")
        reps = None if repeats.is_meta else [int(v) for v in repeats.reshape(-1).tolist()]
    shape = tuple(self.shape)
    if dim is not None and not shape:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    if dim is None:
        shape, d = (_numel(shape),), 0
    else:
        d = rules.wrap_dim(dim, len(shape))
        if not shape:
            shape = (1,)
    size = shape[d] if shape else 1
    if isinstance(reps, list):
        if len(reps) == 1:  # a one-element repeats tensor applies to every element
            reps = reps[0]
        elif len(reps) != size:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{len(reps)} and input.size(0) = {size}")
    if isinstance(reps, list) and any(r < 0 for r in reps) or isinstance(reps, int) and reps < 0:
        raise RuntimeError("repeats can not be negative")
    if reps is None:
        if output_size is None:
            raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
        total = output_size
    else:
        total = reps * size if isinstance(reps, int) else sum(reps)
    if output_size is not None and output_size != total:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {total} but got {output_size}")
    out = list(shape)
    out[d] = total
    return tuple(out), d, reps


def roll_rule(self, shifts, dims, meta=False):
    """Wrapped dims of roll; None: roll the flattened tensor; "empty": nothing to move.
    (PyTorch's CPU kernel returns an empty input's clone before checking dims; its Meta
    kernel checks them.)"""
    if meta:  # PyTorch's reference (meta) roll wraps dims and returns an empty input's clone first
        wrapped = tuple(rules.wrap_dim(d, self.ndim) for d in dims)
        if self.numel() == 0:
            return "empty"
        if self.ndim == 0 and dims:
            _no_dims(dims[0])
    if len(dims) != 1 or len(shifts) != 1:
        if not shifts:
            raise RuntimeError("`shifts` required")
        if not dims and len(shifts) == 1:
            return None
        if len(shifts) != len(dims):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    if not meta and self.numel() == 0:
        return "empty"
    return tuple(rules.wrap_dim(d, self.ndim) if self.ndim else _no_dims(d) for d in dims)


def _no_dims(d):
    raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")


def tri_rule(self, op):
    if self.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")


def diag_rule(self, diagonal):
    """Output shape of diag: 1-D -> square 2-D, 2-D -> its diagonal."""
    if self.ndim == 1:
        n = self.shape[0] + abs(diagonal)
        return (n, n)
    if self.ndim == 2:
        rows, cols = self.shape
        size = min(rows, cols - diagonal) if diagonal >= 0 else min(rows + diagonal, cols)
        return (max(size, 0),)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.ndim}D")


def diag_embed_rule(self, offset, dim1, dim2):
    """(output shape, wrapped dim1, dim2) of diag_embed."""
    n = self.ndim + 1
    d1, d2 = rules.wrap_dim(dim1, n), rules.wrap_dim(dim2, n)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    size = (self.shape[-1] if self.ndim else 1) + abs(offset)
    rest = list(self.shape[:-1])
    out = []
    for i in range(n):
        out.append(size if i in (d1, d2) else rest.pop(0))
    return tuple(out), d1, d2


def elementwise_strides(shape, strides):
    """The strides PyTorch's reference (Meta) kernels give an elementwise result: contiguous
    (None) when the input is, else dense strides in the input's dim order (torch._prims_common's
    compute_elementwise_output_strides, for one input)."""
    from ..._core.storage import is_contiguous
    if len(shape) <= 1 or is_contiguous(shape, strides):
        return None
    return rules.infer_dense_strides(shape, strides)


def dense_strides(shape, strides):
    """The strides `empty_like(preserve_format)` gives: the input's when it is non-overlapping
    and dense, else contiguous ones (None)."""
    n = len(shape)
    if n == 0:
        return None
    perm = sorted(range(n), key=lambda i: (shape[i] < 2, strides[i] if shape[i] >= 2 else 0))
    require = 1
    for i in perm:
        if shape[i] < 2:
            break
        if strides[i] != require:
            return None
        require *= shape[i]
    return tuple(strides)


# ---------------------------------------------------------------------------------------
# Meta kernels
# ---------------------------------------------------------------------------------------
def cat(tensors, dim=0):
    shape, dtype, _, _ = cat_rule(tensors, dim)
    return wrap_meta(shape, dtype)


def stack(tensors, dim=0):
    shape, dtype, _ = stack_rule(tensors, dim)
    return wrap_meta(shape, dtype)


def repeat(self, repeats):
    for i, r in enumerate(repeats):  # only the Meta kernel checks this (CPU allows 0 * -1)
        if r < 0:
            raise RuntimeError(f"Repeats cannot be negative, found {r} at index {i}")
    return wrap_meta(repeat_rule(self.shape, repeats)[0], self.dtype)


def repeat_interleave_int(self, repeats, dim=None, output_size=None):
    return wrap_meta(repeat_interleave_rule(self, repeats, dim, output_size)[0], self.dtype)


def repeat_interleave_tensor(self, repeats, dim=None, output_size=None):
    if repeats.ndim == 0 and not repeats.is_meta:
        repeats = int(repeats.item())
    return repeat_interleave_int(self, repeats, dim, output_size)


def repeat_interleave_indices(repeats, output_size=None):
    if repeats.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if output_size is None:
        raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
    return wrap_meta((output_size,), repeats.dtype)


def flip(self, dims):
    rules.wrap_dims(dims, self.ndim)
    return wrap_meta(self.shape, self.dtype, elementwise_strides(self.shape, self.stride()))


def roll(self, shifts, dims=()):
    empty = roll_rule(self, shifts, dims, meta=True) == "empty"
    strides = dense_strides(self.shape, self.stride()) if empty else None
    return wrap_meta(self.shape, self.dtype, strides)


def tril(self, diagonal=0):
    tri_rule(self, "tril")
    return wrap_meta(self.shape, self.dtype)


def triu(self, diagonal=0):
    tri_rule(self, "triu")
    return wrap_meta(self.shape, self.dtype)


def diag(self, diagonal=0):
    return wrap_meta(diag_rule(self, diagonal), self.dtype)


def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    return wrap_meta(diag_embed_rule(self, offset, dim1, dim2)[0], self.dtype)
