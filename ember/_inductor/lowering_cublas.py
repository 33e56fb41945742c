"""linear and matmul of a CUDA graph on cuBLAS through extern_cublas.matmul, for float16, bfloat16
and float32 operands of one dtype; a half linear's bias is added by the kernel reading the product.

A half product large enough and with a dim not a multiple of 8 (GPT-2's tied LM head: vocab 50257)
is multiplied padded, by the rule blas.gemm pads by in eager (_cuda/gemm_padding.py): each operand is zero-padded into a
buffer of its own orientation by a generated kernel, which reads the operand's own expression (a
loss gradient is written straight into the padded buffer, not copied there), and the result's margin
is dropped by reading it through a window: a view inlined into the kernels that read the product,
copied only where the product is a graph output (an output keeps eager's contiguous layout).
"""
from __future__ import annotations

import math
import types

from .._core import dtype as _dt
from .._core.tensor import wrap_meta
from .._cuda.gemm_padding import padded_size as _padded_size, pads_pay as _pays   # (no CuPy there)
from . import extern_cublas, ir

_CUBLAS = (_dt.float16, _dt.bfloat16, _dt.float32)
_HALF = (_dt.float16, _dt.bfloat16)


def _pads_pay(dtype, M, N, K) -> bool:
    return _pays(dtype.np, M, N, K)


def _zero_padded(g, v, shape):
    """A BufferValue of `v` (2-D or n-d) inside a buffer of `shape` with zeros beyond it. A transpose
    is padded in its source's orientation and read transposed (cuBLAS takes either)."""
    if tuple(v.shape) == tuple(shape):
        return g.realize(v)
    if len(shape) == 2:
        permuted = getattr(v, "permute_of", None)
        if permuted is not None and list(permuted[1]) == [1, 0]:
            source = permuted[0]
        elif isinstance(v, ir.BufferValue) and v.strides[0] == 1 and v.strides[1] != 1:   # a column-major window
            source = ir.BufferValue(v.buffer, v.shape[::-1], v.strides[::-1], v.offset)
        else:
            source = None
        if source is not None:
            src = _zero_padded(g, source, shape[::-1])
            return ir.BufferValue(src.buffer, tuple(shape), src.strides[::-1], src.offset)
    if isinstance(v, ir.BufferValue) and v.offset == 0 and v.is_contiguous() and \
            tuple(shape[:-1]) == tuple(v.shape[:-1]) and math.prod(v.shape) == math.prod(v.buffer.shape):
        # a whole buffer padded in its rows only: once, shared by every product reading it (a loss
        # gradient feeds both the input's and the weight's gradient GEMMs, as (B, T, V) and (B*T, V).T)
        rows, cols = math.prod(v.shape[:-1]), v.shape[-1]
        key = (v.buffer.name, shape[-1])
        if key not in g.zero_padded:
            g.zero_padded[key] = _pad_kernel(g, ir.BufferValue(v.buffer, (rows, cols), (cols, 1), 0), (rows, shape[-1]))
        padded = g.zero_padded[key]
        return ir.BufferValue(padded.buffer, tuple(shape), ir.contiguous_strides(tuple(shape)), 0)
    return _pad_kernel(g, v, shape)


def _pad_kernel(g, v, shape):
    """A generated kernel writing `v` and the zeros around it into a fresh buffer of `shape`."""
    from .lowering_index import constant_pad
    pads = []
    for have, want in zip(reversed(v.shape), reversed(shape)):
        pads += [0, want - have]
    meta = types.SimpleNamespace(shape=tuple(shape), dtype=v.dtype)
    return g.realize(constant_pad(g, meta, v, pads, 0))


def _window(result, shape):
    """result's leading `shape` window, read in place (a view inlined into its readers)."""
    view = ir.BufferValue(result.buffer, tuple(shape), result.strides, result.offset)
    return ir.Pointwise(tuple(shape), result.dtype, view.make_loader())


def matmul(g, meta, a, b):
    if len(a.shape) < 2 or len(b.shape) != 2 or a.dtype != b.dtype or a.dtype not in _CUBLAS:
        return None
    lead, K, N = tuple(a.shape[:-1]), a.shape[-1], b.shape[1]
    M = math.prod(lead)
    if not _pads_pay(a.dtype, M, N, K):
        return g.extern(extern_cublas.matmul, [a, b], {}, meta)
    Kp, Np = _padded_size(K), _padded_size(N)
    if len(lead) == 1:          # rows padded too (a 2-D operand only: n-d rows fold from several dims)
        lead = (_padded_size(M),)
    ap = _zero_padded(g, a, lead + (Kp,))
    bp = _zero_padded(g, b, (Kp, Np))
    result = g.extern(extern_cublas.matmul, [ap, bp], {}, wrap_meta(lead + (Np,), a.dtype))
    return _window(result, tuple(meta.shape))


def linear(g, meta, x, w, b=None):
    if len(w.shape) != 2 or len(x.shape) < 2 or x.dtype != w.dtype:
        return None
    from .lowering import permute, pointwise
    w_t = lambda: permute(g, types.SimpleNamespace(shape=(w.shape[1], w.shape[0])), w, [1, 0])  # noqa: E731
    if b is not None:
        if x.dtype not in _HALF or b.dtype != x.dtype or len(b.shape) != 1:
            return None
        # eager's half linear broadcasts the bias into the output first (a copy as large as the
        # output) for the GEMM to add (beta = 1); here the GEMM writes the product alone and the bias
        # is added by the kernel that reads it (an epilogue fused into the residual add, GELU, ...).
        # The sum is rounded twice (product, then sum) where eager rounds once: within bf16 tolerance.
        product = matmul(g, meta, x, w_t())
        return pointwise(meta, [product, b], meta.dtype, lambda p, c: ir.ops.binary("add", p, c, meta.dtype))
    if not _pads_pay(x.dtype, math.prod(x.shape[:-1]), w.shape[0], w.shape[1]):
        return None             # no padding to gain: eager's linear kernel (one GEMM)
    return matmul(g, meta, x, w_t())
