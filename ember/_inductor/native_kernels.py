"""Native eager kernels: C loops for the hot composite ops, compiled once through the fuser's kernel
cache and called from eager CPU kernels and derivative formulas (ATen's native kernels, for ember).

    fn = native_kernels.kernel("gelu_fwd", np.dtype(np.float32))   # None: use the NumPy kernel
    fn(x, out, x.size)                                                # launch.launcher()'s convention

Why: a composite op written in NumPy makes one temporary array per step (GELU's erf alone is ~20
passes over memory), and a recurrent cell is ~11 ember ops per time step, each ~20 us of Python.
One C loop per op does the same arithmetic in one pass.

How: every kernel of one dtype is written by hand in one C text (`source(dtype)`) as plain loops
(the bodies below), prefixed with the libmvec prototypes the code generator uses
(machine.vector_math_prelude(), so expf/tanh/erf vectorise). Each kernel is compiled on its own
(`kernel_source(name, dtype)`: that text without the other kernels' bodies, so macros and helpers
stay where they are), and cached on disk by codecache.load_c (same key, lock, digest and trust rules
as generated kernels): the whole text is ~1.2 s of compiler CPU, a program's first cross_entropy
needs two kernels of ~0.1 s. Kernels are called through launch.launcher() (pointers read from the
arrays, GIL released). Compilation happens at a kernel's first call, never at import; `import
ember` does not import this module (ember/ops/native.py imports it lazily).

Every kernel takes C-contiguous arrays of one dtype (the caller copies other layouts) and follows
the signature `void k(void *const *bufs, const int64_t *ints, const double *floats)`. Float32
kernels compute transcendental functions in the input's precision, as ATen's vectorised kernels
do; results agree with the NumPy kernels (erf in double there) within a few ulps.
"""
from __future__ import annotations

import re
import threading

import numpy as np

from .._logging import lazy_logger

log = lazy_logger("ember._inductor.native_kernels")     # logging is imported on the first message

DTYPES = {np.dtype(np.float32): ("float", "f32"), np.dtype(np.float64): ("double", "f64")}

_HEADER = r"""
#include <math.h>
#include <stdint.h>
#include <string.h>
%(prelude)s
typedef %(T)s T;
#define K(name) void name##_%(suffix)s(void *const *bufs, const int64_t *ints, const double *floats)
#define SIGMOID(v) ((T)1 / ((T)1 + exp(-(v))))
"""

# ----------------------------------------------------------------------------- the kernel bodies
# `exp`/`tanh` on a float argument: <tgmath.h> is not used, so float kernels call the float
# functions through these macros (libmvec vectorises expf/tanhf).
_BODIES = r"""
#if %(is_float)d
#define sqrtf_or_sqrt sqrtf
#undef SIGMOID
#define EXP expf
#define TANH tanhf
#define ERF erff
#define FMA fmaf
#define SIGMOID(v) (1.0f / (1.0f + expf(-(v))))
#else
#define sqrtf_or_sqrt sqrt
#define EXP exp
#define TANH tanh
#define ERF erf
#define FMA fma
#endif

/* gelu, exact: x * Phi(x), in T as ATen's vectorised kernel (libmvec's erff is within 1 ulp;
   the float32 kernel in double took 2.7x as long, for differences of an ulp). */
K(gelu_fwd) {
    const T *x = bufs[0]; T *out = bufs[1]; int64_t n = ints[0];
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        T v = x[i];
        out[i] = v * (T)0.5 * ((T)1 + ERF(v * (T)0.70710678118654752440));
    }
}

/* d gelu / dx = Phi(x) + x * phi(x), times the incoming gradient. */
K(gelu_bwd) {
    const T *g = bufs[0], *x = bufs[1]; T *out = bufs[2]; int64_t n = ints[0];
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        T v = x[i];
        T cdf = (T)0.5 * ((T)1 + ERF(v * (T)0.70710678118654752440));
        T pdf = (T)0.39894228040143267794 * EXP((T)-0.5 * v * v);
        out[i] = g[i] * (cdf + v * pdf);
    }
}

/* gelu, tanh approximation, and its derivative (ATen's GeluBackwardKernel formula). */
K(gelu_tanh_fwd) {
    const T *x = bufs[0]; T *out = bufs[1]; int64_t n = ints[0];
    const T beta = (T)0.79788456080286535588, kappa = (T)0.044715;
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        T v = x[i];
        out[i] = (T)0.5 * v * ((T)1 + TANH(beta * (v + kappa * (v * v * v))));
    }
}

K(gelu_tanh_bwd) {
    const T *g = bufs[0], *x = bufs[1]; T *out = bufs[2]; int64_t n = ints[0];
    const T beta = (T)0.79788456080286535588, kappa = (T)0.044715;
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        T v = x[i];
        T t = TANH(beta * (v + kappa * v * v * v));
        T left = (T)0.5 * ((T)1 + t);
        T right = ((T)1 - t * t) * beta * ((T)1 + (T)3 * kappa * v * v);
        out[i] = g[i] * (left + (T)0.5 * v * right);
    }
}

/* One LSTM time step after the matmuls: gates = xg + hg (B, 4H, in PyTorch's order i, f, g, o);
   writes the activated gates (act, B x 4H: i, f, g, o), c (B, H) and h (B, H). */
K(lstm_cell_fwd) {
    const T *xg = bufs[0], *hg = bufs[1], *cp = bufs[2];
    T *act = bufs[3], *c = bufs[4], *h = bufs[5];
    int64_t B = ints[0], H = ints[1];
    for (int64_t b = 0; b < B; b++) {
        const T *xr = xg + b * 4 * H, *hr = hg + b * 4 * H;
        T *ar = act + b * 4 * H;
        #pragma omp simd
        for (int64_t j = 0; j < H; j++) {
            T i = SIGMOID(xr[j] + hr[j]);
            T f = SIGMOID(xr[H + j] + hr[H + j]);
            T gg = TANH(xr[2 * H + j] + hr[2 * H + j]);
            T o = SIGMOID(xr[3 * H + j] + hr[3 * H + j]);
            T cn = f * cp[b * H + j] + i * gg;
            ar[j] = i; ar[H + j] = f; ar[2 * H + j] = gg; ar[3 * H + j] = o;
            c[b * H + j] = cn;
            h[b * H + j] = o * TANH(cn);
        }
    }
}

/* Its backward: dh = dh_out + dh_rec (the step's output gradient and the recurrent one), dc the
   gradient reaching c from the next step; writes dgates (B, 4H) and dc_prev (B, H). */
K(lstm_cell_bwd) {
    const T *dh_out = bufs[0], *dh_rec = bufs[1], *dc = bufs[2], *act = bufs[3], *cp = bufs[4], *c = bufs[5];
    T *dgates = bufs[6], *dc_prev = bufs[7];
    int64_t B = ints[0], H = ints[1];
    for (int64_t b = 0; b < B; b++) {
        const T *ar = act + b * 4 * H;
        T *dr = dgates + b * 4 * H;
        #pragma omp simd
        for (int64_t j = 0; j < H; j++) {
            int64_t k = b * H + j;
            T i = ar[j], f = ar[H + j], gg = ar[2 * H + j], o = ar[3 * H + j];
            T tc = TANH(c[k]);
            T dh = dh_out[k] + dh_rec[k];
            T dct = dc[k] + dh * o * ((T)1 - tc * tc);
            dr[j] = dct * gg * i * ((T)1 - i);
            dr[H + j] = dct * cp[k] * f * ((T)1 - f);
            dr[2 * H + j] = dct * i * ((T)1 - gg * gg);
            dr[3 * H + j] = dh * tc * o * ((T)1 - o);
            dc_prev[k] = dct * f;
        }
    }
}

/* One Adam/AdamW step on a parameter (after weight decay), the operations and their order those
   of torch's single-tensor Adam (and of ember's eager update), each rounded to T:
   m = lerp(m, g, 1 - beta1); v = v * beta2 + (1 - beta2) * g * g;
   p = p * shrink - step_size * m / (sqrt(v) / sqrt(bias_correction2) + eps). */
K(adam_step) {
    T *p = bufs[0]; const T *g = bufs[1]; T *m = bufs[2], *v = bufs[3]; int64_t n = ints[0];
    const T w = (T)floats[0], beta2 = (T)floats[1], one_minus_beta2 = (T)floats[2];
    const T bc2_sqrt = (T)floats[3], eps = (T)floats[4], neg_step = (T)floats[5], shrink = (T)floats[6];
    const int low = fabs((double)w) < 0.5;
    const T one_minus_w = (T)1 - w;
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        T gi = g[i], diff = gi - m[i];
        T mi = low ? m[i] + w * diff : gi - diff * one_minus_w;
        T vi = v[i] * beta2 + (gi * one_minus_beta2) * gi;
        T denom = sqrtf_or_sqrt(vi) / bc2_sqrt + eps;
        m[i] = mi; v[i] = vi;
        T pi = p[i] * shrink;                 /* AdamW's decoupled decay first (1 without it) */
        p[i] = pi + (mi * neg_step) / denom;
    }
}

/* Mean and biased variance, in double, of `outer` blocks of `inner` contiguous elements, block b
   at x + b * bstride (two passes: the variance of data far from zero keeps its digits). */
static void group_moments(const T *x, int64_t outer, int64_t inner, int64_t bstride, double *mean, double *var) {
    double sum = 0, sq = 0, count = (double)(outer * inner);
    for (int64_t b = 0; b < outer; b++) {
        const T *xb = x + b * bstride;
        #pragma omp simd reduction(+:sum)
        for (int64_t j = 0; j < inner; j++) sum += xb[j];
    }
    *mean = sum / count;
    for (int64_t b = 0; b < outer; b++) {
        const T *xb = x + b * bstride;
        #pragma omp simd reduction(+:sq)
        for (int64_t j = 0; j < inner; j++) { double d = xb[j] - *mean; sq += d * d; }
    }
    *var = sq / count;
}

/* A normalisation's forward over the same groups as norm_bwd below: per group the mean and biased
   variance (in double, written to mean/var), then y = (x - mean) * rstd * w + b, with w and b per
   group or per element of a row (`row_weight`), each optional. */
K(norm_fwd) {
    const T *x = bufs[0], *w = bufs[1], *bias = bufs[2]; T *y = bufs[3]; double *mean_out = bufs[4], *var_out = bufs[5];
    int64_t groups = ints[0], outer = ints[1], inner = ints[2], gstride = ints[3], bstride = ints[4];
    int64_t has_weight = ints[5], has_bias = ints[6], row_weight = ints[7];
    double eps = floats[0];
    for (int64_t k = 0; k < groups; k++) {
        double mean, var;
        group_moments(x + k * gstride, outer, inner, bstride, &mean, &var);
        double rstd = 1.0 / sqrt(var + eps);
        mean_out[k] = mean; var_out[k] = var;
        for (int64_t b = 0; b < outer; b++) {
            const T *xb = x + k * gstride + b * bstride; T *yb = y + k * gstride + b * bstride;
            for (int64_t j = 0; j < inner; j++) {
                double v = (xb[j] - mean) * rstd;
                if (has_weight) v *= row_weight ? w[j] : w[k];
                if (has_bias) v += row_weight ? bias[j] : bias[k];
                yb[j] = (T)v;
            }
        }
    }
}

/* Backward of a normalisation over groups of elements: group k is `outer` blocks of `inner`
   contiguous elements, block b at x + k * gstride + b * bstride (batch_norm, NCHW: group = channel,
   outer = N, inner = H*W; layer_norm: group = row, outer = 1). With xhat = (x - mean) * rstd (biased
   variance, in double) and gy = grad * weight (weight per group, or per element of a row with
   `row_weight`): gx = rstd * (gy - mean(gy) - xhat * mean(gy * xhat)); dw += grad * xhat and
   db += grad, per group or per row element (double accumulators, zeroed by the caller). */
K(norm_bwd) {
    const T *g = bufs[0], *x = bufs[1], *w = bufs[2]; T *gx = bufs[3]; double *dw = bufs[4], *db = bufs[5];
    int64_t groups = ints[0], outer = ints[1], inner = ints[2], gstride = ints[3], bstride = ints[4];
    int64_t has_weight = ints[5], row_weight = ints[6];
    double eps = floats[0], count = (double)(outer * inner);
    for (int64_t k = 0; k < groups; k++) {
        double mean, var;
        group_moments(x + k * gstride, outer, inner, bstride, &mean, &var);
        double rstd = 1.0 / sqrt(var + eps);
        double s1 = 0, s2 = 0;
        for (int64_t b = 0; b < outer; b++) {
            const T *xb = x + k * gstride + b * bstride, *gb = g + k * gstride + b * bstride;
            for (int64_t j = 0; j < inner; j++) {
                double wj = !has_weight ? 1.0 : row_weight ? w[j] : w[k];
                double xh = (xb[j] - mean) * rstd, gy = gb[j] * wj;
                s1 += gy; s2 += gy * xh;
                if (row_weight) { dw[j] += gb[j] * xh; db[j] += gb[j]; }
                else { dw[k] += gb[j] * xh; db[k] += gb[j]; }
            }
        }
        double m1 = s1 / count, m2 = s2 / count;
        for (int64_t b = 0; b < outer; b++) {
            const T *xb = x + k * gstride + b * bstride, *gb = g + k * gstride + b * bstride;
            T *ob = gx + k * gstride + b * bstride;
            for (int64_t j = 0; j < inner; j++) {
                double wj = !has_weight ? 1.0 : row_weight ? w[j] : w[k];
                double xh = (xb[j] - mean) * rstd;
                ob[j] = (T)(rstd * (gb[j] * wj - m1 - xh * m2));
            }
        }
    }
}

/* The largest of x[0..n), NaN when one is NaN (as NumPy's max), in one vectorised pass: the
   scalar loop with a NaN test per element took 3/4 of a softmax's time. */
static inline T row_max(const T *x, int64_t n) {
    T mx = -INFINITY; int nan = 0;
    #pragma omp simd reduction(max:mx) reduction(|:nan)
    for (int64_t j = 0; j < n; j++) { mx = x[j] > mx ? x[j] : mx; nan |= x[j] != x[j]; }
    return nan ? (T)NAN : mx;
}

/* softmax / log_softmax over the last dim of (rows, n): the max, exp(x - max) and its sum (in
   double), then e / sum or (x - max) - log(sum), as eager's NumPy kernel. */
K(softmax_fwd) {
    const T *x = bufs[0]; T *out = bufs[1]; int64_t rows = ints[0], n = ints[1], log_form = ints[2];
    for (int64_t r = 0; r < rows; r++) {
        const T *xr = x + r * n; T *o = out + r * n;
        T mx = row_max(xr, n);
        double sum = 0;
        if (log_form) {
            #pragma omp simd reduction(+:sum)
            for (int64_t j = 0; j < n; j++) sum += EXP(xr[j] - mx);
            T ls = (T)log(sum);
            #pragma omp simd
            for (int64_t j = 0; j < n; j++) o[j] = (xr[j] - mx) - ls;
        } else {
            #pragma omp simd reduction(+:sum)
            for (int64_t j = 0; j < n; j++) { T e = EXP(xr[j] - mx); o[j] = e; sum += e; }
            T s = (T)sum;
            #pragma omp simd
            for (int64_t j = 0; j < n; j++) o[j] = o[j] / s;
        }
    }
}

/* their backward from the result y: softmax y * (g - sum(g * y)); log_softmax g - exp(y) * sum(g). */
K(softmax_bwd) {
    const T *g = bufs[0], *y = bufs[1]; T *out = bufs[2]; int64_t rows = ints[0], n = ints[1], log_form = ints[2];
    for (int64_t r = 0; r < rows; r++) {
        const T *gr = g + r * n, *yr = y + r * n; T *o = out + r * n;
        T sum = 0;     /* in T, as the composed formula sums: a double sum rounds otherwise where the true gradient is 0 */
        if (log_form) {
            #pragma omp simd reduction(+:sum)
            for (int64_t j = 0; j < n; j++) sum += gr[j];
            T s = sum;
            #pragma omp simd
            for (int64_t j = 0; j < n; j++) o[j] = gr[j] - EXP(yr[j]) * s;
        } else {
            #pragma omp simd reduction(+:sum)
            for (int64_t j = 0; j < n; j++) sum += gr[j] * yr[j];
            T s = sum;
            #pragma omp simd
            for (int64_t j = 0; j < n; j++) o[j] = yr[j] * (gr[j] - s);
        }
    }
}

/* cross_entropy's input gradient for class targets: coef[r] * (softmax(x[r]) - onehot(target[r]))
   (coef: the output gradient over the reduction's divisor, 0 for an ignored row). */
K(cross_entropy_bwd) {
    const T *x = bufs[0]; const int64_t *target = bufs[1]; const double *coef = bufs[2]; T *out = bufs[3];
    int64_t rows = ints[0], n = ints[1];
    for (int64_t r = 0; r < rows; r++) {
        const T *xr = x + r * n; T *o = out + r * n;
        T mx = row_max(xr, n);
        double sum = 0;
        #pragma omp simd reduction(+:sum)
        for (int64_t j = 0; j < n; j++) { T e = EXP(xr[j] - mx); o[j] = e; sum += e; }
        T c = (T)coef[r], s = (T)sum;
        #pragma omp simd
        for (int64_t j = 0; j < n; j++) o[j] = c * (o[j] / s);
        if (coef[r] != 0.0) o[target[r]] -= c;
    }
}

/* relu's backward from its result: grad where result > 0 (NaN results pass the gradient, as
   where(result <= 0, 0, grad) does). */
K(relu_bwd) {
    const T *g = bufs[0], *r = bufs[1]; T *out = bufs[2]; int64_t n = ints[0];
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) out[i] = r[i] <= (T)0 ? (T)0 : g[i];
}

/* max_pool2d with PyTorch's flat indices (h * W + w) over planes (P, H, W) -> (P, OH, OW); a tap
   replaces the running max when larger or NaN (ties keep the first tap), and a window with no
   larger value reports its first in-bounds position, as ATen's CPU kernel. */
K(max_pool2d) {
    const T *x = bufs[0]; T *out = bufs[1]; int64_t *idx = bufs[2];
    int64_t P = ints[0], H = ints[1], W = ints[2], OH = ints[3], OW = ints[4], KH = ints[5], KW = ints[6];
    int64_t SH = ints[7], SW = ints[8], PH = ints[9], PW = ints[10], DH = ints[11], DW = ints[12];
    for (int64_t p = 0; p < P; p++) {
        const T *xp = x + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t h0 = oh * SH - PH;
            int64_t hs = h0; while (hs < 0) hs += DH;
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t w0 = ow * SW - PW;
                int64_t ws = w0; while (ws < 0) ws += DW;
                T best = -INFINITY; int64_t at = hs * W + ws;
                for (int64_t i = 0; i < KH; i++) {
                    int64_t h = h0 + i * DH;
                    if (h < 0 || h >= H) continue;
                    for (int64_t j = 0; j < KW; j++) {
                        int64_t w = w0 + j * DW;
                        if (w < 0 || w >= W) continue;
                        T v = xp[h * W + w];
                        if (v > best || isnan(v)) { best = v; at = h * W + w; }
                    }
                }
                out[(p * OH + oh) * OW + ow] = best;
                idx[(p * OH + oh) * OW + ow] = at;
            }
        }
    }
}

/* x += alpha * y in one pass, fused multiply-add with alpha rounded to T: ATen's vectorised add
   with alpha is fmadd(y, alpha, x), so this is bit-equal to PyTorch (NumPy's multiply-then-add
   rounds twice and allocates the product). The optimizers' add_(g, alpha=-lr). */
K(axpy) {
    T *x = bufs[0]; const T *y = bufs[1]; int64_t n = ints[0]; T a = (T)floats[0];
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) x[i] = FMA(y[i], a, x[i]);
}

/* SGD with momentum, one parameter, in one pass: the for-loop's b.mul_(momentum).add_(g, alpha)
   then p.add_(b, alpha=-lr), each rounding as that op does (add_ without alpha is a plain add,
   with alpha ATen's fmadd; axpy's FMA for p), so the result is the three ops' to the bit. */
K(sgd_momentum_step) {
    T *p = bufs[0]; const T *g = bufs[1]; T *b = bufs[2]; int64_t n = ints[0], dampened = ints[1];
    const T momentum = (T)floats[0], keep = (T)floats[1], neg_lr = (T)floats[2];
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        T bi = b[i] * momentum;
        bi = dampened ? FMA(g[i], keep, bi) : bi + g[i];
        b[i] = bi;
        p[i] = FMA(bi, neg_lr, p[i]);
    }
}
"""


def source(dtype) -> str:
    """The C source of every native kernel for `dtype` (float32 or float64)."""
    from .machine import vector_math_prelude
    ctype, suffix = DTYPES[np.dtype(dtype)]
    from .native_kernels_seq import BODIES as seq_bodies
    fill = {"prelude": vector_math_prelude(), "T": ctype, "suffix": suffix, "is_float": int(ctype == "float")}
    from .native_kernels_conv import BODIES as conv_bodies     # the CNN ops' kernels (a file of their own)
    return _HEADER % fill + _BODIES % fill + conv_bodies % fill + seq_bodies % fill


# a kernel's body: from its `K(name) {` line to the first `}` in column 0 (bodies indent the rest)
_KERNEL_BODY = re.compile(r"^K\((\w+)\) \{\n.*?^\}\n", re.M | re.S)


def kernel_names(dtype) -> list:
    """Every native kernel's name, in source order."""
    return _KERNEL_BODY.findall(source(dtype))


def kernel_source(name: str, dtype) -> str:
    """`name`'s translation unit: the whole source without the other kernels' bodies (everything
    else, macros and static helpers included, stays in place). ValueError for an unknown name."""
    found = []

    def keep_only_name(m):
        if m.group(1) != name:
            return ""
        found.append(name)
        return m.group(0)
    text = _KERNEL_BODY.sub(keep_only_name, source(dtype))
    if not found:
        raise ValueError(f"native_kernels: no kernel named {name!r}")
    return text


_kernels: dict = {}          # (name, dtype) -> launch partial, or None when unavailable
_libs: dict = {}             # (name, dtype) -> loaded library, or None when it cannot be built
_lock = threading.Lock()


def _library(name, dtype):
    from . import codecache
    key = (name, dtype)
    if key not in _libs:
        _libs[key] = None
        try:
            _libs[key] = codecache.load_c(kernel_source(name, dtype), name=f"{name}_{DTYPES[dtype][1]}")
        except codecache.CompilerUnavailable as e:
            log.info("native kernels off: %s", e)
        except codecache.CCompileError as e:     # a bug here, not the user's: keep eager working
            log.warning("native kernel %s for %s did not compile (%s); using the NumPy kernel", name, dtype,
                        e.source_path)
    return _libs[key]


def kernel(name: str, dtype):
    """A callable `fn(*arrays_and_scalars)` running native kernel `name` for `dtype`, or None when
    there is none (dtype not float32/float64, no C compiler, compile failure). Cached per process."""
    key = (name, dtype)
    try:
        return _kernels[key]
    except KeyError:
        pass
    with _lock:
        if key not in _kernels:
            fn = None
            if dtype in DTYPES:
                lib = _library(name, dtype)
                if lib is not None:
                    from functools import partial

                    from .codecache import kernel_pointer
                    from .launch import launcher
                    fn = partial(launcher(), kernel_pointer(lib, f"{name}_{DTYPES[dtype][1]}"))
            _kernels[key] = fn
    return _kernels[key]
