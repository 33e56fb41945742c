"""Which dtypes an ``out=`` tensor may have, op by op, as PyTorch decides.

Most ops (TensorIterator with type promotion: add, exp, eq ...) compute their result and cast
it into ``out`` when the cast is allowed (``can_cast``: no float into an integer, no complex
into a real); that is the default. Others are stricter or looser; `POLICIES` lists them:

  EXACT      out must have the result's dtype ("Found dtype Double but expected Float"):
             TensorIterator ops that do not promote (abs, floor, clamp, gelu ...)
  EXPECTED   the same, structured kernels' message ("Expected out tensor to have dtype float,
             but got double instead"): mm, gather, tril, argmax (long) ...
  AS_INPUT   out must have the input's dtype (amax, amin)
  COMPUTE    the op runs in out's dtype, as if ``dtype=out.dtype`` were given (sum, prod,
             cumsum: ``sum(x, 0, out=<int32>)`` sums x cast to int32)
  BOOL       out must be bool (isposinf, isneginf, signbit)
  FLOATING   out must be floating or complex (logsumexp)
  CAT        can_cast, but TypeError (cat, stack)

The check runs in the out= kernel after the result is computed and before anything is written.
"""
from __future__ import annotations

from .._core import dtype as _dt

CAST, EXACT, EXPECTED, AS_INPUT, COMPUTE, BOOL, FLOATING, CAT, ABS = (
    "cast", "exact", "expected", "as_input", "compute", "bool", "floating", "cat", "abs")

POLICIES = {
    "abs": ABS, "absolute": ABS,  # EXACT, but a complex input also writes into its own dtype or casts its real result
    **dict.fromkeys(("ceil", "floor", "trunc", "fix", "frac", "round", "neg", "negative", "sgn", "sign",
                     "conj_physical", "bitwise_not", "clamp", "clip", "clamp_min", "clamp_max", "nan_to_num", "gelu",
                     "softplus", "softshrink", "hardshrink", "log_sigmoid", "logcumsumexp", "where", "index_select",
                     "masked_select", "take", "histc", "dot", "vdot", "inner", "heaviside", "renorm",
                     "index_reduce"), EXACT),
    **dict.fromkeys(("mm", "bmm", "mv", "matmul", "addmm", "addmv", "addbmm", "baddbmm", "cross", "gather",
                     "take_along_dim", "msort", "tril", "triu", "argmax", "argmin", "nonzero"), EXPECTED),
    **dict.fromkeys(("amax", "amin"), AS_INPUT),
    **dict.fromkeys(("sum", "nansum", "prod", "cumsum", "cumprod"), COMPUTE),
    **dict.fromkeys(("isposinf", "isneginf", "signbit"), BOOL),
    "logsumexp": FLOATING,
    **dict.fromkeys(("cat", "stack"), CAT),
}


def policy(name: str) -> str:
    return POLICIES.get(name, CAST)


def compute_dtype(op: str, dtype, out, inputs) -> object:
    """COMPUTE ops: the dtype to run in (out's; a given ``dtype=`` must be out's)."""
    _nan_reduction(op, out, inputs)
    if dtype is not None and dtype is not out.dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {dtype.cpp_type}, but got "
                           f"{out.dtype.cpp_type} instead")
    if out.dtype is _dt.bool_ and op in ("cumsum", "cumprod"):
        raise NotImplementedError(f"\"{op}_out_cpu\" not implemented for 'Bool'")
    return out.dtype


def _nan_reduction(op, out, inputs):
    """nansum / nanmean of a floating input into a non-floating out: PyTorch's nansum kernel runs
    in out's dtype and has no integer or complex version."""
    if op in ("nansum", "nanmean") and inputs[0].dtype.category == _dt.FLOAT and out.dtype.category != _dt.FLOAT:
        raise NotImplementedError(f"\"nansum_cpu\" not implemented for '{out.dtype.c10_name}'")


def check(op: str, kind: str, result_dtype, out, inputs) -> None:
    """Refuse ``out`` for the op's result (PyTorch's exception type and message)."""
    d = out.dtype
    _nan_reduction(op, out, inputs)
    if kind == ABS:
        if inputs[0].dtype.category != _dt.COMPLEX:
            kind = EXACT
        elif d.category == _dt.COMPLEX:
            kind, result_dtype = EXACT, inputs[0].dtype
    if kind == EXACT and d is not result_dtype:
        raise RuntimeError(f"{op}(): Found dtype {d.c10_name} but expected {result_dtype.c10_name}")
    if kind == EXPECTED and d is not result_dtype:
        raise RuntimeError(f"{op}(): Expected out tensor to have dtype {result_dtype.cpp_type}, but got "
                           f"{d.cpp_type} instead")
    if kind == AS_INPUT and d is not inputs[0].dtype:
        raise RuntimeError(f"{op}(): Expected the dtype for input and out to match, but got {inputs[0].dtype.c10_name} "
                           f"for input's dtype and {d.c10_name} for out's dtype.")
    if kind == BOOL and d is not _dt.bool_:
        raise RuntimeError(f"{op} does not support non-boolean outputs.")
    if kind == FLOATING and d.category not in (_dt.FLOAT, _dt.COMPLEX):
        raise RuntimeError(f"{op}(): Expected floating point type for result tensor, but got: {d.c10_name}")
    if not _dt.can_cast(result_dtype, d):
        message = f"result type {result_dtype.c10_name} can't be cast to the desired output type {d.c10_name}"
        if kind == CAT:
            raise TypeError(f"torch.cat(): input types can't be cast to the desired output type {d.c10_name}")
        raise RuntimeError(f"{op}(): {message}")


