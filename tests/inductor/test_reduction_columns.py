"""Reductions over leading dims (a bias gradient's grad.sum(0)) compiled with the loops interchanged
(codegen_columns: a tile of per-column accumulators, rows innermost-contiguous), against eager:
odd shapes, more columns than a tile, more rows than a float sum block, every dtype, NaN in a
column, several reduction dims, pointwise members after the reduction, 16-bit floats."""
import re

import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor.compile_fx import compile_fx
from test_lowering import check_many

SHAPES = [(7, 3), (1000, 5), (3, 1030), (5000, 13), (64, 1)]
COLUMN_FNS = [("sum0", lambda t: t.sum(0)), ("amax0", lambda t: t.amax(0)), ("amin0", lambda t: t.amin(0)),
              ("sum0 keepdim", lambda t: t.sum(0, keepdim=True)), ("any0", lambda t: ember.any(t, 0)),
              ("all0", lambda t: ember.all(t, 0))]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.2
    if dtype.startswith("int"):
        return rng.integers(-4, 5, size=shape).astype(dtype)
    return rng.uniform(-2, 2, size=shape).astype(dtype)


def _kernels_of(fn, x, capsys):
    """(compiled fn, the C source of its kernels) through EMBER_LOGS=output_code (a graph served from
    the graph cache names the kept source file instead)."""
    from ember._logging import set_logs
    capsys.readouterr()
    set_logs(output_code=True)
    try:
        compiled = compile_fx(make_fx(fn)(x), [x])
    finally:
        set_logs()
    err = capsys.readouterr().err
    kept = re.search(r"KERNELS: (\S+\.c)", err)
    return compiled, open(kept.group(1)).read() if kept else err


def _is_interchanged(source) -> bool:
    return re.search(r"for \(int64_t i\d+_t = 0;", source) is not None


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
@pytest.mark.parametrize("shape", SHAPES)
def test_column_reductions_match_eager(shape, dtype):
    x = ember.from_numpy(_data(shape, dtype))
    fns = list(COLUMN_FNS)
    if dtype.startswith("float"):
        fns += [("mean0", lambda t: t.mean(0)), ("prod0", lambda t: (t * 0.25 + 1).prod(0)),
                ("bias-grad epilogue", lambda t: t.sum(0) * 0.5 + 1)]
    check_many(fns, x)


def test_the_column_kernel_is_interchanged_and_reads_rows_contiguously(capsys):
    x = ember.from_numpy(_data((300, 40), "float32"))
    compiled, source = _kernels_of(lambda t: t.sum(0), x, capsys)
    assert _is_interchanged(source)
    np.testing.assert_allclose(compiled(x).numpy(), x.numpy().sum(0), rtol=1e-5, atol=1e-5)
    # a row reduction of the same tensor keeps the row order
    assert not _is_interchanged(_kernels_of(lambda t: t.sum(1), x, capsys)[1])


@pytest.mark.parametrize("row", [0, 5, 299])
def test_nan_in_a_column_wins_max_min_and_poisons_its_sum_only(row):
    base = _data((300, 600), "float32", 1)
    base[row, 7] = np.nan
    base[(row + 1) % 300, 590] = np.nan           # a column of the second tile
    x = ember.from_numpy(base)
    check_many(COLUMN_FNS[:3], x)


def test_several_reduction_dims_and_a_long_float_sum():
    base = _data((9, 700, 17), "float32", 2)
    x = ember.from_numpy(base)
    check_many([("sum01", lambda t: t.sum((0, 1))), ("amax01", lambda t: t.amax((0, 1))),
                ("mean0 of 3d", lambda t: t.mean(0))], x)
    # 20000 rows: accumulated in double, so the float64 truth (eager's float32 running sum drifts)
    long = np.full((20000, 3), 1e-3, np.float32)
    got = compile_fx(make_fx(lambda t: t.sum(0))(ember.from_numpy(long)), [ember.from_numpy(long)])(ember.from_numpy(long))
    np.testing.assert_allclose(got.numpy(), long.astype(np.float64).sum(0), rtol=1e-6)


def test_dependent_members_read_the_accumulators():
    # mean over dim 0 then the sum of squared deviations from it: two passes over each tile
    base = (50 + _data((333, 21), "float32", 3)).astype(np.float32)
    x = ember.from_numpy(base)
    check_many([("centered", lambda t: ((t - t.mean(0)) ** 2).sum(0)),
                ("normalised", lambda t: t.sum(0) / t.abs().amax(0))], x)


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_half_column_sums(dtype):
    x = ember.from_numpy(_data((129, 33), "float32", 4)).to(dtype)
    check_many([("sum0", lambda t: t.sum(0)), ("amax0", lambda t: t.amax(0))], x)


def test_transposed_input_reduces_along_its_contiguous_dim():
    # sum(0) of a transposed tensor reads rows contiguously already: no interchange needed, same values
    base = _data((40, 300), "float32", 5)
    x = ember.from_numpy(base).t()
    check_many([("sum0", lambda t: t.sum(0)), ("sum1", lambda t: t.sum(1))], x)


@pytest.mark.parametrize("shape", [(7, 3), (1000, 5), (3, 1030), (5000, 13)])
@pytest.mark.parametrize("offset", [0.0, 1e4])
def test_column_welford_matches_float64_truth(shape, offset, capsys):
    # var over dim 0 (BatchNorm1d's statistics): per-column Welford in double; against the float64
    # truth (eager's float32 result drifts at a large mean) and, at mean 0, against eager too
    base = (offset + np.random.default_rng(shape[0]).standard_normal(shape)).astype(np.float32)
    x = ember.from_numpy(base)
    fn = lambda t: (t.var(0), t.std(0, correction=0), ember.var_mean(t, 0, keepdim=True))   # noqa: E731
    if offset == 0:
        check_many([("var family", fn)], x)
    compiled, source = _kernels_of(fn, x, capsys)
    assert _is_interchanged(source)
    var, std, (vm_var, vm_mean) = compiled(x)
    truth = base.astype(np.float64)
    np.testing.assert_allclose(var.numpy(), truth.var(0, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(std.numpy(), truth.std(0), rtol=1e-5)
    np.testing.assert_allclose(vm_var.numpy(), truth.var(0, ddof=1, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(vm_mean.numpy(), truth.mean(0, keepdims=True), rtol=1e-6, atol=1e-6)


def test_column_welford_of_no_rows_is_nan():
    x = ember.from_numpy(np.zeros((0, 5), np.float32))
    check_many([("var_mean", lambda t: ember.var_mean(t, 0)), ("var", lambda t: t.var(0, correction=0))], x)
