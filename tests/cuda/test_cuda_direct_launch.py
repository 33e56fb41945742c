"""The direct CUDA launches (ember/_cuda/elementwise.py, blas.mm2d, _cuda/views.py) against PyTorch
CUDA and against the CuPy calls they stand in for: values (bit for bit where both run the same
expression), dtypes, strides, aliasing of out= and in-place updates, views sharing storage and
version counter, gradients through them, and the cases that must fall back (broadcasts, strided
operands, mixed dtypes, partial overlap). Halves: tests/cuda/test_cuda_launch.py."""
import numpy as np
import pytest
import torch

import ember

DTYPES = ["float32", "float64", "int32", "int64"]
FLOATS = ["float32", "float64"]
SHAPES = [(4,), (3, 5), (), (0,), (2, 0, 3), (1000003,)]
SPECIAL = [0.0, -0.0, 1.5, -2.25, float("nan"), float("inf"), -float("inf"), 1e-30, 88.0, -104.0]


def _values(shape, dtype, seed, positive=False):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) * 4
    if positive:
        a = np.abs(a) + 1.0
    return a.astype(dtype) if dtype.startswith("float") else np.round(a).astype(dtype)


def _both(a):
    return ember.tensor(a, device="cuda"), torch.tensor(a, device="cuda")


def _same(e, t):
    """Same dtype, shape, strides and values bit for bit (NaNs as NaNs)."""
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember") and tuple(e.shape) == tuple(t.shape)
    assert e.stride() == t.stride() and e.device.type == "cuda"
    ev, tv = e.cpu().numpy(), t.cpu().numpy()
    np.testing.assert_array_equal(ev, tv)
    if ev.dtype.kind == "f":
        assert (np.signbit(ev) == np.signbit(tv))[~np.isnan(ev)].all()


BINARY = {"add": lambda lib, a, b: lib.add(a, b), "sub": lambda lib, a, b: a - b,
          "mul": lambda lib, a, b: a * b, "div": lambda lib, a, b: lib.div(a, b)}


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_binary_matches_torch(op, dtype, shape):
    (ea, ta), (eb, tb) = _both(_values(shape, dtype, 0)), _both(_values(shape, dtype, 1, positive=True))
    _same(BINARY[op](ember, ea, eb), BINARY[op](torch, ta, tb))   # (division: IEEE in both)


@pytest.mark.parametrize("dtype", FLOATS)
def test_binary_special_values_match_torch(dtype):
    a = np.array(SPECIAL, dtype)
    (ea, ta), (eb, tb) = _both(a), _both(a[::-1].copy())
    for op in BINARY:
        _same(BINARY[op](ember, ea, eb), BINARY[op](torch, ta, tb))


@pytest.mark.parametrize("make", [
    lambda lib, a, b: lib.add(a.t(), b.t()),                 # strided operands
    lambda lib, a, b: a[:, :1] * b,                          # broadcast
    lambda lib, a, b: a.double() - b,                        # mixed dtypes
    lambda lib, a, b: a * 2.5 + 1,                           # Python numbers
    lambda lib, a, b: a.half()[:, ::2] + b.half()[:, ::2],   # strided halves
    lambda lib, a, b: lib.add(a, b, alpha=3),
])
def test_fallback_cases_still_match_torch(make):
    (ea, ta), (eb, tb) = _both(_values((3, 4), "float32", 2)), _both(_values((3, 4), "float32", 3))
    e, t = make(ember, ea, eb), make(torch, ta, tb)
    # (dtype and values: CuPy's ufunc returns row-major results where PyTorch keeps the operands'
    # transposed layout -- a gap of the general path, not of the direct one)
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember")
    torch.testing.assert_close(torch.from_numpy(e.cpu().numpy()), t.cpu(), rtol=1e-6, atol=1e-6)


UNARY = {"exp": (lambda x: x.exp(), False), "log": (lambda x: x.log(), True), "sqrt": (lambda x: x.sqrt(), True),
         "tanh": (lambda x: x.tanh(), False), "neg": (lambda x: -x, False), "relu": (lambda x: x.relu(), False)}


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_unary_matches_torch(op, dtype, shape):
    fn, positive = UNARY[op]
    e_in, t_in = _both(_values(shape, dtype, 4, positive))
    e, t = fn(e_in), fn(t_in)
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember") and e.stride() == t.stride()
    torch.testing.assert_close(torch.from_numpy(e.cpu().numpy()), t.cpu(), rtol=2e-7 if dtype == "float32" else 1e-15,
                               atol=0)


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_special_values_match_torch(op, dtype):
    fn, _ = UNARY[op]
    e_in, t_in = _both(np.array(SPECIAL, dtype))
    e, t = fn(e_in).cpu().numpy(), fn(t_in).cpu().numpy()
    np.testing.assert_allclose(e, t, rtol=2e-7 if dtype == "float32" else 1e-15, atol=0)   # NaN where NaN, inf where inf
    exact = ~np.isnan(e) & (e == 0)
    assert (np.signbit(e) == np.signbit(t))[exact].all()    # relu(-0.0) and -(0.0) keep their signs


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_neg_and_relu_match_torch(dtype):
    e_in, t_in = _both(_values((7, 3), dtype, 5))
    _same(-e_in, -t_in)
    _same(e_in.relu(), t_in.relu())


def test_bool_relu_refused_as_torch():
    e_in, t_in = _both(np.array([True, False]))
    with pytest.raises(RuntimeError):
        t_in.relu()
    with pytest.raises(RuntimeError):
        e_in.relu()


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "true_divide", "exp", "negative", "tanh"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_direct_launch_equals_cupy_ufunc_bit_for_bit(name, dtype):
    import cupy
    from ember._cuda import elementwise
    x = cupy.asarray(_values((257, 33), dtype, 6))
    y = cupy.asarray(_values((257, 33), dtype, 7, positive=True))
    args = (x, y) if name in elementwise.BINARY else (x,)
    out = elementwise.direct(name)(args, {})
    assert out is not None and out.dtype == x.dtype and out.flags.c_contiguous
    np.testing.assert_array_equal(cupy.asnumpy(out), cupy.asnumpy(getattr(cupy, name)(*args)))


def test_direct_launch_declines_what_it_does_not_cover():
    import cupy
    from ember._cuda import elementwise
    add = elementwise.direct("add")
    x = cupy.ones((4, 6), cupy.float32)
    assert add((x, x), {}) is not None
    assert add((x[:, ::2], x[:, ::2]), {}) is None            # strided
    assert add((x, cupy.ones(6, cupy.float32)), {}) is None   # broadcast
    assert add((x, x.astype(cupy.float64)), {}) is None       # mixed dtypes
    assert add((x.astype(cupy.float16), x.astype(cupy.float32)), {}) is None   # a half and a float
    assert add((x, 2.0), {}) is None                          # a number
    assert add((x, x), {"out": x, "dtype": cupy.float32}) is None
    assert add((x, x), {"out": x[:, :3]}) is None             # out of another shape
    flat = cupy.arange(10, dtype=cupy.float32)
    assert add((flat[1:9], flat[:8]), {"out": flat[2:10]}) is None   # partial overlap: CuPy copies first
    assert elementwise.direct("true_divide")((x.astype(cupy.int32),) * 2, {}) is None   # int / int is float
    assert elementwise.direct("maximum") is None


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "true_divide"])
def test_inplace_launch_writes_the_ufunc_result_into_x_and_declines_the_rest(name):
    import cupy
    from ember._cuda import elementwise
    run = elementwise.inplace(name)
    x = cupy.asarray(_values((257, 33), "float32", 10))
    y = cupy.asarray(_values((257, 33), "float32", 11, positive=True))
    want, ptr = getattr(cupy, name)(x, y), x.data.ptr
    assert run(x, y) is True and x.data.ptr == ptr            # in place, one launch
    np.testing.assert_array_equal(cupy.asnumpy(x), cupy.asnumpy(want))
    want = getattr(cupy, name)(x, x)
    assert run(x, x) is True                                   # the operand is x itself: element for element
    np.testing.assert_array_equal(cupy.asnumpy(x), cupy.asnumpy(want))
    before = cupy.asnumpy(x)
    flat = cupy.arange(10, dtype=cupy.float32)
    for operand in (y[:, :1], y.astype(cupy.float64), y.T.copy().T, cupy.ones(33, cupy.float32)):
        assert run(x, operand) is None                         # broadcast, dtype, layout: the general path
    assert run(flat[1:9], flat[:8]) is None                    # partial overlap
    np.testing.assert_array_equal(cupy.asnumpy(x), before)    # nothing written when declined


def test_out_and_inplace_alias_like_torch():
    (ea, ta), (eb, tb) = _both(_values((5, 5), "float32", 8)), _both(_values((5, 5), "float32", 9))
    ec, tc = _both(np.zeros((5, 5), np.float32))
    r_e, r_t = ember.add(ea, eb, out=ec), torch.add(ta, tb, out=tc)
    assert r_e is ec and r_t is tc
    _same(ec, tc)
    v_e, v_t = ea._version, ta._version
    ea.add_(eb), ta.add_(tb)
    ea.mul_(ea), ta.mul_(ta)
    ea.sub_(eb), ta.sub_(tb)
    ea.div_(eb), ta.div_(tb)
    _same(ea, ta)
    assert ea._version - v_e == ta._version - v_t
    ember.exp(eb, out=eb), torch.exp(tb, out=tb)
    torch.testing.assert_close(torch.from_numpy(eb.cpu().numpy()), tb.cpu(), rtol=2e-7, atol=0)


def test_partial_overlap_refused_like_torch():
    e, t = _both(np.arange(10, dtype=np.float32))
    for lib, x in ((torch, t), (ember, e)):
        with pytest.raises(RuntimeError, match="single memory location"):
            x[1:9].add_(x[:8])
        with pytest.raises(RuntimeError, match="single memory location"):
            lib.add(x[:8], x[1:9], out=x[2:10])
    _same(e, t)                                      # nothing was written
    e[2:6].mul_(e[2:6]), t[2:6].mul_(t[2:6])         # the same view: allowed
    e[:5].add_(e[5:]), t[:5].add_(t[5:])             # disjoint halves of one storage: allowed
    _same(e, t)


def test_direct_launch_on_a_side_stream():
    (ea, ta), (eb, tb) = _both(_values((1 << 20,), "float32", 16)), _both(_values((1 << 20,), "float32", 17))
    s = ember.cuda.Stream()
    ember.cuda.synchronize()                         # (a non-blocking stream does not wait for the copies)
    with ember.cuda.stream(s):
        e = (ea * eb + ea).exp().relu().sum()
        e_small = (ea[:1000] - eb[:1000]).sum()     # the one-block sum
    s.synchronize()
    t, t_small = (ta * tb + ta).exp().relu().sum(), (ta[:1000] - tb[:1000]).sum()
    np.testing.assert_allclose(e.item(), t.item(), rtol=1e-4)
    np.testing.assert_allclose(e_small.item(), t_small.item(), rtol=1e-5)


@pytest.mark.parametrize("dtype,tol", [("float32", 1e-5), ("float64", 1e-12), ("bfloat16", 2e-2), ("float16", 5e-3)])
@pytest.mark.parametrize("m,k,n", [(4, 4, 4), (1, 7, 1), (5, 1, 3), (33, 65, 17), (0, 3, 4), (3, 0, 4), (3, 4, 0)])
def test_matmul_2d_matches_torch(dtype, tol, m, k, n):
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
    ea, eb = (ember.tensor(x, device="cuda").to(getattr(ember, dtype)) for x in (a, b))
    ta, tb = (torch.tensor(x, device="cuda").to(getattr(torch, dtype)) for x in (a, b))
    e, t = ea @ eb, ta @ tb
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember") and e.shape == t.shape and e.stride() == t.stride()
    np.testing.assert_allclose(e.float().cpu().numpy(), t.float().cpu().numpy(), rtol=tol, atol=tol)
    e2, t2 = ea.mm(eb.t().contiguous().t()), ta.mm(tb.t().contiguous().t())     # column-major operand: CuPy's path
    np.testing.assert_allclose(e2.float().cpu().numpy(), t2.float().cpu().numpy(), rtol=tol, atol=tol)


def test_matmul_2d_tf32_switch_and_integer_refusal():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 256)).astype(np.float32)
    ea, ta = _both(a)
    exact = (ea @ ea.t().contiguous()).cpu().numpy()
    torch.testing.assert_close(torch.from_numpy(exact), (ta @ ta.t().contiguous()).cpu(), rtol=1e-5, atol=1e-4)
    ember.backends.cuda.matmul.allow_tf32 = True
    try:
        fast = (ea @ ea.t().contiguous()).cpu().numpy()
    finally:
        ember.backends.cuda.matmul.allow_tf32 = False
    assert not np.array_equal(fast, exact)    # TF32 rounds the operands to 10 mantissa bits
    np.testing.assert_allclose(fast, exact, rtol=2e-2, atol=2e-1)
    ei, ti = _both(np.ones((3, 3), np.int64))
    with pytest.raises(RuntimeError):         # PyTorch: "addmm_cuda" not implemented for 'Long'
        ti @ ti
    with pytest.raises(RuntimeError):
        ei @ ei


@pytest.mark.parametrize("src,shape", [((4, 4), (16,)), ((4, 4), (-1, 2)), ((2, 3, 4), (6, 1, 4)), ((), (1,)),
                                       ((6,), (1, 6, 1)), ((0, 3), (3, 0))])
def test_view_matches_torch(src, shape):
    a = np.arange(int(np.prod(src)), dtype=np.float32).reshape(src)
    e, t = _both(a)
    ev, tv = e.view(*shape), t.view(*shape)
    assert tuple(ev.shape) == tuple(tv.shape) and ev.stride() == tv.stride()
    assert ev.data_ptr() == e.data_ptr()
    ev.add_(1), tv.add_(1)                     # writes through to the base, version shared
    _same(e, t)
    assert e._version == ev._version


def test_view_refusals_match_torch():
    e, t = _both(np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(RuntimeError):
        t[:0].view(-1, 0)
    with pytest.raises(RuntimeError):
        e[:0].view(-1, 0)
    for bad in [(5,), (-1, -1), (-2, 6)]:
        with pytest.raises(RuntimeError):
            t.view(*bad)
        with pytest.raises(RuntimeError):
            e.view(*bad)
    with pytest.raises(RuntimeError):
        t.t().view(12)
    with pytest.raises(RuntimeError):
        e.t().view(12)
    assert e.t().view(4, 3).stride() == t.t().view(4, 3).stride()


def test_gradients_through_direct_paths_match_torch():
    rng = np.random.default_rng(12)
    a, w = rng.standard_normal((6, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(np.float32)
    results = []
    for lib in (ember, torch):
        x = lib.tensor(a, device="cuda", requires_grad=True)
        W = lib.tensor(w, device="cuda", requires_grad=True)
        y = ((x @ W).relu() * x).exp().view(-1) - x.view(48).tanh()
        (y.sum() / 48).backward()
        results.append((y.detach().cpu().numpy(), x.grad.cpu().numpy(), W.grad.cpu().numpy()))
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(4,), (), (0,), (3, 7), (1 << 16,), ((1 << 16) + 1,), (300, 300)])
def test_full_sum_matches_torch(dtype, shape):
    e_in, t_in = _both(_values(shape, dtype, 13))
    e, t = e_in.sum(), t_in.sum()
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember") and e.shape == t.shape == ()
    np.testing.assert_allclose(e.item(), t.item(), rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-3)
    for special in (float("nan"), float("inf")):
        a = _values((5,), dtype, 14)
        a[2] = special
        e_in, t_in = _both(a)
        assert np.array_equal(e_in.sum().item(), t_in.sum().item(), equal_nan=True)
    assert str(_both(np.array([-0.0], dtype))[0].sum().item()) == str(torch.tensor([-0.0], device="cuda").sum().item())


def test_full_sum_keeps_its_fallbacks():
    e_in, t_in = _both(_values((6, 5), "float32", 15))
    np.testing.assert_allclose(e_in.t().sum().item(), t_in.t().sum().item(), rtol=1e-6)      # strided
    _same(_both(np.arange(7, dtype=np.int64))[0].sum(), torch.arange(7, device="cuda").sum())  # integers
    np.testing.assert_allclose(e_in.sum(dtype=ember.float64).item(), t_in.sum(dtype=torch.float64).item(), rtol=1e-12)
