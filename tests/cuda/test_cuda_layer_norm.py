"""The fused LayerNorm kernels of ember/_cuda/layer_norm.py against PyTorch CUDA: forward, dx,
dgamma and dbeta for float32/bfloat16/float16, rows shorter and longer than a block, several
normalised dims, with and without the affine parameters, more rows than the backward's partial
sums; the cases the kernels leave to the CPU source (float64, mixed dtypes, create_graph)."""
import numpy as np
import pytest
import torch

import ember

from cuda_pairs import close, pair

DTYPES = [("float32", 2e-5), ("bfloat16", 3e-2), ("float16", 4e-3)]




@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("shape,nd", [((4, 10, 32), 1), ((3, 768), 1), ((2, 5, 1000), 1), ((2, 3, 4, 5), 2),
                                      ((1100, 24), 1), ((7, 3000), 1)])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_layer_norm_forward_and_backward_match_torch(dtype, tol, shape, nd, affine):
    normalized = shape[-nd:]
    (ex, x), (eg, g) = pair(shape, dtype, 0, True, scale=3.0, shift=2.0), pair(shape, dtype, 1, False)
    (ew, w), (eb, b) = pair(normalized, dtype, 2, True, shift=1.0), pair(normalized, dtype, 3, True)
    if affine != "both":
        eb = b = None
    if affine == "none":
        ew = w = None
    ey = ember.nn.functional.layer_norm(ex, normalized, ew, eb, eps=1e-5)
    y = torch.nn.functional.layer_norm(x, normalized, w, b, eps=1e-5)
    close(ey, y, tol)
    ey.backward(eg)
    y.backward(g)
    # dgamma / dbeta sum over up to 1100 rows: the tolerance grows with the sum's length
    close(ex.grad, x.grad, 4 * tol)
    for e, t in ((ew, w), (eb, b)):
        if t is not None:
            close(e.grad, t.grad, 4 * tol * max(1.0, np.sqrt(x.numel() / t.numel()) / 4))


def test_layer_norm_takes_the_kernels_only_where_they_apply(monkeypatch):
    from ember._cuda import layer_norm
    calls = []
    real = layer_norm.layer_norm_backward
    def counted(*args):
        out = real(*args)
        calls.append("kernels" if out is not None else "formula")
        return out
    monkeypatch.setattr(layer_norm, "layer_norm_backward", counted)
    x = ember.randn(4, 16, device="cuda", requires_grad=True)
    w, b = ember.ones(16, device="cuda", requires_grad=True), ember.zeros(16, device="cuda", requires_grad=True)
    ember.nn.functional.layer_norm(x, (16,), w, b).sum().backward()
    assert calls == ["kernels"]
    calls.clear()
    xd = x.detach().double().requires_grad_()
    ember.nn.functional.layer_norm(xd, (16,), w.double(), b.double()).sum().backward()    # float64: source
    assert calls == ["formula"]


@pytest.mark.parametrize("case", ["float64", "mixed dtypes", "create_graph"])
def test_layer_norm_outside_the_kernels_matches_torch(case):
    dtype = "float64" if case == "float64" else "float32"
    (ex, x), (ew, w), (eb, b) = pair((6, 12), dtype, 0, True), pair((12,), dtype, 1, True), pair((12,), dtype, 2, True)
    if case == "mixed dtypes":   # bfloat16 input, float32 parameters: PyTorch's CPU kernel takes them (the
        # oracle, as in tests/ops: PyTorch's CUDA kernel refuses), so the CPU source runs on CuPy
        ex = ex.detach().to(ember.bfloat16).requires_grad_()
        x, w, b = (t.detach().cpu().requires_grad_() for t in (x.to(torch.bfloat16), w, b))
    results = []
    for lib, xx, ww, bb in ((ember, ex, ew, eb), (torch, x, w, b)):
        y = lib.nn.functional.layer_norm(xx, (12,), ww, bb)
        if case == "create_graph":
            gx, = lib.autograd.grad((y * y).sum(), xx, create_graph=True)
            gx.square().sum().backward()
            results.append((gx, xx.grad, ww.grad))
        else:
            y.float().square().sum().backward()
            results.append((y, xx.grad, ww.grad, bb.grad))
    for e, t in zip(*results):
        close(e, t, 3e-2 if case == "mixed dtypes" else 1e-4)


def test_layer_norm_errors_like_torch():
    for lib in (ember, torch):
        x = lib.randn(4, 8, device="cuda")
        with pytest.raises(RuntimeError):
            lib.nn.functional.layer_norm(x, (7,))
        with pytest.raises(RuntimeError):
            lib.nn.functional.layer_norm(x, (8,), lib.ones(7, device="cuda"))
