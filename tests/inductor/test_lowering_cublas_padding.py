"""lowering_cublas.py's padded products, checked on the CPU: the CUDA lowering (zero-padded operands
written by generated kernels, one padded buffer per source shared by the products reading it, the
result read through a window, outputs copied to eager's layout) is run on a CPU graph with NumPy's
BLAS standing in for cuBLAS and the padding rule forced on, against eager: the padding must add
exact zeros and drop exactly the margin. Plus the rule itself (gemm_padding.py) and the fake-CUDA
GPT-2 head, lowered as the device runs it. tests/cuda/test_cuda_externs.py runs it on cuBLAS."""
import numpy as np
import pytest

import ember
from ember._cuda import gemm_padding
from ember._functorch import make_fx
from ember._inductor import extern_blas, extern_cublas, lowering_blas, lowering_cublas
from ember._inductor.compile_fx import compile_fx

F = ember.nn.functional
pytestmark = pytest.mark.usefixtures("strict_fuser")


@pytest.fixture
def cuda_lowering_on_cpu(monkeypatch):
    """CPU float32 products lowered by lowering_cublas, always padded, multiplied by NumPy."""
    monkeypatch.setattr(lowering_cublas, "_pads_pay", lambda dtype, M, N, K: (M | N | K) % 8 != 0)
    monkeypatch.setattr(lowering_cublas, "_CUBLAS", (ember.float32,))
    monkeypatch.setattr(extern_cublas, "matmul", extern_blas.matmul)
    monkeypatch.setattr(lowering_blas, "matmul", lowering_cublas.matmul)
    monkeypatch.setattr(lowering_blas, "linear", lowering_cublas.linear)
    from ember._inductor.lowering import EXTERN_LOWERINGS
    monkeypatch.setitem(EXTERN_LOWERINGS, "matmul.default", lowering_cublas.matmul)
    monkeypatch.setitem(EXTERN_LOWERINGS, "linear.default", lowering_cublas.linear)


def rand(*shape, seed=0):
    # small integers: every product and sum is exact in float32, so any summation order agrees
    return ember.from_numpy(np.random.default_rng(seed).integers(-3, 4, shape).astype(np.float32))


def compile_and_compare(fn, *inputs):
    c = compile_fx(make_fx(fn)(*inputs), list(inputs))
    assert c.current is not None
    got, want = c(*inputs), fn(*inputs)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape) and g.stride() == w.stride()
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    return c


PRODUCTS = [   # odd M, N, K in every combination of operand layouts the backward makes
    ("x @ w.T (head)", lambda x, w: F.linear(x, w), lambda: (rand(2, 5, 6), rand(11, 6, seed=1))),
    ("g @ w (K odd)", lambda g, w: ember.matmul(g, w), lambda: (rand(2, 5, 11), rand(11, 6, seed=1))),
    ("g.T @ x (M odd)", lambda g, x: ember.matmul(g.t(), x), lambda: (rand(10, 11), rand(10, 6, seed=1))),
    ("all odd", lambda a, b: ember.matmul(a, b), lambda: (rand(7, 9), rand(9, 13, seed=1))),
    ("computed operands", lambda a, b: ember.matmul((a * 2).relu(), (b + 1).t()) * 3,
     lambda: (rand(7, 9), rand(13, 9, seed=1))),
    ("product read twice + output", lambda a, b: (lambda p: (p, p.sum(-1), p * 2))(ember.matmul(a, b)),
     lambda: (rand(3, 5, 9), rand(9, 13, seed=1))),
]


@pytest.mark.parametrize("name, fn, make", PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_padded_products_match_eager(cuda_lowering_on_cpu, name, fn, make):
    c = compile_and_compare(fn, *make())
    assert "ember_matmul" in c.current.code or "extern_blas.matmul" in c.current.code


def test_one_padded_buffer_feeds_both_gradient_products(cuda_lowering_on_cpu):
    """A loss gradient g (B, T, V) in memory, read by g @ w and by g.reshape(-1, V).T @ x, is padded once."""
    def head_backward(g, w, x):
        return ember.matmul(g, w), ember.matmul(g.reshape(-1, 11).t(), x.reshape(-1, 6))
    g, w, x = rand(2, 5, 11), rand(11, 6, seed=1), rand(2, 5, 6, seed=2)
    from ember._inductor.compile_fx import lower_and_schedule
    gm = make_fx(head_backward)(g, w, x)
    graph, groups, _, _ = lower_and_schedule(gm, [g, w, x], "cpu")
    assert list(graph.zero_padded) and len(graph.zero_padded) == 1
    compile_and_compare(head_backward, g, w, x)


def test_the_padding_rule():
    bf16, f16, f32 = (ember.bfloat16.np, ember.float16.np, ember.float32.np)
    assert gemm_padding.pads_pay(bf16, 8192, 50257, 768) and gemm_padding.pads_pay(f16, 50257, 768, 8192)
    assert not gemm_padding.pads_pay(f32, 8192, 50257, 768)            # TF32/FP32 kernels: no align1 cliff measured
    assert not gemm_padding.pads_pay(bf16, 8192, 50264, 768)           # already aligned
    assert not gemm_padding.pads_pay(bf16, 64, 51, 64)                 # small: the copies cost more
    assert [gemm_padding.padded_size(n) for n in (1, 8, 9, 50257)] == [8, 8, 16, 50264]


def test_gpt2_head_on_fake_cuda_is_padded():
    """GPT-2 small's tied head (vocab 50257, bf16) lowered for CUDA over fake tensors: the forward
    multiplies a padded weight, the backward pads the loss gradient once for both GEMMs."""
    import sys
    import os
    sys.path.insert(0, os.path.dirname(__file__))
    from gpt2_fake_cuda import gpt2_graphs
    from ember._inductor.compile_fx import lower_and_schedule
    from ember._inductor import ir
    fw, fw_in, bw, bw_in = gpt2_graphs(layers=1, d=768, heads=12, seq=1024, batch=8, vocab=50257)
    for gm, inputs, padded in ((fw, fw_in, (50264, 768)), (bw, bw_in, (8192, 50264))):
        g, groups, _, _ = lower_and_schedule(gm, inputs, "cuda")
        products = [n for n in groups if isinstance(n, ir.ExternCall) and n.op is extern_cublas.matmul]
        shapes = {tuple(a.buffer.shape) for n in products for a in n.args}
        assert padded in shapes, shapes
    assert len(g.zero_padded) == 1
