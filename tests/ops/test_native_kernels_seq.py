"""The native kernels of sequence models (ember/_inductor/native_kernels_seq.py and the fast paths of
ember/ops that call them): each is compared with PyTorch (values and gradients, float32/float64,
repeated and padding indices, NaN/inf rows, strided inputs), checked to really be taken where it
should, and its fallbacks (other dtypes, layouts, double backward, EMBER_NATIVE off) to agree too."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.ops import native

from oracle import NATIVE_TOL as TOL


def _both(fn, arrays, grads_of=None, create_graph=False):
    """fn(lib, *tensors) in ember and torch; the float arrays (or those listed in `grads_of`)
    require grad. Returns [(values..., grads...)] per library."""
    res = []
    for lib in (ember, torch):
        ts = [lib.from_numpy(a.copy()) for a in arrays]
        wanted = [i for i, a in enumerate(arrays) if a.dtype.kind == "f"] if grads_of is None else grads_of
        for i in wanted:
            ts[i].requires_grad_()
        out = fn(lib, *ts)
        seed = np.random.default_rng(7).standard_normal(tuple(out.shape)).astype(out.detach().numpy().dtype)
        grads = lib.autograd.grad((out * lib.from_numpy(seed)).sum(), [ts[i] for i in wanted],
                                  create_graph=create_graph)
        res.append([out.detach().numpy()] + [g.detach().numpy() for g in grads])
    return res


def _assert_close(res, dtype, **kw):
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, equal_nan=True, **(kw or TOL[dtype]))


# ------------------------------------------------------------------------------ index_add, embedding

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_index_add_matches_torch_along_any_dim(dtype, dim, native_calls):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((4, 5, 6)).astype(dtype)
    n = base.shape[dim]
    idx = np.array([0, n - 1, 0, 1, 1, 0, n - 1], np.int64)      # repeated indices accumulate
    shape = list(base.shape)
    shape[dim] = idx.size
    src = rng.standard_normal(shape).astype(dtype)
    res = _both(lambda lib, b, i, s: b.index_add(dim, i, s), [base, idx, src])
    _assert_close(res, dtype)
    assert "index_add_rows" in native_calls


def test_index_add_order_equals_numpy_add_at():
    """Same sums in the same order as np.add.at: bit-equal results, also for int32 indices,
    alpha and a strided source."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((6, 300)).astype(np.float32)
    idx = rng.integers(0, 6, 40)
    src = (rng.standard_normal((300, 40)).astype(np.float32) * 1e3).T     # a transposed (strided) source
    for index, alpha in ((idx, 1), (idx.astype(np.int32), 1), (idx, 0.5)):
        got = ember.from_numpy(base.copy()).index_add(0, ember.from_numpy(index), ember.from_numpy(src), alpha=alpha)
        want = base.copy()
        np.add.at(want, index, src * np.float32(alpha) if alpha != 1 else src)
        np.testing.assert_array_equal(got.numpy(), want)


def test_index_add_fallbacks_and_errors_match_torch(native_calls):
    rng = np.random.default_rng(2)
    for dtype in (np.float16, np.int64):       # no native kernel: the NumPy path
        base, src = (rng.standard_normal((5, 3)) * 4).astype(dtype), (rng.standard_normal((4, 3)) * 4).astype(dtype)
        idx = np.array([4, 0, 4, 2])
        e = ember.from_numpy(base.copy()).index_add(0, ember.from_numpy(idx), ember.from_numpy(src))
        t = torch.from_numpy(base.copy()).index_add(0, torch.from_numpy(idx), torch.from_numpy(src))
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    e_base = ember.zeros(3, 2)
    for bad in (np.array([0, 3]), np.array([-1, 0])):    # out of range: nothing written, PyTorch's error
        with pytest.raises(RuntimeError):
            torch.zeros(3, 2).index_add(0, torch.from_numpy(bad), torch.ones(2, 2))
        with pytest.raises(RuntimeError):
            e_base.index_add_(0, ember.from_numpy(bad), ember.ones(2, 2))
        assert not e_base.numpy().any()
    # a 1-element float source broadcast to a row is not index_add's shape: PyTorch refuses it too
    with pytest.raises(RuntimeError):
        torch.zeros(3, 2).index_add(0, torch.tensor([0]), torch.ones(1))
    with pytest.raises(RuntimeError):
        ember.zeros(3, 2).index_add(0, ember.tensor([0]), ember.ones(1))
    empty = ember.zeros(3, 2).index_add(0, ember.tensor([], dtype=ember.int64), ember.ones(0, 2))
    assert not empty.numpy().any()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding_idx", [None, 0, 3, -2])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)])
def test_embedding_backward_matches_torch(dtype, padding_idx, shape, native_calls):
    rng = np.random.default_rng(3)
    weight = rng.standard_normal((6, 4)).astype(dtype)
    idx = rng.integers(0, 6, shape)
    idx.reshape(-1)[:3] = [3, 3, 4]            # repeated rows, and the padding row (3, or -2 = 4)
    res = _both(lambda lib, w, i: lib.nn.functional.embedding(i, w, padding_idx=padding_idx), [weight, idx])
    _assert_close(res, dtype)
    assert "index_add_rows" in native_calls


def test_embedding_double_backward_keeps_the_composed_formula(native_calls):
    """create_graph=True records ember ops (no native call), so a second derivative exists."""
    weight = np.random.default_rng(4).standard_normal((5, 3))
    idx = np.array([[1, 4, 1], [0, 2, 1]])
    grads = []
    for lib in (ember, torch):
        w = lib.from_numpy(weight.copy()).requires_grad_()
        scale = lib.from_numpy(np.linspace(0.5, 2, 18).reshape(2, 3, 3)).requires_grad_()
        (g,) = lib.autograd.grad((lib.nn.functional.embedding(lib.from_numpy(idx), w) * scale).sum(), w,
                                 create_graph=True)
        native_calls.clear()
        (gg,) = lib.autograd.grad((g ** 2).sum(), scale)
        grads.append((g.detach().numpy(), gg.numpy()))
    assert "index_add_rows" not in native_calls
    for e, t in zip(*grads):
        np.testing.assert_allclose(e, t, rtol=1e-12)


def test_embedding_int32_indices_and_native_off_agree(monkeypatch):
    weight = np.random.default_rng(5).standard_normal((8, 5)).astype(np.float32)
    idx = np.array([[7, 0, 7], [2, 2, 1]], np.int32)
    fn = lambda lib, w, i: lib.nn.functional.embedding(i, w)  # noqa: E731
    _assert_close(_both(fn, [weight, idx]), "float32")
    monkeypatch.setattr(native, "enabled", False)
    _assert_close(_both(fn, [weight, idx.astype(np.int64)]), "float32")


# ------------------------------------------------------------------------------ softmax rows, cross_entropy

def _rows(dtype, n=300):
    x = (np.random.default_rng(6).standard_normal((6, n)) * 4).astype(dtype)
    x[0, :] = -np.inf                     # all -inf: NaN, as PyTorch
    x[1, n // 2] = np.inf
    x[2, n - 1] = np.nan                  # a NaN past the last full vector of the row
    x[3, 0] = np.nan
    x[4, :] = 7.0                         # constant row
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("n", [1, 13, 300])
def test_softmax_rows_with_nan_and_inf_match_torch(dtype, name, n, native_calls):
    x = _rows(dtype, n) if n > 1 else np.array([[np.nan], [-np.inf], [3.0]], dtype)
    _assert_close(_both(lambda lib, t: getattr(lib, name)(t, -1), [x]), dtype)
    assert "softmax_fwd" in native_calls


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=2)])
def test_cross_entropy_forward_rows_match_torch(dtype, kw, native_calls):
    x = _rows(dtype, 11)
    target = np.array([1, 2, 10, 2, 0, 5])
    _assert_close(_both(lambda lib, t, y: lib.nn.functional.cross_entropy(t, y, **kw), [x, target]), dtype)
    assert {"softmax_fwd", "cross_entropy_bwd"} <= set(native_calls)


def test_cross_entropy_other_layouts_match_torch(native_calls):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 4, 3)).astype(np.float32)        # (N, C, d): classes not last
    y = rng.integers(0, 4, (5, 3))
    _assert_close(_both(lambda lib, t, s: lib.nn.functional.cross_entropy(t, s), [x, y]), "float32")
    v = rng.standard_normal(7)                                   # one unbatched sample
    _assert_close(_both(lambda lib, t, s: lib.nn.functional.cross_entropy(t, s), [v, np.array(3)]), "float64")
    xt = np.ascontiguousarray(rng.standard_normal((9, 6)).T)     # transposed logits: strided
    _assert_close(_both(lambda lib, t, s: lib.nn.functional.cross_entropy(t.t(), s), [xt, np.arange(9) % 6]),
                  "float64")
    with pytest.raises(IndexError):
        ember.nn.functional.cross_entropy(ember.randn(3, 4), ember.tensor([0, 4, 1]))


def test_cross_entropy_native_equals_numpy_path(monkeypatch):
    x = (np.random.default_rng(9).standard_normal((64, 50)) * 3).astype(np.float32)
    y = np.random.default_rng(10).integers(0, 50, 64)
    fn = lambda lib, t, s: lib.nn.functional.cross_entropy(t, s)  # noqa: E731
    got = _both(fn, [x, y])[0]
    monkeypatch.setattr(native, "enabled", False)
    ref = _both(fn, [x, y])[0]
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------------ gelu in float32

def test_gelu_float32_error_is_pytorchs():
    """The float32 kernels compute erf/exp in float (libmvec), as ATen's vectorised kernels do: their
    distance from the float64 result (cancellation in 1 + erf near x = -5 included) is within twice
    PyTorch's own."""
    x = np.concatenate([np.linspace(-9, 9, 4001), [0.0, -0.0, 1e-30, -1e-30]])
    for approximate in ("none", "tanh"):
        fn = lambda lib, t: lib.nn.functional.gelu(t, approximate=approximate)  # noqa: E731
        e32, t32 = _both(fn, [x.astype(np.float32)])      # [value, grad] of each library
        ref = _both(fn, [x])[1]                           # PyTorch in float64
        for e, t, r in zip(e32, t32, ref):
            assert np.abs(e - r).max() <= 2 * np.abs(t - r).max() + 1e-8


# ------------------------------------------------------------------------------ linear backward

LINEAR_CASES = [((8, 5, 6), True), ((7, 6), True), ((2, 3, 4, 6), False), ((0, 6), True), ((3, 0, 6), True)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,with_bias", LINEAR_CASES)
def test_linear_backward_matches_torch(dtype, shape, with_bias, monkeypatch):
    """The direct GEMM path gives the composed formula's gradients bit for bit, and PyTorch's."""
    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal(shape).astype(dtype), rng.standard_normal((9, 6)).astype(dtype)]
    if with_bias:
        arrays.append(rng.standard_normal(9).astype(dtype))
    fn = lambda lib, *t: lib.nn.functional.linear(*t)  # noqa: E731
    calls = []
    monkeypatch.setattr("ember.ops.derivatives.nn.native_linear", _recording(calls))
    got = _both(fn, arrays)
    _assert_close(got, dtype)
    assert calls == ["taken"]
    monkeypatch.setattr("ember.ops.derivatives.nn.native_linear", lambda *args: None)   # the composed formula
    assert all(np.array_equal(a, b) for a, b in zip(_both(fn, arrays)[0], got[0]))


def _recording(calls):
    from ember.ops.derivatives import nn as derivatives
    original = derivatives.native_linear

    def spy(*args):
        out = original(*args)
        calls.append("taken" if out is not None else "declined")
        return out
    return spy


def test_linear_backward_fallbacks_match_torch(monkeypatch):
    """Strided grads, a 1-d input, a frozen weight, a float16 layer and create_graph take the
    composed formula (or the direct path, where it applies) and agree with PyTorch."""
    rng = np.random.default_rng(12)
    x, w, b = rng.standard_normal((4, 3, 5)), rng.standard_normal((6, 5)), rng.standard_normal(6)
    _assert_close(_both(lambda lib, t, u, c: lib.nn.functional.linear(t.transpose(0, 1), u, c), [x, w, b]),
                  "float64")
    _assert_close(_both(lambda lib, t, u: lib.nn.functional.linear(t, u), [x[0, 0], w]), "float64")
    _assert_close(_both(lambda lib, t, u: lib.nn.functional.linear(t, u), [x, w], grads_of=[0]), "float64")
    h = [a.astype(np.float16) for a in (x, w, b)]
    e, t = _both(lambda lib, *ts: lib.nn.functional.linear(*ts), h)
    for a, c in zip(e, t):
        np.testing.assert_allclose(a.astype(np.float32), c.astype(np.float32), rtol=2e-2, atol=2e-2)
    calls = []
    monkeypatch.setattr("ember.ops.derivatives.nn.native_linear", _recording(calls))
    _assert_close(_both(lambda lib, t, u, c: lib.nn.functional.linear(t, u, c) ** 2, [x, w, b],
                        create_graph=True), "float64")
    assert calls == ["declined"]        # grad mode on while differentiating: the composed formula


# ------------------------------------------------------------------------------ matmul backward

MATMUL_CASES = [((4, 3, 5, 6), (4, 3, 6, 2)), ((5, 6), (6, 2)), ((2, 5, 6), (6, 3)), ((1, 5, 6), (3, 6, 2)),
                ((5, 6), (6,)), ((6,), (2, 6, 3)), ((2, 0, 6), (6, 0)), ((2, 4, 0), (2, 0, 3))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("a_shape,b_shape", MATMUL_CASES)
def test_matmul_backward_matches_torch_and_the_composed_formula(dtype, a_shape, b_shape, monkeypatch):
    """Equal batches and a 2-D right operand take the direct path (bit-equal to the formula);
    broadcast batches and vectors the formula; all agree with PyTorch."""
    rng = np.random.default_rng(13)
    arrays = [rng.standard_normal(a_shape).astype(dtype), rng.standard_normal(b_shape).astype(dtype)]
    fn = lambda lib, a, b: a @ b  # noqa: E731
    from ember.ops.derivatives import linalg as derivatives
    calls, original = [], derivatives._direct_matmul_backward

    def spy(*args):
        out = original(*args)
        calls.append(out is not None)
        return out
    monkeypatch.setattr(derivatives, "_direct_matmul_backward", spy)
    got = _both(fn, arrays)
    _assert_close(got, dtype)
    direct = len(a_shape) >= 2 and len(b_shape) >= 2 and (len(b_shape) == 2 or a_shape[:-2] == b_shape[:-2])
    assert calls == [direct]
    monkeypatch.setattr(derivatives, "_direct_matmul_backward", lambda *args: None)
    assert all(np.array_equal(a, b) for a, b in zip(_both(fn, arrays)[0], got[0]))


def test_matmul_backward_strided_one_sided_and_double_backward():
    rng = np.random.default_rng(14)
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 6, 4))
    _assert_close(_both(lambda lib, x, y: x.transpose(-1, -2) @ y.transpose(-1, -2), [a, b]), "float64")
    _assert_close(_both(lambda lib, x, y: x.transpose(-1, -2) @ y.transpose(-1, -2), [a, b], grads_of=[1]),
                  "float64")
    _assert_close(_both(lambda lib, x, y: (x.transpose(-1, -2) @ y.transpose(-1, -2)) ** 2, [a, b],
                        create_graph=True), "float64")
    res = []
    for lib in (ember, torch):        # a second derivative through the recorded formula
        x, y = (lib.from_numpy(t.copy()).requires_grad_() for t in (a, b))
        (gx,) = lib.autograd.grad(((x.mT @ y.mT) ** 2).sum(), x, create_graph=True)
        res.append([t.numpy() for t in lib.autograd.grad((gx ** 2).sum(), [x, y])])
    for e, t in zip(*res):
        np.testing.assert_allclose(e, t, rtol=1e-10)


# ------------------------------------------------------------------------------ scaled_dot_product_attention

def _sdpa(**kw):
    return lambda lib, q, k, v, *mask: lib.nn.functional.scaled_dot_product_attention(
        q, k, v, *mask, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("L,S", [(7, 7), (5, 9), (9, 4), (1, 1)])
@pytest.mark.parametrize("kw", [{}, dict(is_causal=True), dict(is_causal=True, scale=0.3)])
def test_sdpa_native_matches_torch(dtype, L, S, kw, native_calls):
    rng = np.random.default_rng(15)
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in ((2, 3, L, 8), (2, 3, S, 8), (2, 3, S, 5)))
    _assert_close(_both(_sdpa(**kw), [q, k, v]), dtype)
    assert native_calls.count("attn_softmax") == 2         # the forward, and the backward's recomputation


def test_sdpa_native_error_is_the_math_paths(monkeypatch):
    """Peaked float32 attention: the native path's distance from float64 is the math path's (and
    PyTorch's float32 kernel's), value and gradients."""
    rng = np.random.default_rng(16)
    arrays = [rng.standard_normal((4, 16, 8)).astype(np.float32) * 3 for _ in range(3)]
    fn = _sdpa(is_causal=True)
    ref = _both(fn, [a.astype(np.float64) for a in arrays])[1]           # PyTorch in float64
    native_path, torch32 = _both(fn, arrays)
    monkeypatch.setattr(native, "enabled", False)
    math_path = _both(fn, arrays)[0]
    for n, m, t, r in zip(native_path, math_path, torch32, ref):
        assert np.abs(n - r).max() <= 2 * max(np.abs(m - r).max(), np.abs(t - r).max()) + 1e-9


def test_sdpa_nan_and_inf_scores(monkeypatch):
    """A NaN query row gives a NaN output row, as PyTorch; +inf scores give the math path's NaNs."""
    rng = np.random.default_rng(17)
    q, k, v = rng.standard_normal((1, 4, 3)), rng.standard_normal((1, 4, 3)), rng.standard_normal((1, 4, 2))
    q[0, 2, 1] = np.nan
    e, t = _both(_sdpa(is_causal=True), [q, k, v])
    np.testing.assert_allclose(e[0], t[0], equal_nan=True, rtol=1e-10)
    k[0, 0, 0] = np.inf                   # scores of +-inf against key 0, seen by every query
    got = _both(_sdpa(is_causal=True), [q, k, v])[0][0]
    monkeypatch.setattr(native, "enabled", False)
    np.testing.assert_array_equal(got, _both(_sdpa(is_causal=True), [q, k, v])[0][0])


@pytest.mark.parametrize("case", ["bool mask", "float mask", "gqa", "broadcast batch", "strided"])
def test_sdpa_fallbacks_match_torch(case, native_calls):
    rng = np.random.default_rng(18)
    q, k, v = (rng.standard_normal(s) for s in ((2, 4, 5, 6), (2, 4, 7, 6), (2, 4, 7, 3)))
    kw, extra, native_expected = {}, [], False
    if case == "bool mask":
        extra = [rng.random((5, 7)) > 0.3]
        extra[0][:, 0] = True
    elif case == "float mask":
        extra = [rng.standard_normal((2, 1, 5, 7))]
    elif case == "gqa":
        k, v, kw = k[:, :2], v[:, :2], dict(enable_gqa=True)
    elif case == "broadcast batch":
        k, v = k[:1], v[:1]
    else:                                 # transposed storage: same batch shapes, the native path
        native_expected = True
    fn = _sdpa(**kw)
    if case == "strided":
        fn = lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(  # noqa: E731
            q.transpose(1, 2).transpose(1, 2), k.mT.mT, v)
    _assert_close(_both(fn, [q, k, v] + extra, grads_of=[0, 1, 2]), "float64")
    assert ("attn_softmax" in native_calls) == native_expected


def test_sdpa_double_backward_and_dropout_keep_the_composed_path(native_calls):
    rng = np.random.default_rng(19)
    q, k, v = (rng.standard_normal((2, 5, 4)) for _ in range(3))
    _assert_close(_both(lambda lib, *t: _sdpa(is_causal=True)(lib, *t) ** 2, [q, k, v], create_graph=True),
                  "float64")
    native_calls.clear()
    x = ember.from_numpy(q.copy()).requires_grad_()
    (g,) = ember.autograd.grad((_sdpa(is_causal=True)(ember, x, x, x) ** 2).sum(), x, create_graph=True)
    g.sum().backward()             # a second derivative: only possible through recorded ops
    assert x.grad is not None
    ember.manual_seed(0)
    out = _sdpa(dropout_p=0.5)(ember, x, x, x)       # dropout: the math path draws its mask
    assert out.shape == (2, 5, 4) and out.grad_fn is not None


@pytest.mark.parametrize("kernel", ["native", "numpy rows"])
@pytest.mark.parametrize("kw", [{}, dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=2)])
def test_cross_entropy_backward_rows_one_path(kernel, kw, monkeypatch):
    """The one rows path: with the native kernel, and without it (NumPy), for contiguous and
    transposed logits, all targets ignored; all equal PyTorch."""
    if kernel == "numpy rows":
        original = native.kernel
        monkeypatch.setattr(native, "kernel", lambda name, dtype: None if name == "cross_entropy_bwd"
                            else original(name, dtype))
    rng = np.random.default_rng(20)
    x = (rng.standard_normal((6, 5)) * 3).astype(np.float32)
    fn = lambda lib, t, y: lib.nn.functional.cross_entropy(t, y, **kw)  # noqa: E731
    for target in (np.array([1, 2, 4, 2, 0, 3]), np.full(6, 2)):
        _assert_close(_both(fn, [x, target]), "float32")
    xt = np.ascontiguousarray(x.T)
    _assert_close(_both(lambda lib, t, y: lib.nn.functional.cross_entropy(t.t(), y, **kw), [xt, np.arange(6) % 5]),
                  "float32")


# ------------------------------------------------------------------------------ clip_grad_norm_

def _clip_run(lib, dtypes, norm_type, max_norm=0.25, shapes=((50, 30), (30,), (7, 3, 2), ())):
    rng = np.random.default_rng(21)
    ps = []
    for shape, dt in zip(shapes, dtypes):
        p = lib.nn.Parameter(lib.from_numpy(np.asarray(rng.standard_normal(shape), dt)))
        p.grad = lib.from_numpy(np.asarray(rng.standard_normal(shape) * 3, dt))
        ps.append(p)
    total = lib.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
    return [total.numpy()] + [p.grad.numpy() for p in ps], ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0, 0.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_clip_grad_norm_arrays_path_equals_the_ops(norm_type, dtype, monkeypatch):
    """One NumPy pass per gradient: bit-equal to the per-gradient ops, close to PyTorch, versions bumped."""
    from ember.nn.utils import clip_grad
    fast, ps = _clip_run(ember, [dtype] * 4, norm_type)
    assert all(p.grad._version > 0 for p in ps)
    torch_res, _ = _clip_run(torch, [dtype] * 4, norm_type)
    for a, t in zip(fast, torch_res):
        np.testing.assert_allclose(a, t, rtol=1e-6 if dtype == "float32" else 1e-12)
    monkeypatch.setattr(clip_grad, "_plain_arrays", lambda tensors: None)
    slow, _ = _clip_run(ember, [dtype] * 4, norm_type)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)


def test_clip_grad_norm_mixed_dtypes_nonfinite_and_empty():
    for dtypes in (["float32", "float64", "float32", "float32"], ["float16"] * 4):
        e, _ = _clip_run(ember, dtypes, 2.0)
        t, _ = _clip_run(torch, dtypes, 2.0)
        for a, b in zip(e, t):
            np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=2e-3)
    p = ember.nn.Parameter(ember.ones(3))
    p.grad = ember.tensor([1.0, float("inf"), 2.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        ember.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    assert ember.nn.utils.clip_grad_norm_([ember.nn.Parameter(ember.ones(2))], 1.0).item() == 0.0
