"""The compiled graph's extern calls on CUDA and the odd-N half GEMMs, on the GPU.

  * extern_cublas.matmul makes eager's cuBLAS call for contiguous operands: the same bits as eager's
    matmul (bf16, fp16, fp32 with TF32 off), and the same values on transposed / folded views;
  * zero-padded half GEMMs (gemm_padding.py) in eager (blas.gemm, mm2d, F.linear) and in compiled
    graphs (lowering_cublas.py) against the unpadded product and torch.mm on the same card: with
    small-integer operands every float32 sum is exact, so padded (eager and compiled), float64 rounded
    once and torch (its reduced-precision split-K off) agree bit for bit;
    with normal values, within one bf16 rounding of a float64 reference;
  * compiled graphs' other externs (bound to the CUDA kernel) against eager.
"""
import numpy as np
import pytest
import torch

import ember
from ember._cuda import gemm_padding
from ember._functorch import make_fx
from ember._inductor import extern_cublas
from ember._inductor.compile_fx import compile_fx

pytest.importorskip("triton", reason="triton is not installed (pip install ember[gpu])")
F = ember.nn.functional
HALF = [ember.bfloat16, ember.float16]
# M*N*K >= PAD_MIN_MACS with an odd vocabulary-like dim: the head's shapes, scaled down
M, C, V = 2048, 768, 2047
pytestmark = pytest.mark.usefixtures("strict_fuser")


def ints(*shape, dtype=ember.bfloat16, seed=0):
    """Small integers: every product and float32 sum is exact, whatever the order or padding."""
    a = np.random.default_rng(seed).integers(-3, 4, shape).astype(np.float32)
    return ember.from_numpy(a).cuda().to(dtype)


def normal(*shape, dtype=ember.bfloat16, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return ember.from_numpy(a).cuda().to(dtype)


def as_torch(t):
    return torch.from_numpy(t.float().cpu().numpy()).cuda().to(getattr(torch, str(t.dtype).split(".")[-1]))


def bits(t):
    return t.float().cpu().numpy()


def unpadded(monkeypatch):
    monkeypatch.setattr(gemm_padding, "PAD_MIN_MACS", 1 << 62)


HEAD = {   # name: (fn(functional, a, b), operand shapes): the tied head's forward and its two gradient products
    "x @ w.T": (lambda F, x, w: F.linear(x, w), ((4, M // 4, C), (V, C))),
    "g @ w": (lambda F, g, w: g @ w, ((4, M // 4, V), (V, C))),
    "g.T @ x": (lambda F, g, x: g.reshape(-1, V).t() @ x.reshape(-1, C), ((4, M // 4, V), (4, M // 4, C))),
}


def head(name):
    """(the ember function, the torch function, operand shapes) of a HEAD product."""
    fn, shapes = HEAD[name]
    return (lambda *a: fn(F, *a)), (lambda *a: fn(torch.nn.functional, *a)), shapes


@pytest.mark.parametrize("dtype", HALF, ids=str)
@pytest.mark.parametrize("name", list(HEAD))
def test_padded_head_gemms_exact_vs_unpadded_and_torch(monkeypatch, name, dtype):
    fn, torch_fn, shapes = head(name)
    args = [ints(*s, dtype=dtype, seed=i) for i, s in enumerate(shapes)]
    assert gemm_padding.pads_pay(dtype.np, M, V, C)
    padded = fn(*args)
    assert padded.is_contiguous()
    exact = fn(*[a.double() for a in args]).to(dtype)          # exact sums, rounded once
    np.testing.assert_array_equal(bits(padded), bits(exact))
    # torch too, once its split-K may not round partial sums to the half dtype (its default allows it)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction", False)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction", False)
    want = torch_fn(*[as_torch(a) for a in args])
    np.testing.assert_array_equal(bits(padded), want.float().cpu().numpy())
    compiled = compile_fx(make_fx(fn)(*args), args)
    assert "extern_cublas" in compiled.current.code
    got = compiled(*args)
    assert got.stride() == padded.stride()
    np.testing.assert_array_equal(bits(got), bits(padded))       # the same cuBLAS call as eager's
    # unpadded, cuBLAS's default math mode lets its split-K round partial sums to the half dtype
    # (as torch's default does): errors of a few units of the partial sums' last place
    unpadded(monkeypatch)
    scale = float(np.abs(bits(exact)).max())
    np.testing.assert_allclose(bits(fn(*args)), bits(exact), rtol=0, atol=2 ** -6 * scale)


@pytest.mark.parametrize("name", list(HEAD))
def test_padded_head_gemms_normal_values(name):
    """Within a bf16 rounding of float64 (padding changes cuBLAS's kernel, so its summation order);
    compiled equals eager bit for bit (the same padded cuBLAS call)."""
    fn, _, shapes = head(name)
    args = [normal(*s, seed=i) for i, s in enumerate(shapes)]
    got = fn(*args)
    ref = fn(*[a.double() for a in args]).cpu().numpy()
    err = np.abs(bits(got) - ref) / (np.abs(ref) + np.abs(ref).mean())
    assert err.max() < 2 ** -7
    compiled = compile_fx(make_fx(fn)(*args), args)
    np.testing.assert_array_equal(bits(compiled(*args)), bits(got))


def test_padded_gemm_into_out_and_with_bias_falls_back():
    from ember._cuda import blas
    x, w = ints(M, C)._data, ints(V, C, seed=1)._data
    out = blas.gemm(x, w.T)
    into = blas.gemm(x, w.T, out=ember.empty(M, V, device="cuda", dtype=ember.bfloat16)._data)
    assert bool((into == out).all())
    b = ints(V, seed=2)
    y = F.linear(ints(M, C), ints(V, C, seed=1), b)            # beta = 1: not padded, same values
    want = F.linear(ints(M, C).double(), ints(V, C, seed=1).double(), b.double())
    np.testing.assert_array_equal(bits(y), want.to(ember.bfloat16).float().cpu().numpy())


@pytest.mark.parametrize("dtype", HALF + [ember.float32], ids=str)
def test_extern_cublas_matmul_is_eagers_call(dtype):
    a, w = normal(6, 40, 64, dtype=dtype), normal(48, 64, dtype=dtype, seed=1)
    for x, y in ((a, w.t().contiguous()), (a[:, :, :48], w[:, :48]), (a.transpose(0, 1), w.t())):
        want = ember.matmul(x, y)
        got = extern_cublas.matmul(x, y)
        assert got.dtype == want.dtype and got.shape == want.shape and got.is_contiguous()
        if x.is_contiguous() and y.is_contiguous():
            np.testing.assert_array_equal(bits(got), bits(want))      # the same cublasGemmEx call
        else:
            np.testing.assert_allclose(bits(got), bits(want), rtol=1e-2, atol=1e-2)


def test_compiled_externs_bound_to_cuda_kernels():
    def fn(logits, target, w, idx):
        loss = F.cross_entropy(logits.float(), target, label_smoothing=0.1)     # (smoothed: eager's kernel)
        emb = ember.ops.aten.index_add.default(w, 0, idx, logits[:2, :w.shape[1]]) * 2
        return loss + 1, emb
    args = (normal(16, 33, dtype=ember.float32), ember.tensor(list(range(16))).cuda(),
            normal(5, 8, dtype=ember.float32, seed=1), ember.tensor([4, 0]).cuda())
    compiled = compile_fx(make_fx(fn)(*args), list(args))
    assert "aten_cross_entropy_loss__default_on_cuda" in compiled.current.code
    for got, want in zip(compiled(*args), fn(*args)):
        np.testing.assert_array_equal(got.cpu().numpy(), want.cpu().numpy())
    want = fn(*args)
    with ember.autocast("cuda", dtype=ember.bfloat16):           # traced in float32: computes what it traced
        got = compiled(*args)
    for g, w in zip(got, want):
        assert g.dtype == ember.float32
        np.testing.assert_array_equal(g.cpu().numpy(), w.cpu().numpy())
