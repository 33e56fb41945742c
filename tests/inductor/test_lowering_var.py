"""var/std/var_mean compiled as Welford's one pass, against eager ember and a float64 truth, on
inputs with a large mean (where the naive one-pass sum(x*x) - sum(x)^2/n cancels catastrophically),
each layout, correction, keepdim, 0-d, empty and 1-element rows."""
import re
import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor.compile_fx import compile_fx
from test_lowering import check_many, extern_ops


def large_mean(shape, dtype=np.float32, seed=0):
    return (1e4 + np.random.default_rng(seed).standard_normal(shape)).astype(dtype)


def test_large_mean_rows_match_eager_and_the_float64_truth():
    base = large_mean((3, 100_000))
    x = ember.from_numpy(base)
    truth = base.astype(np.float64).var(1, ddof=1)
    # the input is hard: the naive one pass in float32 is far off (this is what the test guards)
    n = base.shape[1]
    naive = ((base * base).sum(1, dtype=np.float32) - base.sum(1, dtype=np.float32) ** 2 / n) / (n - 1)
    assert np.max(np.abs(naive - truth) / truth) > 0.1
    fns = [("var", lambda t: t.var(1)), ("std", lambda t: t.std(1)), ("var_mean", lambda t: ember.var_mean(t, 1))]
    compiled = check_many(fns, x)
    var, std, (vm_var, vm_mean) = compiled(x)
    np.testing.assert_allclose(var.numpy(), truth, rtol=1e-5)
    np.testing.assert_allclose(std.numpy(), np.sqrt(truth), rtol=1e-5)
    np.testing.assert_allclose(vm_mean.numpy(), base.astype(np.float64).mean(1), rtol=1e-6)
    assert extern_ops(compiled) == []


def _layouts(base):
    return [ember.from_numpy(base), ember.from_numpy(np.ascontiguousarray(base.T)).t(),
            ember.from_numpy(np.repeat(base, 2, axis=-1))[:, ::2], ember.from_numpy(base[:1].copy()).expand(*base.shape)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_each_layout_dim_correction_and_keepdim(dtype):
    # against eager on a float64 copy: at a mean of 1e4 eager's own float32 two-pass is off by
    # ~1e-3 on a constant (broadcast) row, where Welford in double gives the exact 0
    base = large_mean((6, 9), dtype, 1)
    xs, exact = _layouts(base), _layouts(base.astype(np.float64))
    fns = []
    for i in range(4):
        for dim in (0, 1, (0, 1), None):
            fns += [lambda *t, i=i, d=dim: t[i].var(d),
                    lambda *t, i=i, d=dim: ember.var(t[i], d, correction=0, keepdim=True),
                    lambda *t, i=i, d=dim: ember.std(t[i], d, correction=2),
                    lambda *t, i=i, d=dim: ember.var_mean(t[i], d, keepdim=d == 1)]
    everything = lambda *t: tuple(fn(*t) for fn in fns)      # noqa: E731
    compiled = compile_fx(make_fx(everything)(*xs), xs)
    assert extern_ops(compiled) == []
    tol = 1e-5 if dtype == np.float32 else 1e-10
    for got, want in zip(compiled(*xs), everything(*exact)):
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert g.dtype == ember.from_numpy(base).dtype and g.shape == w.shape
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol)


def test_0d_empty_single_element_and_bfloat16_rows():
    xs = [ember.tensor(3.0), ember.randn(0, 4), ember.randn(4, 1), ember.from_numpy(large_mean((5, 64))).to(ember.bfloat16)]
    fns = [("0-d", lambda a, b, c, d: ember.var(a, correction=0)), ("empty rows", lambda a, b, c, d: ember.var_mean(b, 0)),
           ("empty", lambda a, b, c, d: b.var(1)), ("one element", lambda a, b, c, d: c.var(1)),
           ("one element c0", lambda a, b, c, d: ember.var_mean(c, 1, correction=0)),
           ("bf16", lambda a, b, c, d: (d - d.mean(1, keepdim=True)).var(1))]
    check_many(fns, *xs)


def test_var_is_one_kernel_reading_each_row_once():
    x = ember.from_numpy(large_mean((4, 50)))
    compiled = compile_fx(make_fx(lambda t: t.var(1) * 2)(x), [x])
    kernels = re.findall(r"(ember_k\w+)\(", compiled.current.code)     # the kernels the wrapper calls
    assert len(set(kernels)) == 1, kernels
