"""Derivatives of reductions, scans, softmax, sorting and selection (PyTorch's derivatives.yaml
and FunctionsManual.cpp, written with ember ops so that double backward works).

Reduced dims are put back as size-1 dims (`_unsqueeze_dims`) so the gradient broadcasts against
the input. Value-selecting reductions (max.dim, sort, topk, median.dim ...) scatter the gradient
to the selected indices; all-reductions with ties (max(), amax, median()) split it evenly among
the tied elements, like PyTorch.
"""
from __future__ import annotations

import math

import numpy as np

from .. import native
from ..._core.tensor import wrap


def _norm_dims(dim, ndim):
    """The reduced dims as sorted non-negative ints (None / [] mean all dims)."""
    if dim is None:
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return list(range(ndim))
    return sorted(d % max(ndim, 1) for d in dims)


def _unsqueeze_dims(grad, shape, dim, keepdim):
    """Put reduced dims back (size 1) so grad broadcasts against the input."""
    if keepdim or len(shape) == 0:
        return grad
    if dim is None or (not isinstance(dim, int) and len(dim) == 0):
        return grad.reshape([1] * len(shape)) if grad.ndim == 0 else grad
    for d in _norm_dims(dim, len(shape)):
        grad = grad.unsqueeze(d)
    return grad


def _numel(shape, dim=None):
    n = 1
    for d in _norm_dims(dim, len(shape)) if shape else ():
        n *= shape[d]
    return n


def _div(a, b):
    """a / b as C++ doubles do it (inf / nan instead of ZeroDivisionError)."""
    if b == 0:
        return math.nan if a == 0 else math.copysign(math.inf, a)
    return a / b


# -- sums and means -----------------------------------------------------------------------
def _nansum(grad, self, dim, keepdim):
    g = _unsqueeze_dims(grad, self.shape, dim, keepdim).expand(self.shape)
    return g.masked_fill(self.isnan(), 0)


def _nanmean(grad, self, dim, keepdim):
    # nansum(self) / count as PyTorch differentiates it: NaN inputs get grad / count * 0, which
    # is 0 unless the whole slice is NaN (count 0: inf * 0 = nan, as in PyTorch).
    valid = self.isnan().logical_not()
    count = valid.sum(_norm_dims(dim, self.ndim), keepdim=True) if self.ndim else valid.to(self.dtype)
    g = _unsqueeze_dims(grad, self.shape, dim, keepdim) / count
    return g.expand(self.shape) * valid


# -- prod ---------------------------------------------------------------------------------
def _prod_others(x, dim):
    """prod over `dim` of every element but the one at each position (exact with zeros)."""
    from ... import eye
    n = x.shape[dim]
    xl = x.movedim(dim, -1)
    mat = xl.unsqueeze(-2).expand(*xl.shape[:-1], n, n)
    mat = mat.masked_fill(eye(n, dtype=x.dtype, device=x.device).to(_bool()), 1)
    return mat.prod(-1).movedim(-1, dim)


def _bool():
    from ..._core import dtype as dt
    return dt.bool_


def _prod_dim_backward(grad, self, dim, keepdim, result):
    if self.ndim == 0:
        return grad
    g = _unsqueeze_dims(grad, self.shape, dim, keepdim)
    if not bool((self == 0).any()):
        return g * _unsqueeze_dims(result, self.shape, dim, keepdim) / self
    return g * _prod_others(self, dim % self.ndim)


def _prod_backward(grad, self, result):
    if self.ndim == 0:
        return grad
    if not bool((self == 0).any()):
        return grad * result / self
    return (grad * _prod_others(self.reshape(-1), 0)).reshape(self.shape)


# -- max / min ----------------------------------------------------------------------------
def _evenly_distribute(grad, self, result):
    """All-reductions: the gradient split evenly among the elements equal to the result."""
    if bool(result.isnan()):
        mask = self.isnan()
    else:
        mask = self == result
    return (grad / mask.sum()).expand(self.shape).masked_fill(mask.logical_not(), 0)


def _select_backward(grad, self_shape, dim, indices, keepdim):
    """Scatter grad into zeros at `indices` along `dim` (value-selecting reductions)."""
    if len(self_shape) == 0:
        return grad.reshape(())
    if not keepdim:
        grad, indices = grad.unsqueeze(dim), indices.unsqueeze(dim)
    return grad.new_zeros(self_shape).scatter(dim, indices, grad)


def _select_formula():
    """Formula for (values, indices) ops whose `dim`/`keepdim` are arguments."""
    def f(grad, self_shape, dim, keepdim, results):
        return _select_backward(grad, self_shape, dim, results[1], keepdim)
    return f


def _amaxmin(grad, self, dim, keepdim, result):
    r = _unsqueeze_dims(result, self.shape, dim, keepdim)
    g = _unsqueeze_dims(grad, self.shape, dim, keepdim)
    mask = self == r
    count = mask.sum(_norm_dims(dim, self.ndim), keepdim=True) if self.ndim else mask.to(self.dtype)
    return (g / count) * mask  # like PyTorch: a NaN result (no element equal to it) gives NaN grads


def _aminmax(grads, self, dim, keepdim, results):
    out = None
    for g, r in zip(grads, results):
        d = _amaxmin(g, self, dim, keepdim, r) if dim is not None else _amaxmin(g, self, None, False, r)
        out = d if out is None else out + d
    return out


def _binary_max(grad, self, other, self_loses):
    """max.other / min.other (maximum/minimum): ties split the gradient in half."""
    half = grad.where((self == other).logical_not(), grad / 2)
    return half.masked_fill(self_loses(self, other), 0), half.masked_fill(self_loses(other, self), 0)


# -- var / std ----------------------------------------------------------------------------
def _correction(unbiased=True, correction=None):
    if correction is None:
        return 1 if unbiased else 0
    return correction


def _var_backward(grad, self, dim, correction, keepdim):
    n = _numel(self.shape, dim)
    g = _unsqueeze_dims(grad, self.shape, dim, keepdim)
    if self.ndim == 0:
        return g * 0 * _div(2.0, n - correction)
    mean = self.mean(_norm_dims(dim, self.ndim), keepdim=True)
    return g * (self - mean) * _div(2.0, n - correction)


def _std_backward(grad, self, dim, correction, keepdim, result):
    g = (grad / (result * 2)).masked_fill(result == 0, 0)
    return _var_backward(g, self, dim, correction, keepdim)


def _var_mean_backward(grads, self, dim, correction, keepdim, std=False, results=None):
    gv, gm = grads
    if std:
        out = _std_backward(gv, self, dim, correction, keepdim, results[0])
    else:
        out = _var_backward(gv, self, dim, correction, keepdim)
    return out + _unsqueeze_dims(gm, self.shape, dim, keepdim).expand(self.shape) / _numel(self.shape, dim)


# -- norm ---------------------------------------------------------------------------------
def _norm_backward(grad, self, p, dim, keepdim, result):
    """PyTorch's norm_backward, shared by norm and linalg.vector_norm: zero where the norm is 0
    (no 0/0), NaNs routed to the inf-norm's NaN; p = 0 has no gradient (None, as PyTorch)."""
    p = 2.0 if p is None else float(p)
    g = _unsqueeze_dims(grad, self.shape, dim, keepdim)
    norm = _unsqueeze_dims(result, self.shape, dim, keepdim)
    if p == 0:
        return None
    if p == 1:
        return self.sgn() * g
    if p == 2:
        return g * (self / norm).masked_fill(norm == 0, 0)
    if math.isinf(p):
        a = self.abs()
        mask = (a == norm) | a.isnan()  # NaNs are where the NaN norm came from
        count = mask.sum(_norm_dims(dim, self.ndim), keepdim=True) if self.ndim else mask.to(self.dtype)
        return self.sgn() * ((g / count) * mask)
    if p < 1:
        scaled = self.sgn() * self.abs().pow(p - 1).masked_fill(self == 0, 0)
        return scaled * g * norm.pow(1 - p)
    scaled = self.sgn() * self.abs().pow(p - 1) if p < 2 else self * self.abs().pow(p - 2)
    return scaled * (g / norm.pow(p - 1)).masked_fill(norm == 0, 0)


# -- scans --------------------------------------------------------------------------------
def _rev_cumsum(x, dim):
    return x.flip(dim).cumsum(dim).flip(dim)


def _cumsum_backward(grad, self_shape, dim):
    if len(self_shape) == 0:
        return grad
    return _rev_cumsum(grad, dim)


def _cumprod_backward(grad, self, dim, result):
    if self.ndim == 0:
        return grad
    dim = dim % self.ndim
    if not bool((self == 0).any()):
        return _rev_cumsum(grad * result, dim) / self
    # With zeros: d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i (an n x n matrix per row).
    from ... import eye, ones
    n = self.shape[dim]
    xl = self.movedim(dim, -1)
    gl = grad.movedim(dim, -1)
    mat = xl.unsqueeze(-2).expand(*xl.shape[:-1], n, n)        # [..., i, k] = x_k
    mat = mat.masked_fill(eye(n, device=self.device).to(_bool()), 1)
    upper = ones(n, n, device=self.device).triu().to(_bool())     # j >= i
    partial = mat.cumprod(-1).masked_fill(upper.logical_not(), 0)      # [..., i, j]
    return (partial * gl.unsqueeze(-2)).sum(-1).movedim(-1, dim)


def _cumextreme_backward(grad, self_shape, dim, results):
    if len(self_shape) == 0:
        return grad
    return grad.new_zeros(self_shape).scatter_add(dim, results[1], grad)


def _logcumsumexp_backward(grad, self, dim, result):
    if self.ndim == 0:
        return grad
    # grad_i = sum_{j >= i} grad_j exp(x_i - out_j), computed in log space per sign of grad_j.
    def part(g):
        return (self + _rev_logcumsumexp(g.log() - result, dim)).exp()
    from ... import zeros_like
    zero = zeros_like(grad)
    return part(grad.maximum(zero)) - part((-grad).maximum(zero))


def _rev_logcumsumexp(x, dim):
    return x.flip(dim).logcumsumexp(dim).flip(dim)


# -- softmax ------------------------------------------------------------------------------
def _native_softmax_backward(grad, result, dim, log):
    """The softmax_bwd kernel over the last dim (ember/ops/native.py), or None where it does not apply."""
    if result.ndim == 0 or dim not in (-1, result.ndim - 1) or result.numel() == 0 \
            or not native.plain_backward(grad, result):
        return None
    y, g = result._data, grad._data
    if g.dtype is not y.dtype or g.shape != y.shape or not y.flags.c_contiguous:
        return None
    fn = native.kernel("softmax_bwd", y.dtype)
    if fn is None:
        return None
    out = np.empty_like(y)
    fn(np.ascontiguousarray(g), y, out, y.size // y.shape[-1], y.shape[-1], log)
    return wrap(out)


def _softmax_backward(grad, result, dim):
    fused = _native_softmax_backward(grad, result, dim, False)
    if fused is not None:
        return fused
    g = grad.to(result.dtype) if grad.dtype is not result.dtype else grad
    return result * (g - (g * result).sum(dim, keepdim=True))


def _log_softmax_backward(grad, result, dim):
    if result.ndim == 0:
        return grad * 0
    fused = _native_softmax_backward(grad, result, dim, True)
    if fused is not None:
        return fused
    return grad - result.exp() * grad.sum(dim, keepdim=True)


# -- sorting / selection ------------------------------------------------------------------
def _sort_backward(grad, self_shape, dim, results):
    return _select_backward(grad, self_shape, dim, results[1], True)


def _msort_backward(grad, self):
    if self.ndim == 0:
        return grad
    idx = self.argsort(dim=0, stable=True)
    return grad.new_zeros(self.shape).scatter(0, idx, grad)


def _quantile_backward(grad, self, q, dim, keepdim, interpolation, ignore_nan=False):
    """The gradient goes to the one or two sorted elements each quantile interpolates between
    (PyTorch's quantile is a composite of sort, gather and lerp)."""
    from ... import tensor, zeros
    x = self.reshape(-1) if dim is None else self.movedim(dim, -1)     # [*lead, n]
    lead, n = tuple(x.shape[:-1]), x.shape[-1]
    s, order = x.detach().sort(-1)
    qv = q.detach().reshape(-1).to(s.dtype) if hasattr(q, "reshape") else tensor([float(q)], dtype=s.dtype,
                                                                                   device=s.device)
    m = qv.shape[0]
    if ignore_nan:
        count = s.isnan().logical_not().sum(-1, keepdim=True)
        ranks = (qv * (count - 1)).clamp(min=0)
    else:
        ranks = (qv * (n - 1)).expand(*lead, m).masked_fill(s.isnan().any(-1, keepdim=True), n - 1)
    below, above = ranks.floor(), ranks.ceil()
    weight = {"linear": ranks - below, "midpoint": zeros(ranks.shape, dtype=s.dtype, device=s.device) + 0.5}.get(
        interpolation)
    if interpolation == "higher":
        below = above
    elif interpolation == "nearest":
        below = ranks.round()
    g = grad if (hasattr(q, "ndim") and q.ndim == 1) else grad.unsqueeze(0)
    g = g.reshape((m,) + lead).movedim(0, -1)                           # [*lead, m]
    gs = g.new_zeros(lead + (n,))
    if weight is None:
        gs = gs.scatter_add(-1, below.long(), g)
    else:
        gs = gs.scatter_add(-1, below.long(), g * (1 - weight)).scatter_add(-1, above.long(), g * weight)
    gx = gs.new_zeros(gs.shape).scatter(-1, order, gs)
    return gx.reshape(self.shape) if dim is None else gx.movedim(-1, dim)


def _not_implemented(name, exc=NotImplementedError, message=None):
    """Like PyTorch: the forward works, backward raises."""
    def formula():
        raise exc(message or f"the derivative for '{name}' is not implemented.")
    return formula


def _sum_dim(grad, self_shape, dim, keepdim):
    return _unsqueeze_dims(grad, self_shape, dim, keepdim).expand(self_shape)


FORMULAS = {
    "sum": lambda grad, self_shape: grad.expand(self_shape),
    "sum.dim_IntList": _sum_dim,
    "nansum": _nansum,
    "mean": lambda grad, self_shape: grad.expand(self_shape) / _numel(self_shape),
    "mean.dim": lambda grad, self_shape, dim, keepdim: _sum_dim(grad, self_shape, dim, keepdim) /
        _numel(self_shape, dim),
    "nanmean": _nanmean,
    "prod": _prod_backward,
    "prod.dim_int": _prod_dim_backward,
    "max": _evenly_distribute,
    "min": _evenly_distribute,
    "max.dim": _select_formula(),
    "min.dim": _select_formula(),
    "max.other": lambda grad, self, other: _binary_max(grad, self, other, lambda a, b: a < b),
    "min.other": lambda grad, self, other: _binary_max(grad, self, other, lambda a, b: a > b),
    "amax": _amaxmin,
    "amin": _amaxmin,
    "aminmax": _aminmax,
    "var": lambda grad, self, unbiased: _var_backward(grad, self, None, _correction(unbiased), False),
    "var.dim": lambda grad, self, dim, unbiased, keepdim: _var_backward(grad, self, dim, _correction(unbiased),
                                                                        keepdim),
    "var.correction": lambda grad, self, dim, correction, keepdim: _var_backward(
        grad, self, dim, _correction(True, correction), keepdim),
    "std": lambda grad, self, unbiased, result: _std_backward(grad, self, None, _correction(unbiased), False,
                                                              result),
    "std.dim": lambda grad, self, dim, unbiased, keepdim, result: _std_backward(
        grad, self, dim, _correction(unbiased), keepdim, result),
    "std.correction": lambda grad, self, dim, correction, keepdim, result: _std_backward(
        grad, self, dim, _correction(True, correction), keepdim, result),
    "var_mean": lambda grads, self, unbiased: _var_mean_backward(grads, self, None, _correction(unbiased), False),
    "var_mean.dim": lambda grads, self, dim, unbiased, keepdim: _var_mean_backward(
        grads, self, dim, _correction(unbiased), keepdim),
    "var_mean.correction": lambda grads, self, dim, correction, keepdim: _var_mean_backward(
        grads, self, dim, _correction(True, correction), keepdim),
    "std_mean": lambda grads, self, unbiased, results: _var_mean_backward(
        grads, self, None, _correction(unbiased), False, True, results),
    "std_mean.dim": lambda grads, self, dim, unbiased, keepdim, results: _var_mean_backward(
        grads, self, dim, _correction(unbiased), keepdim, True, results),
    "std_mean.correction": lambda grads, self, dim, correction, keepdim, results: _var_mean_backward(
        grads, self, dim, _correction(True, correction), keepdim, True, results),
    "norm.Scalar": lambda grad, self, p, result: _norm_backward(grad, self, p, None, False, result),
    "norm.ScalarOpt_dim": _norm_backward,
    "norm.ScalarOpt_dim_dtype": _norm_backward,
    "norm.ScalarOpt_dtype": lambda grad, self, p, result: _norm_backward(grad, self, p, None, False, result),
    "logsumexp": lambda grad, self, dim, keepdim, result: _unsqueeze_dims(grad, self.shape, dim, keepdim) * (
        self - _unsqueeze_dims(result, self.shape, dim, keepdim)).exp(),
    "cumsum": _cumsum_backward,
    "cumprod": _cumprod_backward,
    "cummax": _cumextreme_backward,
    "cummin": _cumextreme_backward,
    "logcumsumexp": _logcumsumexp_backward,
    "softmax.int": _softmax_backward,
    "log_softmax.int": _log_softmax_backward,
    "sort": _sort_backward,
    "sort.stable": _sort_backward,
    "msort": _msort_backward,
    "topk": _sort_backward,
    "quantile": lambda grad, self, q, dim, keepdim, interpolation: (
        _quantile_backward(grad, self, q, dim, keepdim, interpolation), None),
    "quantile.scalar": lambda grad, self, q, dim, keepdim, interpolation: _quantile_backward(
        grad, self, q, dim, keepdim, interpolation),
    "nanquantile": lambda grad, self, q, dim, keepdim, interpolation: (
        _quantile_backward(grad, self, q, dim, keepdim, interpolation, True), None),
    "nanquantile.scalar": lambda grad, self, q, dim, keepdim, interpolation: _quantile_backward(
        grad, self, q, dim, keepdim, interpolation, True),
    "median": _evenly_distribute,
    "nanmedian": _evenly_distribute,
    "median.dim": _select_formula(),
    "nanmedian.dim": _select_formula(),
    "mode": _select_formula(),
    "kthvalue": _select_formula(),
    # PyTorch records these and raises when backward reaches them
    "_unique2": _not_implemented("_unique2"),
    "unique_consecutive": _not_implemented("unique_consecutive"),
    "unique_dim": _not_implemented("unique_dim"),
}

NONDIFFERENTIABLE = {
    "argmax", "argmin", "all", "all.dim", "all.dims", "any", "any.dim", "any.dims", "histc",
    "count_nonzero", "count_nonzero.dim_IntList", "argsort", "argsort.stable",
}
