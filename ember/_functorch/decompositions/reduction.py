"""Decompositions of reductions and normalisers (ember/ops/table/reduction.py) into the core
reductions (sum.dim_IntList, mean, amax/amin, any, var.correction, prod, argmax/argmin, max.dim) and
pointwise ops. softmax and log_softmax are ATen's: subtract the max, exp, sum, divide (or log)."""
from __future__ import annotations

import math

from ._ops import aten, to, dims_of, is_float


def _bool_dtype():
    from ... import bool as bool_
    return bool_


def sum_all(self, dtype=None):
    return aten.sum.dim_IntList(self, None, dtype=dtype)


def nansum(self, dim=None, keepdim=False, dtype=None):
    if is_float(self):
        self = aten.where.self(aten.isnan.default(self), 0, self)
    return aten.sum.dim_IntList(self, dim, keepdim, dtype=dtype)


def nanmean(self, dim=None, keepdim=False, dtype=None):
    if not is_float(self) and not self.dtype.is_complex:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{self.dtype.c10_name}")
    present = aten.logical_not.default(aten.isnan.default(self))
    count = aten.sum.dim_IntList(present, dim, keepdim)
    return aten.div.Tensor(nansum(self, dim, keepdim, dtype=dtype), count)


def _check_nonempty_all(self, name):
    if self.numel() == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                           f"reduction dim with the 'dim' argument.")


def max_all(self):
    _check_nonempty_all(self, "max")
    return aten.amax.default(self, list(range(self.dim())))


def min_all(self):
    _check_nonempty_all(self, "min")
    return aten.amin.default(self, list(range(self.dim())))


def aminmax(self, dim=None, keepdim=False):
    from ... import return_types
    dims = [] if dim is None else [dim]
    if dim is None and keepdim:
        dims = list(range(self.dim()))
    low = aten.amin.default(self, dims, keepdim)
    high = aten.amax.default(self, dims, keepdim)
    return return_types.aminmax((low, high))


def _correction(unbiased):
    return 1 if unbiased else 0


def var_all(self, unbiased=True):
    return aten.var.correction(self, None, correction=_correction(unbiased))


def var_dim(self, dim, unbiased=True, keepdim=False):
    return aten.var.correction(self, dim, correction=_correction(unbiased), keepdim=keepdim)


def std_correction(self, dim=None, correction=None, keepdim=False):
    return aten.sqrt.default(aten.var.correction(self, dim, correction=correction, keepdim=keepdim))


def std_all(self, unbiased=True):
    return std_correction(self, None, _correction(unbiased))


def std_dim(self, dim, unbiased=True, keepdim=False):
    return std_correction(self, dim, _correction(unbiased), keepdim)


def var_mean_correction(self, dim=None, correction=None, keepdim=False):
    return (aten.var.correction(self, dim, correction=correction, keepdim=keepdim),
            aten.mean.dim(self, dim, keepdim))


def std_mean_correction(self, dim=None, correction=None, keepdim=False):
    return std_correction(self, dim, correction, keepdim), aten.mean.dim(self, dim, keepdim)


def var_mean_all(self, unbiased=True):
    return var_mean_correction(self, None, _correction(unbiased))


def var_mean_dim(self, dim, unbiased=True, keepdim=False):
    return var_mean_correction(self, dim, _correction(unbiased), keepdim)


def std_mean_all(self, unbiased=True):
    return std_mean_correction(self, None, _correction(unbiased))


def std_mean_dim(self, dim, unbiased=True, keepdim=False):
    return std_mean_correction(self, dim, _correction(unbiased), keepdim)


def linalg_vector_norm(self, ord=2, dim=None, keepdim=False, dtype=None):
    """sum(|x|^ord)^(1/ord); ord inf/-inf: amax/amin of |x|; ord 0: the count of non-zeros."""
    from ...ops.meta import reduction as rules
    if hasattr(rules, "check_vector_norm"):
        rules.check_vector_norm(self, ord, dim, dtype)
    if not is_float(self) and not self.dtype.is_complex:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{self.dtype.c10_name}")
    x = to(self, dtype)
    magnitude = aten.abs.default(x)
    dims = [] if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    if ord == math.inf:
        return aten.amax.default(magnitude, dims, keepdim)
    if ord == -math.inf:
        return aten.amin.default(magnitude, dims, keepdim)
    if ord == 0:
        return aten.sum.dim_IntList(aten.ne.Tensor(magnitude, 0), dims or None, keepdim, dtype=magnitude.dtype)
    if ord == 1:
        return aten.sum.dim_IntList(magnitude, dims or None, keepdim)
    if ord == 2:
        return aten.sqrt.default(aten.sum.dim_IntList(aten.mul.Tensor(magnitude, magnitude), dims or None, keepdim))
    powered = aten.sum.dim_IntList(aten.pow.Tensor_Tensor(magnitude, ord), dims or None, keepdim)
    return aten.pow.Tensor_Tensor(powered, 1.0 / ord)


def norm_scalar(self, p=2):
    return linalg_vector_norm(self, 2 if p is None else p)


def norm_dim(self, p, dim, keepdim=False):
    return linalg_vector_norm(self, 2 if p is None else p, dim, keepdim)


def norm_dim_dtype(self, p, dim, keepdim, dtype):
    return linalg_vector_norm(self, 2 if p is None else p, dim, keepdim, dtype=dtype)


def norm_dtype(self, p, dtype):
    return linalg_vector_norm(self, 2 if p is None else p, dtype=dtype)


def logsumexp(self, dim, keepdim=False):
    """max + log(sum(exp(x - max))); an infinite max is taken as 0 there (all -inf gives -inf)."""
    if not is_float(self):
        from ... import get_default_dtype
        self = to(self, get_default_dtype())
    dims = [dim] if isinstance(dim, int) else list(dim)
    if self.numel() == 0:
        return aten.log.default(aten.sum.dim_IntList(aten.exp.default(self), dims, keepdim))
    high = aten.amax.default(self, dims, True)
    high = aten.where.self(aten.isinf.default(high), 0, high)
    total = aten.sum.dim_IntList(aten.exp.default(aten.sub.Tensor(self, high)), dims, keepdim)
    if not keepdim:
        high = aten.squeeze.dims(high, dims_of(dims, self.dim()))
    return aten.add.Tensor(aten.log.default(total), high)


def all_all(self):
    return _uint8_result(self, aten.logical_not.default(aten.any.default(aten.logical_not.default(self))))


def all_dim(self, dim, keepdim=False):
    return _uint8_result(self, aten.logical_not.default(aten.any.dim(aten.logical_not.default(self), dim, keepdim)))


def all_dims(self, dim=None, keepdim=False):
    return _uint8_result(self, aten.logical_not.default(aten.any.dims(aten.logical_not.default(self), dim, keepdim)))


def _uint8_result(self, result):
    """all/any of a uint8 tensor are uint8 in PyTorch."""
    return to(result, self.dtype) if self.dtype.name == "uint8" else result


def count_nonzero(self, dim=None):
    return aten.sum.dim_IntList(aten.ne.Tensor(self, 0), dim if dim is None else [dim])


def count_nonzero_dims(self, dim):
    return aten.sum.dim_IntList(aten.ne.Tensor(self, 0), list(dim) or None)


def _softmax_input(self, dtype, kernel):
    x = to(self, dtype)
    if not is_float(x) and x.numel():
        raise NotImplementedError(f'"{kernel}" not implemented for \'{x.dtype.c10_name}\'')
    return x


def softmax(self, dim, dtype=None):
    x = _softmax_input(self, dtype, "softmax_lastdim_kernel_impl")
    if x.numel() == 0:
        return aten.clone.default(x)
    shifted = aten.exp.default(aten.sub.Tensor(x, aten.amax.default(x, [dim], True)))
    return aten.div.Tensor(shifted, aten.sum.dim_IntList(shifted, [dim], True))


def log_softmax(self, dim, dtype=None):
    x = _softmax_input(self, dtype, "log_softmax_lastdim_kernel_impl")
    if x.numel() == 0:
        return aten.clone.default(x)
    shifted = aten.sub.Tensor(x, aten.amax.default(x, [dim], True))
    total = aten.sum.dim_IntList(aten.exp.default(shifted), [dim], True)
    return aten.sub.Tensor(shifted, aten.log.default(total))


def argsort(self, dim=-1, descending=False):
    return aten.sort.default(self, dim, descending)[1]


def argsort_stable(self, stable, dim=-1, descending=False):
    return aten.sort.stable(self, stable=stable, dim=dim, descending=descending)[1]


def msort(self):
    return aten.sort.default(self, 0)[0]


DECOMPOSITIONS = {
    "sum": sum_all, "nansum": nansum, "nanmean": nanmean, "max": max_all, "min": min_all, "aminmax": aminmax,
    "var": var_all, "var.dim": var_dim, "std": std_all, "std.dim": std_dim, "std.correction": std_correction,
    "var_mean": var_mean_all, "var_mean.dim": var_mean_dim, "var_mean.correction": var_mean_correction,
    "std_mean": std_mean_all, "std_mean.dim": std_mean_dim, "std_mean.correction": std_mean_correction,
    "linalg_vector_norm": linalg_vector_norm, "norm.Scalar": norm_scalar, "norm.ScalarOpt_dim": norm_dim,
    "norm.ScalarOpt_dim_dtype": norm_dim_dtype, "norm.ScalarOpt_dtype": norm_dtype, "logsumexp": logsumexp,
    "all": all_all, "all.dim": all_dim, "all.dims": all_dims, "count_nonzero": count_nonzero,
    "count_nonzero.dim_IntList": count_nonzero_dims, "softmax.int": softmax, "log_softmax.int": log_softmax,
    "argsort": argsort, "argsort.stable": argsort_stable, "msort": msort,
}
