"""Shape/dtype rules of the indexing family, and its Meta kernels.

The rules here are device-agnostic (they read shapes and dtypes only) and raise PyTorch's
errors; the CPU kernels (`ember/ops/cpu/indexing.py`) call the same functions before touching
any data, so both devices agree on shapes, dtypes and error types. Ops whose result shape
depends on data (boolean masks, nonzero, masked_select) raise NotImplementedError on meta,
as PyTorch does.
"""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import Tensor, wrap_meta
from .. import rules

_INDEX_DTYPES = (_dt.int64, _dt.int32)
_F32_MAX = 3.4028234663852886e38
_MASK_DTYPES = (_dt.bool_, _dt.uint8)


# ---------------------------------------------------------------------------------------
# scalars written into tensors (fill values): c10's checked conversion
# ---------------------------------------------------------------------------------------
def checked_scalar(value, d: _dt.dtype):
    """`value` (a Python number) converted for a `d` tensor, or PyTorch's overflow RuntimeError."""
    cat = d.category
    if cat == _dt.BOOL:
        return bool(value)
    if isinstance(value, bool):
        return int(value) if cat == _dt.INT else float(value) if cat == _dt.FLOAT else value
    if isinstance(value, complex) and cat != _dt.COMPLEX:
        if value.imag != 0:
            raise _overflow(d)
        value = value.real
    if cat == _dt.COMPLEX:  # complex64 checks both parts against float's range
        c = complex(value)
        if d is _dt.complex64 and any(p == p and abs(p) != float("inf") and abs(p) > _F32_MAX for p in (c.real, c.imag)):
            raise _overflow(d)
        return c
    if cat == _dt.INT:
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise _overflow(d)
        info = _dt.iinfo(d)
        if d.is_signed:
            bad = value < info.min or value > info.max
        else:  # c10 lets negative numbers wrap around for unsigned types
            bad = value > info.max or (value < 0 and -value > info.max)
        if bad:
            raise _overflow(d)
        return int(value)
    value = float(value)
    # float16/bfloat16 round out-of-range values to inf; float32 refuses them
    if d is _dt.float32 and value == value and abs(value) != float("inf") and abs(value) > _F32_MAX:
        raise _overflow(d)
    return value


def _overflow(d):
    return RuntimeError(f"value cannot be converted to type {d.c_type} without overflow")


def fill_value(value, self_dtype, op):
    """A Scalar or 0-d tensor fill value (masked_fill, index_fill) as a checked Python number."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.ndim} dimension(s).")
        if value.is_meta:
            return 0
        value = value.item()
    return checked_scalar(value, self_dtype)


# ---------------------------------------------------------------------------------------
# index / index_put
# ---------------------------------------------------------------------------------------
def check_index_tensors(self_shape, indices, op="index"):
    """Validate `indices` (Tensor or None per dim; bool/uint8 masks span several dims) and return
    the number of dims they consume. Raises PyTorch's IndexErrors (bounds are the kernel's job)."""
    if len(indices) == 0:
        raise IndexError("at least one index must be provided")
    consumed = 0
    for t in indices:
        if t is None:
            consumed += 1
            continue
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element of argument 'indices', but got {type(t).__name__}")
        d = t.dtype
        if d in _MASK_DTYPES:
            mask_shape = t.shape
            for j, s in enumerate(mask_shape):
                k = consumed + j
                if k >= len(self_shape) or self_shape[k] != s:
                    raise IndexError(f"The shape of the mask {list(mask_shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(self_shape)} at index {k}")
            consumed += len(mask_shape)
        elif d in _INDEX_DTYPES:
            consumed += 1
        else:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if consumed > len(self_shape):
        raise IndexError(f"too many indices for tensor of dimension {len(self_shape)} (got {consumed})")
    if all(t is None for t in indices):
        raise RuntimeError(f"{op}(): at least one index must be a tensor")
    return consumed


def advanced_shape(self_shape, index_shapes):
    """PyTorch's (and NumPy's) result shape of advanced indexing: `index_shapes` has one entry per
    leading dim (a shape, or None for a full slice). The broadcast index shape replaces the
    indexed dims where they are adjacent, else it goes first."""
    shapes = [s for s in index_shapes if s is not None]
    try:
        bshape = rules.broadcast_shapes(*shapes)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                         + ", ".join(str(list(s)) for s in shapes)) from None
    positions = [i for i, s in enumerate(index_shapes) if s is not None]
    adjacent = positions[-1] - positions[0] + 1 == len(positions)
    rest = list(self_shape)
    before = rest[:positions[0]]
    between = [rest[i] for i in range(positions[0], len(index_shapes)) if index_shapes[i] is None]
    after = rest[len(index_shapes):]
    if adjacent:
        return tuple(before + list(bshape) + between + after)
    return tuple(list(bshape) + before + between + after)


def _index_shapes_meta(self, indices, op):
    check_index_tensors(self.shape, indices, op)
    if any(t is not None and t.dtype in _MASK_DTYPES for t in indices):
        raise NotImplementedError(f"{op}: boolean mask indices on meta tensors (the result shape depends on data)")
    return advanced_shape(self.shape, [None if t is None else t.shape for t in indices])


def index(self, indices):
    return wrap_meta(_index_shapes_meta(self, indices, "index"), self.dtype)


def check_index_put_values(self, values, result_shape):
    if values.dtype is not self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {self.dtype.c10_name} for "
                           f"the destination and {values.dtype.c10_name} for the source.")
    try:
        b = rules.broadcast_shapes(values.shape, result_shape)
    except RuntimeError:
        b = None
    if b != tuple(result_shape):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast to "
                           f"indexing result of shape {list(result_shape)}")


def index_put_(self, indices, values, accumulate=False):
    if any(t is not None and t.dtype in _MASK_DTYPES for t in indices):
        # how many elements a mask selects depends on the data: PyTorch's meta kernel checks only the
        # masks and the dtype, and so does this one (the result keeps self's shape either way)
        check_index_tensors(self.shape, indices, "index_put_")
        if values.dtype is not self.dtype:
            check_index_put_values(self, values, ())      # raises PyTorch's dtype error
        return self
    check_index_put_values(self, values, _index_shapes_meta(self, indices, "index_put_"))
    return self


def index_put(self, indices, values, accumulate=False):
    index_put_(self, indices, values, accumulate)
    return wrap_meta(self.shape, self.dtype)


# ---------------------------------------------------------------------------------------
# dim-wise ops: index_select, gather, scatter, index_add/copy/fill
# ---------------------------------------------------------------------------------------
def index_select_shape(self, dim, index):
    dim = rules.wrap_dim(dim, self.ndim, "index_select")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if self.ndim == 0:
        if index.numel() != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {index.numel()} value(s)")
        return ()
    shape = list(self.shape)
    shape[dim] = index.numel()
    return tuple(shape)


def index_select(self, dim, index):
    return wrap_meta(index_select_shape(self, dim, index), self.dtype)


def gather_check(self, dim, index):
    dim = rules.wrap_dim(dim, self.ndim, "gather")
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    if max(index.ndim, 1) != max(self.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d in range(index.ndim):
        if d != dim and index.shape[d] > (self.shape[d] if self.ndim else 1):
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be no "
                               f"larger than self {list(self.shape)} apart from dimension {dim}")
    return dim


def gather(self, dim, index, sparse_grad=False):
    gather_check(self, dim, index)
    return wrap_meta(index.shape, self.dtype)


def scatter_check(self, dim, index, src, op="scatter"):
    """Shared by scatter, scatter_add, scatter_reduce: PyTorch's checks, in its order."""
    dim = rules.wrap_dim(dim, self.ndim, op)
    if index.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    if isinstance(src, Tensor) and src.dtype is not self.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    if index.numel() == 0:
        return dim
    if max(index.ndim, 1) != max(self.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and 0 < src.ndim < index.ndim:  # PyTorch reads src.size(d) first
        raise IndexError(f"Dimension out of range (expected to be in range of [{-src.ndim}, {src.ndim - 1}], but "
                         f"got {src.ndim})")
    if isinstance(src, Tensor) and max(index.ndim, 1) != max(src.ndim, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    ishape = index.shape if index.ndim else (1,)
    sshape = self.shape if self.ndim else (1,)
    bad = any(d != dim and ishape[d] > sshape[d] for d in range(len(ishape)))
    if isinstance(src, Tensor):
        srcshape = src.shape if src.ndim else (1,)
        bad = bad or any(ishape[d] > srcshape[d] for d in range(len(ishape)))
        if bad:
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(self.shape)} "
                               f"apart from dimension {dim} and to be no larger size than src {list(src.shape)}")
    elif bad:
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self {list(self.shape)} "
                           f"apart from dimension {dim}")
    return dim


SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce_name(reduce, two=False):
    if two:
        if reduce not in SCATTER_REDUCES:
            raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
        return reduce
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    return {"add": "sum", "multiply": "prod"}[reduce]


def scatter(self, dim, index, src, reduce=None):
    if reduce is not None:
        scatter_reduce_name(reduce)
    scatter_check(self, dim, index, src)
    if not isinstance(src, Tensor):
        checked_scalar(src, self.dtype)
    return wrap_meta(self.shape, self.dtype)


def scatter_add(self, dim, index, src):
    scatter_check(self, dim, index, src, "scatter_add")
    return wrap_meta(self.shape, self.dtype)


def scatter_reduce_dtype_check(self, reduce):
    if (reduce in ("amax", "amin") and self.dtype.category == _dt.COMPLEX) or (
            reduce == "mean" and self.dtype is _dt.bool_):
        raise NotImplementedError(f'"scatter_gather_tensor_cpu_reduce_{reduce}" not implemented for '
                                  f"'{self.dtype.c10_name}'")


def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    scatter_reduce_name(reduce, two=True)
    scatter_reduce_dtype_check(self, reduce)
    scatter_check(self, dim, index, src, "scatter_reduce")
    return wrap_meta(self.shape, self.dtype)


def index_op_check(op, self, dim, index, source=None, *, index_dtypes=_INDEX_DTYPES):
    """Checks shared by index_add / index_copy / index_fill (PyTorch's order and messages)."""
    dim = rules.wrap_dim(dim, self.ndim, op)
    if op == "index_fill_":
        if index.dtype is not _dt.int64:
            raise IndexError("index_fill_(): Expected dtype int64 for index.")
        if index.ndim > 1:
            raise RuntimeError("Index has to be a vector/scalar")
        return dim
    if op == "index_copy_":
        if index.ndim > 1:
            raise IndexError("index_copy_(): Index should have dimension 1 or 0 (got 2)")
        if index.dtype is not _dt.int64:
            raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got {index.dtype.c10_name}")
        if source.dtype is not self.dtype:
            raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                               f"{self.dtype.c10_name} and (source) {source.dtype.c10_name}")
        n = source.shape[dim] if source.ndim else 1
        if index.numel() != n:
            raise IndexError(f"index_copy_(): Number of indices ({index.numel()}) should be equal to "
                             f"source.size(dim) ({n})")
        _same_but_dim(self, source, dim)
        return dim
    # index_add_
    if index.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: {index.ndim} with type: "
                         f"{index.dtype.c10_name} and size: {list(index.shape)}")
    if index.dtype not in index_dtypes:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: {index.dtype.c10_name}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"index_add_(): self ({self.dtype.c10_name}) and source ({source.dtype.c10_name}) must have the "
                           f"same scalar type")
    n = source.shape[dim] if source.ndim else 1
    if self.ndim > 0 and index.numel() != n:
        raise RuntimeError(f"index_add_(): Number of indices ({index.numel()}) should be equal to source.size(dim): "
                           f"({n}), for dim: {dim}")
    _same_but_dim(self, source, dim)
    return dim


def _same_but_dim(self, source, dim):
    if self.ndim == 0 or source.ndim == 0:
        if self.numel() == 1 and source.numel() == 1:
            return
    if source.ndim != self.ndim or any(a != b for i, (a, b) in enumerate(zip(self.shape, source.shape)) if i != dim):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")


def index_add(self, dim, index, source, alpha=1):
    index_op_check("index_add_", self, dim, index, source)
    return wrap_meta(self.shape, self.dtype)


def index_copy(self, dim, index, source):
    index_op_check("index_copy_", self, dim, index, source)
    return wrap_meta(self.shape, self.dtype)


def index_fill(self, dim, index, value):
    index_op_check("index_fill_", self, dim, index)
    fill_value(value, self.dtype, "index_fill_")
    return wrap_meta(self.shape, self.dtype)


# ---------------------------------------------------------------------------------------
# masks, take, put, nonzero
# ---------------------------------------------------------------------------------------
def masked_fill_shape(self, mask, value):
    if mask.dtype is not _dt.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype.name}")
    fill_value(value, self.dtype, "masked_fill_")
    return rules.broadcast_shapes(self.shape, mask.shape, op="masked_fill")


def masked_fill(self, mask, value):
    return wrap_meta(masked_fill_shape(self, mask, value), self.dtype)


def masked_fill_(self, mask, value):
    shape = masked_fill_shape(self, mask, value)
    if shape != tuple(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape {list(shape)}")
    return self


def masked_select_check(self, mask):
    if mask.dtype is not _dt.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return rules.broadcast_shapes(self.shape, mask.shape, op="masked_select")


def masked_select(self, mask):
    masked_select_check(self, mask)
    raise NotImplementedError("masked_select: meta tensors (the result shape depends on data)")


def masked_scatter_check(self, mask, source, inplace=False):
    op = "masked_scatter_" if inplace else "masked_scatter"
    if mask.dtype is not _dt.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {mask.dtype.c10_name}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"{op}: expected self and source to have same dtypes but got{self.dtype.c10_name} and "
                           f"{source.dtype.c10_name}")
    shape = rules.broadcast_shapes(self.shape, mask.shape, op=op)
    if inplace and shape != tuple(self.shape):
        raise RuntimeError(f"expand(CPUBoolType{{{list(mask.shape)}}}, size={list(self.shape)}): the number of sizes "
                           f"provided ({self.ndim}) must be greater or equal to the number of dimensions in the "
                           f"tensor ({mask.ndim})")
    return shape


def masked_scatter(self, mask, source):
    return wrap_meta(masked_scatter_check(self, mask, source), self.dtype)


def masked_scatter_(self, mask, source):
    masked_scatter_check(self, mask, source, inplace=True)
    return self


def take_check(self, index):
    if index.dtype is not _dt.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.c10_name}")
    if self.numel() == 0 and index.numel():
        raise IndexError("take(): tried to take from an empty tensor")


def take(self, index):
    take_check(self, index)
    return wrap_meta(index.shape, self.dtype)


def take_along_dim_shapes(self, indices, dim):
    """(dim or None, self shape, indices shape) after PyTorch's broadcasting of the non-`dim` dims."""
    if dim is None:  # PyTorch: self.view(-1).gather(0, indices.view(-1))
        if indices.dtype not in _INDEX_DTYPES:
            raise RuntimeError("gather(): Expected dtype int32/int64 for index")
        return None, (self.numel(),), (indices.numel(),)
    if indices.dtype is not _dt.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {indices.dtype.c10_name}")
    dim = rules.wrap_dim(dim, self.ndim, "take_along_dim")
    if self.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {self.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    s, i = list(self.shape), list(indices.shape)
    s[dim] = i[dim] = 1
    b = list(rules.broadcast_shapes(tuple(s), tuple(i)))
    bs, bi = list(b), list(b)
    if self.ndim:
        bs[dim], bi[dim] = self.shape[dim], indices.shape[dim]
    return dim, tuple(bs), tuple(bi)


def take_along_dim(self, indices, dim=None):
    _, _, ishape = take_along_dim_shapes(self, indices, dim)
    return wrap_meta(ishape, self.dtype)


def put_check(self, index, source):
    if index.dtype is not _dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {index.dtype.c10_name}")
    if source.dtype is not self.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{self.dtype.c10_name} and source.dtype = {source.dtype.c10_name}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")


def put_(self, index, source, accumulate=False):
    put_check(self, index, source)
    return self


def put(self, index, source, accumulate=False):
    put_check(self, index, source)
    return wrap_meta(self.shape, self.dtype)


def nonzero(self):
    raise NotImplementedError("nonzero: meta tensors (the result shape depends on data)")


argwhere = nonzero
