"""The flash-attention Triton kernels (ember/_cuda/flash_attention.py) checked without a GPU: run by
Triton's interpreter (TRITON_INTERPRET=1, torch CPU tensors) at small sizes against a float64 NumPy
softmax(q k^T * scale) v and its gradients: causal or not, L != S, lengths off the block sizes (tails
masked), every head dim, strided q (a transposed [B, L, H, D] view), blocks that split the causal
diagonal. float16 only: the interpreter's tl.dot reads bfloat16 operands as garbage (a 16x16
product is off by 1e10), so bfloat16 is checked on the GPU (tests/cuda/test_flash_attention.py).
The interpreter is chosen per process when Triton decorates a function, so the kernel tests run in
a pytest process of their own (the first test starts it)."""
import os
import subprocess
import sys

import numpy as np
import pytest

INTERPRETED = os.environ.get("EMBER_FLASH_INTERPRETER_RUN") == "1"


@pytest.mark.skipif(INTERPRETED, reason="this is the interpreter process itself")
def test_flash_kernels_under_the_interpreter_in_their_own_process():
    pytest.importorskip("triton", reason="triton is not installed (pip install ember[test])")
    pytest.importorskip("torch", reason="Triton's interpreter takes torch tensors")
    env = dict(os.environ, EMBER_FLASH_INTERPRETER_RUN="1", TRITON_INTERPRET="1", OMP_NUM_THREADS="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "-o", "addopts=", os.path.abspath(__file__)], cwd=root, env=env, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-6000:] + run.stderr[-3000:]


def reference(q, k, v, do, causal, scale):
    """(out, logsumexp, dq, dk, dv) in float64."""
    s = q @ np.swapaxes(k, -1, -2) * scale
    L, S = s.shape[-2:]
    if causal:
        s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    e = np.exp(s - m)
    total = e.sum(-1, keepdims=True)
    p = e / total
    dp = do @ np.swapaxes(v, -1, -2)
    ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * scale
    return p @ v, (m + np.log(total))[..., 0], ds @ k, np.swapaxes(ds, -1, -2) @ q, np.swapaxes(p, -1, -2) @ do


CASES = [  # B, H, L, S, D, causal, forward blocks (M, N), backward blocks (M, N)
    (1, 2, 5, 7, 16, False, (32, 16), (16, 32)),
    (2, 1, 37, 19, 32, True, (32, 16), (16, 32)),
    (1, 1, 70, 70, 16, True, (32, 16), (16, 32)),
    (1, 1, 70, 70, 16, True, (16, 32), (32, 16)),      # key blocks wider than query blocks
    (1, 2, 3, 130, 16, True, (32, 16), (16, 16)),
    (1, 1, 130, 40, 64, False, (32, 32), (32, 32)),
    (1, 1, 33, 33, 128, True, (16, 16), (16, 16)),
    (1, 1, 1, 1, 16, True, (16, 16), (16, 16)),
]


@pytest.mark.skipif(not INTERPRETED, reason="runs in the interpreter process")
@pytest.mark.parametrize("B,H,L,S,D,causal,fwd,bwd", CASES)
@pytest.mark.parametrize("scale", [None, 0.7])
def test_flash_kernels_match_float64_reference(B, H, L, S, D, causal, fwd, bwd, scale, monkeypatch):
    import torch
    from triton.runtime import interpreter
    # Triton 3.6's interpreter turns a loop bound into an int with int() of a one-element 1-d array,
    # which NumPy >= 2.4 refuses: it takes the element instead (the compiled kernel is unaffected)
    patch_tensor = interpreter._patch_lang_tensor

    def patched(tensor, scope):
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.reshape(-1)[0]))
    monkeypatch.setattr(interpreter, "_patch_lang_tensor", patched)
    from ember._cuda import flash_attention as fa

    rng = np.random.default_rng(L * 1000 + S)
    tdt = torch.float16
    q, k, v, do = (torch.from_numpy(rng.standard_normal((B, H, n, D)).astype(np.float32)).to(tdt)
                   for n in (L, S, S, L))
    q = q.transpose(1, 2).contiguous().transpose(1, 2)        # strided: [B, L, H, D] memory
    out, lse = torch.empty(B, H, L, D, dtype=tdt), torch.empty(B, H, L, dtype=torch.float32)
    fa.forward(q, k, v, out, lse, causal, scale, config=fwd + (4, 1))
    sc = 1 / np.sqrt(D) if scale is None else scale
    want = reference(*(t.double().numpy() for t in (q, k, v, do)), causal, sc)
    # the reference takes the rounded inputs: what is left is the kernels' float32 maths and the
    # rounding of the outputs (and of P and dS to the operands' dtype before their products)
    tol = 2e-3
    np.testing.assert_allclose(out.double().numpy(), want[0], atol=tol, rtol=tol)
    np.testing.assert_allclose(lse.double().numpy(), want[1], atol=1e-5, rtol=1e-5)
    delta = torch.empty_like(lse)
    grads = [torch.full_like(t, float("nan")) for t in (q, k, v)]
    fa.backward(do, q, k, v, out, lse, delta, *grads, causal, scale, config=bwd + (4, 1))
    for got, ref in zip(grads, want[2:]):
        np.testing.assert_allclose(got.double().numpy(), ref, atol=3 * tol * max(1.0, np.abs(ref).max()),
                                   rtol=3 * tol)
