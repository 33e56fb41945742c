"""The few names of the CPU kernel files that their CUDA variants replace (`kernels.variant`).

Each entry says why: CuPy lacks the function, or the GPU does it differently (cuBLAS multiplies
float16/bfloat16 in their own dtype with float32 accumulation, where NumPy has no half BLAS).
"""
from __future__ import annotations

import cupy
import numpy
from cupyx.scipy import special as _special

from .._core import dtype as _dt
from . import blas, embedding, graphs

_F64 = numpy.dtype(numpy.float64)
_HALF = {numpy.dtype(numpy.float16), _dt.bfloat16.np}
_BLAS = {numpy.dtype(t) for t in (numpy.float32, numpy.float64, numpy.complex64, numpy.complex128)} | _HALF


def _in_float64(fn):
    """special_math's contract: compute in float64, return the input's floating dtype."""
    def apply(a):
        out = a.dtype if a.dtype.kind == "f" else _F64
        return fn(a.astype(_F64)).astype(out)
    return apply


def _tf32_allowed() -> bool:
    from ..backends.cuda import matmul as flags
    return bool(flags.allow_tf32)


_compute_type = [None]


def matmul(x, y, *args, **kwargs):
    """cupy.matmul (cuBLAS) with float32 products on TF32 tensor cores exactly when
    ``ember.backends.cuda.matmul.allow_tf32`` says so (set_float32_matmul_precision sets it)."""
    if graphs.captures_underway[0] and not args and not kwargs and graphs.is_current_stream_capturing():
        return graphs.captured_matmul(x, y)    # CuPy refuses cuBLAS under capture
    if not args and not kwargs and x.ndim == 2 and y.ndim == 2 and x._c_contiguous and y._c_contiguous \
            and x.dtype == y.dtype:
        out = blas.mm2d(x, y)    # one cublasGemmEx call: CuPy's matmul spends ~15 us of host work on a 4x4 product
        if out is not None:
            return out
    if x.dtype in _HALF and y.dtype == x.dtype and x.ndim >= 2 and y.ndim >= 2 and not args and not kwargs:
        return blas.gemm(x, y)   # CuPy's batched bfloat16 matmul falls back to an integer kernel
    from cupy._core import _routines_linalg as cupy_blas
    wanted = cupy_blas.COMPUTE_TYPE_TF32 if _tf32_allowed() else cupy_blas.COMPUTE_TYPE_PEDANTIC
    if _compute_type[0] != wanted:
        cupy_blas.set_compute_type(numpy.dtype(numpy.float32), wanted)
        _compute_type[0] = wanted
    return cupy.matmul(x, y, *args, **kwargs)


_erf = _in_float64(_special.erf)

# cuBLAS has no integer or bool GEMM: PyTorch's CUDA products refuse those dtypes, under these kernel names
_CUDA_GEMM = {"addmm_impl_cpu_": "addmm_cuda", "bmm": "baddbmm_cuda", "baddbmm_with_gemm": "baddbmm_cuda",
              "addbmm": "addbmm_cuda", "addmv_impl_cpu": "addmv_impl_cuda", "dot": "dot", "vdot": "vdot"}


def _no_int_gemm(arr, kernel, other=None):
    """linalg's `_no_bool` on the GPU: products of integers and bools raise PyTorch's
    NotImplementedError (returning early, as on the CPU, when an operand is empty)."""
    cuda_kernel = _CUDA_GEMM.get(kernel)
    refused = "biu" if cuda_kernel else "b"
    if arr.dtype.kind in refused and (other is None or (arr.size and other.size)):
        name = _dt._FROM_NP[arr.dtype].c10_name
        raise NotImplementedError(f"\"{cuda_kernel or kernel}\" not implemented for '{name}'")

def _pool_floats_only(x, kernel, allowed):
    """pool's dtype rule on the GPU: PyTorch's CUDA pooling kernels take no integer dtypes (complex ones
    only where the CPU's do too: a 1x1 adaptive average is a mean, on either device)."""
    if x.dtype not in tuple(d for d in allowed if d.category in (_dt.FLOAT, _dt.COMPLEX)):
        raise NotImplementedError(f"\"{kernel}_out_cuda_frame\" not implemented for '{x.dtype.c10_name}'")


def _conv_floats_only(x, kernel, allowed):
    """conv's dtype rule on the GPU. Convolutions go to cuDNN, which finds no engine for bool and
    integer dtypes (PyTorch's RuntimeError; a complex one is real convolutions underneath);
    F.unfold/F.fold are PyTorch's own im2col/col2im CUDA kernels, which dispatch on the dtypes
    their CPU twins do (floating, complex, bool), under the CUDA kernel's name."""
    if kernel.startswith("slow_conv") and x.dtype.category in (_dt.BOOL, _dt.INT):
        raise RuntimeError("GET was unable to find an engine to execute this computation")
    if x.dtype not in allowed:
        raise NotImplementedError(f"\"{kernel.replace('_cpu', '_cuda')}\" not implemented for '{x.dtype.c10_name}'")


class Around:
    """An override made from the name it replaces (`kernels.variant` calls `make(original)`):
    the CUDA kernel for the cases it covers, the CPU kernel's source for the rest."""
    __slots__ = ("make",)

    def __init__(self, make):
        self.make = make


def _around(module, name):
    """`name` of the CUDA kernel module `module`, made from the CPU kernel it replaces."""
    def make(original):
        import importlib
        return getattr(importlib.import_module(f"ember._cuda.{module}"), name)(original)
    return Around(make)


OVERRIDES = {
    "ember.ops.cpu.conv": {"not_implemented": _conv_floats_only},
    "ember.ops.cpu.pool": {"not_implemented": _pool_floats_only},
    "ember.ops.cpu.special_math": {"erf_array": _erf, "erfc_array": _in_float64(_special.erfc),
                                   "erfinv_array": _in_float64(_special.erfinv)},
    "ember.ops.cpu.activation": {"_erf": _erf, "gelu": _around("fused", "gelu"), "relu": _around("elementwise", "relu")},
    "ember.ops.cpu.loss": {"cross_entropy_loss": _around("fused", "cross_entropy")},
    "ember.ops.cpu.reduction": {"sum_dim": _around("reduce", "sum_dim")},
    "ember.ops.cpu.attention": {"scaled_dot_product_attention": _around("attention", "sdpa")},
    "ember.ops.cpu.nn": {"linear": _around("attention", "linear"), "layer_norm": _around("layer_norm", "layer_norm"),
                         "embedding": _around("embedding", "embedding")},   # indices checked without a sync
    "ember.ops.derivatives.nn": {"native_embedding": embedding.native_embedding},
    # halves multiply in their own dtype (cuBLAS accumulates in float32), as PyTorch's CUDA GEMMs
    "ember.ops.cpu.linalg": {"_cdt": lambda np_dtype: np_dtype, "_BLAS": _BLAS, "_no_bool": _no_int_gemm,
                           "_mm2d": matmul},
}
