"""Shape and dtype rules shared by the CPU, CUDA and Meta kernels of a family.

Everything here is device-agnostic: it reads ``shape``/``dtype``/``ndim`` of tensors (or takes
Python numbers, which rank as *wrapped numbers* in promotion) and raises PyTorch's errors.
"""
from __future__ import annotations

from .._core import dtype as _dt
from .._core.tensor import Tensor

_PROMOTE = _dt._PROMOTE


def wrap_dim(dim: int, ndim: int, op: str = "") -> int:
    """A dim in [0, ndim); 0-d tensors accept -1 and 0. IndexError like PyTorch's."""
    n = ndim if ndim > 0 else 1
    if dim < -n or dim >= n:
        raise IndexError(f"{op + '(): ' if op else ''}Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def wrap_dims(dims, ndim: int, op: str = "") -> tuple:
    """Several dims, normalised; a repeated dim is a RuntimeError."""
    out = tuple(wrap_dim(d, ndim, op) for d in dims)
    if len(set(out)) != len(out):
        dup = next(d for d in out if out.count(d) > 1)
        raise RuntimeError(f"{op}(): dim {dup} appears multiple times in the list of dims")
    return out


def broadcast_shapes(*shapes, op: str = "") -> tuple:
    """NumPy/PyTorch broadcasting; RuntimeError naming the mismatching sizes."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        offset = ndim - len(s)
        for i, size in enumerate(s):
            j = offset + i
            if out[j] == 1:
                out[j] = size
            elif size != 1 and size != out[j]:
                raise RuntimeError(f"{op + '(): ' if op else ''}The size of tensor a ({out[j]}) must match the "
                                   f"size of tensor b ({size}) at non-singleton dimension {i}")
    return tuple(out)


def dtype_of(x) -> _dt.dtype:
    """The ember dtype of a tensor, or of a Python number as a wrapped number."""
    if isinstance(x, Tensor):
        return x.dtype
    return _dt.scalar_dtype(x)


def common_dtype(*operands) -> _dt.dtype:
    """Result type of several tensors / numbers (fast when all are tensors of one dtype)."""
    first = None
    for x in operands:
        if x.__class__ is not Tensor and not isinstance(x, Tensor):
            return _dt.result_type(*[o for o in operands if o is not None])
        if first is None:
            first = x._data.dtype
        elif x._data.dtype is not first:
            return _dt.result_type(*[o for o in operands if o is not None])
    return _dt._FROM_NP[first]


def float_dtype(d: _dt.dtype) -> _dt.dtype:
    """Integers and bool go to the default float dtype (e.g. sqrt, true division, mean)."""
    return d if d.category >= _dt.FLOAT else _dt.get_default_dtype()


def is_integral(d: _dt.dtype, include_bool: bool = True) -> bool:
    return d.category == _dt.INT or (include_bool and d.category == _dt.BOOL)


def reduced_shape(shape, dims, keepdim: bool) -> tuple:
    """The shape after reducing `dims` (already wrapped)."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def reduction_dims(dim, ndim: int, op: str = "") -> tuple:
    """dim=None or [] means all dims (PyTorch's sum/mean convention)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    return wrap_dims(dim, ndim, op)


def check_same_device(op: str, *tensors) -> None:
    devices = {t.device.type for t in tensors if isinstance(t, Tensor)}
    if len(devices) > 1:
        raise RuntimeError(f"{op}(): Expected all tensors to be on the same device, but found at least two "
                           f"devices, {sorted(devices)[0]} and {sorted(devices)[1]}!")


def infer_dense_strides(shape, strides) -> tuple:
    """Dense strides that keep the order of `strides` (ATen's infer_dense_strides): dims sorted by
    stride with an insertion sort; 0 strides are ambiguous and keep their place."""
    return _dense_in_order(shape, [strides])


def pointwise_strides(shape, operands) -> tuple:
    """The strides of a pointwise op's result of broadcast `shape` (TensorIterator's rule, which the
    CPU kernels follow through NumPy's K order): dims ordered as the tensor operands lay them out,
    the first operand deciding first; a dim an operand broadcasts (stride 0) leaves the decision to
    the next one; contiguous when none decides. Scalars and 0-dim tensors have no say."""
    ndim = len(shape)
    layouts = []
    for op in operands:
        if isinstance(op, Tensor) and op.ndim:
            offset = ndim - op.ndim
            strides = [0] * ndim
            for i, (n, st) in enumerate(zip(op.shape, op.stride())):
                strides[offset + i] = 0 if n == 1 and shape[offset + i] != 1 else st
            layouts.append(strides)
    return _dense_in_order(shape, layouts)


def _dense_in_order(shape, layouts) -> tuple:
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))   # innermost dim first

    def should_swap(d0, d1):
        for strides in layouts:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    for i in range(1, ndim):
        dim1 = i
        for j in range(1, i + 1):
            dim0 = i - j
            c = should_swap(perm[dim0], perm[dim1])
            if c > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif c < 0:
                break
    out, acc = [0] * ndim, 1
    for idx in perm:
        out[idx] = acc
        if shape[idx] > 1:
            acc *= shape[idx]
    return tuple(out)
