"""The eager side of the native kernels (ember/_inductor/native_kernels.py): when a CPU kernel or a
derivative formula may use one.

    fn = native.kernel("gelu_fwd", arr.dtype)          # None: run the NumPy code
    if native.plain_backward(grad, self): ...          # a formula may compute its result natively

`kernel` imports the fuser's module only at the first call (never at `import ember`); the C code is
compiled at the first call per dtype, then comes from the on-disk kernel cache. `enabled = False`
(or EMBER_NATIVE=0 in the environment) turns every native kernel off, for comparisons and tests.

A derivative formula is written in ember ops so that double backward, tracers and dispatch modes
see its operators. It may skip them for one native call only when nobody could see the difference:
grad mode is off (no double backward is being recorded), no thread-local key but the profiler's
is included (no tracer, Python or functionalisation mode) and every tensor is a plain CPU tensor (no fake,
functional or subclass dispatch key beyond Autograd). `plain_backward` is that test.
"""
from __future__ import annotations

import os

import numpy as np

from .._core.dispatch import AUTOGRAD_BIT, CPU_BIT, CUDA_BIT, DispatchKey, tls
from .._core import dtype as _dt
from .._core.tensor import wrap

F32 = np.dtype(np.float32)
HALF = (np.dtype(np.float16), _dt.bfloat16.np)     # computed in float32 by the native backward paths

enabled = os.environ.get("EMBER_NATIVE", "1") != "0"
# The profiler only observes: under it the native paths stay on (a profiled run computes the same
# numbers; its trace shows the backward node, as PyTorch's shows the native backward kernel).
PROFILER_BIT = 1 << DispatchKey.Profiler
_kernels = None          # ember._inductor.native_kernels once imported


def kernel(name: str, dtype):
    """The native kernel `name` for NumPy dtype `dtype`, or None (off, unsupported, no compiler)."""
    global _kernels
    if not enabled:
        return None
    if _kernels is None:
        from .._inductor import native_kernels
        _kernels = native_kernels
    return _kernels.kernel(name, dtype)


def plain_backward(*tensors, backend=CPU_BIT) -> bool:
    """True when a derivative formula may replace its ember ops by one native kernel call (see the
    module's docstring). Cheap: a few attribute reads. backend=CUDA_BIT: the same test for the CUDA
    kernels of ember/_cuda (a fake or traced CUDA tensor must see the formula's ops: AOT autograd
    records them, and a kernel run outside the dispatcher would be missing from its graph)."""
    return bool(tls.exclude & AUTOGRAD_BIT) and plain(tensors, backend)


def direct_backward(*tensors) -> bool:
    """plain_backward for a formula that skips its ember ops for plain NumPy (no native kernel):
    also off with EMBER_NATIVE=0 and under the profiler, whose trace then shows the ops (as
    PyTorch's shows aten::mm under AddmmBackward0)."""
    return bool(tls.exclude & AUTOGRAD_BIT) and unobserved(tensors)


def unobserved(tensors) -> bool:
    """`plain`, native paths on and no profiler: code may work on the tensors' arrays instead of
    calling ops (e.g. gradient clipping)."""
    return enabled and not tls.include and plain(tensors)


def plain(tensors, backend=CPU_BIT) -> bool:
    """True when no dispatch mode is on and every tensor is a plain tensor of `backend` (CPU unless
    said): code outside autograd (e.g. gradient clipping under no_grad) may then work on their arrays
    instead of calling ops."""
    if tls.include & ~PROFILER_BIT:
        return False
    for t in tensors:
        if t._keys & ~AUTOGRAD_BIT != backend:
            return False
    return True


def plain_cuda_backward(*tensors) -> bool:
    """plain_backward for plain CUDA tensors (the derivative formulas' ember/_cuda fast paths)."""
    return plain_backward(*tensors, backend=CUDA_BIT)


def pointwise_backward(name: str, grad, x):
    """`name`'s native kernel applied to (grad, x) -> a new tensor, when both are C-contiguous
    float32/float64 arrays of one dtype and shape and `plain_backward` holds; else None. A float16 /
    bfloat16 pair is computed in float32 and rounded once, as ATen's CPU kernels compute half types
    (autocast's activations)."""
    if not plain_backward(grad, x):
        return None
    g, a = grad._data, x._data
    if g.dtype is not a.dtype or g.shape != a.shape or not a.flags.c_contiguous:
        return None
    half = a.dtype if a.dtype in HALF else None
    if half is not None:
        g, a = g.astype(F32), a.astype(F32)
    g = np.ascontiguousarray(g)    # e.g. the expanded ones of sum()'s backward
    fn = kernel(name, a.dtype)
    if fn is None:
        return None
    out = np.empty_like(a)
    fn(g, a, out, a.size)
    return wrap(out if half is None else out.astype(half))
