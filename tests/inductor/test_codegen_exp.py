"""The float32 exp the C kernels compute inline (codegen_c.expi_f: a polynomial, no libmvec call):
its error against the correctly rounded exp over the whole float range, its special values, and the
programs that use it (softmax with masked -inf, log_softmax, logsumexp, exp in a chain) compiled
vs eager on each layout and dtype."""
import numpy as np
import pytest

import ember
from ember._inductor.codegen_c import CEmitter, Kernel

from test_lowering import check, check_many, layouts

F = ember.nn.functional


def compiled_exp(values):
    x = ember.from_numpy(np.asarray(values, np.float32))
    return check(lambda t: ember.exp(t), x)(x).numpy()


def test_float_exp_is_the_inline_one_and_double_exp_stays_on_libm():
    lines = []
    em = CEmitter(Kernel("k"), lines, {}, {})
    em.unary("exp", "a", ember.float32)
    em.unary("exp", "b", ember.float64)
    assert "expi_f(a)" in lines[0] and "exp_d(b)" in lines[1]


def test_within_two_ulp_of_the_correctly_rounded_exp_everywhere():
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(-110, 90, 400_003, dtype=np.float32),
                        rng.uniform(-1, 1, 100_000).astype(np.float32),          # around the 1.0 binade edge
                        rng.uniform(-104, -87, 100_000).astype(np.float32),      # subnormal results
                        rng.uniform(88, 89, 10_000).astype(np.float32)])         # near overflow
    got = compiled_exp(x)
    want = np.exp(x.astype(np.float64)).astype(np.float32)      # correctly rounded (double, then once)
    assert np.array_equal(np.isinf(got), np.isinf(want))
    finite = np.isfinite(want)
    steps = np.abs(got[finite].view(np.int32).astype(np.int64) - want[finite].view(np.int32).astype(np.int64))
    assert steps.max() <= 2, (steps.max(), x[finite][steps.argmax()])


def test_special_values_are_exact():
    x = [-np.inf, np.inf, np.nan, -np.nan, 0.0, -0.0, -104.0, -1e30, -103.98, 88.8, 89.0, 1e30, 1e-30, -87.5]
    got = compiled_exp(x)
    want = np.exp(np.asarray(x, np.float32))
    assert got[0] == 0 and got[1] == np.inf and np.isnan(got[2]) and np.isnan(got[3])
    assert got[4] == 1 and got[5] == 1
    assert got[6] == 0 and got[7] == 0 and got[8] == want[8]          # below e^-103.97: exactly 0
    assert got[9] == np.inf and got[10] == np.inf and got[11] == np.inf
    assert got[12] == 1 and got[13] == want[13] and got[13] > 0        # a subnormal result, not flushed


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_softmax_family_on_each_layout_and_dtype(dtype):
    fns = [("softmax", lambda t: ember.softmax(t, -1)), ("log_softmax", lambda t: F.log_softmax(t, -1)),
           ("softmax0", lambda t: ember.softmax(t, 0)), ("logsumexp", lambda t: ember.logsumexp(t, -1)),
           ("chain", lambda t: ember.exp(t * 0.5 - 1.0) * t)]
    for name, x in layouts((6, 300), "float32", seed=1):
        check_many(fns, (x * 4).to(dtype))


def test_causal_mask_rows_and_a_fully_masked_row():
    x = np.random.default_rng(2).standard_normal((5, 257)).astype(np.float32)
    x[np.triu_indices(5, 1, 257)] = -np.inf
    x[4] = -np.inf                                   # every lane masked: NaN, as eager
    t = ember.from_numpy(x)
    check_many([("softmax", lambda a: ember.softmax(a, -1)), ("log_softmax", lambda a: F.log_softmax(a, -1)),
                ("exp", lambda a: ember.exp(a))], t)


@pytest.mark.parametrize("shape", [(), (0,), (0, 7), (1,), (17,)])
def test_zero_d_empty_and_short_inputs(shape):
    x = ember.from_numpy(np.random.default_rng(3).standard_normal(shape).astype(np.float32))
    check(lambda t: ember.exp(t) + 1.0, x)
    if shape and shape[-1]:
        check(lambda t: ember.softmax(t, -1), x)
