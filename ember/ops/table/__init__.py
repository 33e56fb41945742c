"""The operator table: one `Op` row per operator, by family. `register_all()` turns every row
into dispatcher operators and Python bindings (see ember/ops/registry.py).

A family module has ``OPS`` (the rows) and may have ``PYTHON_FUNCTIONS`` ({namespace: {name: fn}}),
``PYTHON_METHODS`` ({name: fn}) and ``TENSOR_ATTRIBUTES`` (set on Tensor only, outside the op language) for Python-level API that is not an operator, or that only
parses arguments before calling operators (``ember.manual_seed``, ``Tensor.__getitem__`` ...).
"""
from __future__ import annotations

from importlib import import_module

FAMILIES = ("conversion", "pointwise", "activation", "comparison", "reduction", "shape", "indexing",
            "creation", "linalg", "conv", "nn", "functionalization", "special_functions", "composite_math", "tensor_methods", "counting")

# Dtypes PyTorch's CUDA kernels refuse where its CPU kernels compute (their dispatch macros list
# fewer types): ember's CUDA kernel of the op raises the same, before computing anything.
# op (schema name, every overload) -> {refused dtype of the first tensor: (exception, message)}
_NOT_IMPLEMENTED = "\"{kernel}\" not implemented for '{dtype}'"
CUDA_REFUSALS = {
    "angle": {d: (NotImplementedError, _NOT_IMPLEMENTED.replace("{kernel}", "angle_cuda"))
              for d in ("float16", "bfloat16")},
    "histc": {"float16": (RuntimeError, "HalfTensor is not supported"),
              "bfloat16": (NotImplementedError, _NOT_IMPLEMENTED.replace("{kernel}", "histc"))},
}
# ops (schema name, every overload) PyTorch has no CUDA kernel for: ember registers none either, so a
# CUDA call raises the dispatcher's NotImplementedError ("Could not run ... from the 'CUDA' backend")
NO_CUDA_KERNEL = {"histogram"}


def register_all() -> None:
    from ..._core.tensor import Tensor
    from ..registry import register, export, METHODS
    modules = []
    for family in FAMILIES:
        modules.append(import_module(f"{__name__}.{family}"))   # a family that fails to import fails ember's
    for module in modules:
        for entry in module.OPS:
            register(entry)
    for module in modules:
        for namespace, fns in getattr(module, "PYTHON_FUNCTIONS", {}).items():
            for name in fns:
                export(namespace, name, fns[name])
        for name, fn in getattr(module, "PYTHON_METHODS", {}).items():
            METHODS[name] = fn
            setattr(Tensor, name, fn)
        for name, fn in getattr(module, "TENSOR_ATTRIBUTES", {}).items():   # not methods of the op language
            setattr(Tensor, name, fn)
    from .dunders import install
    install(Tensor, METHODS)
    from .. import tensor_indexing  # Tensor.__getitem__ / __setitem__, ember.nonzero
    tensor_indexing.install()
