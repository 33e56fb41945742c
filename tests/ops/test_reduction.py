"""Oracle tests of the reductions, scans, softmax and sorting family against PyTorch."""
import numpy as np
import pytest
import torch

import ember
from oracle import DEVICE, check, check_as_2_13, check_raises, make, torch_raises, ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES

SHAPES = [(), (0,), (5,), (3, 4), (2, 3, 4), (2, 0, 3)]
NONEMPTY = [(), (5,), (3, 4), (2, 3, 4)]
REAL = ("bool",) + INT_DTYPES + FLOAT_DTYPES
SORTABLE = INT_DTYPES + FLOAT_DTYPES


# PyTorch multiplies float16/bfloat16 products step by step in the half type (rounding each
# step); ember accumulates in float32 and rounds once, so half products agree only loosely.
HALF_PROD_TOL = {"float16": dict(rtol=2e-2, atol=1e-2), "bfloat16": dict(rtol=8e-2, atol=5e-2)}


def with_nans(shape, dtype="float32", seed=0):
    a = make(shape, dtype, seed=seed)
    if a.size:
        a.reshape(-1)[:: 3] = np.nan
    return a


def distinct(shape, dtype="float32", seed=0):
    """Values without ties (so index results are unambiguous)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) if shape else 1
    vals = rng.permutation(n).astype(np.float64) - n // 2
    if dtype == "uint8" and n:
        vals -= vals.min()
    return vals.reshape(shape).astype(np.float32 if dtype == "bfloat16" else dtype)


def dims_for(shape):
    nd = len(shape)
    out = [None, 0, -1]
    if nd >= 2:
        out += [(0, -1), [1]]
    return out


# ---------------------------------------------------------------------------------------
# sum / nansum / mean / nanmean / prod
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sum_all_dtypes(shape, dtype):
    check(lambda lib, x: lib.sum(x), make(shape, dtype), dtype=dtype)
    check(lambda lib, x: x.sum(0, keepdim=True), make(shape, dtype), dtype=dtype)
    check(lambda lib, x: lib.prod(x), make(shape, dtype), dtype=dtype, **HALF_PROD_TOL.get(dtype, {}))
    check(lambda lib, x: x.mean(), make(shape, dtype), dtype=dtype)  # ints raise


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_mean_dims(shape, keepdim):
    for dim in dims_for(shape):
        if dim is None:
            continue
        check(lambda lib, x: lib.sum(x, dim, keepdim), make(shape), noncontig=True)
        check(lambda lib, x: x.mean(dim=dim, keepdim=keepdim), make(shape, "float64"))
        check(lambda lib, x: lib.nansum(x, dim, keepdim), with_nans(shape))
        check(lambda lib, x: lib.nanmean(x, dim, keepdim), with_nans(shape))
        if isinstance(dim, int):
            check(lambda lib, x: lib.prod(x, dim, keepdim), make(shape, "int32"), dtype="int32")
    check(lambda lib, x: lib.sum(x, dim=[]), make(shape))
    check(lambda lib, x: lib.mean(x, ()), make(shape))


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "float16", "bfloat16", "float32"])
def test_sum_dtype_arg(dtype):
    x = make((3, 4), dtype)
    check(lambda lib, x: lib.sum(x, dtype=lib.float64), x, dtype=dtype)
    check(lambda lib, x: lib.sum(x, 1, dtype=lib.int8), x, dtype=dtype)
    check(lambda lib, x: lib.prod(x, 0, dtype=lib.float32), x, dtype=dtype)
    check(lambda lib, x: lib.mean(x, dtype=lib.float64), x, dtype=dtype)
    check(lambda lib, x: lib.mean(x, 1, dtype=lib.int64), x, dtype=dtype)  # raises
    check(lambda lib, x: lib.nansum(x, dtype=lib.float32), x, dtype=dtype)


@pytest.mark.parametrize("dtype", ["int64", "bool", "complex64", "float16"])
def test_nan_reductions_dtypes(dtype):
    check(lambda lib, x: lib.nansum(x, 0), make((3, 2), dtype), dtype=dtype)
    check(lambda lib, x: lib.nanmean(x), make((3, 2), dtype), dtype=dtype)


def test_sum_errors():
    x = make((2, 3))
    check_raises(lambda lib, x: lib.sum(x, 2), x, exc=IndexError, match="sum")
    check_raises(lambda lib, x: lib.sum(x, (0, 0)), x, exc=RuntimeError, match="multiple times")
    check_raises(lambda lib, x: lib.sum(x, -3), x, exc=IndexError)
    check_raises(lambda lib, x: lib.sum(x, 1), make(()), exc=IndexError)
    check_raises(lambda lib, x: lib.mean(x), make((2,), "int64"), dtype="int64", exc=RuntimeError, match="mean")
    check_raises(lambda lib, x: lib.prod(x, 3), x, exc=IndexError)


# ---------------------------------------------------------------------------------------
# max / min / amax / amin / aminmax / argmax / argmin
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_max_min_all_dtypes(shape, dtype):
    x = make(shape, dtype)
    for op in ("max", "min"):
        check(lambda lib, x: getattr(lib, op)(x), x, dtype=dtype)
        check(lambda lib, x: getattr(x, op)(-1), x, dtype=dtype)
        check(lambda lib, x: getattr(lib, "a" + op)(x, 0, keepdim=True), x, dtype=dtype)
        check(lambda lib, x: getattr(lib, "arg" + op)(x), x, dtype=dtype)
        check(lambda lib, x: getattr(lib, "arg" + op)(x, 0), x, dtype=dtype)
    check(lambda lib, x: lib.aminmax(x), x, dtype=dtype)
    check(lambda lib, x: lib.aminmax(x, dim=0), x, dtype=dtype)


@pytest.mark.parametrize("shape", NONEMPTY)
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_dim_ties_and_nan(shape, keepdim):
    ints = make(shape, "int8", low=-1, high=1)  # many ties: first index wins
    nans = with_nans(shape, "float64")
    for x, dt in ((ints, "int8"), (nans, "float64"), (make(shape, "bfloat16"), "bfloat16")):
        for dim in (0, -1):
            check(lambda lib, x: lib.max(x, dim, keepdim), x, dtype=dt, noncontig=True)
            check(lambda lib, x: lib.min(x, dim=dim, keepdim=keepdim), x, dtype=dt)
            check(lambda lib, x: lib.argmax(x, dim, keepdim), x, dtype=dt, noncontig=True)
            check(lambda lib, x: lib.argmin(x, dim, keepdim=keepdim), x, dtype=dt)
            check(lambda lib, x: lib.aminmax(x, dim=dim, keepdim=keepdim), x, dtype=dt)
        check(lambda lib, x: lib.amax(x, dims_for(shape)[-1] if len(shape) > 1 else 0, keepdim), x, dtype=dt)
        check(lambda lib, x: lib.amin(x, (), keepdim), x, dtype=dt)
        check(lambda lib, x: lib.argmax(x, keepdim=keepdim), x, dtype=dt)
        check(lambda lib, x: lib.aminmax(x, keepdim=keepdim), x, dtype=dt)


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("int32", "float16"), ("bool", "bool"),
                                   ("uint8", "int8"), ("int64", "float64"), ("complex64", "float32")])
def test_max_other(da, db):
    a, b = make((3, 4), da, seed=1), make((4,), db, seed=2)
    check(lambda lib, a, b: lib.max(a.to(getattr(lib, da)), b.to(getattr(lib, db))), a, b)
    check(lambda lib, a, b: a.to(getattr(lib, da)).min(b.to(getattr(lib, db))), a, b)
    check(lambda lib, a, b: lib.max(a, b), with_nans((3, 4)), make((3, 1)))
    check(lambda lib, a, b: lib.max(a, b), make((3, 4)), make((2, 4)))  # broadcast error


def test_max_errors():
    e = make((0,))
    check_raises(lambda lib, x: lib.max(x), e, exc=RuntimeError, match="numel")
    check_raises(lambda lib, x: lib.max(x, 0), make((0, 3)), exc=IndexError, match="non-zero size")
    check_raises(lambda lib, x: lib.amax(x), e, exc=RuntimeError)
    check_raises(lambda lib, x: lib.amin(x, 0), make((0, 3)), exc=IndexError)
    check_raises(lambda lib, x: lib.argmax(x), e, exc=IndexError)
    check_raises(lambda lib, x: lib.argmin(x, 0), make((0, 2)), exc=IndexError)
    check_raises(lambda lib, x: lib.aminmax(x), e, exc=RuntimeError)
    check_raises(lambda lib, x: lib.aminmax(x, dim=0), make((0, 2)), exc=IndexError)
    check_raises(lambda lib, x: lib.max(x, 2), make((3, 2)), exc=IndexError)
    check_raises(lambda lib, x: lib.argmax(x, 1), make(()), exc=IndexError)
    check_raises(lambda lib, x: lib.amax(x, (1, 1)), make((3, 2)), exc=RuntimeError)
    check(lambda lib, x: lib.max(x, 1), make((0, 3)))
    check(lambda lib, x: lib.argmax(x, 1, True), make((0, 3)))


# ---------------------------------------------------------------------------------------
# var / std / var_mean / std_mean
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES + ("complex128",))
def test_var_dtypes(dtype):
    x = make((3, 4), dtype)
    check(lambda lib, x: lib.var(x), x, dtype=dtype)
    check(lambda lib, x: x.std(1), x, dtype=dtype)
    check(lambda lib, x: lib.var_mean(x, 0), x, dtype=dtype)
    check(lambda lib, x: lib.std_mean(x, correction=0), x, dtype=dtype)


@pytest.mark.parametrize("shape", SHAPES)
def test_var_forms(shape):
    x = make(shape, "float64")
    with _nowarn():
        check(lambda lib, x: lib.var(x), x)
        check(lambda lib, x: lib.var(x, False), x)
        check(lambda lib, x: x.var(unbiased=False), x)
        check(lambda lib, x: lib.std(x, 0, True, True), x, noncontig=True)
        check(lambda lib, x: lib.std(x, dim=0, keepdim=True), x)
        check(lambda lib, x: lib.var(x, -1, correction=0), x)
        check(lambda lib, x: lib.var(x, None, correction=2.5), x)
        check(lambda lib, x: lib.var(x, [], correction=1), x)
        check(lambda lib, x: lib.var_mean(x, 0, False, True), x)
        check(lambda lib, x: lib.std_mean(x, dim=-1, correction=3, keepdim=True), x)
        check(lambda lib, x: lib.var(x, 5), x)  # IndexError


class _nowarn:
    def __enter__(self):
        import warnings
        self.cm = warnings.catch_warnings()
        self.cm.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *a):
        self.cm.__exit__(*a)


# ---------------------------------------------------------------------------------------
# norm / logsumexp
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 1, 3, 0.5, 0, float("inf"), -float("inf"), -1, "fro", None])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)])
def test_norm_p(p, shape):
    x = make(shape, "float64")
    check(lambda lib, x: lib.norm(x, p), x)
    check(lambda lib, x: x.norm(p, 0), x, noncontig=True)
    check(lambda lib, x: lib.norm(x, p, -1, True), x)
    if len(shape) >= 2:
        check(lambda lib, x: lib.norm(x, p, (0, 1)), x)


@pytest.mark.parametrize("dtype", ALL_DTYPES + ("complex128",))
def test_norm_dtypes(dtype):
    x = make((3, 4), dtype)
    check(lambda lib, x: lib.norm(x), x, dtype=dtype)
    check(lambda lib, x: lib.norm(x, 1, 1), x, dtype=dtype)
    check(lambda lib, x: lib.norm(x, dtype=lib.float64), x, dtype=dtype)
    # the aten::norm overloads themselves (torch.norm is Python code over linalg.vector_norm)
    check(lambda lib, x: lib.ops.aten.norm.Scalar(x, 3), x, dtype=dtype)
    check(lambda lib, x: lib.ops.aten.norm.ScalarOpt_dim(x, 1, [1], True), x, dtype=dtype)
    check(lambda lib, x: lib.ops.aten.norm.ScalarOpt_dtype(x, 2, dtype=lib.float64), x, dtype=dtype)
    check(lambda lib, x: lib.ops.aten.norm.ScalarOpt_dim_dtype(x, None, [0], False, dtype=lib.complex128), x,
          dtype=dtype)
    check(lambda lib, x: lib.ops.aten.norm.ScalarOpt_dim(x.to("meta"), 2, [0]), x, dtype=dtype)


def test_norm_empty_and_errors():
    check(lambda lib, x: lib.norm(x), make((0,)))
    check(lambda lib, x: lib.norm(x, 0), make((0,)))
    check(lambda lib, x: lib.norm(x, float("inf"), 1), make((0, 3)))
    check_raises(lambda lib, x: lib.norm(x, float("inf")), make((0,)), exc=RuntimeError)
    check_raises(lambda lib, x: lib.norm(x, -1, 0), make((0, 3)), exc=RuntimeError)
    check_raises(lambda lib, x: lib.norm(x, dtype=lib.float16), make((2,)), exc=RuntimeError)
    check_raises(lambda lib, x: lib.norm(x, 2, 3), make((2,)), exc=IndexError)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_logsumexp(shape, dtype):
    x = make(shape, dtype)
    check(lambda lib, x: lib.logsumexp(x, 0), x, dtype=dtype)
    check(lambda lib, x: x.logsumexp(-1, keepdim=True), x, dtype=dtype, noncontig=True)
    if len(shape) >= 2:
        check(lambda lib, x: lib.logsumexp(x, (0, 1)), x, dtype=dtype)


def test_logsumexp_stable_and_inf():
    big = np.array([[1000.0, 1000.0], [-1000.0, -1001.0]], np.float32)
    check(lambda lib, x: lib.logsumexp(x, 1), big)
    inf = np.array([[np.inf, np.inf], [-np.inf, -np.inf], [np.inf, 1.0], [np.nan, 1.0]], np.float32)
    check(lambda lib, x: lib.logsumexp(x, 1), inf)
    check_raises(lambda lib, x: lib.logsumexp(x, (0, 0)), big, exc=RuntimeError)


# ---------------------------------------------------------------------------------------
# all / any / count_nonzero
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_all_any(shape, dtype):
    x = make(shape, dtype, low=0, high=2)
    for op in ("all", "any"):
        check(lambda lib, x: getattr(lib, op)(x), x, dtype=dtype)
        check(lambda lib, x: getattr(x, op)(0), x, dtype=dtype)
        check(lambda lib, x: getattr(lib, op)(x, -1, keepdim=True), x, dtype=dtype, noncontig=True)
        check(lambda lib, x: getattr(lib, op)(x, dim=()), x, dtype=dtype)
        if len(shape) >= 2:
            check(lambda lib, x: getattr(lib, op)(x, (0, -1)), x, dtype=dtype)
    check(lambda lib, x: lib.count_nonzero(x), x, dtype=dtype)
    check(lambda lib, x: x.count_nonzero(0), x, dtype=dtype)
    check(lambda lib, x: lib.count_nonzero(x, dims_for(shape)[-1] if len(shape) > 1 else ()), x, dtype=dtype)


def test_all_any_errors():
    check_raises(lambda lib, x: lib.all(x, 2), make((2, 2)), exc=IndexError)
    check_raises(lambda lib, x: lib.any(x, (0, 0)), make((2, 2)), exc=RuntimeError)
    check_raises(lambda lib, x: lib.count_nonzero(x, [1, 1]), make((2, 2)), exc=RuntimeError)
    check_raises(lambda lib, x: lib.count_nonzero(x, 3), make((2, 2)), exc=IndexError)


# ---------------------------------------------------------------------------------------
# scans
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_scans(shape, dtype):
    x = make(shape, dtype)
    for dim in (0, -1):
        check(lambda lib, x: lib.cumsum(x, dim), x, dtype=dtype, noncontig=True)
        check(lambda lib, x: x.cumprod(dim), x, dtype=dtype, **HALF_PROD_TOL.get(dtype, {}))
        check(lambda lib, x: lib.cummax(x, dim), x, dtype=dtype, noncontig=True)
        check(lambda lib, x: lib.cummin(x, dim), x, dtype=dtype)
        check(lambda lib, x: _log_branch_free(lib, lib.logcumsumexp(x, dim)), x, dtype=dtype)
    check(lambda lib, x: lib.cumsum(x, 0, dtype=lib.float64), x, dtype=dtype)


def _log_branch_free(lib, y):
    """A complex log on CUDA compared modulo 2*pi*i (its real part and the sine and cosine of its
    imaginary part): PyTorch's parallel CUDA scan adds the imaginary parts in another order and
    lands on another branch of the log; elsewhere `y` itself."""
    if DEVICE != "cuda" or not y.is_complex():
        return y
    return y.real, lib.cos(y.imag), lib.sin(y.imag)
    check(lambda lib, x: lib.cumsum(x, 5), x, dtype=dtype)  # IndexError


def test_scan_nan_ties_inplace():
    x = np.array([[1.0, np.nan, 3.0, np.nan, 0.0], [2.0, 2.0, 1.0, 2.0, 5.0]])
    for op in ("cummax", "cummin"):
        check(lambda lib, x: getattr(lib, op)(x, 1), x)
    check(lambda lib, x: lib.logcumsumexp(x, 1), np.array([[-np.inf, 1.0, np.inf, 2.0]]))
    check(lambda lib, x: x.cumsum_(0), make((3, 4), "int32"), dtype="int32")
    check(lambda lib, x: lib.cumprod(x, 1, out=lib.empty(0)), make((2, 3)))


# ---------------------------------------------------------------------------------------
# softmax / log_softmax / nn.functional
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax(shape, dtype):
    x = make(shape, dtype)
    for dim in (0, -1):
        check(lambda lib, x: lib.softmax(x, dim), x, dtype=dtype, noncontig=True)
        check(lambda lib, x: x.log_softmax(dim), x, dtype=dtype)
        check(lambda lib, x: lib.softmax(x, dim, dtype=lib.float64), x, dtype=dtype)
    check(lambda lib, x: lib.log_softmax(x, 0, lib.int32), x, dtype=dtype)


def test_softmax_stable_and_functional():
    big = np.array([[1000.0, 999.0, -1000.0], [-np.inf, 0.0, 1.0]], np.float32)
    check(lambda lib, x: lib.softmax(x, 1), big)
    check(lambda lib, x: lib.log_softmax(x, 1), big)
    for name in ("softmax", "log_softmax", "softmin"):
        for shape in [(3,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
            with _nowarn():
                check(lambda lib, x: getattr(lib.nn.functional, name)(x), make(shape))
            check(lambda lib, x: getattr(lib.nn.functional, name)(x, -1, dtype=lib.float64), make(shape))
            check(lambda lib, x: getattr(lib.nn.functional, name)(x, dim=0), make(shape, "float16"), dtype="float16")
    check_raises(lambda lib, x: lib.softmax(x, 2), make((2, 2)), exc=IndexError)


# ---------------------------------------------------------------------------------------
# sort / argsort / msort / topk
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sort(shape, dtype):
    x = make(shape, dtype)  # ints: many ties; stable=True orders them in both (on the CPU, every sort does)
    for dim in (0, -1):
        for desc in (False, True):
            check(lambda lib, x: lib.sort(x, dim, desc), x, dtype=dtype, noncontig=True, ties_along=dim)
            check(lambda lib, x: x.argsort(dim=dim, descending=desc), x, dtype=dtype, ties_along=dim)
            check(lambda lib, x: lib.sort(x, stable=True, dim=dim, descending=desc), x, dtype=dtype)
    check(lambda lib, x: lib.msort(x), x, dtype=dtype)
    check(lambda lib, x: lib.argsort(x, stable=True), x, dtype=dtype)


def test_sort_nan():
    x = with_nans((4, 6), "float64")
    for desc in (False, True):
        check(lambda lib, x: lib.sort(x, 1, desc), x, ties_along=1)
        check(lambda lib, x: lib.argsort(x, 0, desc), x, ties_along=0)
        check(lambda lib, x: lib.topk(x, 3, 1, largest=not desc), x, ties_along=1)
        check(lambda lib, x: lib.sort(x, stable=True, dim=1, descending=desc), x)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4), (0, 3)])
def test_topk(shape, dtype):
    x = distinct(shape, dtype) if dtype not in ("bool", "complex64") else make(shape, dtype)
    n = shape[-1] if shape else 1
    for k in sorted({0, 1, n}):
        if k == 0 and not shape:
            continue
        check(lambda lib, x: lib.topk(x, k), x, dtype=dtype, noncontig=True)
        check(lambda lib, x: x.topk(k, largest=False), x, dtype=dtype)
    if len(shape) >= 2 and shape[0]:
        check(lambda lib, x: lib.topk(x, 2, dim=0, largest=False), x, dtype=dtype)
    check(lambda lib, x: lib.topk(x, n + 1), x, dtype=dtype)  # RuntimeError


# ---------------------------------------------------------------------------------------
# unique / unique_consecutive
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_unique(shape, dtype):
    x = make(shape, dtype, low=-2, high=2)
    for inv in (False, True):
        for counts in (False, True):
            check(lambda lib, x: lib.unique(x, return_inverse=inv, return_counts=counts), x, dtype=dtype)
            check(lambda lib, x: x.unique_consecutive(return_inverse=inv, return_counts=counts), x, dtype=dtype)
    check(lambda lib, x: lib.unique(x, sorted=True), x, dtype=dtype, noncontig=True)


def test_unique_nan_and_dim():
    check(lambda lib, x: lib.unique(x, return_counts=True), np.array([3.0, np.nan, 1.0, np.nan, 3.0]))
    check(lambda lib, x: lib.unique_consecutive(x), np.array([1.0, np.nan, np.nan, 3.0]))
    rows = np.array([[1, 2], [1, 2], [0, 5], [1, 2]])
    for dim in (0, 1, -1):
        check(lambda lib, x: lib.unique(x, dim=dim, return_inverse=True, return_counts=True), rows)
        check(lambda lib, x: lib.unique_consecutive(x, True, True, dim), rows)
    check(lambda lib, x: lib.unique(x, dim=0), make((0, 3)))
    check_raises(lambda lib, x: lib.unique(x, dim=1), make((0, 3)), exc=RuntimeError)
    check_raises(lambda lib, x: lib.unique(x, dim=0), make(()), exc=IndexError)
    check_raises(lambda lib, x: lib.unique(x, dim=2), rows, exc=IndexError)
    check(lambda lib, x: lib.unique(x.to("meta")), make((3,)))  # NotImplementedError in both


# ---------------------------------------------------------------------------------------
# median / nanmedian / mode / kthvalue / quantile
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (4,), (3, 4), (2, 3, 4)])
def test_median_kthvalue(shape, dtype):
    x = distinct(shape, dtype) if dtype not in ("bool", "complex64") else make(shape, dtype)
    for op in ("median", "nanmedian"):
        if shape != (0,) or dtype in FLOAT_DTYPES:
            check(lambda lib, x: getattr(lib, op)(x), x, dtype=dtype)
        if 0 not in shape:
            check(lambda lib, x: getattr(x, op)(-1), x, dtype=dtype, noncontig=True)
            check(lambda lib, x: getattr(lib, op)(x, 0, keepdim=True), x, dtype=dtype)
    if 0 not in shape:
        check(lambda lib, x: lib.kthvalue(x, 1), x, dtype=dtype)
        check(lambda lib, x: x.kthvalue(shape[0] if shape else 1, 0, True), x, dtype=dtype, noncontig=True)
        check(lambda lib, x: lib.kthvalue(x, 0), x, dtype=dtype)  # RuntimeError


def test_median_nan():
    x = with_nans((3, 5), "float64")
    x[2] = np.nan
    for op in ("median", "nanmedian"):
        check(lambda lib, x: getattr(lib, op)(x), x)
        check(lambda lib, x: getattr(lib, op)(x, 0), x)
    check(lambda lib, x: lib.median(x, 1), x)
    check(lambda lib, x: lib.nanmedian(x, 1).values, x)  # the index of an all-NaN row is arbitrary in torch
    check(lambda lib, x: lib.nanmedian(x[:2], 1), x)
    check(lambda lib, x: lib.kthvalue(x[:2], 3, 1), x)  # the 3 non-NaN values come first
    check_raises(lambda lib, x: lib.median(x, 0), make((0, 3)), exc=IndexError)


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)])
def test_mode(shape, dtype):
    x = make(shape, dtype, low=-1, high=1)  # many ties: smallest value, last index
    check(lambda lib, x: lib.mode(x), x, dtype=dtype)
    check(lambda lib, x: x.mode(0, keepdim=True), x, dtype=dtype, noncontig=True)
    check(lambda lib, x: lib.mode(x, 5), x, dtype=dtype)  # IndexError


def test_mode_errors():
    check_raises(lambda lib, x: lib.mode(x, 0), make((0, 3)), exc=IndexError)
    check(lambda lib, x: lib.mode(x, 1), make((0, 3)))
    check_raises(lambda lib, x: lib.mode(x), make((3,), "complex64"), dtype="complex64", exc=NotImplementedError)


@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)])
def test_quantile(shape, interp):
    x = make(shape, "float64")
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    check(lambda lib, x: lib.quantile(x, 0.3, interpolation=interp), x)
    check(lambda lib, x, q: lib.quantile(x, q, 0, interpolation=interp), x, q)
    check(lambda lib, x, q: x.quantile(q, -1, True, interpolation=interp), x, q, noncontig=True)
    check(lambda lib, x: lib.nanquantile(x, 0.7, keepdim=True, interpolation=interp), with_nans(shape, "float64"))
    check(lambda lib, x, q: lib.nanquantile(x, q, -1, interpolation=interp), with_nans(shape, "float64"), q)
    check(lambda lib, x: lib.quantile(x, 0.5, 0), with_nans(shape, "float64"))


def test_quantile_errors():
    x = make((3, 4))
    check_raises(lambda lib, x: lib.quantile(x, 1.5), x, exc=RuntimeError)
    check_raises(lambda lib, x, q: lib.quantile(x, q), x, np.array([[0.5]], np.float32), exc=RuntimeError)
    check_raises(lambda lib, x, q: lib.quantile(x, q), x, np.array([0.5]), exc=RuntimeError)
    check_raises(lambda lib, x, q: lib.quantile(x, q), x, np.array([0.5, 2.0], np.float32), exc=RuntimeError)
    check_raises(lambda lib, x: lib.quantile(x, 0.5), make((3,), "int64"), exc=RuntimeError)
    check_raises(lambda lib, x: lib.quantile(x, 0.5), make((0,)), exc=RuntimeError)
    check_raises(lambda lib, x: lib.quantile(x, 0.5, interpolation="foo"), x, exc=RuntimeError)
    check(lambda lib, x: lib.quantile(x, 0.5, dim=0), make((), "float32"))


# ---------------------------------------------------------------------------------------
# meta: shapes and dtypes without data, same errors
# ---------------------------------------------------------------------------------------
META_CASES = [
    lambda lib, x: x.sum(), lambda lib, x: x.sum(0, True, dtype=lib.float64), lambda lib, x: lib.nansum(x, 1),
    lambda lib, x: x.mean((0, 1)), lambda lib, x: lib.nanmean(x, 0), lambda lib, x: x.prod(1),
    lambda lib, x: x.prod(), lambda lib, x: x.max(), lambda lib, x: x.max(1), lambda lib, x: x.min(0, True),
    lambda lib, x: lib.max(x, x), lambda lib, x: x.amax((0, 1)), lambda lib, x: x.amin(1, True),
    lambda lib, x: lib.aminmax(x, dim=1), lambda lib, x: x.argmax(), lambda lib, x: x.argmin(0, True),
    lambda lib, x: x.var(), lambda lib, x: x.std(1, keepdim=True), lambda lib, x: lib.var_mean(x, 0),
    lambda lib, x: lib.std_mean(x, correction=0), lambda lib, x: lib.norm(x), lambda lib, x: lib.norm(x, 1, 1),
    lambda lib, x: x.logsumexp(1), lambda lib, x: x.all(), lambda lib, x: x.any(1, True),
    lambda lib, x: x.count_nonzero(0), lambda lib, x: x.cumsum(1), lambda lib, x: x.cumprod(0, dtype=lib.int32),
    lambda lib, x: x.cummax(0), lambda lib, x: x.cummin(1), lambda lib, x: x.logcumsumexp(0),
    lambda lib, x: x.softmax(1), lambda lib, x: x.log_softmax(0, lib.float64), lambda lib, x: x.sort(0),
    lambda lib, x: x.argsort(1, True), lambda lib, x: lib.msort(x), lambda lib, x: x.topk(2),
    lambda lib, x: x.median(), lambda lib, x: x.median(0), lambda lib, x: x.nanmedian(1, True),
    lambda lib, x: x.mode(1), lambda lib, x: x.kthvalue(2, 0), lambda lib, x: lib.quantile(x, 0.5, 1),
    lambda lib, x: x.sum(3), lambda lib, x: x.topk(9), lambda lib, x: x.prod(3),
]
# PyTorch's meta kernels skip the dtype checks of its CPU kernels (int64 var/softmax/norm "work" on
# meta); ember's Meta kernels raise as the CPU would, so those cases are compared on floats only.
FLOAT_ONLY = {16, 17, 18, 19, 20, 21, 30, 31, 32}


@pytest.mark.parametrize("case", range(len(META_CASES)))
@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_meta(case, dtype):
    fn = META_CASES[case]
    if dtype == "int64" and case in FLOAT_ONLY:
        pytest.skip("PyTorch's meta kernel does not check the dtype")
    check(lambda lib, x: fn(lib, x.to("meta")), make((3, 4), dtype), dtype=dtype)


def test_meta_errors():
    check_raises(lambda lib, x: x.to("meta").argmax(0), make((0, 3)), exc=IndexError)
    check_raises(lambda lib, x: x.to("meta").mean(), make((2,), "int32"), dtype="int32", exc=RuntimeError)
    check_raises(lambda lib, x: x.to("meta").quantile(0.5), make((2,), "int32"), dtype="int32", exc=RuntimeError)


# ---------------------------------------------------------------------------------------
# return types, argument parsing
# ---------------------------------------------------------------------------------------
def test_return_types():
    x = ember.tensor([[1.0, 3.0], [2.0, 2.0]])
    r = x.max(1)
    assert type(r) is ember.return_types.max and isinstance(r, tuple)
    values, indices = r
    assert values is r.values and indices is r.indices and r[0] is r.values and len(r) == 2
    t = torch.tensor([[1.0, 3.0], [2.0, 2.0]]).max(1)
    lines, tlines = repr(r).splitlines(), repr(t).splitlines()
    assert lines[0] == tlines[0].replace("torch", "ember") and len(lines) == len(tlines)
    assert [ln.split("=")[0] for ln in lines[1:]] == [ln.split("=")[0] for ln in tlines[1:]]
    assert r == tuple(r) and r[:1] == (r.values,)
    pair = (torch.tensor(0), torch.tensor(0))
    for name in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin",
                 "aminmax"):
        ours = getattr(ember.return_types, name)
        theirs = getattr(torch.return_types, name)(pair)
        assert len(ours._fields) == len(theirs) and all(hasattr(theirs, f) for f in ours._fields)
    assert ember.aminmax(x)._fields == ("min", "max")
    assert type(ember.var_mean(x)) is tuple


def test_argument_forms():
    x = make((3, 4))
    check(lambda lib, x: lib.max(x, dim=1, keepdim=True), x)
    check(lambda lib, x: x.sum(dim=(0, 1)), x)
    check(lambda lib, x: x.sum((0, 1), True), x)
    check(lambda lib, x: lib.std(x, unbiased=False), x)
    check(lambda lib, x: lib.all(x > 0, dim=None), x)
    # TypeError: PyTorch 2.13 has no named tensors (an older one looks the name up: RuntimeError)
    check_as_2_13(lambda lib, x: lib.sum(x, "a"), x, raises=TypeError,
                  oracle_is_current=torch_raises(lambda: torch.sum(torch.ones(2), "a"), TypeError))
    check(lambda lib, x: lib.topk(x, k=2, dim=0, sorted=True), x)
    check(lambda lib, x: lib.softmax(x, dim=0), x)
    check(lambda lib, x: lib.sum(x, 1, out=lib.empty(3)), x)
    check(lambda lib, x: lib.mean(x, (0, 1), True, out=lib.empty(0)), x)
    check(lambda lib, x: lib.prod(x, 0, out=lib.empty(4)), x)
    check(lambda lib, x: lib.amax(x, 0, out=lib.empty(4, dtype=lib.int64)), x)  # can't cast: RuntimeError
    check(lambda lib, x: lib.cumsum(x, 0, out=lib.empty(3, 4)), x)
