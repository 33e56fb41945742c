"""Column reductions in the Triton generator (codegen_triton_columns, lowering_split's column split)
without a GPU: kernels run by Triton's interpreter, values compared with eager ember; and the
generated source for GPT-2's shapes (programs own contiguous columns, tiles coalesced along rows,
the rows split into chunks when the columns give too few programs, float32 partials for bf16)."""
import os
import sys

import numpy as np
import pytest

if os.environ.get("EMBER_TRITON_INTERPRETER_RUN") != "1":
    pytest.skip("run in its own process by tests/inductor/test_triton_interpreter_process.py",
                allow_module_level=True)
os.environ["TRITON_INTERPRET"] = "1"
triton = pytest.importorskip("triton", reason="triton is not installed (pip install ember[test])")
pytest.importorskip("torch", reason="Triton's interpreter takes torch tensors")

import ember  # noqa: E402
from ember._inductor import codegen_source, config, lowering_split  # noqa: E402
from test_triton_codegen import _triton_on_cpu, run  # noqa: E402,F401  (the fixture applies here too)

F = ember.nn.functional


def rand(shape, dtype=np.float32, seed=0, low=-2, high=2):
    return ember.from_numpy(np.random.default_rng(seed).uniform(low, high, shape).astype(dtype))


def kernels(src):
    return src.split("@triton.jit")[1:]


@pytest.mark.parametrize("shape", [(300, 100), (5, 3), (2000, 1), (257, 130)])
def test_every_column_reduction_kind(shape):
    x = rand(shape, seed=shape[0])
    run(lambda a: (a.sum(0), a.mean(0), a.amax(0), a.amin(0)), x)
    run(lambda a: ((a > 1.5).any(0), (a > -1.9).all(0), (a / 4).exp().prod(0) if shape[0] < 400 else a.sum(0)), x)
    run(lambda a: (a.var(0), a.std(0, correction=0), ember.var_mean(a, 0)), x)
    i = ember.from_numpy(np.random.default_rng(1).integers(-9, 9, shape))
    run(lambda a: (a.sum(0), a.amax(0), a.amin(0)), i)


def test_column_sums_with_pointwise_before_and_after():
    g, x = rand((6, 50, 40)), rand((6, 50, 40), seed=1)
    w = rand((40,), seed=2)
    # LayerNorm's weight and bias gradients (one loop for both), a bias gradient used after it
    run(lambda a, b: ((a * b).sum((0, 1)), a.sum((0, 1))), g, x)
    run(lambda a, c: (a.sum(0) * 2 + c).relu(), g.reshape(300, 40), w)
    run(lambda a: a.sum(0).sum(0), g)                 # the middle dim of a 3-D tensor: an outer loop per program
    run(lambda a: a.sum(1), g)


def test_column_max_propagates_nan_and_infinities():
    a = np.random.default_rng(0).standard_normal((70, 9)).astype(np.float32)
    a[3, 2], a[60, 5], a[10, 7] = np.nan, np.inf, -np.inf
    x = ember.from_numpy(a)
    run(lambda t: (t.amax(0), t.amin(0), t.sum(0)), x)


def test_half_floats_accumulate_in_float32():
    # 2048 rows of 1 + tiny in bf16: a bf16 accumulator would stop growing at 256
    x = ember.ones(2048, 24).to(ember.bfloat16)
    run(lambda a: a.sum(0), x)
    # values k/8: x*3 is exact in bf16 (Triton's interpreter truncates a float32 -> bf16 cast, the
    # GPU rounds to nearest: only exact casts compare here; tests/cuda rounds on the GPU)
    eighths = ember.from_numpy(np.random.default_rng(0).integers(-16, 17, (4096, 20)).astype(np.float32) / 8)
    run(lambda a: (a * 3).to(ember.bfloat16).sum(0), eighths)


def test_split_column_reduction_keeps_values(monkeypatch):
    # few column blocks: the rows are split in chunks, partials reduced per column (masked last chunk)
    monkeypatch.setattr(lowering_split, "COLUMN_CHUNK_MIN", 8)
    for rows in (512, 517, 100):
        x = ember.from_numpy(np.round(rand((rows, 70), seed=rows).numpy() * 8) / 8)     # exact in bf16
        run(lambda a: (a.sum(0), a.amax(0), a.amin(0), (a > 1.9).any(0)), x)
        run(lambda a: a.to(ember.bfloat16).sum(0), x)


def test_gpt2_bias_gradient_source_is_a_split_column_kernel():
    _, src = codegen_source(lambda g: g.sum(0), [("cuda", ember.bfloat16, (8192, 768))])
    first, second = kernels(src)
    assert "tl.arange(0, 64)[None, :]" in first and "[:, None]" in first
    assert "for " in first and "tl.sum(" in first and "keep_dims=True" in first
    # stage one's partials are float32 (one rounding to bf16, at the end), laid out [chunks, columns]
    assert "(t" in first and ").to(tl.float32), mask=xmask)" in first
    assert ".to(tl.bfloat16), mask=xmask)" in second
    grid_programs = int(first.split("pid % ")[1].split(")")[0])
    assert grid_programs == 12


def test_layer_norm_weight_and_bias_gradients_share_one_loop():
    _, src = codegen_source(lambda g, x: ((g * x).sum(0), g.sum(0)),
                            [("cuda", ember.float32, (300, 32768)), ("cuda", ember.float32, (300, 32768))])
    (k,) = kernels(src)
    assert k.count("for ") == 1 and k.count("tl.load(") == 2
    # GPT-2's shape is split: both first stages still share one pass (the scheduler puts the second
    # one beside the first, past the first's final stage), both final stages one kernel
    _, src = codegen_source(lambda g, x: ((g * x).sum(0), g.sum(0)),
                            [("cuda", ember.float32, (8192, 768)), ("cuda", ember.float32, (8192, 768))])
    first, second = kernels(src)
    assert first.count("for ") == 1 and first.count("tl.load(") == 2 and first.count("tl.store(") == 2
    assert second.count("tl.store(") == 2


def test_row_reductions_stay_row_kernels():
    _, src = codegen_source(lambda a: a.sum(1), [("cuda", ember.float32, (768, 8192))])
    assert "[None, :]" not in src and "row = tl.program_id(0)" in src
    _, src = codegen_source(lambda a: F.layer_norm(a, (768,)), [("cuda", ember.float32, (64, 768))])
    assert "[None, :]" not in src
