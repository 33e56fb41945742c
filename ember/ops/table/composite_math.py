"""Operators written with ember ops (``composite=``), as ATen writes them in CompositeImplicitAutograd:
diff, cov/corrcoef, dist, renorm, sum_to_size, narrow_copy, the unsafe_split family, absolute,
resolve_neg/is_neg, is_same_size/is_nonzero, matrix_exp, cholesky_inverse/cholesky_solve.

Autograd, fake tensors and the compiler see the ops a composite is made of, so none needs its
own kernel, meta function or derivative.
"""
from __future__ import annotations

import math

from ..registry import Op


def _ember():
    import ember
    return ember


def diff(self, n=1, dim=-1, prepend=None, append=None):
    if self.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    parts = [t for t in (prepend, self, append) if t is not None]
    x = _ember().cat(parts, dim) if len(parts) > 1 else self
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        after, before = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = after.logical_xor(before) if x.dtype == _ember().bool else after - before
    return x


def _check_weights(name, w, observations, integral):
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                           f"{w.dim()} dimensions")
    if w.numel() != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                           f"input but got {w.numel()} != {observations}")
    if integral and w.is_floating_point() or integral and w.is_complex():
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                           f"{w.dtype.c10_name} dtype")
    if not integral and not w.is_floating_point():
        raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                           f"{w.dtype.c10_name} dtype")
    if bool((w < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def cov(self, correction=1, fweights=None, aweights=None):
    """Rows are variables, columns observations (a 1-D input is one variable)."""
    em = _ember()
    if self.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{self.dim()} dimensions")
    x = self if self.dim() == 2 else self.reshape(1, -1)
    observations = x.shape[1]
    if fweights is not None:
        _check_weights("fweights", fweights, observations, True)
    if aweights is not None:
        _check_weights("aweights", aweights, observations, False)
    if not (x.is_floating_point() or x.is_complex()):
        x = x.to(em.get_default_dtype())
    w = fweights
    if aweights is not None:
        w = aweights if w is None else w * aweights
    if w is None:
        avg = x.mean(1)
        norm_factor = max(observations - correction, 0)   # torch warns and returns inf/nan below zero
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm_factor = w_sum
        elif aweights is None:
            norm_factor = w_sum - correction
        else:
            norm_factor = w_sum - correction * (w * aweights).sum() / w_sum
        norm_factor = norm_factor.clamp(min=0)
    centered = x - avg.unsqueeze(1)
    weighted = centered if w is None else centered * w
    c = weighted.mm(centered.t().conj()) / norm_factor
    return c.squeeze() if self.dim() < 2 else c


def corrcoef(self):
    if self.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input "
                           f"with {self.dim()} dimensions")
    c = cov(self)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    stddev = d.real.sqrt() if d.is_complex() else d.sqrt()
    c = c / stddev.unsqueeze(1) / stddev.unsqueeze(0)
    if c.is_complex():
        return _ember().complex(c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


def dist(self, other, p=2):
    return (self - other).norm(p)


def renorm(self, p, dim, maxnorm):
    """Each slice along `dim` whose p-norm exceeds maxnorm is scaled down to norm maxnorm."""
    if self.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {self.dim()} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    dim = dim + self.dim() if dim < 0 else dim
    if not 0 <= dim < self.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-self.dim()}, "
                         f"{self.dim() - 1}], but got {dim})")
    other_dims = [d for d in range(self.dim()) if d != dim]
    from ...linalg import vector_norm
    norms = vector_norm(self, p, other_dims, keepdim=True)
    factor = _ember().where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0).to(self.dtype)
    return self * factor


def sum_to_size(self, *size):
    """Sum self down to `size` (which self must be expandable from): the reverse of expand."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    x = self.sum(tuple(range(lead))) if lead else self
    reduce = tuple(i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1)
    return x.sum(reduce, keepdim=True) if reduce else x


def narrow_copy(self, dim, start, length):
    return self.narrow(dim, start, length).clone()


# torch's unsafe_* return views without autograd's view tracking; ember returns copies (same values;
# no alias the schema does not declare)
def unsafe_chunk(self, chunks, dim=0):
    return [t.clone() for t in self.chunk(chunks, dim)]


def unsafe_split(self, split_size, dim=0):
    return [t.clone() for t in self.split(split_size, dim)]


def unsafe_split_with_sizes(self, split_sizes, dim=0):
    return [t.clone() for t in self.split(list(split_sizes), dim)]


def is_nonzero(self):
    n = self.numel()
    if n != 1:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous" if n == 0 else
                           "Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item() != 0)


def matrix_exp(self):
    """exp(A) by scaling and squaring: A / 2^s has norm <= 1/2, a degree-18 Taylor sum, then s squarings."""
    if self.dim() < 2 or self.shape[-1] != self.shape[-2]:
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, but they are "
                           f"{self.shape[-2] if self.dim() >= 2 else 1} by {self.shape[-1]} matrices")
    if not (self.is_floating_point() or self.is_complex()):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as input. "
                           f"Got {self.dtype.c10_name}")
    em = _ember()
    n = self.shape[-1]
    if self.numel() == 0:
        return self.clone()
    norm = float(self.detach().abs().sum(-2).amax()) if self.numel() else 0.0
    squarings = max(0, int(math.ceil(math.log2(norm))) + 1) if norm > 0.5 else 0
    a = self / (2.0 ** squarings)
    eye = em.eye(n, dtype=self.dtype).expand(self.shape)
    term, total = eye, eye
    for k in range(1, 19):
        term = term.matmul(a) / k
        total = total + term
    for _ in range(squarings):
        total = total.matmul(total)
    return total


def _square_check(name, x):
    if x.dim() < 2 or x.shape[-1] != x.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{x.shape[-2] if x.dim() >= 2 else 1} by {x.shape[-1]} matrices")


def cholesky_inverse(self, upper=False):
    """inv(L L^H) from the Cholesky factor L (or inv(U^H U) when upper)."""
    _square_check("cholesky_inverse", self)
    factor = self.triu().mH if upper else self.tril()   # the other triangle is never read, as LAPACK's
    from ...linalg import inv
    return inv(factor.matmul(factor.mH))


def cholesky_solve(self, input2, upper=False):
    """Solves (L L^H) X = self for X, L = input2 (U^H U with upper=True)."""
    _square_check("cholesky_solve", input2)
    if self.dim() < 2:
        raise RuntimeError(f"cholesky_solve: The input tensor B must have at least 2 dimensions.")
    factor = input2.triu().mH if upper else input2.tril()
    from ...linalg import solve
    return solve(factor.matmul(factor.mH), self)


def triangular_solve(self, A, upper=True, transpose=False, unitriangular=False):
    """Solves A X = self for X with A triangular (only its upper or lower part is read; with
    unitriangular its diagonal is taken as ones); returns (X, a copy of A)."""
    for name, t in (("b", self), ("A", A)):
        if t.dim() < 2:
            raise RuntimeError(f"torch.triangular_solve: Expected {name} to have at least 2 dimensions, but it "
                               f"has {t.dim()} dimensions instead")
    _square_check("triangular_solve", A)
    tri = A.triu() if upper else A.tril()
    if unitriangular:
        tri = tri - tri.diagonal(0, -2, -1).diag_embed() + _ember().eye(A.shape[-1], dtype=A.dtype)
    from ...linalg import solve
    from ... import return_types
    return return_types.triangular_solve((solve(tri.mT if transpose else tri, self), A.clone()))


OPS = [
    # no out= yet: resizing an out= tensor of a composite row loses a fake tensor's device (shared code)
    Op("diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor",
       composite=diff),
    Op("cov(Tensor self, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None) -> Tensor",
       composite=cov),
    Op("corrcoef(Tensor self) -> Tensor", composite=corrcoef),
    Op("dist(Tensor self, Tensor other, Scalar p=2) -> Tensor", composite=dist),
    Op("renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor", composite=renorm, inplace=True,
       out=True),
    Op("sum_to_size(Tensor self, SymInt[] size) -> Tensor", composite=sum_to_size, variants="method",
       varargs=True),
    Op("narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor", composite=narrow_copy),
    Op("unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]", composite=unsafe_chunk),
    Op("unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]", composite=unsafe_split),
    Op("unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]",
       composite=unsafe_split_with_sizes),
    Op("absolute(Tensor self) -> Tensor", composite=lambda self: self.abs(), inplace=True, out=True),
    Op("resolve_neg(Tensor(a) self) -> Tensor(a)", composite=lambda self: self),   # no negative bit in ember
    Op("is_neg(Tensor self) -> bool", composite=lambda self: False),
    Op("is_same_size(Tensor self, Tensor other) -> bool",
       composite=lambda self, other: tuple(self.shape) == tuple(other.shape)),
    Op("is_nonzero(Tensor self) -> bool", composite=is_nonzero),
    Op("matrix_exp(Tensor self) -> Tensor", composite=matrix_exp),
    Op("linalg_matrix_exp(Tensor self) -> Tensor", composite=matrix_exp, namespace="linalg",
       python_name="matrix_exp", variants="function"),
    Op("cholesky_inverse(Tensor self, bool upper=False) -> Tensor", composite=cholesky_inverse, out=True),
    Op("triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, bool unitriangular=False) "
       "-> (Tensor solution, Tensor cloned_coefficient)", composite=triangular_solve),
    Op("cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor", composite=cholesky_solve,
       out=True),
]
