"""Generated foreach kernels for optimizer updates (`fused=True` of SGD, Adam and AdamW): one C call
updates every parameter of a group in one pass over its memory, where the for-loop implementation
makes 3 (SGD with momentum) to 9 (AdamW) NumPy passes and as many temporaries per parameter.

    sgd(params, grads, buffers, group)       # False when a tensor does not fit (the caller loops)
    adam(params, grads, means, seconds, group, step)

The C text repeats eager's operations in eager's order, in the parameter's dtype, compiled with
the fuser's flags (-ffp-contract=off: no fused multiply-adds), so the result is eager's to the bit
(tests/optim/test_fused_optim.py checks it). Kernels are compiled once per (algorithm, dtype, flags)
through the kernel cache (codecache.load_c: on disk, digest-checked) and launched by the fuser's
launcher: arrays, then the element counts, then the scalars.
"""
from __future__ import annotations

import threading

import numpy as np

from .._core.tensor import AUTOGRAD_BIT, CPU_BIT

_CTYPE = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
CHUNK = 300                          # tensors per launch (the launcher takes at most 1024 arrays)
_kernels: dict = {}
_lock = threading.Lock()

_SGD = """
void ember_fused_sgd(void *const *bufs, const int64_t *ints, const double *floats) {
    const T neg_lr = (T)floats[0], momentum = (T)floats[1], damp = (T)floats[2], decay = (T)floats[3];
    for (int64_t t = 0; t < ints[0]; t++) {
        T *p = (T*)bufs[3 * t], *b = (T*)bufs[3 * t + 2];
        const T *gr = (const T*)bufs[3 * t + 1];
        const int64_t n = ints[1 + t];
        #pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            T g = gr[i];
            if (MAXIMIZE) g = -g;
            if (DECAY) g = g + p[i] * decay;
            T bi = b[i] * momentum;
            bi = DAMPENED ? FMA(g, damp, bi) : bi + g;      /* add_(g, alpha): ATen's fmadd */
            b[i] = bi;
            const T d = NESTEROV ? g + bi * momentum : bi;
            p[i] = FMA(d, neg_lr, p[i]);
        }
    }
}
"""

_ADAM = """
void ember_fused_adam(void *const *bufs, const int64_t *ints, const double *floats) {
    const T shrink = (T)floats[0], decay = (T)floats[1], w = (T)floats[2], beta2 = (T)floats[3];
    const T one_minus_beta2 = (T)floats[4], bc2_sqrt = (T)floats[5], eps = (T)floats[6], step = (T)floats[7];
    const T one_minus_w = (T)1 - w;
    for (int64_t t = 0; t < ints[0]; t++) {
        T *p = (T*)bufs[4 * t], *m = (T*)bufs[4 * t + 2], *v = (T*)bufs[4 * t + 3];
        const T *gr = (const T*)bufs[4 * t + 1];
        const int64_t n = ints[1 + t];
        #pragma omp simd
        for (int64_t i = 0; i < n; i++) {
            T g = gr[i];
            if (MAXIMIZE) g = -g;
            T pi = p[i];
            if (DECOUPLED) pi = pi * shrink;
            else if (DECAY) g = g + pi * decay;
            const T diff = g - m[i];
            const T mi = (w < (T)0.5 && w > (T)-0.5) ? m[i] + w * diff : g - diff * one_minus_w;
            m[i] = mi;
            const T vi = v[i] * beta2 + (g * one_minus_beta2) * g;
            v[i] = vi;
            const T denom = SQRT(vi) / bc2_sqrt + eps;
            p[i] = pi + (mi * step) / denom;
        }
    }
}
"""


def _kernel(algorithm, dtype, flags):
    key = (algorithm, dtype, flags)
    fn = _kernels.get(key)
    if fn is None:
        with _lock:
            fn = _kernels.get(key)
            if fn is None:
                from . import codecache
                t = _CTYPE[dtype]
                defines = "".join(f"#define {name} {int(on)}\n" for name, on in flags)
                source = (f"#include <math.h>\n#include <stdint.h>\n#define T {t}\n"
                          f"#define SQRT {'sqrtf' if t == 'float' else 'sqrt'}\n"
                          f"#define FMA {'fmaf' if t == 'float' else 'fma'}\n{defines}"
                          + (_SGD if algorithm == "sgd" else _ADAM))
                lib = codecache.load_c(source)
                fn = _kernels[key] = codecache.kernel_pointer(lib, f"ember_fused_{algorithm}")
    return fn


def _arrays(tensor_lists):
    """The ndarrays of each tensor row, or None when any is not a writable C-contiguous CPU array of
    one float dtype (the kernel indexes flat memory; a gradient must be laid out as its parameter)."""
    rows = []
    dtype = None
    for row in zip(*tensor_lists):
        arrays = []
        for t in row:
            a = t._data
            if a.__class__ is not np.ndarray or not a.flags.c_contiguous or t._keys & ~(CPU_BIT | AUTOGRAD_BIT):
                return None, None
            arrays.append(a)
        dtype = dtype or arrays[0].dtype
        if any(a.dtype != dtype or a.shape != arrays[0].shape for a in arrays) or dtype not in _CTYPE:
            return None, None
        if not all(a.flags.writeable for a in arrays[:1] + arrays[2:]):
            return None, None
        rows.append(arrays)
    return rows, dtype


def _launch(algorithm, dtype, flags, rows, scalars):
    from .launch import launcher
    launch = launcher()
    fn = _kernel(algorithm, dtype, flags)
    for start in range(0, len(rows), CHUNK):
        part = rows[start:start + CHUNK]
        launch(fn, *[a for row in part for a in row], len(part), *[row[0].size for row in part], *scalars)


def sgd(params, grads, buffers, group, negate) -> bool:
    rows, dtype = _arrays([params, grads, buffers])
    if rows is None:
        return False
    momentum, dampening, decay = float(group["momentum"]), float(group["dampening"]), float(group["weight_decay"])
    flags = (("MAXIMIZE", negate), ("DECAY", decay != 0), ("DAMPENED", dampening != 0),
             ("NESTEROV", bool(group["nesterov"])))
    _launch("sgd", dtype, flags, rows, (-float(group["lr"]), momentum, 1 - dampening, decay))
    _written(params, buffers)
    return True


def _written(*tensor_lists):
    """Bump the version of every tensor the kernel wrote, as the in-place ops it replaces do (a
    graph that saved a parameter then refuses to backpropagate through the stale value)."""
    for tensors in tensor_lists:
        for t in tensors:
            t._bump_version()


def adam(params, grads, means, seconds, group, step, negate) -> bool:
    rows, dtype = _arrays([params, grads, means, seconds])
    if rows is None:
        return False
    lr, decay, eps = float(group["lr"]), float(group["weight_decay"]), float(group["eps"])
    beta1, beta2 = (float(b) for b in group["betas"])
    decoupled = bool(group.get("decoupled_weight_decay")) and decay != 0
    flags = (("MAXIMIZE", negate), ("DECOUPLED", decoupled), ("DECAY", decay != 0))
    scalars = (1 - lr * decay, decay, 1 - beta1, beta2, 1 - beta2, (1 - beta2 ** step) ** 0.5, eps,
               -(lr / (1 - beta1 ** step)))
    _launch("adam", dtype, flags, rows, scalars)
    _written(params, means, seconds)
    return True

