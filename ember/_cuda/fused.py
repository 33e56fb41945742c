"""Hand-written CUDA kernels for what the CPU kernels' source computes in many whole-array passes
on the GPU: GELU forward and backward (one pass each instead of ten to thirty, half types
converted in registers rather than through float32 copies), class-index cross-entropy forward
and backward (row kernels: no one-hot, no materialised log-probabilities), and the prelude and
compile helper the attention kernels share.

Kernel sources are templated by dtype tag: ``DT`` (bf16 / half / f32) names the load/store
functions, ``ELEM_T`` the storage type (16-bit halves travel as unsigned short). Math is float32
("opmath"), as PyTorch's CUDA kernels compute half types.
"""
from __future__ import annotations

import cupy
import numpy

from .._core import dtype as _dt
from . import launch as _direct

TAGS = {numpy.dtype(numpy.float16): "half", _dt.bfloat16.np: "bf16", numpy.dtype(numpy.float32): "f32"}

PRELUDE = r"""
#define NEG_INF __int_as_float(0xff800000)
__device__ __forceinline__ float load_bf16(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
__device__ __forceinline__ unsigned short store_bf16(float f) {
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;            // NaN stays NaN
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); // round to nearest even
}
__device__ __forceinline__ float load_half(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short store_half(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
__device__ __forceinline__ float load_f32(float f) { return f; }
__device__ __forceinline__ float store_f32(float f) { return f; }
template <bool MAX> __device__ float block_reduce(float v, float* shared) {
    for (int o = 16; o > 0; o >>= 1) { float w = __shfl_xor_sync(0xffffffffu, v, o); v = MAX ? fmaxf(v, w) : v + w; }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    __syncthreads();
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < warps ? shared[lane] : (MAX ? NEG_INF : 0.f);
    for (int o = 16; o > 0; o >>= 1) { float w = __shfl_xor_sync(0xffffffffu, v, o); v = MAX ? fmaxf(v, w) : v + w; }
    return v;
}
"""

_modules: dict = {}
_kernels: dict = {}     # (id(source), name, dtype) -> RawKernel (RawModule.get_function: ~12 us a call)
_ndarray = cupy.ndarray   # (the constructor itself: cupy.empty is a Python frame around it)


def kernel(source: str, name: str, dtype):
    """Function `name`_<tag> of `source` compiled for `dtype` (once per source and dtype)."""
    key = (id(source), name, dtype)
    fn = _kernels.get(key)
    if fn is not None:
        return fn
    tag = TAGS[numpy.dtype(dtype)]
    mod = _modules.get((id(source), tag))
    if mod is None:
        code = source.replace("ELEM_T", "float" if tag == "f32" else "unsigned short").replace("DT", tag)
        mod = _modules[(id(source), tag)] = cupy.RawModule(code=code, options=("-std=c++14",))
    fn = _kernels[key] = mod.get_function(f"{name}_{tag}")
    return fn


def storage(a):
    """`a` as the kernels' storage type (halves as uint16 views)."""
    return a if a.dtype == numpy.float32 else a.view(numpy.uint16)


def _blocks(n) -> int:
    """The grid of a grid-stride elementwise launch over `n` elements (256 threads a block)."""
    return max(1, min((n + 255) // 256, 8192))


_CASTS = PRELUDE + r"""
#define CAST(NAME, IN_T, LOAD, OUT_T, STORE) \
extern "C" __global__ void NAME(const IN_T* x, OUT_T* y, long long n) { \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) \
        y[i] = STORE(LOAD(x[i])); \
}
CAST(cast_f32_bf16, float, load_f32, unsigned short, store_bf16)
CAST(cast_f32_half, float, load_f32, unsigned short, store_half)
CAST(cast_bf16_f32, unsigned short, load_bf16, float, store_f32)
CAST(cast_half_f32, unsigned short, load_half, float, store_f32)
"""
_CAST_NAMES = {(numpy.dtype(numpy.float32), _dt.bfloat16.np): "cast_f32_bf16",
               (numpy.dtype(numpy.float32), numpy.dtype(numpy.float16)): "cast_f32_half",
               (_dt.bfloat16.np, numpy.dtype(numpy.float32)): "cast_bf16_f32",
               (numpy.dtype(numpy.float16), numpy.dtype(numpy.float32)): "cast_half_f32"}
_launch_ppq = _direct.launcher("ppq")


def cast(arr, target):
    """`arr` in `target` as a new array in one launch where both are float32 and a half type and `arr`
    is contiguous (autocast's casts and their gradients); None otherwise (CuPy's astype then).
    CuPy's astype to bfloat16 is several times slower than the memory it moves."""
    name = _CAST_NAMES.get((arr.dtype, target))
    if name is None or not arr._c_contiguous:
        return None
    n = arr.size
    if not n:
        return None
    out = _ndarray(arr.shape, target)
    _launch_ppq(_direct.function_pointer(_cast_kernel(name)), _blocks(n), 256, arr.data.ptr, out.data.ptr, n)
    return out


def _cast_kernel(name):
    fn = _kernels.get(name)
    if fn is None:
        mod = _modules.get("casts") or _modules.setdefault("casts", cupy.RawModule(code=_CASTS,
                                                                                     options=("-std=c++14",)))
        fn = _kernels[name] = mod.get_function(name)
    return fn


_GELU = PRELUDE + r"""
#define K0 0.7978845608028654f   // sqrt(2 / pi)
#define K1 0.044715f
extern "C" __global__ void gelu_fwd_DT(const ELEM_T* x, ELEM_T* y, long long n, int tanh_form) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float v = load_DT(x[i]);
        float r = tanh_form ? 0.5f * v * (1.f + tanhf(K0 * (v + K1 * v * v * v)))
                            : 0.5f * v * (1.f + erff(v * 0.7071067811865476f));
        y[i] = store_DT(r);
    }
}
extern "C" __global__ void gelu_bwd_DT(const ELEM_T* g, const ELEM_T* x, ELEM_T* dx, long long n, int tanh_form) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float v = load_DT(x[i]), d;
        if (tanh_form) {
            float t = tanhf(K0 * (v + K1 * v * v * v));
            d = 0.5f * (1.f + t) + 0.5f * v * (1.f - t * t) * K0 * (1.f + 3.f * K1 * v * v);
        } else {
            d = 0.5f * (1.f + erff(v * 0.7071067811865476f)) + v * expf(-0.5f * v * v) * 0.3989422804014327f;
        }
        dx[i] = store_DT(load_DT(g[i]) * d);
    }
}
"""


_launch_ppqi, _launch_pppqi = _direct.launcher("ppqi"), _direct.launcher("pppqi")


def _gelu_applies(X, approximate) -> bool:
    return X.dtype in TAGS and approximate in ("none", "tanh") and X.size > 0


def gelu(math_path):
    """The CUDA variant's ``gelu``: one kernel for float16/bfloat16/float32 (others: `math_path`)."""
    def gelu(x, approximate="none"):
        X = x._data
        if not _gelu_applies(X, approximate):
            return math_path(x, approximate)
        from .kernels import wrap_cuda
        X = X if X._c_contiguous else cupy.ascontiguousarray(X)
        out = _ndarray(X.shape, X.dtype)
        _launch_ppqi(_direct.function_pointer(kernel(_GELU, "gelu_fwd", X.dtype)), _blocks(X.size), 256,
                     X.data.ptr, out.data.ptr, X.size, approximate == "tanh")
        return wrap_cuda(out)
    return gelu


def gelu_backward(grad, x, approximate):
    """d gelu(x) * grad in x's dtype, or None where the kernel does not apply."""
    X, G = x._data, grad._data
    if not _gelu_applies(X, approximate) or G.dtype != X.dtype or G.shape != X.shape:
        return None
    from .kernels import wrap_cuda
    X, G = (a if a._c_contiguous else cupy.ascontiguousarray(a) for a in (X, G))
    out = _ndarray(X.shape, X.dtype)
    _launch_pppqi(_direct.function_pointer(kernel(_GELU, "gelu_bwd", X.dtype)), _blocks(X.size), 256,
                  G.data.ptr, X.data.ptr, out.data.ptr, X.size, approximate == "tanh")
    return wrap_cuda(out)


_CROSS_ENTROPY = PRELUDE + r"""
// logsumexp of row `row` of x (C columns), in float32
__device__ float row_lse(const ELEM_T* xr, long long C, float* shared, float* row_max) {
    float m = NEG_INF;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) m = fmaxf(m, load_DT(xr[j]));
    m = block_reduce<true>(m, shared);
    float s = 0.f;
    for (long long j = threadIdx.x; j < C; j += blockDim.x) s += expf(load_DT(xr[j]) - m);
    *row_max = m;
    return m + logf(block_reduce<false>(s, shared));
}
// loss[row] = -log_softmax(x[row])[t[row]] (rounded to x's dtype first, as ATen), 0 where ignored;
// a target out of range sets the device check `flag` (device_checks.py) to `seq` and the target
extern "C" __global__ void ce_fwd_DT(const ELEM_T* x, const long long* t, float* loss, unsigned long long* flag,
                                      long long seq, long long C, long long ignore) {
    __shared__ float shared[32];
    long long row = blockIdx.x, tr = t[row];
    float m, lse = row_lse(x + row * C, C, shared, &m);
    if (threadIdx.x == 0) {
        if (tr == ignore) loss[row] = 0.f;
        else if (tr < 0 || tr >= C) {
            if (atomicCAS(flag, 0ULL, (unsigned long long)seq) == 0ULL) flag[1] = (unsigned long long)tr;
            loss[row] = 0.f;
        }
        else loss[row] = -load_DT(store_DT(load_DT(x[row * C + tr]) - lse));
    }
}
// dx[row] = (softmax(x[row]) - onehot(t[row])) * g / denom, 0 where ignored
extern "C" __global__ void ce_bwd_DT(const ELEM_T* x, const long long* t, ELEM_T* dx, const float* g,
                                      const float* denom, long long C, long long ignore) {
    __shared__ float shared[32];
    long long row = blockIdx.x, tr = t[row];
    const ELEM_T* xr = x + row * C;
    ELEM_T* out = dx + row * C;
    if (tr == ignore) {
        for (long long j = threadIdx.x; j < C; j += blockDim.x) out[j] = store_DT(0.f);
        return;
    }
    float m, lse = row_lse(xr, C, shared, &m);
    float scale = g[0] / denom[0];
    for (long long j = threadIdx.x; j < C; j += blockDim.x)
        out[j] = store_DT((expf(load_DT(xr[j]) - lse) - (j == tr ? 1.f : 0.f)) * scale);
}
"""


def _ce_applies(x, target, weight, reduction, label_smoothing) -> bool:
    X, T = x._data, target._data
    return (X.ndim == 2 and X.dtype in TAGS and X.size > 0 and T.dtype == numpy.int64 and T.ndim == 1
            and weight is None and label_smoothing == 0 and reduction in (1, 2))


def rows(fn, n_rows, cols, args):
    """One block per row of `cols` columns (launched directly, `launch.call`)."""
    _direct.call(fn, n_rows, 128 if cols <= 512 else 256 if cols <= 2048 else 1024, args)


def cross_entropy(math_path):
    """The CUDA variant's ``cross_entropy_loss`` for class indices, mean or sum, no weights or
    smoothing: a row kernel (logsumexp in float32); a target out of range raises the CPU kernel's
    IndexError at the next synchronising point (the kernel sets a device check: device_checks.py)."""
    def cross_entropy_loss(x, target, weight=None, reduction=1, ignore_index=-100, label_smoothing=0.0):
        if not _ce_applies(x, target, weight, reduction, label_smoothing):
            return math_path(x, target, weight, reduction, ignore_index, label_smoothing)
        from ..ops.meta import loss as meta
        from .kernels import wrap_cuda
        _, dt = meta.cross_entropy_rule(x, target, weight, ignore_index, label_smoothing)
        X, T = cupy.ascontiguousarray(x._data), cupy.ascontiguousarray(target._data)
        losses = _ndarray((X.shape[0],), numpy.float32)
        from . import device_checks
        flag, seq = device_checks.register(IndexError, "cross_entropy(): Target {value} is out of bounds.")
        rows(kernel(_CROSS_ENTROPY, "ce_fwd", X.dtype), X.shape[0], X.shape[1],
             (storage(X), T, losses, flag, numpy.int64(seq), numpy.int64(X.shape[1]), numpy.int64(ignore_index)))
        device_checks.after_launch()
        total = losses.sum()
        if reduction == 1:
            total = total / (T != ignore_index).sum().astype(numpy.float32)
        return wrap_cuda(total.astype(dt.np))
    return cross_entropy_loss


def cross_entropy_backward(grad, x, target, weight, reduction, ignore_index, label_smoothing):
    """The input's gradient of `cross_entropy` above, or None where it does not apply."""
    if not _ce_applies(x, target, weight, reduction, label_smoothing) or grad._data.size != 1:
        return None
    from .kernels import wrap_cuda
    X, T = cupy.ascontiguousarray(x._data), cupy.ascontiguousarray(target._data)
    g = grad._data.astype(numpy.float32).reshape(1)
    denom = (T != ignore_index).sum().astype(numpy.float32).reshape(1) if reduction == 1 else \
        cupy.ones(1, numpy.float32)
    dx = _ndarray(X.shape, X.dtype)
    rows(kernel(_CROSS_ENTROPY, "ce_bwd", X.dtype), X.shape[0], X.shape[1],
         (storage(X), T, storage(dx), g, denom, numpy.int64(X.shape[1]), numpy.int64(ignore_index)))
    return wrap_cuda(dx)
