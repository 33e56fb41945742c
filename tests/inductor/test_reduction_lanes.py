"""Reductions with several accumulators (codegen_reduction: lanes of whole blocks, then a tail),
Welford in lanes merged by Chan's formula, and divisions by a row value done as a multiply by its
reciprocal: against eager ember (and a float64 truth for var) on row lengths around the lane
boundaries, strided rows, NaN in a lane or in the tail, rows longer than a float sum block, and
divisors whose reciprocal is not a normal number."""
import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor import codegen_c, config  # (codegen_c before codegen_reduction: their import cycle)
from ember._inductor import codegen_reduction
from ember._inductor.compile_fx import compile_fx
from test_lowering import check_many

# around 64 float / 32 double lanes (blocked only from 2 lanes' worth), and the 4096-element
# float32 sum block
LENGTHS = (5, 63, 64, 65, 129, 1000, 4097)


def _rows(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random((3, n)) > 0.3
    if dtype.startswith("int"):
        return rng.integers(-3, 4, size=(3, n)).astype(dtype)
    return rng.uniform(-2, 2, size=(3, n)).astype(dtype)


REDUCTIONS = [("sum", lambda t: t.sum(1)), ("amax", lambda t: t.amax(1)), ("amin", lambda t: t.amin(1)),
              ("all-sum", lambda t: t.sum()), ("any", lambda t: ember.any(t, 1)), ("all", lambda t: ember.all(t, 1))]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
@pytest.mark.parametrize("n", LENGTHS)
def test_row_reductions_around_the_lane_boundaries(n, dtype):
    base = _rows(n, dtype)
    x = ember.from_numpy(base)
    strided = ember.from_numpy(np.repeat(base, 2, axis=1))[:, ::2]          # rows with stride 2
    transposed = ember.from_numpy(np.ascontiguousarray(base.T)).t()          # rows with stride 3
    fns = [(f"{name}[{k}]", lambda *ts, fn=fn, k=k: fn(ts[k])) for name, fn in REDUCTIONS for k in range(3)]
    if dtype.startswith("float"):
        fns += [("prod", lambda a, b, c: (a * 0.5 + 1).prod(1)), ("mean", lambda a, b, c: b.mean(1))]
    check_many(fns, x, strided, transposed)


@pytest.mark.parametrize("where", [0, 17, 64, 200, 1023])     # first lane, a lane, the next block, tail
def test_nan_anywhere_in_the_row_wins_max_and_min(where):
    base = _rows(1030, "float32")
    base[1, where] = np.nan
    x = ember.from_numpy(base)
    check_many([("amax", lambda t: t.amax(1)), ("amin", lambda t: t.amin(1)), ("max", lambda t: t.max(1).values),
                ("softmax", lambda t: ember.softmax(t, 1))], x)


def test_infinities_and_long_sums():
    base = _rows(20000, "float32", 1)
    base[0, 5000] = np.inf
    base[2, :] = np.float32(1e-3)            # a long sum of one value: the float blocks must not drift
    x = ember.from_numpy(base)
    check_many([("sum", lambda t: t.sum(1)), ("amax", lambda t: t.amax(1)), ("amin", lambda t: (-t).amin(1))], x)


@pytest.mark.parametrize("threads", [1, 2])
def test_streamed_sums_in_one_and_two_threads(threads, monkeypatch, tmp_path):
    # whole STREAM_BLOCKs (four parts read at once), then SUM_BLOCKs and a tail; with 2 threads the
    # blocks (one reduction loop) or the outer reduction loop are split between the threads
    monkeypatch.setattr(config, "threads", threads)
    monkeypatch.setattr(config, "cache_dir", str(tmp_path))        # generated here, not from a cache
    sources, real = [], codegen_c.generate_kernel
    monkeypatch.setattr(codegen_c, "generate_kernel", lambda *a, **k: sources.append(real(*a, **k)) or sources[-1])
    n = 2 * codegen_reduction.STREAM_BLOCK + 4096 + 33
    flat = ember.from_numpy(np.random.default_rng(3).uniform(-2, 2, n).astype(np.float32))
    block = ember.from_numpy(np.random.default_rng(4).uniform(-2, 2, (3, 2, n // 3)).astype(np.float32))
    check_many([("sum", lambda a, b: (a * a).sum()), ("mean", lambda a, b: a.mean()),
                ("sum(1,2)", lambda a, b: b.sum((1, 2))), ("sum(0,2)", lambda a, b: (b - 1).sum((0, 2)))],
               flat, block)
    text = "\n".join(src for src, *_ in sources)
    assert f"+= {codegen_reduction.STREAM_BLOCK})" in text
    assert ("parallel for" in text) == (threads == 2)


def test_three_dim_reduction_with_outer_reduction_loops():
    # dims (0, 2) of a [5, 3, 130] tensor: the reduction has an outer loop, the lanes persist across it
    base = np.random.default_rng(2).standard_normal((5, 3, 130)).astype(np.float32)
    x = ember.from_numpy(base)
    check_many([("sum", lambda t: t.sum((0, 2))), ("amax", lambda t: t.amax((0, 2))),
                ("var", lambda t: t.var((0, 2))), ("var_mean", lambda t: ember.var_mean(t, (0, 2)))], x)


@pytest.mark.parametrize("n", [63, 64, 65, 100, 1000, 4099])
@pytest.mark.parametrize("offset", [0.0, 1e4, -3e5])
def test_welford_lanes_match_float64_truth(n, offset):
    # against the float64 truth (at a mean of 3e5 eager's own float32 result is off by ~1e-3)
    base = (offset + np.random.default_rng(n).standard_normal((4, n))).astype(np.float32)
    x = ember.from_numpy(base)
    fn = lambda t: (t.var(1), t.std(1, correction=0), ember.var_mean(t, 1))      # noqa: E731
    if offset == 0:
        check_many([("all", fn)], x)
    var, std, (vm_var, vm_mean) = compile_fx(make_fx(fn)(x), [x])(x)
    truth = base.astype(np.float64)
    np.testing.assert_allclose(var.numpy(), truth.var(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(vm_var.numpy(), truth.var(1, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(std.numpy(), truth.std(1), rtol=1e-5)
    np.testing.assert_allclose(vm_mean.numpy(), truth.mean(1), rtol=1e-6, atol=1e-6)


def test_layer_norm_and_softmax_on_odd_rows():
    base = (5 + 3 * np.random.default_rng(3).standard_normal((7, 333))).astype(np.float32)
    x = ember.from_numpy(base)
    F = ember.nn.functional
    check_many([("layer_norm", lambda t: F.layer_norm(t, (333,))), ("softmax", lambda t: ember.softmax(t, 1)),
                ("log_softmax", lambda t: ember.log_softmax(t, 1))], x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_division_by_a_row_value_whatever_its_size(dtype):
    # the row sum as divisor: normal (reciprocal), 0 (inf/nan), tiny (1/b overflows), huge (1/b
    # underflows), inf and nan: each row gives eager's quotient
    base = np.ones((7, 70), dtype)
    scale = np.array([1.0, 0.0, 1e-40 if dtype == np.float32 else 1e-310, 3e37 if dtype == np.float32 else 1e307,
                      np.inf, np.nan, -2.5], dtype)
    base = base * scale[:, None]
    base[:, 0] = 1.0
    x = ember.from_numpy(base)
    check_many([("x / rowsum", lambda t: t / t.sum(1, keepdim=True)),
                ("x / rowmax", lambda t: t / t.amax(1, keepdim=True)),
                ("normalize", lambda t: t / (t * t).sum(1, keepdim=True).sqrt())], x)
