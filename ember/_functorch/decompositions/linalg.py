"""Decompositions of the matrix-product family (ember/ops/table/linalg.py) into mm, bmm, addmm and
views, as ATen's matmul folds batch dims: every product ends in one of the three kept-exact BLAS
calls; ``beta == 0`` ignores ``self`` (its nan/inf included), as eager does."""
from __future__ import annotations

from ._ops import aten, eager_error


def _reshape(x, shape):
    return aten.reshape.default(x, list(shape))


def _scaled_sum(self, product, beta, alpha):
    """beta * self + alpha * product (self not read when beta == 0)."""
    if alpha != 1:
        product = aten.mul.Tensor(product, alpha)
    if beta == 0:
        return aten.expand.default(product, list(_broadcast(self.shape, product.shape))) \
            if tuple(self.shape) != tuple(product.shape) else product
    if beta != 1:
        self = aten.mul.Tensor(self, beta)
    return aten.add.Tensor(self, product)


def _broadcast(a, b):
    from ... import broadcast_shapes
    return broadcast_shapes(a, b)


def dot(self, tensor):
    if self.dim() != 1 or tensor.dim() != 1 or self.shape != tensor.shape or self.dtype != tensor.dtype:
        eager_error(aten.dot.default, self, tensor)
    product = aten.mm.default(aten.view.default(self, [1, -1]) if self.is_contiguous() else
                              aten.unsqueeze.default(self, 0), aten.unsqueeze.default(tensor, 1))
    return aten.view.default(product, [])


def vdot(self, other):
    """dot(conj(self), other): the conjugate only for complex tensors (a kept-whole op)."""
    return dot(aten.conj_physical.default(self) if self.dtype.is_complex else self, other)


def mv(self, vec):
    if self.dim() != 2 or vec.dim() != 1 or self.shape[1] != vec.shape[0] or self.dtype != vec.dtype:
        eager_error(aten.mv.default, self, vec)
    return aten.squeeze.dims(aten.mm.default(self, aten.unsqueeze.default(vec, 1)), [1])


def matmul(self, other):
    a, b = self.dim(), other.dim()
    if a == 0 or b == 0:
        eager_error(aten.matmul.default, self, other)
    if a == 1 and b == 1:
        return dot(self, other)
    if a == 2 and b == 1:
        return mv(self, other)
    if a == 1 and b == 2:
        return aten.squeeze.dims(aten.mm.default(aten.unsqueeze.default(self, 0), other), [0])
    if a == 2 and b == 2:
        return aten.mm.default(self, other)
    if a >= 3 and b <= 2:
        # fold self's batch dims into the rows of one mm
        folded = _reshape(self, [-1, self.shape[-1]])
        rhs = other if b == 2 else aten.unsqueeze.default(other, 1)
        out = aten.mm.default(folded, rhs)
        shape = list(self.shape[:-1]) + ([other.shape[-1]] if b == 2 else [])
        return aten.view.default(out, shape)
    # batched: broadcast the batch dims, fold them into one, bmm
    lhs = aten.unsqueeze.default(self, 0) if a == 1 else self
    rhs = aten.unsqueeze.default(other, -1) if b == 1 else other
    batch = list(_broadcast(lhs.shape[:-2], rhs.shape[:-2]))
    n, k, m = lhs.shape[-2], lhs.shape[-1], rhs.shape[-1]
    if rhs.shape[-2] != k:
        eager_error(aten.matmul.default, self, other)
    count = 1
    for size in batch:
        count *= size
    lhs3 = _reshape(aten.expand.default(lhs, batch + [n, k]), [count, n, k])
    rhs3 = _reshape(aten.expand.default(rhs, batch + [k, m]), [count, k, m])
    out = aten.view.default(aten.bmm.default(lhs3, rhs3), batch + [n, m])
    if a == 1:
        out = aten.squeeze.dims(out, [out.dim() - 2])
    if b == 1:
        out = aten.squeeze.dims(out, [out.dim() - 1])
    return out


def addmv(self, mat, vec, beta=1, alpha=1):
    return _scaled_sum(self, mv(mat, vec), beta, alpha)


def baddbmm(self, batch1, batch2, beta=1, alpha=1):
    return _scaled_sum(self, aten.bmm.default(batch1, batch2), beta, alpha)


def addbmm(self, batch1, batch2, beta=1, alpha=1):
    product = aten.sum.dim_IntList(aten.bmm.default(batch1, batch2), [0])
    return _scaled_sum(self, product, beta, alpha)


def outer(self, vec2):
    if self.dim() != 1 or vec2.dim() != 1:
        eager_error(aten.outer.default, self, vec2)
    return aten.mul.Tensor(aten.unsqueeze.default(self, 1), vec2)


def addr(self, vec1, vec2, beta=1, alpha=1):
    product = outer(vec1, vec2)
    if product.dtype.name == "bool":
        if beta == 0:
            return aten.logical_and.default(product, alpha) if alpha is not True else product
        return aten.logical_or.default(aten.logical_and.default(self, bool(beta)),
                                       aten.logical_and.default(product, bool(alpha)))
    return _scaled_sum(self, product, beta, alpha)


def inner(self, other):
    if self.dim() == 0 or other.dim() == 0:
        return aten.mul.Tensor(self, other)
    if self.shape[-1] != other.shape[-1]:
        eager_error(aten.inner.default, self, other)
    if other.dim() == 1:
        return matmul(self, other)
    # contract the last dims: self [..., k] @ other^T [k, ...]
    k = other.shape[-1]
    rest = list(other.shape[:-1])
    flat = aten.permute.default(_reshape(other, [-1, k]), [1, 0])
    return aten.view.default(matmul(self, flat), list(self.shape[:-1]) + rest)


def kron(self, other):
    ndim = max(self.dim(), other.dim())
    a = aten.view.default(self, [1] * (ndim - self.dim()) + list(self.shape)) if self.dim() < ndim else self
    b = aten.view.default(other, [1] * (ndim - other.dim()) + list(other.shape)) if other.dim() < ndim else other
    a_shape, b_shape = [], []
    for i in range(ndim):
        a_shape += [a.shape[i], 1]
        b_shape += [1, b.shape[i]]
    product = aten.mul.Tensor(_reshape(a, a_shape), _reshape(b, b_shape))
    return _reshape(product, [a.shape[i] * b.shape[i] for i in range(ndim)])


def linalg_cross(self, other, dim=-1):
    if self.dim() != other.dim():
        eager_error(aten.linalg_cross.default, self, other, dim=dim)
    shape = list(_broadcast(self.shape, other.shape))
    dim = dim % max(len(shape), 1)
    if shape[dim] != 3:
        eager_error(aten.linalg_cross.default, self, other, dim=dim)
    a = aten.expand.default(self, shape)
    b = aten.expand.default(other, shape)
    a1, a2 = aten.index_select.default(a, dim, _roll_index(1)), aten.index_select.default(a, dim, _roll_index(2))
    b1, b2 = aten.index_select.default(b, dim, _roll_index(1)), aten.index_select.default(b, dim, _roll_index(2))
    return aten.sub.Tensor(aten.mul.Tensor(a1, b2), aten.mul.Tensor(a2, b1))


def _roll_index(shift):
    """[shift, shift+1, shift+2] mod 3 as an int64 tensor (arange and remainder: no constant)."""
    from ... import int64
    return aten.remainder.Tensor(aten.arange.start_step(shift, shift + 3, 1, dtype=int64), 3)


def cross(self, other, dim=None):
    if dim is None:
        shape = list(_broadcast(self.shape, other.shape))
        dim = next((d for d, n in enumerate(shape) if n == 3), None)
        if dim is None:
            eager_error(aten.cross.default, self, other, dim)
    return linalg_cross(self, other, dim=dim)


def trace(self):
    if self.dim() != 2:
        eager_error(aten.trace.default, self)
    from ... import int64
    dtype = int64 if not self.dtype.is_floating_point and not self.dtype.is_complex else None
    return aten.sum.dim_IntList(aten.diagonal.default(self), None, dtype=dtype)


def linalg_matrix_power(self, n):
    if self.dim() < 2 or self.shape[-1] != self.shape[-2]:
        eager_error(aten.linalg_matrix_power.default, self, n)
    if n == 0:
        from .creation import eye
        return aten.expand.default(eye(self.shape[-1], dtype=self.dtype, device=self.device), list(self.shape))
    base = self if n > 0 else aten.linalg_inv.default(self)
    result, power, k = None, base, abs(n)
    while k:                                  # square-and-multiply, lowest bit first
        if k & 1:
            result = power if result is None else matmul(result, power)
        k >>= 1
        if k:
            power = matmul(power, power)
    return result


def cholesky(self, upper=False):
    return aten.linalg_cholesky.default(self, upper=upper)


DECOMPOSITIONS = {
    "dot": dot, "vdot": vdot, "mv": mv, "matmul": matmul, "addmv": addmv, "baddbmm": baddbmm, "addbmm": addbmm, "outer": outer,
    "addr": addr, "inner": inner, "kron": kron, "linalg_cross": linalg_cross, "cross": cross, "trace": trace,
    "linalg_matrix_power": linalg_matrix_power, "cholesky": cholesky,
}
