"""The flash-attention operators' rules, shared by their CUDA kernels (ember/_cuda/flash_ops.py), their
Meta kernels (below) and F.scaled_dot_product_attention's choice of them:

    applies(q, k, v, attn_mask, dropout_p, enable_gqa)    # sdpa takes the flash kernels?
    dense_strides(shape, strides)                         # the layout of an output "like" an input

ember's ``_scaled_dot_product_flash_attention`` returns (output, logsumexp) where PyTorch's returns
those two followed by seven varlen/dropout bookkeeping values (cumulative lengths, philox state,
debug mask) that mean nothing without dropout; its backward takes the same arguments less those.
Loaded on the first call (``import ember`` does not import it).
"""
from __future__ import annotations

from ..._core import dtype as _dt
from ..._core.tensor import wrap_meta

HEAD_DIMS = (16, 32, 64, 128)      # the Triton kernels' tl.arange(0, D): powers of two, tensor-core shapes
_HALF = (_dt.float16, _dt.bfloat16)


def applies(q, k, v, attn_mask, dropout_p, enable_gqa) -> bool:
    """Whether the flash kernels compute sdpa(q, k, v, ...) exactly as the math path would: no mask,
    no dropout, half dtypes, [B, H, L|S, D] operands of one batch and head count (no GQA broadcast),
    a supported head dim shared by v, nothing empty."""
    if attn_mask is not None or dropout_p != 0 or q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        return False
    if q.dtype not in _HALF or k.dtype is not q.dtype or v.dtype is not q.dtype:
        return False
    qs, ks, vs = q.shape, k.shape, v.shape
    return (qs[:2] == ks[:2] == vs[:2] and qs[3] in HEAD_DIMS and ks[3] == qs[3] == vs[3] and ks[2] == vs[2]
            and qs[0] * qs[1] * qs[2] * ks[2] > 0)


def dense_strides(shape, strides) -> tuple:
    """Contiguous strides for `shape` in the dimension order of `strides` (outermost = largest stride):
    an output like q keeps q's memory order, so the [B, L, H, D] memory of GPT-2's heads (q is its
    transposed view) gives an output whose transpose back to [B, L, H*D] is free."""
    order = sorted(range(len(shape)), key=lambda d: (-strides[d], d))
    out, step = [0] * len(shape), 1
    for d in reversed(order):
        out[d] = step
        step *= max(shape[d], 1)
    return tuple(out)


def check(op, q, k, v, dropout_p):
    """PyTorch's refusals of the flash kernel's inputs (RuntimeError, naming the argument)."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise RuntimeError(f"{op}(): expected query, key and value to be 4-D [batch, heads, seq, head_dim], got "
                           f"query.dim() {q.ndim}, key.dim() {k.ndim}, value.dim() {v.ndim}")
    if q.dtype not in _HALF or not (q.dtype is k.dtype is v.dtype):
        raise RuntimeError(f"{op}(): FlashAttention only supports float16 and bfloat16 query, key and value of one "
                           f"dtype, got {q.dtype}, {k.dtype} and {v.dtype}")
    if tuple(q.shape[:2]) != tuple(k.shape[:2]) or tuple(k.shape[:3]) != tuple(v.shape[:3]):
        raise RuntimeError(f"{op}(): query {tuple(q.shape)}, key {tuple(k.shape)} and value {tuple(v.shape)} must "
                           f"share batch and heads, key and value their sequence length")
    if not (q.shape[3] == k.shape[3] == v.shape[3]) or q.shape[3] not in HEAD_DIMS:
        raise RuntimeError(f"{op}(): head_dim must be one of {HEAD_DIMS} and the same for query, key and value, got "
                           f"{q.shape[3]}, {k.shape[3]} and {v.shape[3]}")
    if dropout_p != 0:
        raise NotImplementedError(f"{op}(): dropout_p > 0 is not implemented by ember's flash kernels "
                                  f"(got {dropout_p}); F.scaled_dot_product_attention takes the math path for it")


def lse_shape(q) -> tuple:
    return tuple(q.shape[:3])


def forward_meta(query, key, value, dropout_p=0.0, is_causal=False, return_debug_mask=False, scale=None):
    check("_scaled_dot_product_flash_attention", query, key, value, dropout_p)
    out = wrap_meta(tuple(query.shape), query.dtype, dense_strides(query.shape, query.stride()))
    return out, wrap_meta(lse_shape(query), _dt.float32)


def backward_meta(grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, scale=None):
    check("_scaled_dot_product_flash_attention_backward", query, key, value, dropout_p)
    return tuple(wrap_meta(tuple(t.shape), t.dtype, dense_strides(t.shape, t.stride())) for t in (query, key, value))
