"""What the decomposition families share: the op handles and a few argument helpers."""
from __future__ import annotations

from ...ops.derivatives.reduction import _norm_dims
from ...ops.registry import aten  # noqa: F401  (aten.<op>.<overload>: the op each step records)


def to(x, dtype):
    """`x` as `dtype` (`_to_copy`), or `x` itself when it already is."""
    return x if dtype is None or x.dtype == dtype else aten._to_copy.default(x, dtype=dtype)


# a reduction's dim argument as a sorted list of non-negative dims (None or []: all): the derivative
# formulas' helper, one definition
dims_of = _norm_dims


def numel_of(x, dims) -> int:
    n = 1
    for d in dims:
        n *= x.shape[d]
    return n


def is_float(x) -> bool:
    return x.dtype.is_floating_point


def is_integral(x) -> bool:
    return not x.dtype.is_floating_point and not x.dtype.is_complex


def eager_error(op, *args, **kwargs):
    """Raise the error eager `op` raises for these arguments (a decomposition's way to refuse bad
    input with eager's exception and message): the op runs untraced, so it is not decomposed again."""
    from ..._core.dispatch import DispatchKey, _ExcludeDispatchKeyGuard
    with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
        op(*args, **kwargs)
    raise RuntimeError(f"{op.name}: its decomposition refused arguments that eager accepts (a bug in "
                       f"ember/_functorch/decompositions)")
