"""The fuser's BLAS externs (extern_blas.py: linear and n-d @ 2-d matmul as one GEMM), extern arguments
read through permuted strides, and values realised once: compiled graphs against eager ember and
PyTorch, over the layouts and dtypes a graph can be specialised to."""
import numpy as np
import pytest
import torch

import ember
from ember._functorch import make_fx
from ember._inductor.compile_fx import compile_fx

from test_lowering import assert_same, extern_ops

F = ember.nn.functional


def compiled_matches_eager(fn, *inputs):
    want = fn(*inputs)
    compiled = compile_fx(make_fx(fn)(*inputs), list(inputs))
    got = compiled(*inputs)
    assert_same(got, want, None)
    assert_same(compiled(*inputs), want, None)       # a second call: the same buffers reused
    return compiled


def wrapper_targets(compiled):
    return [getattr(n.target, "__name__", "") for n in compiled.current.graph.nodes if n.op == "call_function"]


def rand(*shape, dtype=np.float32, seed=0):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("rows,inputs,outputs", [(4, 16, 64), (64, 32, 8), (1, 8, 8), (0, 8, 16), (16, 8, 64)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_2d_matches_eager_and_torch(rows, inputs, outputs, bias):
    x, w = rand(rows, inputs), rand(outputs, inputs, seed=1)
    b = rand(outputs, seed=2) if bias else None
    inputs = (x, w) if b is None else (x, w, b)
    compiled = compiled_matches_eager(lambda *xwb: F.linear(*xwb), *inputs)
    assert "linear" in wrapper_targets(compiled)               # the fuser's own extern ran
    got = compiled(*inputs).numpy()
    tb = None if b is None else torch.from_numpy(b.numpy())
    want = torch.nn.functional.linear(torch.from_numpy(x.numpy()), torch.from_numpy(w.numpy()), tb).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert compiled(*inputs).is_contiguous()


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_linear_over_leading_dims_every_layout(layout):
    base = rand(3, 5, 12)
    x = {"contiguous": base,
         "transposed": rand(5, 3, 12).transpose(0, 1),                       # leading dims do not fold
         "sliced": rand(3, 5, 24)[..., ::2]}[layout]
    w, b = rand(7, 12, seed=1), rand(7, seed=2)
    out = compiled_matches_eager(lambda x, w, b: F.relu(F.linear(x, w, b)) * 2, x, w, b)(x, w, b)
    assert out.shape == (3, 5, 7) and out.is_contiguous()


def test_linear_float64_and_half_and_mixed_dtypes():
    x64, w64 = rand(6, 4, dtype=np.float64), rand(3, 4, dtype=np.float64, seed=1)
    compiled_matches_eager(lambda x, w: F.linear(x, w), x64, w64)
    xh, wh = rand(6, 4).to(ember.bfloat16), rand(3, 4, seed=1).to(ember.bfloat16)
    compiled = compiled_matches_eager(lambda x, w: F.linear(x, w), xh, wh)
    assert "aten::linear" in extern_ops(compiled)             # not the BLAS extern: eager's kernel
    with pytest.raises(RuntimeError):                          # eager refuses mixed dtypes; so does tracing
        make_fx(lambda x, w: F.linear(x, w))(rand(6, 4), w64)


@pytest.mark.parametrize("a_shape,b_shape", [((2, 3, 8), (8, 5)), ((2, 2, 3, 8), (8, 4)), ((4, 1, 8), (8, 2)),
                                             ((2, 0, 8), (8, 3))])
def test_matmul_nd_by_2d_folds_and_matches_eager(a_shape, b_shape):
    a, b = rand(*a_shape), rand(*b_shape, seed=1)
    compiled = compiled_matches_eager(lambda a, b: a @ b, a, b)
    want = torch.from_numpy(a.numpy()) @ torch.from_numpy(b.numpy())
    np.testing.assert_allclose(compiled(a, b).numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_matmul_of_an_unfoldable_view_and_other_ranks():
    a = rand(4, 3, 8).transpose(0, 1)                  # (3, 4, 8): the leading dims do not fold
    compiled_matches_eager(lambda a, b: a @ b, a, rand(8, 5, seed=1))
    compiled_matches_eager(lambda a, b: a @ b, rand(2, 3, 4), rand(2, 4, 5, seed=1))    # batched: eager's
    compiled_matches_eager(lambda a, b: a @ b, rand(3, 4), rand(4, seed=1))             # mv: eager's


def test_a_transposed_gradient_is_read_through_strides_not_copied():
    # relu's backward feeds both g @ W and g.t() @ x (a linear's weight gradient): one kernel
    # computes g; the second product reads it transposed
    def weight_and_input_grads(g, h, w, x):
        gm = ember.where(h <= 0, ember.zeros_like(g), g)
        return gm @ w, gm.t() @ x
    g, h, w, x = rand(8, 16), rand(8, 16, seed=1), rand(16, 4, seed=2), rand(8, 6, seed=3)
    compiled = compiled_matches_eager(weight_and_input_grads, g, h, w, x)
    kernels = [t for t in wrapper_targets(compiled) if t.startswith("ember_k")]
    assert len(kernels) == 1, kernels


def test_a_value_used_by_an_extern_and_returned_is_computed_once():
    def gelu_then_linear(x, w):
        h = F.gelu(x * 2)
        return F.linear(h, w), h
    x, w = rand(8, 16), rand(4, 16, seed=1)
    compiled = compiled_matches_eager(gelu_then_linear, x, w)
    kernels = [t for t in wrapper_targets(compiled) if t.startswith("ember_k")]
    assert len(kernels) == 1, kernels
    y, h = compiled(x, w)
    h.add_(1)                                     # the output is the caller's own: y is not touched
    np.testing.assert_allclose(y.numpy(), gelu_then_linear(x, w)[0].numpy(), rtol=1e-6)
