"""The float32 exp of the C kernels (codegen_c_exp.py: expv_f, the table-and-vscalefps vector variant
on AVX-512, else codegen_c.expi_f's inline polynomial): its error against the correctly rounded exp
(NumPy's float64 exp rounded once) over the whole float range, its special values, loop tails equal
to loop bodies bit for bit, and the programs that use it (softmax with masked -inf, log_softmax,
logsumexp, exp in a chain, sigmoid, silu, gelu_tanh) compiled vs eager on each layout and dtype."""
import numpy as np
import pytest

import ember
from ember._inductor import machine
from ember._inductor.codegen_c import CEmitter, Kernel

from test_lowering import check, check_many, layouts

F = ember.nn.functional


def compiled_exp(values):
    x = ember.from_numpy(np.asarray(values, np.float32))
    return check(lambda t: ember.exp(t), x)(x).numpy()


# the table-driven vector exp is within 1 ulp; the inline polynomial other machines get, 1.05
MAX_ULP = 1 if machine.isa()["avx512f"] else 2


def test_each_op_calls_its_exp():
    lines = []
    em = CEmitter(Kernel("k"), lines, {}, {})
    for name in ("exp", "sigmoid", "silu", "gelu_tanh"):
        em.unary(name, "a", ember.float32)
        em.unary(name, "b", ember.float64)
    assert "expv_f(a)" in lines[0] and "expv_d(b)" in lines[1]
    assert all("expa_f(-" in line for line in lines[2::2][:2]) and "expa_f(a * fmaf(a * a, " in lines[6]
    assert all("expa_d(" in line for line in lines[3::2])


def test_every_4099th_float_bit_pattern():
    """All of float32 in steps of 4099 bit patterns (~1M values: tiny, subnormal, huge, both signs)."""
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    got = compiled_exp(x)
    with np.errstate(over="ignore", under="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    nan = np.isnan(x)
    assert np.isnan(got[nan]).all()
    g, w = got[~nan], want[~nan]
    assert np.array_equal(np.isinf(g), np.isinf(w)) and np.array_equal(g == 0, w == 0)
    steps = np.abs(g.view(np.int32).astype(np.int64) - w.view(np.int32).astype(np.int64))
    assert steps.max() <= MAX_ULP, (steps.max(), x[~nan][steps.argmax()])


@pytest.mark.parametrize("tail", [1, 7, 8, 9, 15, 17, 31])
def test_loop_tails_compute_what_the_vector_body_computes(tail):
    """The last elements go through the 8-lane variant or the scalar twin: the same bits."""
    v = np.random.default_rng(tail).uniform(-105, 90, 16 * 4).astype(np.float32)
    v[:3] = [-np.inf, np.nan, -103.97]
    a = np.concatenate([v, v[:tail]])
    for fn in (lambda t: ember.exp(t), lambda t: ember.sigmoid(t * 3.0)):
        got = check(fn, ember.from_numpy(a))(ember.from_numpy(a)).numpy()
        end, start = got[-tail:], got[:tail]          # NaN's sign and payload are not compared
        assert np.array_equal(np.isnan(end), np.isnan(start))
        assert np.array_equal(end[~np.isnan(end)].view(np.int32), start[~np.isnan(start)].view(np.int32))


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
    assert steps.max() <= MAX_ULP, (steps.max(), x[finite][steps.argmax()])


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
           ("chain", lambda t: ember.exp(t * 0.5 - 1.0) * t), ("sigmoid", lambda t: ember.sigmoid(t)),
           ("silu", lambda t: F.silu(t)), ("gelu_tanh", lambda t: F.gelu(t * 2 + 1, approximate="tanh"))]
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


def test_machines_without_avx512_get_the_inline_polynomial_and_libmvec(monkeypatch):
    """The `#else` branch of codegen_c_exp.AVX512, built here with AVX2 flags: same programs, same
    accuracy bound as expi_f's, eager's values."""
    from ember._inductor import config
    flags = tuple("-march=x86-64-v3" if f == "-march=native" else f for f in config.cflags)
    monkeypatch.setattr(config, "cflags", flags)
    ember.compiler.reset()
    x = np.concatenate([np.linspace(-110, 90, 50_001, dtype=np.float32), [-np.inf, np.inf, np.nan]]).astype(np.float32)
    got = compiled_exp(x)
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64)).astype(np.float32)
    finite = np.isfinite(want)
    steps = np.abs(got[finite].view(np.int32).astype(np.int64) - want[finite].view(np.int32).astype(np.int64))
    assert steps.max() <= 2 and got[-3] == 0 and got[-2] == np.inf and np.isnan(got[-1])
    t = ember.from_numpy(np.random.default_rng(5).standard_normal((4, 300)).astype(np.float32) * 4)
    check_many([("softmax", lambda a: ember.softmax(a, -1)), ("sigmoid", lambda a: ember.sigmoid(a)),
                ("gelu_tanh", lambda a: F.gelu(a, approximate="tanh")), ("silu", lambda a: F.silu(a))], t)
    ember.compiler.reset()
