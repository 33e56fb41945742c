"""Meta kernels of the linear-algebra family, and the shape/dtype rules its CPU kernels share.

Every ``*_shape`` / ``check_*`` function raises PyTorch's error for bad shapes or dtypes and
returns the result shape; the CPU kernels (ember/ops/cpu/linalg.py, linalg_decomp.py) call the
same functions before computing, so Meta and CPU agree on shapes, dtypes and errors. Dtype
errors that PyTorch only raises in its CPU kernels (bool matmul: NotImplementedError) are not
raised here: PyTorch's Meta kernels accept those dtypes too.
"""
from __future__ import annotations

from math import prod

from ..._core import dtype as _dt
from ..._core.tensor import wrap_meta
from ...return_types import structseq
from .. import rules


def _result(name, fields):
    """A constructor of ember.return_types.<name> taking the fields positionally."""
    cls = structseq(name, fields)
    return lambda *items: cls(items)


# torch.return_types.* equivalents
SlogdetResult = _result("linalg_slogdet", ("sign", "logabsdet"))
QRResult = _result("linalg_qr", ("Q", "R"))
SVDResult = _result("linalg_svd", ("U", "S", "Vh"))
OldSVDResult = _result("svd", ("U", "S", "V"))
EighResult = _result("linalg_eigh", ("eigenvalues", "eigenvectors"))


# ---------------------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------------------
def _mm_dims(sa, sb):
    if sa[1] != sb[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa[0]}x{sa[1]} and {sb[0]}x{sb[1]})")


def _same_dtype_mm(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {a.dtype.cpp_type} != "
                           f"{b.dtype.cpp_type}")


def _mv_dims(n_in, sm, n_vec):
    if sm[1] != n_vec:
        raise RuntimeError(f"size mismatch, got input ({n_in}), mat ({sm[0]}x{sm[1]}), vec ({n_vec})")


def _same_dtype_mv(*ts):
    if any(t.dtype is not ts[0].dtype for t in ts):
        names = [t.dtype.c10_name for t in ts]
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {', '.join(names[:-1])}, and "
                           f"{names[-1]}")


def _dot_checks(a, b, op="dot"):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.shape[0] != b.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to "
                           f"have the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements "
                           "respectively")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op} : expected both vectors to have same dtype, but found {a.dtype.c10_name} and "
                           f"{b.dtype.c10_name}")


def _bmm_dims(sa, sb):
    if sb[0] != sa[0] or sb[1] != sa[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{sa[0]}, {sa[2]}] but "
                           f"got: [{sb[0]}, {sb[1]}].")


def _same_dtype_scalar(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype.c10_name} but found {b.dtype.c10_name}")


def matmul_shape(a, b) -> tuple:
    """torch.matmul's result shape after its checks (in the order PyTorch makes them)."""
    sa, sb = tuple(a.shape), tuple(b.shape)
    da, db = len(sa), len(sb)
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    if da == 1 and db == 1:
        _dot_checks(a, b)
        return ()
    if da == 2 and db == 1:
        _mv_dims(sa[0], sa, sb[0])
        _same_dtype_mv(a, a, b)
        return (sa[0],)
    if da == 1 and db == 2:
        _mm_dims((1, sa[0]), sb)
        _same_dtype_mm(a, b)
        return (sb[1],)
    if da == 2 and db == 2:
        _mm_dims(sa, sb)
        _same_dtype_mm(a, b)
        return (sa[0], sb[1])
    if da >= 3 and db <= 2:  # PyTorch folds the batch into the rows of one mm / mv
        rows = prod(sa[:-1])
        if db == 1:
            _mv_dims(rows, (rows, sa[-1]), sb[0])
            _same_dtype_mv(a, a, b)
            return sa[:-1]
        _mm_dims((rows, sa[-1]), sb)
        _same_dtype_mm(a, b)
        return sa[:-1] + (sb[1],)
    n, m1 = (sa[-2], sa[-1]) if da >= 2 else (1, sa[0])
    m2, p = (sb[-2], sb[-1]) if db >= 2 else (sb[0], 1)
    batch = rules.broadcast_shapes(sa[:-2], sb[:-2])
    nb = prod(batch)
    _bmm_dims((nb, n, m1), (nb, m2, p))
    _same_dtype_scalar(a, b)
    return batch + ((n,) if da >= 2 else ()) + ((p,) if db >= 2 else ())


def mm_shape(a, b, op="mm") -> tuple:
    if a.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if b.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _mm_dims(a.shape, b.shape)
    _same_dtype_mm(a, b)
    return (a.shape[0], b.shape[1])


def bmm_shape(a, b) -> tuple:
    if a.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _bmm_dims(a.shape, b.shape)
    _same_dtype_scalar(a, b)
    return (a.shape[0], a.shape[1], b.shape[2])


def mv_shape(m, v, self_shape=None) -> tuple:
    """mv / addmv (`self_shape`: addmv's self, which must expand to the result)."""
    nself = 1 if self_shape is None else len(self_shape)
    if m.ndim != 2 or v.ndim != 1 or nself > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {nself}, {m.ndim}, {v.ndim}")
    n_in = m.shape[0] if self_shape is None else (self_shape[0] if self_shape else 1)
    if m.shape[1] != v.shape[0] or n_in not in (1, m.shape[0]):
        raise RuntimeError(f"size mismatch, got input ({n_in}), mat ({m.shape[0]}x{m.shape[1]}), vec ({v.shape[0]})")
    return (m.shape[0],)


def expand_check(shape, target) -> None:
    """`self` of addmm & co must expand to the product's shape."""
    if len(shape) > len(target):
        raise RuntimeError(f"The expanded size of the tensor ({len(target)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(shape)})")
    off = len(target) - len(shape)
    for i, s in enumerate(shape):
        if s != 1 and s != target[off + i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[off + i]}) must match the existing size "
                               f"({s}) at non-singleton dimension {off + i}.  Target sizes: {list(target)}.  "
                               f"Tensor sizes: {list(shape)}")


def addmm_shape(self, m1, m2) -> tuple:
    if m1.ndim != 2:
        raise RuntimeError(f"mat1 must be a matrix, got {m1.ndim}-D tensor")
    if m2.ndim != 2:
        raise RuntimeError(f"mat2 must be a matrix, got {m2.ndim}-D tensor")
    _mm_dims(m1.shape, m2.shape)
    out = (m1.shape[0], m2.shape[1])
    expand_check(self.shape, out)
    if m1.dtype is not m2.dtype or self.dtype is not m2.dtype:
        bad = m1 if m1.dtype is not m2.dtype else self
        raise RuntimeError(f"{'self' if bad is self else 'mat1'} and mat2 must have the same dtype, but got "
                           f"{bad.dtype.c10_name} and {m2.dtype.c10_name}")
    return out


def baddbmm_shape(self, b1, b2, *, reduce_batch=False) -> tuple:
    if b1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _bmm_dims(b1.shape, b2.shape)
    out = (b1.shape[1], b2.shape[2]) if reduce_batch else (b1.shape[0], b1.shape[1], b2.shape[2])
    expand_check(self.shape, out)
    for bad in (b1, self):
        if bad.dtype is not b2.dtype:
            raise RuntimeError(f"{'self' if bad is self else 'batch1'} and {'mat2' if reduce_batch else 'batch2'} "
                               f"must have the same dtype, but got {bad.dtype.c10_name} and {b2.dtype.c10_name}")
    return out


def addr_shape(self, v1, v2) -> tuple:
    if v1.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {v1.ndim}-D")
    if v2.ndim != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec2, but got {v2.ndim}-D")
    out = (v1.shape[0], v2.shape[0])
    expand_check(self.shape, out)
    return out


def outer_shape(a, b) -> tuple:
    if a.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument self, but got {a.ndim}-D")
    if b.ndim != 1:
        raise RuntimeError(f"outer: Expected 1-D argument vec2, but got {b.ndim}-D")
    return (a.shape[0], b.shape[0])


def inner_shape(a, b) -> tuple:
    if a.ndim == 0 or b.ndim == 0:
        return rules.broadcast_shapes(a.shape, b.shape)
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a.shape)} and {list(b.shape)}")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    return tuple(a.shape[:-1]) + tuple(b.shape[:-1])


def tensordot_shape(a, b, dims_a, dims_b) -> tuple:
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    da = rules.wrap_dims(dims_a, a.ndim, "tensordot")
    db = rules.wrap_dims(dims_b, b.ndim, "tensordot")
    for i, j, oi, oj in zip(da, db, dims_a, dims_b):
        sa, sb = a.shape[i], b.shape[j]
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in dim {oi} and "
                               f"second has size {sb} in dim {oj}")
    return (tuple(s for i, s in enumerate(a.shape) if i not in da) +
            tuple(s for j, s in enumerate(b.shape) if j not in db)), da, db


def cross_dim(a, b, dim, op="linalg.cross") -> tuple:
    """(result shape, wrapped dim) of cross / linalg_cross (dim=None: first dim of size 3)."""
    if a.ndim != b.ndim:
        raise RuntimeError(f"{op}: inputs must have the same number of dimensions.")
    shape = rules.broadcast_shapes(a.shape, b.shape)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype.c10_name} but found {b.dtype.c10_name}")
    if dim is None:
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    dim = rules.wrap_dim(dim, len(shape), op)
    if a.shape[dim] != 3 or b.shape[dim] != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim - len(shape)} must have length 3. Got "
                           f"{a.shape[dim]} and {b.shape[dim]}")
    return shape, dim


def trace_checks(x) -> None:
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")


def trace_dtype(d):
    return _dt.int64 if d.category <= _dt.INT else d


def kron_shape(a, b) -> tuple:
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + tuple(a.shape)
    sb = (1,) * (n - b.ndim) + tuple(b.shape)
    return tuple(x * y for x, y in zip(sa, sb))


# ---------------------------------------------------------------------------------------
# meta kernels: products
# ---------------------------------------------------------------------------------------
def matmul(a, b):
    return wrap_meta(matmul_shape(a, b), a.dtype)


def mm(a, b):
    return wrap_meta(mm_shape(a, b), a.dtype)


def bmm(a, b):
    return wrap_meta(bmm_shape(a, b), a.dtype)


def dot(a, b):
    _dot_checks(a, b)
    return wrap_meta((), a.dtype)


def vdot(a, b):
    _dot_checks(a, b, "vdot")
    return wrap_meta((), a.dtype)


def mv(m, v):
    shape = mv_shape(m, v)
    _same_dtype_mv(m, m, v)
    return wrap_meta(shape, m.dtype)


def addmm(self, m1, m2, beta=1, alpha=1):
    return wrap_meta(addmm_shape(self, m1, m2), m1.dtype)


def addmv(self, m, v, beta=1, alpha=1):
    shape = mv_shape(m, v, tuple(self.shape))
    _same_dtype_mv(self, m, v)
    return wrap_meta(shape, m.dtype)


def baddbmm(self, b1, b2, beta=1, alpha=1):
    return wrap_meta(baddbmm_shape(self, b1, b2), b1.dtype)


def addbmm(self, b1, b2, beta=1, alpha=1):
    return wrap_meta(baddbmm_shape(self, b1, b2, reduce_batch=True), b1.dtype)


def addr(self, v1, v2, beta=1, alpha=1):
    return wrap_meta(addr_shape(self, v1, v2), rules.common_dtype(self, v1, v2))


def outer(a, b):
    return wrap_meta(outer_shape(a, b), rules.common_dtype(a, b))


def inner(a, b):
    shape = inner_shape(a, b)
    return wrap_meta(shape, rules.common_dtype(a, b) if a.ndim == 0 or b.ndim == 0 else a.dtype)


def tensordot(a, b, dims_a, dims_b):
    return wrap_meta(tensordot_shape(a, b, dims_a, dims_b)[0], a.dtype)


def kron(a, b):
    return wrap_meta(kron_shape(a, b), rules.common_dtype(a, b))


def cross(a, b, dim=None):
    return wrap_meta(cross_dim(a, b, dim, "cross")[0], a.dtype)


def linalg_cross(a, b, dim=-1):
    return wrap_meta(cross_dim(a, b, dim)[0], a.dtype)


def trace(x):
    trace_checks(x)
    return wrap_meta((), trace_dtype(x.dtype))


def einsum(equation, tensors, path=None):
    from ..cpu.einsum import parse
    shape, dtype = parse(equation, tensors)[:2]
    return wrap_meta(shape, dtype)
