"""The fuser's own extern kernels for linear and matmul: NumPy's BLAS called the way it runs fastest
for the one layout a compiled graph is specialised to (the wrapper checks inputs before they run).

    linear(x, w, b)   y = x @ w.T + b, x's leading dims folded into one GEMM (eager's np.matmul on a
                      3-d x runs one small GEMM per leading index); when x has few rows against w's,
                      the transposed product w @ x.T is computed and transposed back with the bias
                      add (OpenBLAS's x @ w.T kernel is ~20% slower at 64 rows x 512 outputs here;
                      at 1024 rows the transposed copy costs more than it saves)
    matmul(a, b)      a (n-d) @ b (2-d): folded into one GEMM when a's leading dims fold without a copy

Both return a fresh C-contiguous tensor, the layout eager's kernels give (what the graph was traced
with). Values are eager's up to the order BLAS adds in (BLAS's own choice in eager too).
The lowerings (lowering.py) use these only for float32/float64 operands of one dtype; anything else
runs eager's kernel.
"""
from __future__ import annotations

import math

import numpy as np

from .._core.tensor import wrap

# x has at most 1/FEW_ROWS as many rows as w: the transposed product (see the module docstring)
FEW_ROWS = 4


def _fold(a):
    """`a` (n-d) as 2-d rows x last dim without a copy, or None."""
    if a.ndim == 2:
        return a
    try:
        return a.reshape((math.prod(a.shape[:-1]), a.shape[-1]), copy=False)
    except ValueError:                   # the leading dims do not fold into one stride
        return None


def linear(x, w, b=None):
    X, W = x._data, w._data
    lead = X.shape[:-1]
    X2 = _fold(X) if X.ndim >= 2 else None
    if X2 is None or W.ndim != 2:
        y = np.matmul(X, W.T if W.ndim == 2 else W)
        if b is not None:
            y = y + b._data
        return wrap(np.ascontiguousarray(y))
    m, n = X2.shape[0], W.shape[0]
    out = np.empty((m, n), X.dtype)
    if FEW_ROWS * m <= n:
        prod = np.matmul(W, X2.T).T
        if b is not None:
            np.add(prod, b._data, out=out)
        else:
            out[...] = prod
    else:
        np.matmul(X2, W.T, out=out)
        if b is not None:
            np.add(out, b._data, out=out)
    return wrap(out.reshape(lead + (n,)))


linear.name = "ember_linear"          # how plans and logs name it (wrapper.FUSER_EXTERNS)


def matmul(a, b):
    """a (n-d, n >= 2) @ b (2-d) as one GEMM (the lowering passes only these); 2-d @ 2-d is eager's
    own `dot` (called here without the dispatcher: a backward graph makes several)."""
    A, B = a._data, b._data
    if A.ndim == 2:
        return wrap(A.dot(B))
    A2 = _fold(A)
    if A2 is None:
        return wrap(np.ascontiguousarray(np.matmul(A, B)))
    out = np.empty((A2.shape[0], B.shape[1]), A.dtype)
    np.matmul(A2, B, out=out)
    return wrap(out.reshape(A.shape[:-1] + (B.shape[1],)))


matmul.name = "ember_matmul"
