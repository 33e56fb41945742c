"""``ember.autocast(device_type, dtype=...)``: inside it, listed operators run in a lower precision
(matrix products and convolutions) or in float32 (reductions, softmax, losses, pointwise math that
loses range), as PyTorch's autocast does.

It is the Autocast dispatch key: ``autocast`` includes it in the thread's key set; its kernels,
registered on the listed operators when autocast is first entered, cast the floating tensor
arguments that live on the autocast device and redispatch below the key (the casts are ordinary
``_to_copy`` calls, so autograd records them and gradients come back in each input's dtype).
Every other operator passes the key through. The lists are PyTorch's (CUDA and CPU differ).

The weight-cast cache, as PyTorch's: inside one autocast region the low-precision cast of a float32
leaf that requires grad (a parameter) is made once and reused by every listed op that takes it;
autograd then sums the uses' gradients into that one cast and its backward adds them to the
parameter once. The cache lives until the outermost ``autocast`` (enabled or not) exits.
"""
from __future__ import annotations

import functools

from .._core import dtype as _dt
from .._core.dispatch import AUTOGRAD_BIT, CPU_BIT, CUDA_BIT, FAKE_BIT, DispatchKey, tls
from .._core.tensor import Tensor

_FROM_NP = _dt._FROM_NP
_AUTOGRAD_KEY = int(DispatchKey.Autograd)

_AUTOCAST_BIT = 1 << DispatchKey.Autocast

# operators run in the autocast dtype (PyTorch's lower_precision_fp lists; aten names)
_LOWER = ("mm", "matmul", "bmm", "addmm", "addbmm", "baddbmm", "addmv", "addr", "mv", "linear", "conv1d", "conv2d",
          "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu", "convolution",
          "_convolution", "scaled_dot_product_attention", "chain_matmul", "multi_dot")
# operators run in float32 (PyTorch's fp32 lists)
_FP32 = {
    "cuda": ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
             "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "norm", "nuclear_norm", "frobenius_norm",
             "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
             "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss",
             "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss",
             "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
             "softmax", "log_softmax", "cumprod", "cumsum", "prod", "sum", "cross_entropy_loss"),
    "cpu": ("avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile", "nanquantile", "stft",
            "cdist", "trace", "view_as_complex", "cholesky", "cholesky_inverse", "cholesky_solve", "inverse", "lu_solve",
            "orgqr", "ormqr", "pinverse", "max_pool3d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d",
            "reflection_pad1d", "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
            "mse_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d", "hinge_embedding_loss", "poisson_nll_loss",
            "smooth_l1_loss", "cross_entropy_loss", "l1_loss", "huber_loss", "margin_ranking_loss",
            "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "ctc_loss", "kl_div",
            "multilabel_margin_loss", "binary_cross_entropy_with_logits"),
}
_DEFAULT_DTYPE = {"cuda": _dt.float16, "cpu": _dt.bfloat16}
_FLOATS = (_dt.float16, _dt.bfloat16, _dt.float32, _dt.float64)

# stack: the active (device type, dtype, cache enabled) per enabled level; nesting: every autocast
# entered and not exited (PyTorch's autocast nesting count); cache: (id(leaf), dtype) -> (leaf, cast)
_state = {"stack": [], "registered": False, "nesting": 0, "cache": {}}


def is_autocast_available(device_type: str) -> bool:
    return device_type in _DEFAULT_DTYPE


def clear_autocast_cache() -> None:
    """Forget the cached weight casts (``torch.clear_autocast_cache``)."""
    _state["cache"].clear()


# the aten::_to_copy handle, set by _register (the op table imports after this module). A cast is the
# ``_to_copy`` call the binding of ``value.to(dtype)`` would make (the value is on the autocast device:
# its key set has a backend), through the dispatcher (Python modes, the profiler and autograd see
# it), without Tensor.to's argument parsing and the binding's two frames -- as PyTorch's cached_cast
# calls at::_to_copy, not the Python method. A GPT-2 step casts ~120 arguments.
_to_copy = None


def _cast(value, device_bit, device_type, to, from_, cache=None):
    if isinstance(value, Tensor):
        keys = value._keys
        # on the autocast device: its backend key (a fake tensor's device is its own: a Meta backend
        # stands in for it), which costs no device object per argument
        if (keys & device_bit if not keys & FAKE_BIT else value.device.type == device_type):
            dtype = _FROM_NP[value._data.dtype]     # (Tensor.dtype without its property)
            if dtype in from_:
                # PyTorch's cacheable source: a leaf that requires grad and is not a view (a parameter)
                if cache is not None and dtype is _dt.float32 and keys & AUTOGRAD_BIT:
                    meta = value._autograd
                    if meta is None or (meta.grad_fn is None and meta.view_base is None):
                        key = (id(value), to)
                        hit = cache.get(key)
                        if hit is None:
                            # (the leaf is held: its id stays its own)
                            hit = cache[key] = (value, _to_copy.call(keys, value, to, None, None, None, False, None))
                        return hit[1]
                return _to_copy.call(keys, value, to, None, None, None, False, None)
        return value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_cast(v, device_bit, device_type, to, from_, cache) for v in value)
    return value


_HALVES = (_dt.float16, _dt.bfloat16)
_PLAIN, _F32 = frozenset((type(None), bool, int, float, str)), _dt.float32.np     # values _cast returns as they are
_DEVICE_BITS = {"cpu": CPU_BIT, "cuda": CUDA_BIT}    # the backend key of each autocast device type
_LOWER_FROM = {d: (_dt.float32,) + tuple(f for f in _FLOATS if f is not d and f is not _dt.float64)
               for d in (_dt.float16, _dt.bfloat16)}     # autocast dtype -> the dtypes cast down to it


def _kernel(policy):
    lower = policy == "lower"

    def autocast_kernel(op, keys, *args):
        device_type, dtype, cache_enabled = _state["stack"][-1]
        bit = _DEVICE_BITS[device_type]
        if lower:
            from_ = _LOWER_FROM[dtype]
            cache = _state["cache"] if cache_enabled else None
            # an argument that is a plain value (None, a number) or a tensor already in `dtype` (a bf16
            # activation) costs no call; likewise a float32 tensor for a float32 op (a residual stream)
            target = dtype.np
            args = [a if a.__class__ in _PLAIN or (a.__class__ is Tensor and a._data.dtype is target)
                    else _cast(a, bit, device_type, dtype, from_, cache) for a in args]
        elif device_type in policy:
            args = [a if a.__class__ in _PLAIN or (a.__class__ is Tensor and a._data.dtype is _F32)
                    else _cast(a, bit, device_type, _dt.float32, _HALVES) for a in args]
        # what op.redispatch would run, a frame sooner, when nothing but the device's backend and
        # autograd has a kernel (a live key's table entry is never None)
        live = keys & op.live_keys
        if live == bit:
            return op.table[bit.bit_length() - 1](*args)
        if live == bit | AUTOGRAD_BIT:
            return op.table[_AUTOGRAD_KEY](op, keys & (AUTOGRAD_BIT - 1), *args)
        return op.redispatch(keys, *args)
    return autocast_kernel


def _register():
    global _to_copy
    from ..ops.registry import OPERATORS
    lower, fp32, _to_copy = _kernel("lower"), {}, OPERATORS["aten::_to_copy"]
    for name, handle in OPERATORS.items():
        base = name.split("::")[1].split(".")[0]
        if base in _LOWER:
            handle.register(DispatchKey.Autocast, lower)
        else:
            devices = tuple(d for d, names in _FP32.items() if base in names)
            if devices:
                handle.register(DispatchKey.Autocast, fp32.setdefault(devices, _kernel(devices)))
    _state["registered"] = True


class autocast:
    """``with ember.autocast("cuda", dtype=ember.bfloat16):`` (also a decorator)."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if device_type not in _DEFAULT_DTYPE:
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device_type = device_type
        self.fast_dtype = _DEFAULT_DTYPE[device_type] if dtype is None else dtype
        if self.fast_dtype not in (_dt.float16, _dt.bfloat16):
            raise RuntimeError(f"In {device_type} autocast, but the target dtype is not supported. Disabling "
                               "autocast.")
        self.enabled = enabled
        self.cache_enabled = cache_enabled

    def __enter__(self):
        if not _state["registered"]:
            _register()
        self.saved = (tls.include, len(_state["stack"]))
        _state["nesting"] += 1
        if self.enabled:
            # cache_enabled=None inherits the enclosing region's setting (PyTorch's global flag, default on)
            cache = self.cache_enabled if self.cache_enabled is not None else \
                (_state["stack"][-1][2] if _state["stack"] else True)
            _state["stack"].append((self.device_type, self.fast_dtype, bool(cache)))
            tls.include |= _AUTOCAST_BIT
        else:
            tls.include &= ~_AUTOCAST_BIT
        return self

    def __exit__(self, *exc):
        tls.include, depth = self.saved
        del _state["stack"][depth:]
        _state["nesting"] -= 1
        if _state["nesting"] == 0:
            _state["cache"].clear()

    def __call__(self, fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return run
