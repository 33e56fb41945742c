"""Rules and Meta kernels of the reductions, scans and sorting family.

Each ``plan_*`` function checks an op's arguments against the input's shape and dtype (raising
PyTorch's errors) and returns what the result looks like: the wrapped dims, the output shape and
the output dtype. The CPU kernels (`ember/ops/cpu/reduction.py`, `cpu/sorting.py`) call the same
plans before touching data, so CPU and Meta agree and a failing op modifies nothing.
"""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import wrap_meta
from ... import return_types as rt
from .. import rules

I64 = _dt.int64
BOOL, INT, FLOAT, COMPLEX = _dt.BOOL, _dt.INT, _dt.FLOAT, _dt.COMPLEX


def not_implemented(kernel: str, d) -> NotImplementedError:
    """PyTorch's dtype-dispatch error: '"max_all" not implemented for 'ComplexFloat''."""
    return NotImplementedError(f"\"{kernel}\" not implemented for '{d.c10_name}'")


def sum_dtype(d, dtype):
    """sum/prod/cumsum: bool and integers accumulate to int64 unless `dtype` is given."""
    if dtype is not None:
        return dtype
    return I64 if d.category <= INT else d


def _nonzero_sizes(shape, dims, op, sep="(): "):
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{op}{sep}Expected reduction dim {d} to have non-zero size.")


def _dim1(self, dim, op):
    """One wrapped dim; 0-d tensors accept 0 and -1."""
    return rules.wrap_dim(dim, self.ndim, op)


def _keep_or_drop(shape, d, keepdim):
    if not shape:
        return ()
    return rules.reduced_shape(shape, (d,), keepdim)


# ---------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------
def plan_sum(self, dim, keepdim, dtype, op="sum"):
    dims = rules.reduction_dims(dim, self.ndim, op)
    return dims, rules.reduced_shape(self.shape, dims, keepdim), sum_dtype(self.dtype, dtype)


def plan_nansum(self, dim, keepdim, dtype, op="nansum"):
    if self.dtype.category == COMPLEX:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    if dtype is not None and dtype.category == COMPLEX and self.dtype.category == FLOAT:
        raise not_implemented("nansum_cpu", dtype)  # (integers summed as complex are fine)
    return plan_sum(self, dim, keepdim, dtype, op)


def plan_mean(self, dim, keepdim, dtype, op="mean"):
    if dtype is None:
        if self.dtype.category < FLOAT:
            raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either a floating "
                               f"point or complex dtype. Got: {self.dtype.c10_name}")
    elif dtype.category < FLOAT:
        raise RuntimeError(f"{op}(): could not infer output dtype. Optional dtype must be either a floating "
                           f"point or complex dtype. Got: {dtype.c10_name}")
    dims = rules.reduction_dims(dim, self.ndim, op)
    return dims, rules.reduced_shape(self.shape, dims, keepdim), dtype or self.dtype


def plan_nanmean(self, dim, keepdim, dtype):
    if self.dtype.category < FLOAT:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{self.dtype.c10_name}")
    if self.dtype.category == COMPLEX:
        raise RuntimeError("nansum on CPU does not support complex inputs")
    return plan_mean(self, dim, keepdim, dtype, "nanmean")


def plan_prod(self, dim, keepdim, dtype):
    dims = tuple(range(self.ndim)) if dim is None else (_dim1(self, dim, "prod"),)
    return dims, rules.reduced_shape(self.shape, dims, keepdim), sum_dtype(self.dtype, dtype)


def plan_max_all(self, op):
    if self.dtype.category == COMPLEX:
        raise not_implemented(f"{op}_all", self.dtype)
    if self.numel() == 0:
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. Specify "
                           f"the reduction dim with the 'dim' argument.")
    return (), self.dtype


def plan_max_dim(self, dim, keepdim, op):
    d = _dim1(self, dim, op)
    if self.ndim:
        _nonzero_sizes(self.shape, (d,), op)
    if self.dtype.category == COMPLEX:
        raise RuntimeError(f"{op}(): does not support complex input")
    return d, _keep_or_drop(self.shape, d, keepdim)


def plan_amax(self, dim, keepdim, op):
    dims = rules.reduction_dims(dim, self.ndim, op)
    if self.numel() == 0:
        if not dim:
            raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0. "
                               f"Specify the reduction dim with the 'dim' argument.")
        _nonzero_sizes(self.shape, dims, op)
    elif self.dtype.category == COMPLEX:  # a dtype error only fires when the kernel has elements to read
        raise not_implemented(f"{op[1:]}_values_cpu", self.dtype)
    return dims, rules.reduced_shape(self.shape, dims, keepdim)


def plan_aminmax(self, dim, keepdim):
    if dim is None:
        if self.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation "
                               "has no identity.")
        d, shape = None, ((1,) * self.ndim if keepdim else ())
    else:
        d = _dim1(self, dim, "aminmax")
        if self.ndim:
            _nonzero_sizes(self.shape, (d,), "aminmax", ": ")
        shape = _keep_or_drop(self.shape, d, keepdim)
    if self.dtype.category == COMPLEX:
        raise not_implemented("aminmax_cpu", self.dtype)
    return d, shape


def plan_argmax(self, dim, keepdim, op):
    cat = self.dtype.category
    if cat == BOOL or cat == COMPLEX:
        raise RuntimeError(f"{op}(): does not support {'bool' if cat == BOOL else 'complex'} input")
    if dim is None:
        if self.numel() == 0:
            raise IndexError(f"{op}(): Expected reduction dim to be specified for input.numel() == 0.")
        return None, ((1,) * self.ndim if keepdim else ())
    d = _dim1(self, dim, op)
    if self.ndim:
        _nonzero_sizes(self.shape, (d,), op)
    return d, _keep_or_drop(self.shape, d, keepdim)


def plan_var(self, dim, keepdim, op):
    if self.dtype.category < FLOAT:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = rules.reduction_dims(dim, self.ndim, op)
    return dims, rules.reduced_shape(self.shape, dims, keepdim), self.dtype.to_real()


def _fmt_p(p) -> str:
    return str(int(p)) if isinstance(p, float) and p.is_integer() else str(p)


def plan_norm(self, p, dim, keepdim, dtype, op="linalg.vector_norm"):
    """aten::norm's checks (those of linalg.vector_norm, plus its `dtype` quirks)."""
    d = self.dtype
    if d.category < FLOAT:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {d.c10_name}")
    if dtype is not None:
        if dtype.category < FLOAT:
            raise RuntimeError(f"norm(): the desired output dtype should be either floating point or complex. "
                               f"Got {dtype.c10_name} instead.")
        if (d.category == COMPLEX) != (dtype.category == COMPLEX):
            kind = "complex" if d.category == COMPLEX else "real"
            raise RuntimeError(f"{op}: dtype should be {kind} for {kind} inputs, but got {dtype.c10_name}")
        if d.category == COMPLEX:  # aten::norm writes a real result into a `dtype` (complex) output
            raise RuntimeError(f"Expected out tensor to have dtype {dtype.to_real().np}, but got "
                               f"c10::complex<{dtype.to_real().np}> instead")
        if _dt.promote_types(d, dtype) is not dtype:
            raise RuntimeError(f"{op}: the dtype of the input ({d.c10_name}) should be convertible without "
                               f"narrowing to the specified dtype ({dtype.c10_name})")
    dims = rules.reduction_dims(dim, self.ndim, op)
    if self.numel() == 0 and (p < 0 or p == float("inf")):
        if dim is None or len(dim) == 0:
            raise RuntimeError(f"{op} cannot compute the {_fmt_p(p)} norm on an empty tensor because the "
                               f"operation does not have an identity")
        for k in dims:
            if self.shape[k] == 0:
                raise RuntimeError(f"{op} cannot compute the {_fmt_p(p)} norm on the dimension {k}because this "
                                   f"dimension is empty and the operation does not have an identity")
    out_dt = (dtype or d).to_real()
    return dims, rules.reduced_shape(self.shape, dims, keepdim), out_dt


def plan_logsumexp(self, dim, keepdim):
    if len(dim) == 0:
        raise RuntimeError("logsumexp(): an empty dim list is not supported (PyTorch fails on its output shape)")
    dims = rules.reduction_dims(dim, self.ndim, "logsumexp")
    return dims, rules.reduced_shape(self.shape, dims, keepdim), rules.float_dtype(self.dtype)


def plan_all(self, dim, keepdim, op):
    """all/any. `dim` None: every dim; an int; a tuple (empty: no reduction, like PyTorch)."""
    out_dt = _dt.uint8 if self.dtype is _dt.uint8 else _dt.bool_
    if dim is None:
        dims = tuple(range(self.ndim))
    elif isinstance(dim, int):
        dims = (_dim1(self, dim, op),)
    else:
        dims = rules.wrap_dims(dim, self.ndim, op)
    if not self.ndim:
        dims = ()
    return dims, rules.reduced_shape(self.shape, dims, keepdim), out_dt


def plan_count_nonzero(self, dim):
    if dim is None:
        dims = tuple(range(self.ndim))
    elif isinstance(dim, int):
        dims = (_dim1(self, dim, "count_nonzero"),)
    else:
        dims = rules.reduction_dims(dim, self.ndim, "count_nonzero")
    return dims, rules.reduced_shape(self.shape, dims, False)


# ---------------------------------------------------------------------------------------
# scans and softmax
# ---------------------------------------------------------------------------------------
def plan_cumsum(self, dim, dtype, op):
    return _dim1(self, dim, op), sum_dtype(self.dtype, dtype)


def plan_cummax(self, dim, op):
    if self.dtype.category == COMPLEX and self.numel():
        raise not_implemented(f"{op}_cpu", self.dtype)
    return _dim1(self, dim, op)


def plan_logcumsumexp(self, dim):
    if self.dtype.category < FLOAT:
        raise not_implemented("logcumsumexp_out_cpu", self.dtype)
    return _dim1(self, dim, "logcumsumexp")


def plan_softmax(self, dim, dtype, op):
    d = _dim1(self, dim, op)
    out_dt = dtype or self.dtype
    if out_dt.category != FLOAT and self.numel():  # PyTorch skips the kernel (and its check) when empty
        last = self.ndim <= 1 or d == self.ndim - 1
        raise not_implemented(f"{op}_{'lastdim_' if last else ''}kernel_impl", out_dt)
    return d, out_dt


# ---------------------------------------------------------------------------------------
# sorting and selection
# ---------------------------------------------------------------------------------------
def plan_sort(self, dim, op="sort"):
    if self.dtype.category == COMPLEX:
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    return _dim1(self, dim, op)


def plan_topk(self, k, dim):
    if self.dtype.category == BOOL:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if self.dtype.category == COMPLEX:
        raise RuntimeError(" topk does not support complex dtypes on CPU")
    d = _dim1(self, dim, "topk")
    size = self.shape[d] if self.ndim else 1
    if k < 0 or k > size:
        raise RuntimeError("selected index k out of range")
    shape = tuple(k if i == d else s for i, s in enumerate(self.shape))
    return d, shape


def plan_median(self, dim, keepdim, op):
    if self.dtype.category in (BOOL, COMPLEX):
        raise not_implemented(f"{op}_cpu" if op != "nanmedian" else "median_cpu", self.dtype)
    if dim is None:
        return None, ()
    d = _dim1(self, dim, op)
    if self.ndim:
        _nonzero_sizes(self.shape, (d,), op)
    return d, _keep_or_drop(self.shape, d, keepdim)


def plan_mode(self, dim, keepdim):
    d = _dim1(self, dim, "mode")
    if self.ndim:
        _nonzero_sizes(self.shape, (d,), "mode")
    if self.dtype.category == COMPLEX and self.numel():
        raise not_implemented("mode_cpu", self.dtype)
    return d, _keep_or_drop(self.shape, d, keepdim)


def plan_kthvalue(self, k, dim, keepdim):
    d = _dim1(self, dim, "kthvalue")
    if self.ndim:
        _nonzero_sizes(self.shape, (d,), "kthvalue")
    if self.dtype.category in (BOOL, COMPLEX):
        raise not_implemented("kthvalue_cpu", self.dtype)
    size = self.shape[d] if self.ndim else 1
    if k < 1 or k > size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return d, _keep_or_drop(self.shape, d, keepdim)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def plan_quantile(self, q, dim, keepdim, interpolation, op):
    """q: a Python float or a tensor (scalar or 1-D). Returns (dim or None, out shape)."""
    if self.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    q_is_tensor = not isinstance(q, (int, float))
    if q_is_tensor and q.ndim > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
    if self.dtype not in (_dt.float32, _dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    if q_is_tensor and q.dtype is not self.dtype:
        raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if dim is None:
        d, shape = None, ((1,) * self.ndim if keepdim else ())
    else:
        d = _dim1(self, dim, op)
        shape = _keep_or_drop(self.shape, d, keepdim)
    if q_is_tensor and q.ndim == 1:
        shape = (q.shape[0],) + shape
    return d, shape


# ---------------------------------------------------------------------------------------
# Meta kernels (same signatures as the CPU kernels)
# ---------------------------------------------------------------------------------------
def _m(shape, dt):
    return wrap_meta(shape, dt)


def _pair(cls, shape, dt):
    return cls((wrap_meta(shape, dt), wrap_meta(shape, I64)))


def sum(self, dtype=None):
    return _m((), plan_sum(self, None, False, dtype)[2])


def sum_dim(self, dim, keepdim=False, dtype=None):
    return _m(*plan_sum(self, dim, keepdim, dtype)[1:])


def nansum(self, dim=None, keepdim=False, dtype=None):
    return _m(*plan_nansum(self, dim, keepdim, dtype)[1:])


def mean(self, dtype=None):
    return _m(*plan_mean(self, None, False, dtype)[1:])


def mean_dim(self, dim, keepdim=False, dtype=None):
    return _m(*plan_mean(self, dim, keepdim, dtype)[1:])


def nanmean(self, dim=None, keepdim=False, dtype=None):
    return _m(*plan_nanmean(self, dim, keepdim, dtype)[1:])


def prod(self, dtype=None):
    return _m(*plan_prod(self, None, False, dtype)[1:])


def prod_dim(self, dim, keepdim=False, dtype=None):
    return _m(*plan_prod(self, dim, keepdim, dtype)[1:])


def _all_kernel(op):
    def kernel(self):
        return _m(*plan_max_all(self, op))
    return kernel


def _dim_kernel(op, cls):
    def kernel(self, dim, keepdim=False):
        return _pair(cls, plan_max_dim(self, dim, keepdim, op)[1], self.dtype)
    return kernel


def _amax_kernel(op):
    def kernel(self, dim=(), keepdim=False):
        return _m(plan_amax(self, dim, keepdim, op)[1], self.dtype)
    return kernel


max_all, min_all = _all_kernel("max"), _all_kernel("min")
max_dim, min_dim = _dim_kernel("max", rt.max), _dim_kernel("min", rt.min)
amax, amin = _amax_kernel("amax"), _amax_kernel("amin")


def aminmax(self, dim=None, keepdim=False):
    shape = plan_aminmax(self, dim, keepdim)[1]
    return rt.aminmax((_m(shape, self.dtype), _m(shape, self.dtype)))


def _argmax_kernel(op):
    def kernel(self, dim=None, keepdim=False):
        return _m(plan_argmax(self, dim, keepdim, op)[1], I64)
    return kernel


argmax, argmin = _argmax_kernel("argmax"), _argmax_kernel("argmin")


def var_family(op, with_mean):
    """The three overloads (legacy unbiased, .dim, .correction) of var/std/var_mean/std_mean."""
    def run(self, dim, correction, keepdim):
        dims, shape, dt = plan_var(self, dim, keepdim, op)
        return (_m(shape, dt), _m(shape, self.dtype)) if with_mean else _m(shape, dt)
    return _var_overloads(run)


def _var_overloads(run):
    def legacy(self, unbiased=True):
        return run(self, None, 1 if unbiased else 0, False)

    def dim_(self, dim, unbiased=True, keepdim=False):
        return run(self, dim, 1 if unbiased else 0, keepdim)

    def correction(self, dim=None, correction=None, keepdim=False):
        return run(self, dim, 1 if correction is None else correction, keepdim)
    return legacy, dim_, correction


var, var_dim, var_correction = var_family("var", False)
std, std_dim, std_correction = var_family("std", False)
var_mean, var_mean_dim, var_mean_correction = var_family("var_mean", True)
std_mean, std_mean_dim, std_mean_correction = var_family("std_mean", True)


def norm(self, p=2, dim=None, keepdim=False, dtype=None):
    """All four aten::norm overloads, normalised by the table (p None = 2)."""
    return _m(*plan_norm(self, 2 if p is None else p, dim, keepdim, dtype)[1:])


def norm_dtype(self, p, dtype):
    return norm(self, p, None, False, dtype)


def logsumexp(self, dim, keepdim=False):
    return _m(*plan_logsumexp(self, dim, keepdim)[1:])


def _all_like(op):
    def full(self):
        return _m(*plan_all(self, None, False, op)[1:])

    def dim_(self, dim=None, keepdim=False):
        return _m(*plan_all(self, dim, keepdim, op)[1:])
    return full, dim_


all, all_dim = _all_like("all")
any, any_dim = _all_like("any")


def count_nonzero(self, dim=None):
    return _m(plan_count_nonzero(self, dim)[1], I64)


def cumsum(self, dim, dtype=None):
    return _m(self.shape, plan_cumsum(self, dim, dtype, "cumsum")[1])


def cumprod(self, dim, dtype=None):
    return _m(self.shape, plan_cumsum(self, dim, dtype, "cumprod")[1])


def cummax(self, dim):
    plan_cummax(self, dim, "cummax")
    return _pair(rt.cummax, self.shape, self.dtype)


def cummin(self, dim):
    plan_cummax(self, dim, "cummin")
    return _pair(rt.cummin, self.shape, self.dtype)


def logcumsumexp(self, dim):
    plan_logcumsumexp(self, dim)
    return _m(self.shape, self.dtype)


def softmax(self, dim, dtype=None):
    return _m(self.shape, plan_softmax(self, dim, dtype, "softmax")[1])


def log_softmax(self, dim, dtype=None):
    return _m(self.shape, plan_softmax(self, dim, dtype, "log_softmax")[1])


def sort(self, dim=-1, descending=False):
    plan_sort(self, dim)
    return _pair(rt.sort, self.shape, self.dtype)


def sort_stable(self, stable=None, dim=-1, descending=False):
    return sort(self, dim, descending)


def argsort(self, dim=-1, descending=False):
    plan_sort(self, dim, "argsort")
    return _m(self.shape, I64)


def argsort_stable(self, stable=False, dim=-1, descending=False):
    return argsort(self, dim, descending)


def msort(self):
    plan_sort(self, 0, "msort")
    return _m(self.shape, self.dtype)


def topk(self, k, dim=-1, largest=True, sorted=True):
    return _pair(rt.topk, plan_topk(self, k, dim)[1], self.dtype)


def median(self):
    plan_median(self, None, False, "median")
    return _m((), self.dtype)


def nanmedian(self):
    plan_median(self, None, False, "nanmedian")
    return _m((), self.dtype)


def median_dim(self, dim, keepdim=False):
    return _pair(rt.median, plan_median(self, dim, keepdim, "median")[1], self.dtype)


def nanmedian_dim(self, dim, keepdim=False):
    return _pair(rt.nanmedian, plan_median(self, dim, keepdim, "nanmedian")[1], self.dtype)


def mode(self, dim=-1, keepdim=False):
    return _pair(rt.mode, plan_mode(self, dim, keepdim)[1], self.dtype)


def kthvalue(self, k, dim=-1, keepdim=False):
    return _pair(rt.kthvalue, plan_kthvalue(self, k, dim, keepdim)[1], self.dtype)


def _quantile_kernel(op):
    def kernel(self, q, dim=None, keepdim=False, interpolation="linear"):
        return _m(plan_quantile(self, q, dim, keepdim, interpolation, op)[1], self.dtype)
    return kernel


quantile = _quantile_kernel("quantile")
nanquantile = _quantile_kernel("nanquantile")


def data_dependent(name):
    """unique & co.: the output size depends on the data, so Meta cannot run them (as in PyTorch)."""
    def kernel(*args):
        raise NotImplementedError(f"aten::{name}: attempted to run this operator with Meta tensors, but there "
                                  f"was no fake impl or Meta kernel registered (its output shape depends on "
                                  f"the data)")
    return kernel


def _binary_extreme(name):
    def kernel(self, other):
        if self.dtype.category == COMPLEX or other.dtype.category == COMPLEX:
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        return _m(rules.broadcast_shapes(self.shape, other.shape), rules.common_dtype(self, other))
    return kernel


max_other = _binary_extreme("maximum")
min_other = _binary_extreme("minimum")
