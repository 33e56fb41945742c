"""``ember.backends.cuda``: CUDA switches. ``matmul.allow_tf32`` decides whether float32 matmuls of
CUDA tensors run on TF32 tensor cores (ember/_cuda/overrides.py reads it at each matmul)."""
from __future__ import annotations


def is_built() -> bool:
    """True where the CUDA backend can run (CuPy and a GPU), as PyTorch's CUDA build answers."""
    from .. import cuda
    return cuda.is_available()


class _MatmulFlags:
    """``backends.cuda.matmul``: only PyTorch's attribute names are accepted, as in its cuBLASModule."""

    _DEFAULTS = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True, "allow_fp16_accumulation": False}

    def __init__(self):
        object.__setattr__(self, "_values", dict(self._DEFAULTS))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name not in values or name == "precision":
            raise AttributeError(f"Unknown attribute {name}")
        return values[name]

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = value


matmul = _MatmulFlags()
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def math_sdp_enabled() -> bool:
    return _SDP["math"]


def cudnn_sdp_enabled() -> bool:
    return _SDP["cudnn"]


def enable_flash_sdp(enabled: bool) -> None:
    _SDP["flash"] = enabled


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _SDP["mem_efficient"] = enabled


def enable_math_sdp(enabled: bool) -> None:
    _SDP["math"] = enabled


def enable_cudnn_sdp(enabled: bool) -> None:
    _SDP["cudnn"] = enabled


def is_flash_attention_available() -> bool:
    return False
