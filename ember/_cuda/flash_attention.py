"""Flash attention (the FlashAttention-2 algorithm) in Triton: softmax(q k^T * scale) v for float16 /
bfloat16 q, k, v of shape [B, H, L, D] / [B, H, S, D] with any strides, never materialising [L, S].

    forward(q, k, v, out, lse, is_causal, scale)          # out [B, H, L, D], lse [B, H, L] float32
    backward(dout, q, k, v, out, lse, dq, dk, dv, is_causal, scale)

Forward: one program per (block of BLOCK_M queries, batch x head) walks the key blocks with an
online softmax (running row max m and row sum l, the accumulator rescaled by exp(m_old - m_new)),
scores and accumulator in float32, and saves the row logsumexp (natural log, float32) for the
backward. Causal attention is PyTorch's top-left alignment (query i sees keys j <= i): key blocks
entirely above the diagonal are never visited, and only blocks that cross the diagonal or the
sequence ends pay for a mask. Backward: delta = rowsum(dO * O) first, then one program per key
block accumulates dK and dV over the query blocks, and one program per query block accumulates dQ
over the key blocks, each recomputing P = exp(q k^T * scale - lse) from the saved logsumexp.

The launchers take any tensor objects Triton accepts (ember CUDA tensors on the GPU; torch CPU
tensors under TRITON_INTERPRET=1, which is how CI checks the maths without a GPU). Block sizes are
a small table per head dim (`CONFIGS`), measured on an H100 (ARCHITECTURE.md says what).
"""
from __future__ import annotations

import math

import triton
import triton.language as tl

from .triton_stream import follow_cupy_stream

HEAD_DIMS = (16, 32, 64, 128)
_LOG2E = 1.4426950408889634
# head dim -> (forward BLOCK_M, BLOCK_N, warps, stages), (backward BLOCK_M, BLOCK_N, warps, stages).
# Measured at head dim 64 (GPT-2: 8 x 12 heads x 1024, bf16, causal) on an H100 80GB HBM3 by
# bench/flash_attention.py --sweep: forward (128, 64, 4, 3) 0.076 ms, (128, 128, 8, 3) 0.079,
# (64, 64, 4, 3) 0.089; backward (32, 64, 4, 2) 0.234 ms, (64, 64, 4, 2) 0.256, (64, 128, 8, 2) 0.290.
# The other head dims take the same shapes unmeasured (8 warps at 128 for the wider tiles).
CONFIGS = {
    16: ((128, 64, 4, 3), (64, 64, 4, 2)),
    32: ((128, 64, 4, 3), (64, 64, 4, 2)),
    64: ((128, 64, 4, 3), (32, 64, 4, 2)),
    128: ((128, 64, 8, 3), (64, 64, 8, 2)),
}


@triton.jit
def _tile(X, b, h, rows, offs_d, sb, sh, sm, sd):
    """Pointers to rows `rows` x head dims `offs_d` of head (b, h) of a strided [B, H, L, D] tensor."""
    return X + b * sb + h * sh + rows[:, None] * sm + offs_d[None, :] * sd


@triton.jit
def _fwd_blocks(acc, m_i, l_i, q, k_ptrs, v_ptrs, stride_kn, stride_vn, offs_m, offs_n, lo, hi, S, qk_scale,
                MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr):
    """The online softmax over key blocks [lo, hi): masked where a block crosses the diagonal or S."""
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if MASKED:
            k = tl.load(k_ptrs + start_n * stride_kn, mask=cols[:, None] < S, other=0.0)
        else:
            k = tl.load(k_ptrs + start_n * stride_kn)
        s = tl.dot(q, tl.trans(k)) * qk_scale          # log2 units: exp2 below
        if MASKED:
            keep = cols[None, :] < S
            if CAUSAL:
                keep = keep & (cols[None, :] <= offs_m[:, None])
            s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        if MASKED:
            v = tl.load(v_ptrs + start_n * stride_vn, mask=cols[:, None] < S, other=0.0)
        else:
            v = tl.load(v_ptrs + start_n * stride_vn)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _flash_fwd(Q, K, V, O, LSE, sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, som, sod,
               H, L, S, qk_scale, CAUSAL: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(_tile(Q, b, h, offs_m, offs_d, sqb, sqh, sqm, sqd),
                mask=offs_m[:, None] < L, other=0.0)
    k_ptrs = _tile(K, b, h, offs_n, offs_d, skb, skh, skn, skd)
    v_ptrs = _tile(V, b, h, offs_n, offs_d, svb, svh, svn, svd)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    # [0, full): key blocks every query of this block sees whole; [full, hi): the masked rest
    hi = S
    full = (S // BLOCK_N) * BLOCK_N
    if CAUSAL:
        hi = tl.minimum(S, (pid_m + 1) * BLOCK_M)
        full = tl.minimum(full, ((pid_m * BLOCK_M + 1) // BLOCK_N) * BLOCK_N)
    acc, m_i, l_i = _fwd_blocks(acc, m_i, l_i, q, k_ptrs, v_ptrs, skn, svn, offs_m, offs_n, 0, full, S,
                                qk_scale, False, CAUSAL, BLOCK_N)
    acc, m_i, l_i = _fwd_blocks(acc, m_i, l_i, q, k_ptrs, v_ptrs, skn, svn, offs_m, offs_n, full, hi, S,
                                qk_scale, True, CAUSAL, BLOCK_N)
    out = acc / l_i[:, None]
    row = offs_m < L
    tl.store(_tile(O, b, h, offs_m, offs_d, sob, soh, som, sod), out.to(O.dtype.element_ty),
             mask=row[:, None])
    tl.store(LSE + bh * L + offs_m, (m_i + tl.math.log2(l_i)) * 0.6931471805599453, mask=row)


@triton.jit
def _flash_bwd_delta(O, DO, DELTA, sob, soh, som, sod, sdb, sdh, sdm, sdd, H, L, D: tl.constexpr,
                     BLOCK_M: tl.constexpr):
    """delta[b, h, i] = sum_d dO[i, d] * O[i, d] in float32: the softmax gradient's row term."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    row = offs_m[:, None] < L
    o = tl.load(_tile(O, b, h, offs_m, offs_d, sob, soh, som, sod), mask=row, other=0.0)
    do = tl.load(_tile(DO, b, h, offs_m, offs_d, sdb, sdh, sdm, sdd), mask=row, other=0.0)
    tl.store(DELTA + bh * L + offs_m, tl.sum(o.to(tl.float32) * do.to(tl.float32), 1), mask=offs_m < L)


@triton.jit
def _flash_bwd_dkdv(Q, K, V, DO, LSE, DELTA, DK, DV, sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
                    sdb, sdh, sdm, sdd, s_kb, s_kh, s_kn, s_kd, s_vb, s_vh, s_vn, s_vd, H, L, S, qk_scale, sm_scale,
                    CAUSAL: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dK, dV of one block of keys, over the query blocks that see it (stored with strides s_k*, s_v*)."""
    pid_n = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_m = tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    col = offs_n < S
    k = tl.load(_tile(K, b, h, offs_n, offs_d, skb, skh, skn, skd), mask=col[:, None], other=0.0)
    v = tl.load(_tile(V, b, h, offs_n, offs_d, svb, svh, svn, svd), mask=col[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, D], tl.float32)
    dv = tl.zeros([BLOCK_N, D], tl.float32)
    lo = 0
    if CAUSAL:
        lo = ((pid_n * BLOCK_N) // BLOCK_M) * BLOCK_M        # queries before the block's first key see none of it
    q_base = Q + b * sqb + h * sqh + offs_d[None, :] * sqd
    do_base = DO + b * sdb + h * sdh + offs_d[None, :] * sdd
    for start_m in range(lo, L, BLOCK_M):
        rows = start_m + offs_m
        row = rows < L
        q = tl.load(q_base + rows[:, None] * sqm, mask=row[:, None], other=0.0)
        do = tl.load(do_base + rows[:, None] * sdm, mask=row[:, None], other=0.0)
        lse = tl.load(LSE + bh * L + rows, mask=row, other=0.0) * 1.4426950408889634
        delta = tl.load(DELTA + bh * L + rows, mask=row, other=0.0)
        qk_t = tl.dot(k, tl.trans(q)) * qk_scale                # [BLOCK_N, BLOCK_M], log2 units
        keep = row[None, :] & col[:, None]
        if CAUSAL:
            keep = keep & (offs_n[:, None] <= rows[None, :])
        p_t = tl.where(keep, tl.math.exp2(qk_t - lse[None, :]), 0.0)
        dv += tl.dot(p_t.to(do.dtype), do)
        dp_t = tl.dot(v, tl.trans(do))
        ds_t = p_t * (dp_t - delta[None, :])
        dk += tl.dot(ds_t.to(q.dtype), q)
    tl.store(_tile(DK, b, h, offs_n, offs_d, s_kb, s_kh, s_kn, s_kd),
             (dk * sm_scale).to(DK.dtype.element_ty), mask=col[:, None])
    tl.store(_tile(DV, b, h, offs_n, offs_d, s_vb, s_vh, s_vn, s_vd),
             dv.to(DV.dtype.element_ty), mask=col[:, None])


@triton.jit
def _flash_bwd_dq(Q, K, V, DO, LSE, DELTA, DQ, sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd,
                  sdb, sdh, sdm, sdd, s_qb, s_qh, s_qm, s_qd, H, L, S, qk_scale, sm_scale,
                  CAUSAL: tl.constexpr, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dQ of one block of queries, over the key blocks it sees (stored with strides s_q*)."""
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    row = offs_m < L
    q = tl.load(_tile(Q, b, h, offs_m, offs_d, sqb, sqh, sqm, sqd), mask=row[:, None], other=0.0)
    do = tl.load(_tile(DO, b, h, offs_m, offs_d, sdb, sdh, sdm, sdd), mask=row[:, None],
                 other=0.0)
    lse = tl.load(LSE + bh * L + offs_m, mask=row, other=0.0) * 1.4426950408889634
    delta = tl.load(DELTA + bh * L + offs_m, mask=row, other=0.0)
    dq = tl.zeros([BLOCK_M, D], tl.float32)
    hi = S
    if CAUSAL:
        hi = tl.minimum(S, (pid_m + 1) * BLOCK_M)
    k_base = K + b * skb + h * skh + offs_d[None, :] * skd
    v_base = V + b * svb + h * svh + offs_d[None, :] * svd
    for start_n in range(0, hi, BLOCK_N):
        cols = start_n + offs_n
        col = cols < S
        k = tl.load(k_base + cols[:, None] * skn, mask=col[:, None], other=0.0)
        v = tl.load(v_base + cols[:, None] * svn, mask=col[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k)) * qk_scale
        keep = col[None, :]
        if CAUSAL:
            keep = keep & (cols[None, :] <= offs_m[:, None])
        p = tl.where(keep, tl.math.exp2(qk - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k)
    tl.store(_tile(DQ, b, h, offs_m, offs_d, s_qb, s_qh, s_qm, s_qd),
             (dq * sm_scale).to(DQ.dtype.element_ty), mask=row[:, None])


def default_scale(head_dim: int, scale) -> float:
    return 1.0 / math.sqrt(head_dim) if scale is None else float(scale)


def _strides(t):
    return tuple(int(s) for s in t.stride())


_compiled: dict = {}     # (kernel, what Triton specialises on) -> its CompiledKernel


def _launch(kernel, grid, args, num_warps=4, num_stages=None, **constexprs):
    """``kernel[grid](*args, **constexprs, num_warps=, num_stages=)``. Once Triton has compiled the
    kernel for these exact scalars, tensor dtypes and pointer alignments (all it specialises on,
    and more), later calls with the same go to that compiled kernel's launcher: no binder, no
    specialisation and cache key per call (48 launches a GPT-2 step; not timed alone). Both launch
    on ember's current stream (triton_stream). Under Triton's interpreter every call takes the JIT entry."""
    key = (kernel, grid[1], num_warps, num_stages, tuple(constexprs.items()),
           tuple((a.dtype, a.data_ptr() % 16) if hasattr(a, "data_ptr") else (a.__class__, a) for a in args))
    compiled = _compiled.get(key)
    if compiled is not None:
        compiled[(grid[0], grid[1], 1)](*args, *constexprs.values())    # (its launcher takes three dims)
        return
    options = {"num_warps": num_warps} if num_stages is None else {"num_warps": num_warps, "num_stages": num_stages}
    if type(kernel).__name__ != "InterpretedFunction":
        follow_cupy_stream()
    result = kernel[grid](*args, **constexprs, **options)
    if type(result).__name__ == "CompiledKernel" and list(constexprs) == kernel.arg_names[len(args):]:
        _compiled[key] = result


def forward(q, k, v, out, lse, is_causal, scale, config=None):
    """out[...] = softmax(q k^T * scale) v; lse[b, h, i] = the logsumexp of row i's scaled scores."""
    B, H, L, D = q.shape
    S = k.shape[2]
    block_m, block_n, warps, stages = config or CONFIGS[D][0]
    sm_scale = default_scale(D, scale)
    grid = (triton.cdiv(L, block_m), B * H)
    _launch(_flash_fwd, grid, (q, k, v, out, lse, *_strides(q), *_strides(k), *_strides(v), *_strides(out), H, L,
                               S, sm_scale * _LOG2E), CAUSAL=bool(is_causal), D=D, BLOCK_M=block_m, BLOCK_N=block_n,
            num_warps=warps, num_stages=stages)


def backward(dout, q, k, v, out, lse, delta, dq, dk, dv, is_causal, scale, config=None):
    """dq, dk, dv (any strides) of forward's output given its gradient `dout`; `delta` is float32
    scratch of lse's shape."""
    B, H, L, D = q.shape
    S = k.shape[2]
    block_m, block_n, warps, stages = config or CONFIGS[D][1]
    sm_scale = default_scale(D, scale)
    _launch(_flash_bwd_delta, (triton.cdiv(L, 64), B * H),
            (out, dout, delta, *_strides(out), *_strides(dout), H, L), D=D, BLOCK_M=64)
    strides = (*_strides(q), *_strides(k), *_strides(v), *_strides(dout))
    meta = dict(CAUSAL=bool(is_causal), D=D, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=warps, num_stages=stages)
    _launch(_flash_bwd_dkdv, (triton.cdiv(S, block_n), B * H), (q, k, v, dout, lse, delta, dk, dv, *strides,
                                                                *_strides(dk), *_strides(dv), H, L, S,
                                                                sm_scale * _LOG2E, sm_scale), **meta)
    _launch(_flash_bwd_dq, (triton.cdiv(L, block_m), B * H), (q, k, v, dout, lse, delta, dq, *strides, *_strides(dq),
                                                              H, L, S, sm_scale * _LOG2E, sm_scale), **meta)
