"""codegen_c_vec.py, the vector-typed C for contiguous float32 loops: each program is compiled twice,
with the vector emitter (its generated C must show the vector loop: vf_ld / VLDN) and without it
(today's scalar C); the two must agree to the bit where both compute the same steps, and with eager
within the fuser's tolerance. Tails of every length mod 16, NaN / inf / -0.0, and layouts the
emitter refuses (transposed loads: scalar C, still right)."""
import contextlib
import tempfile

import numpy as np
import pytest

import ember
from ember._inductor import codegen_c, codegen_c_vec, config
from ember._inductor.codegen_reduction import STREAM_BLOCK

pytestmark = [pytest.mark.usefixtures("strict_fuser"),
              pytest.mark.skipif(not codegen_c_vec.lanes(), reason="no AVX-512 / AVX2 + FMA with GCC here")]
F = ember.nn.functional
SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-40, 88.0, -104.5, 3.0], np.float32)


@contextlib.contextmanager
def _build(vector):
    """Compile in a fresh cache directory (no kernel or graph from another build); yields the list
    the generated kernel sources are appended to."""
    sources, real, lanes = [], codegen_c.generate_kernel, codegen_c_vec.lanes
    saved = config.cache_dir

    def spy(*a, **k):
        out = real(*a, **k)
        sources.append(out[0])
        return out
    codegen_c.generate_kernel, config.cache_dir = spy, tempfile.mkdtemp(prefix="ember-vec-test-")
    if not vector:
        codegen_c_vec.lanes = lambda: 0
    ember.compiler.reset()
    try:
        yield sources
    finally:
        codegen_c.generate_kernel, codegen_c_vec.lanes, config.cache_dir = real, lanes, saved
        ember.compiler.reset()


def compiled(fn, *arrays, vector=True):
    """(result as NumPy, generated C) of ember.compile(fn) on `arrays`."""
    with _build(vector) as sources:
        out = ember.compile(fn)(*[ember.from_numpy(a) for a in arrays])
    return out.numpy(), "\n".join(sources)


def eager(fn, *arrays):
    return fn(*[ember.from_numpy(a) for a in arrays]).numpy()


def check(fn, *arrays, vector_path=True, bits=True, rtol=2e-6, atol=1e-6):
    """The vector build vs the scalar build (bit for bit when `bits`) and vs eager."""
    got, src = compiled(fn, *arrays)
    assert (("vf_ld(" in src or "VLDN(" in src) == vector_path), src
    want, scalar_src = compiled(fn, *arrays, vector=False)
    assert "vf_ld(" not in scalar_src and "VLDN(" not in scalar_src
    if bits:            # NaN where the scalar build has NaN (its payload may differ: exp's NaN path)
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
    np.testing.assert_allclose(got, eager(fn, *arrays), rtol=rtol, atol=atol, equal_nan=True)
    assert np.array_equal(np.isnan(got), np.isnan(eager(fn, *arrays)))
    return src


def data(*shape, seed=0, special=True):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 3
    if special and x.size:
        flat = x.reshape(-1)
        flat[: min(flat.size, SPECIAL.size)] = SPECIAL[: flat.size]
    return x


def test_exp_bits_on_both_sides_of_the_fast_path():
    # AVX2's vf_exp takes a vector whose lanes all have |x| <= 87 through the exponent-add path and
    # any other through the clamped two-halves path: every float in [-87.01, -86.99] and [86.99,
    # 87.01] (the boundary, alone and mixed in one vector with edge values), a sweep of [-90, 90],
    # and vectors holding one NaN / inf / subnormal-result lane among ordinary ones; the same bits
    # as the scalar build's expi_f (AVX-512's table exp: the same bits as its scalar twin)
    around = [np.arange(np.float32(b) - np.float32(0.01), np.float32(b) + np.float32(0.01),
                        np.float32(2 ** -16), dtype=np.float32) for b in (-87.0, 87.0)]
    sweep = np.linspace(-90, 90, 40_001, dtype=np.float32)
    mixed = np.tile(np.array([1.0, -3.0, 86.0, -86.5, 0.5, 2.0, -1.0, 0.0], np.float32), 10)
    mixed[3::9] = SPECIAL[np.arange(mixed[3::9].size) % SPECIAL.size]
    x = np.concatenate(around + [sweep, mixed])
    check(lambda x: x.exp(), x, rtol=4e-7, atol=3e-45)     # a subnormal result: within 2 of its ulps


def selects(x, y):
    # relu, clamp, maximum/minimum, where, compares, abs, neg, sqrt, divide: no exp, so the vector
    # and scalar builds compute the same bits
    a = ember.where(x > y, (x * 1.5 + y).relu(), ember.maximum(x, y) - ember.minimum(y, x))
    return (a.clamp(-2.0, 5.0) + x.abs().sqrt() / (y * y + 1) - (-x).clamp(min=0.25)
            + (x >= 0.5).float() * y)


@pytest.mark.parametrize("n", list(range(1, 34)))
def test_tails_of_every_length(n):
    x, y = data(n, seed=n), data(n, seed=n + 100)
    check(selects, x, y, vector_path=n > 1)     # one element: no loop at all


@pytest.mark.parametrize("n", [7, 16, 1000, 4096 + 5])
def test_the_exp_family(n):
    x, y = data(n), data(n, seed=1)
    # exp itself is the same steps in both builds; sigmoid/silu/gelu_tanh call libmvec's expf in the
    # scalar build where there is no AVX-512 (vf_exp is expi_f's steps there): within 2 ulp
    check(lambda x, y: x.exp() * 0.5 + y.exp(), x, y, bits=True, rtol=4e-7, atol=0)
    check(lambda x, y: ((x * 1.5 + y).relu() - x * y).sigmoid() + F.silu(y)
          + F.gelu(x * 2 + 1, approximate="tanh"), x, y, bits=codegen_c_vec.lanes() == 16, rtol=1e-5)


def test_nan_and_signed_zero_through_relu_and_max():
    x = np.array([np.nan, -0.0, 0.0, -1.0, np.inf, -np.inf, 2.0] * 3, np.float32)
    y = np.array([0.0, 0.0, -0.0, np.nan, 1.0, np.nan, np.nan] * 3, np.float32)
    got = check(lambda x, y: ember.maximum(x.relu(), y) + ember.minimum(y, x) * 0 + x.clamp(min=0.0), x, y)
    assert "vf_max(" in got
    r, _ = compiled(lambda x: x.relu(), x)
    assert np.signbit(r[1]) and np.isnan(r[0])         # relu(-0.0) = -0.0, relu(NaN) = NaN (eager's)
    np.testing.assert_array_equal(r.view(np.uint32), eager(lambda x: x.relu(), x).view(np.uint32))


@pytest.mark.parametrize("cols", [1, 15, 16, 17, 100, 1024, 1031])
def test_row_programs(cols):
    x = data(6, cols, seed=cols)
    x[2] = np.nan if cols > 3 else x[2]         # a whole row of NaN; NaN and inf elsewhere
    vec = cols > 1                          # rows of one element: one flat loop with reductions, scalar
    src = check(lambda x: x.softmax(-1), x, rtol=1e-6, vector_path=vec)
    # a sum keeps codegen_reduction's 64 lanes: rows shorter than two blocks stay one simd loop
    check(lambda x: (x * x).sum(-1), x, rtol=1e-5, atol=1e-5, vector_path=cols >= 128)
    check(lambda x: x.amax(-1) + x.amin(-1), x, vector_path=cols >= codegen_c_vec.lanes())
    check(lambda x: F.layer_norm(x, (cols,)), data(6, cols, seed=1, special=False), rtol=1e-5, atol=1e-5,
          vector_path=vec)
    assert ("vf_exp(" in src) == vec


def test_a_long_sum_in_blocks_matches_the_scalar_kernel_bit_for_bit():
    x = data(3 * 4096 + 77, special=False)
    src = check(lambda x: (x * x).sum(), x, rtol=1e-5)
    assert "_d +=" in src                      # float blocks added up in double


@pytest.mark.parametrize("n", [STREAM_BLOCK, 3 * STREAM_BLOCK + 2 * 4096 + 77])
def test_a_streamed_sum_matches_the_scalar_kernel_bit_for_bit(n):
    x = data(n, special=False)
    src = check(lambda x: (x * x).sum(), x, rtol=1e-5)
    assert f"+= {STREAM_BLOCK})" in src        # whole blocks read as SUM_STREAMS parts at once
    rows = data(3, n + 5, seed=3, special=False)
    check(lambda x: (x - 1).sum(-1), rows, rtol=1e-5, atol=1e-5)


def test_a_power_of_two_scale_and_shift_is_one_fma_with_the_same_bits():
    x = np.concatenate([data(203), np.array([2e38, -2e38, 3.4e38, 1e-45, -1e-45, 1.5e-38], np.float32)])
    for fn, fused in [(lambda x: x * 2 + 1, True), (lambda x: x * 4 - 3, True), (lambda x: x * -2.0 + 0.5, True),
                      (lambda x: x * 8 - (-1.5), True), (lambda x: x * 2 + -3.0, True),
                      (lambda x: x * 0.5 + 1, False), (lambda x: x * 3 + 1, False),
                      (lambda x: x * 2 - 3e38, False)]:     # 2e38 * 2 - 3e38: inf apart, 1e38 fused
        src = check(fn, x)            # bit for bit the scalar build's separate multiply and add
        assert ("vf_fma(" in src) == fused, src


def test_broadcast_and_sliced_inputs():
    x, b, c = data(5, 37), data(37, seed=2), data(5, 1, seed=3)
    check(lambda x, b, c: (x + b) * c - b.relu(), x, b, c)      # b along the loop, c per row
    big = data(6, 40, seed=4)
    check(lambda x: (x[1:, 3:] * 2).exp(), big)                # rows with an offset: not mergeable


def test_layouts_the_vector_loop_refuses_fall_back_to_scalar_c():
    x, y = data(24, 20), data(20, 24, seed=5)
    check(lambda x, y: (x + y.t()).relu(), x, y, vector_path=False)
    check(lambda x: x.to(ember.float64).exp(), data(33), vector_path=False)


def test_zero_d_and_empty():
    x = np.array(2.5, np.float32)
    out, _ = compiled(lambda x: (x * 3).sigmoid(), x)
    np.testing.assert_allclose(out, eager(lambda x: (x * 3).sigmoid(), x), rtol=1e-6)
    e = np.zeros((0, 16), np.float32)
    out, _ = compiled(lambda x: (x + 1).relu(), e)
    assert out.shape == (0, 16)


def test_two_threads_split_the_vector_loop(monkeypatch):
    monkeypatch.setattr(config, "threads", 2)
    x, y = data(64, 1000 + 3), data(64, 1003, seed=7)
    src = check(lambda x, y: ((x * 1.5 + y).relu() - x * y).sigmoid() + x.softmax(-1), x, y,
                bits=codegen_c_vec.lanes() == 16, rtol=1e-5)
    assert "parallel for" in src
    flat = check(lambda x: (x * 2).exp().relu(), data(50_003, seed=8))
    assert "parallel for" in flat and "VSTN(" in flat


def test_large_outputs_stream_and_row_passes_prefetch_the_next_row(monkeypatch):
    # an output past stream_store_min_bytes is written with streaming stores (the kernel ends with
    # an sfence) unless its loop computes an exp; a row kernel's pointwise pass prefetches the next
    # row of an input of 1 MB or more; neither changes a bit (against the scalar build) or the tail
    # (masked, not streamed)
    monkeypatch.setattr(config, "stream_store_min_bytes", 1 << 16)
    x = data(256, 1024 + 5, seed=3)                     # rows of 1029: a masked tail each row
    src = check(lambda x: x.softmax(-1) * 2, x)
    assert "vf_stream(&" in src and "__builtin_ia32_sfence();" in src and "__builtin_prefetch(&arg0[" in src
    flat = check(lambda x: (x * 2 + 1).relu() - x, data(50_003, seed=9))
    assert "vf_stream(&" in flat and "VSTN(" in flat
    heavy = check(lambda x: (x * 2).exp().relu(), data(50_003, seed=9))     # an exp in the loop: plain
    assert "vf_stream(&" not in heavy and "vf_st(&" in heavy
    small = check(lambda x: (x * 2 + 1).relu() - x, data(1000, seed=9))     # 4 KB: plain stores
    assert "vf_stream(&" not in small and "sfence" not in small.split("void ember_")[-1]
    monkeypatch.setattr(config, "stream_store_min_bytes", 0)                # 0: never
    assert "vf_stream(&" not in check(lambda x: x.softmax(-1) * 2, x)


def test_two_threads_do_not_stream(monkeypatch):
    # streaming stores are weakly ordered and only the calling thread fences: a parallel kernel
    # keeps plain stores
    monkeypatch.setattr(config, "stream_store_min_bytes", 1 << 16)
    monkeypatch.setattr(config, "threads", 2)
    src = check(lambda x: (x * 2 + 1).relu() - x, data(50_003, seed=8))
    assert "parallel for" in src and "vf_stream(&" not in src
