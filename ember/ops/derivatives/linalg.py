"""Derivatives of matrix products, einsum/tensordot, norms and the easy decompositions.

Written with ember ops, so the product formulas are themselves differentiable (double
backward). Broadcast batch dims are summed back by the engine. Decompositions without a
formula here (qr, svd, eigh, eigvalsh, svdvals, pinv) fall back to NotImplementedError.
"""
from __future__ import annotations

import string
from math import prod

import numpy as np

from .. import native
from ..._core.tensor import wrap
from ..cpu.linalg import _matmul
from .reduction import _norm_backward


_GEMM_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _direct_matmul_backward(grad, a, b, needs_grad):
    """Both gradients of a (batched) matrix product of float32/float64 operands of ≥ 2 dims, equal
    batch shapes (or a 2-D right operand), straight from NumPy's products: the same GEMM calls as
    the formula below makes through matmul, without its four ops. None where it does not apply
    (a recorded graph or dispatch mode, broadcast batches, vectors, other dtypes)."""
    if not native.direct_backward(grad, a, b):
        return None
    g, x, y = grad._data, a._data, b._data
    if x.ndim < 2 or y.ndim < 2 or g.dtype not in _GEMM_DTYPES or x.dtype is not g.dtype or y.dtype is not g.dtype:
        return None
    if y.ndim == 2 and x.ndim > 2:     # the batch folded into one GEMM, as below
        rows = prod(x.shape[:-1])
        return (wrap(_matmul(g, y.T)) if needs_grad[0] else None,
                wrap(x.reshape(rows, x.shape[-1]).T.dot(g.reshape(rows, g.shape[-1]))) if needs_grad[1] else None)
    if x.shape[:-2] != y.shape[:-2] or g.shape[:-2] != x.shape[:-2]:
        return None
    return (wrap(np.matmul(g, y.swapaxes(-1, -2))) if needs_grad[0] else None,
            wrap(np.matmul(x.swapaxes(-1, -2), g)) if needs_grad[1] else None)


def _matmul_backward(grad, self, other, needs_grad=(True, True)):
    direct = _direct_matmul_backward(grad, self, other, needs_grad)
    if direct is not None:
        return direct
    a, b = self, other
    if a.ndim == 1 and b.ndim == 1:
        return grad * b, grad * a
    if a.ndim == 1:
        ga = (grad.unsqueeze(-2) @ b.mT).squeeze(-2)
        gb = a.unsqueeze(-1) @ grad.unsqueeze(-2)
        return ga, gb
    if b.ndim == 1:
        ga = grad.unsqueeze(-1) @ b.unsqueeze(-2)
        gb = (a.mT @ grad.unsqueeze(-1)).squeeze(-1)
        return ga, gb
    if b.ndim == 2 and a.ndim > 2:  # fold the batch into one GEMM instead of a batched outer product
        a2, g2 = a.flatten(0, -2), grad.flatten(0, -2)    # (not reshape(-1, n): n may be 0)
        return grad @ b.mT, a2.mT @ g2
    return grad @ b.mT, a.mT @ grad


def _scaled(t, s):
    return t if s == 1 else t * s


def _addmm(grad, mat1, mat2, beta, alpha, needs_grad):
    return (_scaled(grad, beta) if needs_grad[0] else None,
            _scaled(grad @ mat2.mT, alpha) if needs_grad[1] else None,
            _scaled(mat1.mT @ grad, alpha) if needs_grad[2] else None)


def _addmv(grad, mat, vec, beta, alpha):
    return _scaled(grad, beta), _scaled(grad.unsqueeze(-1) * vec, alpha), _scaled(mat.mT @ grad, alpha)


def _addbmm(grad, batch1, batch2, beta, alpha):
    g = grad.unsqueeze(0).expand(batch1.shape[0], grad.shape[0], grad.shape[1])
    return _scaled(grad, beta), _scaled(g @ batch2.mT, alpha), _scaled(batch1.mT @ g, alpha)


def _baddbmm(grad, batch1, batch2, beta, alpha):
    return _scaled(grad, beta), _scaled(grad @ batch2.mT, alpha), _scaled(batch1.mT @ grad, alpha)


def _addr(grad, vec1, vec2, beta, alpha):
    return _scaled(grad, beta), _scaled(grad @ vec2, alpha), _scaled(grad.mT @ vec1, alpha)


def _inner(grad, self, other):
    if self.ndim == 0 or other.ndim == 0:
        return grad * other, grad * self
    k = self.shape[-1]
    a2, b2 = self.reshape(-1, k), other.reshape(-1, k)
    g2 = grad.reshape(a2.shape[0], b2.shape[0])
    return (g2 @ b2).reshape(self.shape), (g2.mT @ a2).reshape(other.shape)


# einsum ---------------------------------------------------------------------------------
def _einsum_terms(equation, shapes):
    """Explicit subscripts per operand and for the output (ellipses expanded to letters)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    used = set(c for c in eq if c.isalpha())
    free = [c for c in string.ascii_letters if c not in used]
    n_ell = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes) if "..." in t), default=0)
    ell = "".join(free[:n_ell])
    out_terms = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            k = len(s) - len(t.replace("...", ""))
            t = t.replace("...", ell[n_ell - k:])
        out_terms.append(t)
    if arrow:
        out = rhs.replace("...", ell)
    else:
        counts = {}
        for t in terms:
            for c in t.replace("...", ""):
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1))
    return out_terms, out


def _einsum(grad, equation, tensors):
    from ... import einsum
    shapes = [tuple(t.shape) for t in tensors]
    terms, out = _einsum_terms(equation, shapes)
    sizes = {}
    for t, s in zip(terms, shapes):
        for c, n in zip(t, s):
            if n != 1 or c not in sizes:
                sizes[c] = n
    grads = []
    for i, (t, s) in enumerate(zip(terms, shapes)):
        if len(set(t)) != len(t):
            raise NotImplementedError(f"einsum backward: repeated subscripts within one operand ('{equation}')")
        others = [terms[j] for j in range(len(terms)) if j != i]
        reach = set(out).union(*others) if others else set(out)
        # letters of this operand reachable from the output/other operands; the rest are broadcast
        keep = "".join(c for c in t if c in reach)
        g = einsum(",".join([out] + others) + "->" + keep, grad, *[tensors[j] for j in range(len(terms)) if j != i])
        for pos, c in enumerate(t):
            if c not in reach:
                g = g.unsqueeze(pos)
        g = g.expand(*[sizes[c] for c in t])
        dims = [d for d, (c, n) in enumerate(zip(t, s)) if n == 1 and sizes[c] != 1]
        if dims:
            g = g.sum(dims, keepdim=True)
        grads.append(g)
    return grads


def _perm_inverse(order):
    inv = [0] * len(order)
    for k, d in enumerate(order):
        inv[d] = k
    return inv


def _tensordot(grad, self, other, dims_self, dims_other):
    from ... import tensordot
    ds = [d % self.ndim for d in dims_self] if self.ndim else []
    do = [d % other.ndim for d in dims_other] if other.ndim else []
    free_a = [d for d in range(self.ndim) if d not in ds]
    free_b = [d for d in range(other.ndim) if d not in do]
    na = len(free_a)
    ga = tensordot(grad, other, dims=(list(range(na, grad.ndim)), free_b))
    src = free_a + [ds[do.index(d)] for d in sorted(do)]
    gb = tensordot(self, grad, dims=(free_a, list(range(na))))
    src_b = [do[ds.index(d)] for d in sorted(ds)] + free_b
    return ga.permute(_perm_inverse(src)), gb.permute(_perm_inverse(src_b))


def _kron(grad, self, other):
    nd = max(self.ndim, other.ndim)
    a = self.reshape((1,) * (nd - self.ndim) + tuple(self.shape))
    b = other.reshape((1,) * (nd - other.ndim) + tuple(other.shape))
    inter = []
    for i in range(nd):
        inter += [a.shape[i], b.shape[i]]
    g = grad.reshape(inter)
    a_sh, b_sh = [], []
    for i in range(nd):
        a_sh += [a.shape[i], 1]
        b_sh += [1, b.shape[i]]
    ga = (g * b.reshape(b_sh)).sum(list(range(1, 2 * nd, 2)))
    gb = (g * a.reshape(a_sh)).sum(list(range(0, 2 * nd, 2)))
    return ga.reshape(self.shape), gb.reshape(other.shape)


def _cross_dim(shape_a, shape_b, dim):
    if dim is not None:
        return dim
    nd = max(len(shape_a), len(shape_b))
    sa = (1,) * (nd - len(shape_a)) + tuple(shape_a)
    sb = (1,) * (nd - len(shape_b)) + tuple(shape_b)
    return next(i for i in range(nd) if max(sa[i], sb[i]) == 3)


def _cross(grad, self, other, dim):
    from ... import linalg
    d = _cross_dim(self.shape, other.shape, dim)
    return linalg.cross(other, grad, dim=d), linalg.cross(grad, self, dim=d)


def _trace(grad, self_shape, self_dtype_device):
    from ... import eye
    device, dtype = self_dtype_device
    return eye(self_shape[0], self_shape[1], dtype=dtype, device=device) * grad


# norms ----------------------------------------------------------------------------------
def _vector_norm(grad, self, result, ord, dim, keepdim):
    return _norm_backward(grad, self, ord, dim, keepdim, result)


def vector_norm_backward(grad, self, result, ord, dim, keepdim):
    """Gradient of ||self||_ord over `dim`, as a tensor (zeros for ord 0), for formulas built on it."""
    g = _norm_backward(grad, self, ord, dim, keepdim, result)
    if g is None:
        from ... import zeros_like
        return zeros_like(self)
    return g


def _matrix_norm(grad, self, result, ord, dim, keepdim):
    if ord == "fro":
        return vector_norm_backward(grad, self, result, 2, dim, keepdim)
    raise NotImplementedError(f"linalg.matrix_norm backward for ord={ord!r} is not implemented in ember")


def _linalg_norm(grad, self, result, ord, dim, keepdim):
    if ord is None or (dim is None and self.ndim == 1) or (dim is not None and len(dim) == 1):
        return _vector_norm(grad, self, result, 2 if ord is None else ord, dim, keepdim)
    return _matrix_norm(grad, self, result, ord, [-2, -1] if dim is None else dim, keepdim)


# inverses, determinants, solve ------------------------------------------------------------
def _inv(grad, result):
    return -(result.mT @ grad @ result.mT)


def _det(grad, self, result):
    from ... import linalg, eye, where
    scale = (grad * result).unsqueeze(-1).unsqueeze(-1)
    singular = result == 0
    if bool(singular.any()):
        # grad * det * A^-T is 0 where det is 0 (PyTorch's first-order formula, which solves
        # with a perturbed LU there): invert the identity in place of the singular matrices.
        ident = eye(self.shape[-1], dtype=self.dtype, device=self.device)
        self = where(singular.unsqueeze(-1).unsqueeze(-1), ident, self)
    return scale * linalg.inv(self).mT


def _logdet(grad, self):
    from ... import linalg
    return grad.unsqueeze(-1).unsqueeze(-1) * linalg.inv(self).mT


def _slogdet(grads, A):
    from ... import linalg
    return grads[1].unsqueeze(-1).unsqueeze(-1) * linalg.inv(A).mT


def _solve(grad, A, B, left, result):
    from ... import linalg
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        gB = linalg.solve(A.mT, grad)
        return -(gB.unsqueeze(-1) * result.unsqueeze(-2)), gB
    if left:
        gB = linalg.solve(A.mT, grad)
        return -(gB @ result.mT), gB
    gB = linalg.solve(A, grad.mT).mT
    return -(result.mT @ gB), gB


def _cholesky(grad, result, upper):
    """PyTorch's cholesky_backward: gA = sym(L^-H phi(L^H gL) L^-1), phi = lower part with half diagonal."""
    from ... import linalg
    L, gL = (result.mT, grad.mT) if upper else (result, grad)
    P = L.mT @ gL
    P = P.tril() - 0.5 * P.diagonal(0, -2, -1).diag_embed()
    Li = linalg.inv(L)
    S = Li.mT @ P @ Li
    return 0.5 * (S + S.mT)


def _matrix_power(grad, self, n):
    if n < 0:
        raise NotImplementedError("matrix_power backward for negative powers is not implemented in ember")
    if n == 0:
        return grad * 0
    powers = [None] * n
    from ... import eye
    powers[0] = eye(self.shape[-1], dtype=self.dtype, device=self.device).expand(*self.shape)
    for k in range(1, n):
        powers[k] = powers[k - 1] @ self
    g = None
    for k in range(n):  # d(A^n) = sum_k A^k dA A^(n-1-k)
        term = powers[k].mT @ grad @ powers[n - 1 - k].mT
        g = term if g is None else g + term
    return g


FORMULAS = {
    "matmul": _matmul_backward,
    "linalg_matmul": _matmul_backward,
    "mm": lambda grad, self, mat2, needs_grad: (grad @ mat2.mT if needs_grad[0] else None,
                                                self.mT @ grad if needs_grad[1] else None),
    "bmm": lambda grad, self, mat2: (grad @ mat2.mT, self.mT @ grad),
    "addmm": _addmm,
    "addmv": _addmv,
    "addbmm": _addbmm,
    "baddbmm": _baddbmm,
    "addr": _addr,
    "dot": lambda grad, self, tensor: (grad * tensor, grad * self),
    "vdot": lambda grad, self, other: ((grad * other).conj(), grad * self),
    "mv": lambda grad, self, vec: (grad.unsqueeze(-1) * vec, self.mT @ grad),
    "outer": lambda grad, self, vec2: (grad @ vec2, grad.mT @ self),
    "ger": lambda grad, self, vec2: (grad @ vec2, grad.mT @ self),
    "inner": _inner,
    "einsum": _einsum,
    "tensordot": _tensordot,
    "kron": _kron,
    "cross": _cross,
    "linalg_cross": _cross,
    "trace": _trace,
    "linalg_vector_norm": _vector_norm,
    "linalg_matrix_norm": _matrix_norm,
    "linalg_matrix_norm.str_ord": _matrix_norm,
    "linalg_norm": _linalg_norm,
    "linalg_norm.ord_str": _linalg_norm,
    "linalg_inv": lambda grad, result: _inv(grad, result),
    "inverse": lambda grad, result: _inv(grad, result),
    "linalg_det": lambda grad, A, result: _det(grad, A, result),
    "det": _det,
    "logdet": _logdet,
    "linalg_slogdet": _slogdet,
    "slogdet": lambda grads, self: _slogdet(grads, self),
    "linalg_solve": _solve,
    "linalg_cholesky": _cholesky,
    "cholesky": _cholesky,
    "linalg_matrix_power": _matrix_power,
    "matrix_power": _matrix_power,
}
