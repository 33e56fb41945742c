"""Reductions, scans, softmax, sorting and selection (table rows), and the Python-level API of
the family that is not one operator: ``torch.unique``, ``torch.unique_consecutive`` and
``nn.functional.softmax/log_softmax/softmin``.

Several rows share a Python name (``max``, ``max.dim``, ``max.other``): the generated binding
picks the first overload whose argument types match, so their order here matters (``max.dim``
before ``max.other``: an int also fits a Tensor parameter as a wrapped number).
"""
from __future__ import annotations

import warnings

from ..registry import Op, aten
from ..cpu import reduction as cpu
from ..cpu import sorting as cps
from ..meta import reduction as meta
from ..meta import histogram as meta_histogram

F = dict(variants="function")
OUT = dict(out=True)

OPS = [
    # -- sum / mean / prod --------------------------------------------------------------
    Op("sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", cpu=cpu.sum, meta=meta.sum, direct_binding=True),
    Op("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
       cpu=cpu.sum_dim, meta=meta.sum_dim, direct_binding=True, **OUT),
    Op("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
       cpu=cpu.nansum, meta=meta.nansum, **OUT),
    Op("mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", cpu=cpu.mean, meta=meta.mean, direct_binding=True),
    Op("mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
       cpu=cpu.mean_dim, meta=meta.mean_dim, **OUT),
    Op("nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
       cpu=cpu.nanmean, meta=meta.nanmean, **OUT),
    Op("prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", cpu=cpu.prod, meta=meta.prod),
    Op("prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
       cpu=cpu.prod_dim, meta=meta.prod_dim, **OUT),
    # -- max / min ------------------------------------------------------------------------
    Op("max(Tensor self) -> Tensor", cpu=cpu.max_all, meta=meta.max_all, **OUT),
    Op("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
       cpu=cpu.max_dim, meta=meta.max_dim, **OUT),
    Op("max.other(Tensor self, Tensor other) -> Tensor", cpu=cpu.max_other, meta=meta.max_other, **OUT),
    Op("min(Tensor self) -> Tensor", cpu=cpu.min_all, meta=meta.min_all, **OUT),
    Op("min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
       cpu=cpu.min_dim, meta=meta.min_dim, **OUT),
    Op("min.other(Tensor self, Tensor other) -> Tensor", cpu=cpu.min_other, meta=meta.min_other, **OUT),
    Op("amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", cpu=cpu.amax, meta=meta.amax, **OUT),
    Op("amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", cpu=cpu.amin, meta=meta.amin, **OUT),
    Op("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> (Tensor min, Tensor max)",
       cpu=cpu.aminmax, meta=meta.aminmax, **OUT),
    Op("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0) -> Tensor", cpu=cpu.histc,
       meta=meta_histogram.histc, **OUT),
    Op("argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", cpu=cpu.argmax, meta=meta.argmax,
       **OUT),
    Op("argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", cpu=cpu.argmin, meta=meta.argmin,
       **OUT),
    # -- var / std ------------------------------------------------------------------------
    Op("var(Tensor self, bool unbiased=True) -> Tensor", cpu=cpu.var, meta=meta.var),
    Op("var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
       cpu=cpu.var_dim, meta=meta.var_dim),
    Op("var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
       cpu=cpu.var_correction, meta=meta.var_correction),
    Op("std(Tensor self, bool unbiased=True) -> Tensor", cpu=cpu.std, meta=meta.std),
    Op("std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor",
       cpu=cpu.std_dim, meta=meta.std_dim),
    Op("std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
       cpu=cpu.std_correction, meta=meta.std_correction),
    Op("var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)", cpu=cpu.var_mean, meta=meta.var_mean, **F),
    Op("var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)",
       cpu=cpu.var_mean_dim, meta=meta.var_mean_dim, **F),
    Op("var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> "
       "(Tensor, Tensor)", cpu=cpu.var_mean_correction, meta=meta.var_mean_correction, **F),
    Op("std_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)", cpu=cpu.std_mean, meta=meta.std_mean, **F),
    Op("std_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)",
       cpu=cpu.std_mean_dim, meta=meta.std_mean_dim, **F),
    Op("std_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> "
       "(Tensor, Tensor)", cpu=cpu.std_mean_correction, meta=meta.std_mean_correction, **F),
    # -- aten::norm (ember.norm / Tensor.norm are Python code in the linalg family's table) --
    Op("norm.Scalar(Tensor self, Scalar p=2) -> Tensor", cpu=cpu.norm, meta=meta.norm, **F),
    Op("norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
       cpu=cpu.norm, meta=meta.norm, **F),
    Op("norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p, int[1] dim, bool keepdim, *, ScalarType dtype) -> Tensor",
       cpu=cpu.norm, meta=meta.norm, **F),
    Op("norm.ScalarOpt_dtype(Tensor self, Scalar? p, *, ScalarType dtype) -> Tensor",
       cpu=cpu.norm_dtype, meta=meta.norm_dtype, **F),
    Op("logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor", cpu=cpu.logsumexp,
       meta=meta.logsumexp, **OUT),
    # -- all / any / count_nonzero --------------------------------------------------------
    Op("all(Tensor self) -> Tensor", cpu=cpu.all, meta=meta.all),
    Op("all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", cpu=cpu.all_dim, meta=meta.all_dim),
    Op("all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", cpu=cpu.all_dim, meta=meta.all_dim),
    Op("any(Tensor self) -> Tensor", cpu=cpu.any, meta=meta.any),
    Op("any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", cpu=cpu.any_dim, meta=meta.any_dim),
    Op("any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", cpu=cpu.any_dim, meta=meta.any_dim),
    Op("count_nonzero(Tensor self, int? dim=None) -> Tensor", cpu=cpu.count_nonzero, meta=meta.count_nonzero),
    Op("count_nonzero.dim_IntList(Tensor self, int[] dim) -> Tensor", cpu=cpu.count_nonzero,
       meta=meta.count_nonzero),
    # -- scans and softmax ----------------------------------------------------------------
    Op("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", cpu=cps.cumsum, meta=meta.cumsum,
       inplace=True, out=True),
    Op("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", cpu=cps.cumprod, meta=meta.cumprod,
       inplace=True, out=True),
    Op("cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", cpu=cps.cummax, meta=meta.cummax, **OUT),
    Op("cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", cpu=cps.cummin, meta=meta.cummin, **OUT),
    Op("logcumsumexp(Tensor self, int dim) -> Tensor", cpu=cps.logcumsumexp, meta=meta.logcumsumexp, **OUT),
    Op("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", cpu=cps.softmax, meta=meta.softmax),
    Op("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", cpu=cps.log_softmax,
       meta=meta.log_softmax),
    # -- sorting and selection ------------------------------------------------------------
    Op("sort(Tensor self, int dim=-1, bool descending=False) -> (Tensor values, Tensor indices)",
       cpu=cps.sort, meta=meta.sort, **OUT),
    Op("sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False) -> "
       "(Tensor values, Tensor indices)", cpu=cps.sort_stable, meta=meta.sort_stable, **OUT),
    Op("argsort(Tensor self, int dim=-1, bool descending=False) -> Tensor", cpu=cps.argsort, meta=meta.argsort),
    Op("argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False) -> Tensor",
       cpu=cps.argsort_stable, meta=meta.argsort_stable),
    Op("msort(Tensor self) -> Tensor", cpu=cps.msort, meta=meta.msort, **OUT),
    Op("topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> "
       "(Tensor values, Tensor indices)", cpu=cps.topk, meta=meta.topk, **OUT),
    Op("_unique2(Tensor self, bool sorted=True, bool return_inverse=False, bool return_counts=False) -> "
       "(Tensor, Tensor, Tensor)", cpu=cps.unique2, meta=meta.data_dependent("_unique2"), **F),
    Op("unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, int? dim=None) -> "
       "(Tensor, Tensor, Tensor)", cpu=cps.unique_consecutive, meta=meta.data_dependent("unique_consecutive"),
       **F),
    Op("unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, bool return_counts=False) "
       "-> (Tensor, Tensor, Tensor)", cpu=cps.unique_dim, meta=meta.data_dependent("unique_dim"), variants="function",
       python_name="_unique_dim"),
    Op("median(Tensor self) -> Tensor", cpu=cps.median, meta=meta.median),
    Op("median.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
       cpu=cps.median_dim, meta=meta.median_dim, **OUT),
    Op("nanmedian(Tensor self) -> Tensor", cpu=cps.nanmedian, meta=meta.nanmedian),
    Op("nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
       cpu=cps.nanmedian_dim, meta=meta.nanmedian_dim, **OUT),
    Op("mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
       cpu=cps.mode, meta=meta.mode, **OUT),
    Op("kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False) -> (Tensor values, Tensor indices)",
       cpu=cps.kthvalue, meta=meta.kthvalue, **OUT),
    Op("quantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, str interpolation=\"linear\") "
       "-> Tensor", cpu=cps.quantile, meta=meta.quantile),
    Op("quantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation=\"linear\") "
       "-> Tensor", cpu=cps.quantile, meta=meta.quantile),
    Op("nanquantile.scalar(Tensor self, float q, int? dim=None, bool keepdim=False, *, "
       "str interpolation=\"linear\") -> Tensor", cpu=cps.nanquantile, meta=meta.nanquantile),
    Op("nanquantile(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, str interpolation=\"linear\") "
       "-> Tensor", cpu=cps.nanquantile, meta=meta.nanquantile),
]


# ---------------------------------------------------------------------------------------
# Python-level API (torch.functional / torch._tensor / torch.nn.functional)
# ---------------------------------------------------------------------------------------
def _unique_result(out, inverse, counts, return_inverse, return_counts):
    if return_inverse and return_counts:
        return out, inverse, counts
    if return_inverse:
        return out, inverse
    if return_counts:
        return out, counts
    return out


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """``torch.unique``: the sorted unique elements (or slices along `dim`), with the inverse
    indices and/or counts when asked (then a tuple)."""
    if dim is None:
        res = aten._unique2.default(input, sorted, return_inverse, return_counts)
    else:
        res = aten.unique_dim.default(input, dim, sorted, return_inverse, return_counts)
    return _unique_result(*res, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """``torch.unique_consecutive``: collapse consecutive repeats."""
    res = aten.unique_consecutive.default(input, return_inverse, return_counts, dim)
    return _unique_result(*res, return_inverse, return_counts)


def _softmax_dim(name, ndim, stacklevel):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                  f"dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def _functional(name, op, negate=False):
    def fn(input, dim=None, _stacklevel=3, dtype=None):
        if dim is None:
            dim = _softmax_dim(name, input.ndim, _stacklevel)
        if negate:
            input = -input
        return op(input, dim, dtype)
    fn.__name__ = name
    fn.__doc__ = f"``nn.functional.{name}(input, dim=None, _stacklevel=3, dtype=None)``."
    return fn


def _softmax_op(input, dim, dtype):
    return aten.softmax.int(input, dim, dtype)


def _log_softmax_op(input, dim, dtype):
    return aten.log_softmax.int(input, dim, dtype)


PYTHON_FUNCTIONS = {
    "": {"unique": unique, "unique_consecutive": unique_consecutive},
    "nn.functional": {
        "softmax": _functional("softmax", _softmax_op),
        "log_softmax": _functional("log_softmax", _log_softmax_op),
        "softmin": _functional("softmin", _softmax_op, negate=True),
    },
}
PYTHON_METHODS = {"unique": unique, "unique_consecutive": unique_consecutive}
