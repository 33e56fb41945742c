"""The host-time shortcuts of the eager CUDA step (issue 17) against what they stand in for:
`launch.call` / `launch.launcher` (cuLaunchKernel from Python values) against CuPy's own RawKernel
call, bit for bit; the float16/bfloat16 direct elementwise kernels against CuPy's ufuncs and
PyTorch CUDA; Adam's direct kernel against the ElementwiseKernel it replaces, bit for bit; the
fused kernels now launched directly (casts, GELU, cross-entropy) against PyTorch CUDA; cached
CUDA device objects. (CuPy is imported inside the tests: without it they are skipped, by conftest.)"""
import numpy as np
import pytest
import torch

import ember

_PROBE_SOURCE = r"""
extern "C" __global__ void probe(const float* x, double* out, long long n, int k, float f, double d) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n && blockIdx.y == gridDim.y - 1 && threadIdx.y == blockDim.y - 1)   // (y dims: one writer)
        out[i] = x[i] * k + f + d + gridDim.y * 1000.0 + blockDim.y * 100000.0;
}"""
_probe = []


@pytest.fixture
def cupy_probe():
    """(cupy, ember._cuda.launch, the probe RawKernel)."""
    import cupy
    from ember._cuda import launch
    if not _probe:
        _probe.append(cupy.RawKernel(_PROBE_SOURCE, "probe"))
    return cupy, launch, _probe[0]


@pytest.mark.parametrize("blocks,threads", [((3,), (64,)), (3, 64), ((3, 2), (64, 2)), ((1, 1, 1), (256, 1, 1))])
def test_call_equals_cupy_rawkernel_bit_for_bit(blocks, threads, cupy_probe):
    cupy, launch, _PROBE = cupy_probe
    x = cupy.asarray(np.random.default_rng(0).standard_normal(200).astype(np.float32))
    args = lambda out: (x, out, np.int64(x.size), np.int32(-3), np.float32(0.1), np.float64(1e-9))
    want, got = cupy.zeros(x.size, cupy.float64), cupy.zeros(x.size, cupy.float64)
    as_tuple = lambda v: v if isinstance(v, tuple) else (v,)
    _PROBE(as_tuple(blocks), as_tuple(threads), args(want))
    launch.call(_PROBE, blocks, threads, args(got))
    np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(want))


def test_call_with_other_argument_types_goes_through_cupy(cupy_probe):
    cupy, launch, _PROBE = cupy_probe
    x = cupy.arange(8, dtype=cupy.float32)
    want, got = cupy.zeros(8, cupy.float64), cupy.zeros(8, cupy.float64)
    _PROBE((1,), (8,), (x, want, 8, 2, np.float32(0.5), 0.25))          # Python ints and floats: CuPy converts
    launch.call(_PROBE, (1,), (8,), (x, got, 8, 2, np.float32(0.5), 0.25))
    np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(want))
    with pytest.raises(ValueError):
        launch.launcher("p" * (launch.SLOTS + 1))


def test_call_runs_on_the_current_stream(cupy_probe):
    cupy, launch, _PROBE = cupy_probe
    x = cupy.arange(1 << 20, dtype=cupy.float32)
    out = cupy.zeros(x.size, cupy.float64)
    stream = cupy.cuda.Stream(non_blocking=True)
    cupy.cuda.Device().synchronize()
    with stream:
        launch.call(_PROBE, ((x.size + 255) // 256,), (256,), (x, out, np.int64(x.size), np.int32(1),
                                                                np.float32(0), np.float64(0)))
        total = float(out.sum())     # ordered after the launch on the same stream
    assert total == float(cupy.asnumpy(x).astype(np.float64).sum()) + 101000.0 * x.size   # (+ gridDim.y, blockDim.y)


HALVES = ["float16", "bfloat16"]
HALF_BINARY = ["add", "subtract", "multiply", "true_divide"]


def _half_pair(dtype, shape=(257, 33)):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape).astype(np.float32) * 8
    b = np.abs(rng.standard_normal(shape).astype(np.float32)) + 0.5
    a.flat[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0]
    b.flat[:6] = [-0.0, 3.0, 2.0, np.inf, 1.0, 2.0]
    e = [ember.tensor(v, device="cuda").to(getattr(ember, dtype)) for v in (a, b)]
    t = [torch.tensor(v, device="cuda").to(getattr(torch, dtype)) for v in (a, b)]
    return e, t


def _bits(x):
    """A half tensor's (or NumPy array's) values as float32 bits (exact), NaNs made one value."""
    v = x.astype(np.float32) if isinstance(x, np.ndarray) else x.float().cpu().numpy()
    return np.where(np.isnan(v), np.float32(np.nan), v).view(np.uint32)


@pytest.mark.parametrize("name", HALF_BINARY + ["negative", "relu"])
@pytest.mark.parametrize("dtype", HALVES)
def test_half_direct_launch_equals_cupy_ufunc(name, dtype):
    import cupy
    from ember._cuda import elementwise
    (ea, eb), _ = _half_pair(dtype)
    args = (ea._data, eb._data) if name in HALF_BINARY else (ea._data,)
    out = elementwise.direct(name)(args, {})
    assert out is not None and out.dtype == args[0].dtype and out.flags.c_contiguous
    if name == "relu":     # (no CuPy ufunc: PyTorch's, below)
        return
    want = getattr(cupy, name)(*args)
    assert want.dtype == out.dtype
    np.testing.assert_array_equal(_bits(cupy.asnumpy(out)), _bits(cupy.asnumpy(want)))


OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
       "neg": lambda a, b: -a, "relu": lambda a, b: a.relu(), "add_": lambda a, b: a.clone().add_(b)}


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", HALVES)
def test_half_ops_match_torch_bit_for_bit(op, dtype):
    (ea, eb), (ta, tb) = _half_pair(dtype)
    e, t = OPS[op](ea, eb), OPS[op](ta, tb)
    assert str(e.dtype) == str(t.dtype).replace("torch", "ember") and e.stride() == t.stride()
    np.testing.assert_array_equal(_bits(e), _bits(t.cpu()))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("decoupled", [True, False])
@pytest.mark.parametrize("size", [1, 1000, 3 * 8192 * 256 + 7])
def test_adam_direct_kernel_equals_elementwise_kernel_bit_for_bit(dtype, decoupled, size):
    import cupy
    from ember._cuda import optim
    rng = np.random.default_rng(size)
    p, g, m, v = (cupy.asarray(rng.standard_normal(size).astype(dtype)) for _ in range(4))
    v = cupy.abs(v)
    s = np.dtype(dtype).type
    lr, decay, t = 1e-3, 0.1, 7
    scalars = (s(1 - lr * decay if decoupled else 1), s(0 if decoupled else decay), s(0.1), s(0.999), s(0.001),
               s(-(lr / (1 - 0.9 ** t))), s((1 - 0.999 ** t) ** 0.5), s(1e-8))
    want = [a.copy() for a in (p, m, v)]
    got = [a.copy() for a in (p, m, v)]
    for _ in range(3):
        optim._ELEMENTWISE(g, *scalars, *want)
        optim._ADAM(g, *scalars, *got)
    for w, o in zip(want, got):
        np.testing.assert_array_equal(cupy.asnumpy(o), cupy.asnumpy(w))


def test_adam_strided_operands_take_the_elementwise_kernel(monkeypatch):
    import cupy
    from ember._cuda import optim
    calls = []
    real = optim._ELEMENTWISE
    monkeypatch.setattr(optim, "_ELEMENTWISE", lambda *a: calls.append(1) or real(*a))
    p, g, m, v = (cupy.ones((6, 4), cupy.float32)[:, ::2] for _ in range(4))
    optim._ADAM(g, *(np.float32(x) for x in (1, 0, 0.1, 0.999, 0.001, -0.01, 0.5, 1e-8)), p, m, v)
    assert calls and float(p[0, 0]) != 1.0


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_fused_gelu_forward_and_backward_match_torch(dtype, approximate):
    a = np.random.default_rng(2).standard_normal((64, 96)).astype(np.float32) * 3
    out = []
    for lib in (ember, torch):
        x = lib.tensor(a, device="cuda").to(getattr(lib, dtype)).requires_grad_()
        y = lib.nn.functional.gelu(x, approximate=approximate)
        y.backward(lib.ones_like(y))
        out.append((y.detach().float().cpu().numpy(), x.grad.float().cpu().numpy()))
    tol = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 1e-2}[dtype]
    for e, t in zip(*out):
        np.testing.assert_allclose(e, t, rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_fused_cross_entropy_matches_torch_and_refuses_bad_targets(reduction):
    rng = np.random.default_rng(3)
    logits, targets = rng.standard_normal((16, 50)).astype(np.float32), rng.integers(0, 50, 16)
    targets[3] = -100
    out = []
    for lib in (ember, torch):
        x = lib.tensor(logits, device="cuda").to(lib.bfloat16).requires_grad_()
        loss = lib.nn.functional.cross_entropy(x, lib.tensor(targets, device="cuda"), reduction=reduction)
        loss.backward()
        out.append((loss.float().item(), x.grad.float().cpu().numpy()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-2)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=2e-2, atol=1e-3)
    bad = targets.copy()
    bad[0] = 50
    with pytest.raises(IndexError):     # found on the device, raised where the host synchronises
        ember.nn.functional.cross_entropy(ember.tensor(logits, device="cuda"), ember.tensor(bad, device="cuda")).item()


def test_cuda_devices_are_cached_and_compare_like_torch():
    a, b = ember.ones(2, device="cuda"), ember.zeros(3, device="cuda:0")
    assert a.device is b.device and a.device == ember.device("cuda", 0) == ember.device("cuda:0")
    assert str(a.device) == str(torch.ones(1, device="cuda").device) and a.get_device() == 0
    assert a[1:].device is a.device and a.to(ember.float16).device is a.device and a.cpu().device.type == "cpu"
    assert ember.ones(0, device="cuda").device is a.device
