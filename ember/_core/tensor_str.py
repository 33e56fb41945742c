"""``repr(tensor)``: the same text PyTorch prints for the same values (with ``ember.`` for
``torch.`` in dtypes), computed on the NumPy data directly.

How PyTorch lays a tensor out, and so how we do:
  * One formatter per tensor (two for complex: real and imaginary parts) decides, from the
    nonzero finite values, whether floats print as integers (``1.``), fixed (``1.2346``) or
    scientific (``1.2346e+05``) and the common width every element is padded to.
  * More than ``threshold`` elements: only ``edgeitems`` at each end of every dimension are shown,
    with ``...`` between (and the formatter only sees the shown values).
  * Rows wrap at ``linewidth``; suffixes (``device=``, ``size=``, ``dtype=``, ``grad_fn=``,
    ``requires_grad=True``) follow the values, on a new line when the last line is too long.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .dispatch import META_BIT
from .storage import device_to_host


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()
_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None,
                     sci_mode=None):
    """Set how tensors print (``ember.set_printoptions``, same arguments as PyTorch's).

    profile: "default", "short" or "full" resets the four numeric options first; sci_mode None
    lets each tensor choose; it is reset on every call, as in PyTorch.
    """
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: unknown profile {profile!r}")
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict:
    """The current options, as keyword arguments for `set_printoptions`."""
    return dataclasses.asdict(PRINT_OPTS)


class printoptions:
    """Context manager: ``with ember.printoptions(precision=2): ...``."""

    def __init__(self, **kwargs):
        self.kwargs = kwargs

    def __enter__(self):
        self.saved = get_printoptions()
        set_printoptions(**self.kwargs)

    def __exit__(self, *exc):
        set_printoptions(**self.saved)


# ---------------------------------------------------------------------------------------
# element formatting
# ---------------------------------------------------------------------------------------
class _Formatter:
    """Chooses the notation and width for the values it is built from (a NumPy array)."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = PRINT_OPTS.precision
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        vals = flat.astype(np.float64)
        nz = vals[np.isfinite(vals) & (vals != 0)]
        if nz.size == 0:
            return
        absvals = np.abs(nz)
        lo, hi = float(absvals.min()), float(absvals.max())
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        items = nz.tolist()
        if self.sci_mode:
            width = max(len(f"{v:.{p}e}") for v in items)
        elif self.int_mode:
            width = max(len(f"{v:.0f}") for v in items) + 1  # the trailing "."
        else:
            width = max(len(f"{v:.{p}f}") for v in items)
        self.max_width = max(self.max_width, width)

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        if self.floating:
            p = PRINT_OPTS.precision
            if self.sci_mode:
                s = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                s = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    s += "."
            else:
                s = f"{value:.{p}f}"
        else:
            s = f"{value}"
        return " " * (self.max_width - len(s)) + s


def _complex_str(val, real_fmt, imag_fmt) -> str:
    re = real_fmt.format(val.real)
    im = (imag_fmt.format(val.imag) + "j").lstrip()
    return re + im if im[0] in "+-" else re + "+" + im


# ---------------------------------------------------------------------------------------
# layout
# ---------------------------------------------------------------------------------------
def _summarized(arr: np.ndarray) -> np.ndarray:
    """Only the values that will be shown (edgeitems at each end of every dimension)."""
    e = PRINT_OPTS.edgeitems
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        # PyTorch slices [:e] and [-e:]; with e == 0 the second is the whole vector.
        return np.concatenate([arr[:e], arr[-e:]]) if arr.shape[0] > 2 * e else arr
    if not e:
        return arr[tuple(slice(0, 0) for _ in arr.shape)]
    for axis, n in enumerate(arr.shape):
        if n > 2 * e:
            idx = np.r_[0:e, n - e:n]
            arr = np.take(arr, idx, axis=axis)
    return arr


def _format_one(val, fmts) -> str:
    return fmts[0].format(val) if len(fmts) == 1 else _complex_str(val, *fmts)


def _vector_str(arr, indent, summarize, fmts) -> str:
    element_length = fmts[0].width() + 2
    if len(fmts) == 2:
        element_length += fmts[1].width() + 1
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and arr.shape[0] > 2 * e:
        data = ([_format_one(v, fmts) for v in arr[:e].tolist()] + [" ..."]
                + [_format_one(v, fmts) for v in arr[-e:].tolist()])
    else:
        data = [_format_one(v, fmts) for v in arr.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(arr, indent, summarize, fmts) -> str:
    if arr.ndim == 0:
        return _format_one(arr.item(), fmts)
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmts)
    e = PRINT_OPTS.edgeitems
    n = arr.shape[0]
    if summarize and n > 2 * e:
        rows = ([_nested_str(arr[i], indent + 1, summarize, fmts) for i in range(e)] + ["..."]
                + [_nested_str(arr[i], indent + 1, summarize, fmts) for i in range(n - e, n)])
    else:
        rows = [_nested_str(arr[i], indent + 1, summarize, fmts) for i in range(n)]
    return "[" + ("," + "\n" * (arr.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _values_str(arr: np.ndarray, indent: int) -> str:
    if arr.size == 0:
        return "[]"
    summarize = arr.size > PRINT_OPTS.threshold
    if arr.dtype.kind == "c":
        shown = _summarized(arr) if summarize else arr
        fmts = (_Formatter(shown.real, True), _Formatter(shown.imag, True))
    else:
        shown = _summarized(arr) if summarize else arr
        fmts = (_Formatter(shown, arr.dtype.kind == "f"),)
    return _nested_str(arr, indent, summarize, fmts)


def _add_suffixes(text, suffixes, indent) -> str:
    parts = [text]
    last_line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t) -> str:
    """PyTorch's ``repr`` of `t` (``torch.`` spelled ``ember.``)."""
    from . import dtype as _dt
    from .tensor import Tensor
    cls = type(t)
    prefix = "tensor(" if cls is Tensor or cls.__name__ == "Parameter" else f"{cls.__name__}("
    indent = len(prefix)
    suffixes = []
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    dtype = t.dtype
    default = _dt.get_default_dtype()
    has_default_dtype = dtype in (default, _dt.default_complex_dtype(), _dt.int64, _dt.bool_)
    shape = tuple(t.shape)
    if t._keys & META_BIT:     # no data: meta tensors, and fake tensors (which print their fake device)
        suffixes.append(f"size={shape}")
        if dtype is not default:
            suffixes.append(f"dtype={dtype}")
        body = "..."
    elif t.numel() == 0:
        if len(shape) != 1:
            suffixes.append(f"size={shape}")
        if dtype is not default:
            suffixes.append(f"dtype={dtype}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={shape}")
        if not has_default_dtype:
            suffixes.append(f"dtype={dtype}")
        arr = t._data if t.is_cpu else device_to_host(t._data)
        if arr.dtype == _dt.bfloat16.np:
            arr = arr.astype(np.float32)  # exact: every bfloat16 is a float32
        body = _values_str(arr, indent)
    grad_fn = t.grad_fn
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
