"""ember: PyTorch's architecture rebuilt in Python. ``import ember as torch``."""
from __future__ import annotations

import builtins as _builtins

from ._core.dtype import (dtype, bool_ as bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32,
                          float64, complex64, complex128, promote_types, result_type, can_cast,
                          get_default_dtype, set_default_dtype, finfo, iinfo)
from ._core.device import device
from ._core.tensor import Tensor, Size
from ._core import dispatch as _dispatch
from . import ops as ops
from .ops.table import register_all as _register_all

half, float, double = float16, float32, float64
short, int, long = int16, int32, int64
cfloat, cdouble = complex64, complex128
strided = "strided"

_register_all()
from .ops.registry import FUNCTIONS as _FUNCTIONS  # noqa: E402

globals().update(_FUNCTIONS.get("", {}))
from . import linalg, special, nn  # noqa: E402,F401
# again: ember.nn.functional exported a few torch-namespace functions written with F's on import
# (ember.rrelu, ember.kl_div, ember.binary_cross_entropy_with_logits)
globals().update(_FUNCTIONS[""])
from . import return_types  # noqa: E402,F401
from . import library  # noqa: E402,F401
from . import autograd  # noqa: E402
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode, is_grad_enabled  # noqa: E402,F401
from .autograd import is_inference_mode_enabled  # noqa: E402,F401

autograd._install()
from . import optim  # noqa: E402,F401
from .utils import _python_dispatch  # noqa: E402,F401
from . import profiler  # noqa: E402,F401
from .serialization import save, load  # noqa: E402,F401
from . import fx  # noqa: E402,F401  (cheap: its names load on first use)


def is_tensor(obj) -> _builtins.bool:
    """True for ember tensors (and subclasses such as nn.Parameter)."""
    return isinstance(obj, Tensor)


def is_floating_point(t) -> _builtins.bool:
    return t.is_floating_point()


def is_complex(t) -> _builtins.bool:
    return t.is_complex()


def numel(t) -> _builtins.int:
    return t.numel()


def set_num_threads(n) -> None:
    """OpenMP threads of compiled (ember.compile) kernels; eager ops are NumPy's."""
    from ._inductor.launch import set_num_threads as set_threads
    set_threads(n)


def get_num_threads() -> _builtins.int:
    from ._inductor import config
    return config.threads


def set_default_device(device) -> None:
    """Factories called without ``device=`` make their tensors on `device` (None: the CPU again)."""
    from ._core import dispatch
    from ._core.device import device as _device
    from .ops.codegen import _device_bit
    d = None if device is None else _device(device)
    dispatch.default_factory_backend[:] = [dispatch.CPU_BIT if d is None else _device_bit(d), d]


def get_default_device():
    from ._core import dispatch
    from ._core.device import device as _device
    return dispatch.default_factory_backend[1] or _device("cpu")


_MATMUL_PRECISIONS = ("highest", "high", "medium")


def set_float32_matmul_precision(precision: str) -> None:
    """"highest": float32 matmuls in float32; "high"/"medium": TF32 tensor cores on CUDA (the
    switch is ``ember.backends.cuda.matmul.allow_tf32``; CPU matmuls are float32 either way)."""
    if precision not in _MATMUL_PRECISIONS:   # PyTorch warns and changes nothing
        import warnings
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.")
        return
    from .backends import cuda
    cuda.matmul.allow_tf32 = precision != "highest"
    cuda.matmul._values["precision"] = precision


def get_float32_matmul_precision() -> str:
    from .backends import cuda
    return "highest" if not cuda.matmul.allow_tf32 else cuda.matmul._values.get("precision", "high")


_LAZY_SUBMODULES = ("jit", "_dynamo", "_functorch", "_subclasses", "compiler", "_logging", "accelerator", "cuda", "amp",
                    "backends", "onnx", "sparse", "distributed", "futures")
# torch.lstm, torch.lstm_cell & co (torch._VF's recurrent kernels), loaded with the recurrent layers
_RNN_FUNCTIONS = ("lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell")


_LEGACY_TENSOR_TYPES = frozenset(("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
                                  "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"))


def __getattr__(name):
    """The compiler stack loads on first use: ``ember.jit``, ``ember.compile``, ``ember._dynamo``."""
    import importlib
    if name in _LAZY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LEGACY_TENSOR_TYPES:
        from ._core import legacy
        return getattr(legacy, name)
    if name in ("sparse_coo_tensor", "spmm", "sparse_coo"):
        from . import sparse
        return sparse.SparseCOOTensor.layout if name == "sparse_coo" else getattr(sparse, name)
    if name == "autocast":
        from .amp import autocast
        return autocast
    if name == "compile":
        from ._dynamo.eval_frame import compile as compile_fn
        return compile_fn
    if name in _RNN_FUNCTIONS:
        from .nn import _vf_rnn
        return getattr(_vf_rnn, name)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")
