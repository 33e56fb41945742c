"""Column reductions compiled for the GPU (codegen_triton_columns and the column split of
lowering_split) against eager ember on the same card: GPT-2's bias and LayerNorm gradients at their
real shapes in bf16 and float32, every reduction kind over dim 0, ragged shapes, NaN, and a
pointwise epilogue after the column sum."""
import os

import numpy as np
import pytest

if os.environ.get("TRITON_INTERPRET") == "1":
    pytest.skip("TRITON_INTERPRET=1: Triton's interpreter, not the GPU", allow_module_level=True)
pytest.importorskip("triton", reason="triton is not installed (pip install ember[gpu])")

import ember  # noqa: E402
from cuda_pairs import cuda  # noqa: E402
from test_compile_cuda import check  # noqa: E402

pytestmark = pytest.mark.usefixtures("strict_fuser")


def rand(shape, seed=0, dtype=np.float32):
    return cuda(np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype))


@pytest.mark.parametrize("cols", [768, 2304, 3072])
def test_gpt2_bias_gradients_bf16(cols):
    g = rand((8192, cols), seed=cols).to(ember.bfloat16)
    # bf16 output: eager and compiled both sum in float32 and round once; order differs: 1 bf16 ulp
    check(lambda a: a.sum(0), g, tol=1.6e-2)
    check(lambda a: a.float().sum(0), g, tol=1e-3)


def test_gpt2_layer_norm_weight_and_bias_gradients():
    g, x = rand((8, 1024, 768)).to(ember.bfloat16), rand((8, 1024, 768), seed=1)
    check(lambda a, b: ((a.float() * b).sum((0, 1)), a.float().sum((0, 1))), g, x, tol=1e-3)
    check(lambda a: a.to(ember.bfloat16).sum(0), rand((8192, 768), seed=2), tol=1.6e-2)


@pytest.mark.parametrize("shape", [(300, 100), (5, 3), (2000, 1), (257, 130), (20000, 70)])
def test_every_column_reduction_kind(shape):
    x = rand(shape, seed=shape[0])
    check(lambda a: (a.sum(0), a.mean(0), a.amax(0), a.amin(0)), x, tol=1e-4)
    check(lambda a: ((a > 1.5).any(0), (a > -1.99).all(0), a.var(0), ember.var_mean(a, 0)), x, tol=1e-4)
    i = cuda(np.random.default_rng(1).integers(-9, 9, shape))
    check(lambda a: (a.sum(0), a.amax(0), a.amin(0)), i)


def test_nan_and_epilogue():
    a = np.random.default_rng(0).standard_normal((5000, 9)).astype(np.float32)
    a[3, 2], a[4000, 5] = np.nan, np.inf
    w = rand((9,), seed=3)
    check(lambda t, v: (t.amax(0), t.amin(0), (t.sum(0) * 2 + v).relu()), cuda(a), w, tol=1e-4)
