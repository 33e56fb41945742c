"""When a half GEMM is multiplied with its dims zero-padded (blas.gemm in eager, the fuser's
lowering_cublas.py in compiled graphs): the one rule both follow. No CuPy here: the fuser lowers
CUDA graphs on machines without a GPU too.

cuBLAS runs a half GEMM on its vectorised tensor-core kernels only where M, N and K are multiples of
8 (16 bytes); otherwise on sm75 `align1` CUTLASS kernels, 5-7x slower (GPT-2's tied LM head, N =
50257: 6.6 ms where the padded GEMM takes 0.9 ms on an H100, scripts/device_externs_gemm.py). A
large enough one is multiplied with its odd dims padded with zeros (Inductor's pad_mm, written
anew): the padding adds products of zeros, exact (save the sign of a sum of -0.0 alone), and the
margins of the result are dropped. Below PAD_MIN_MACS the extra copies cost more than the slow kernel.
"""
from __future__ import annotations

PAD_ALIGN, PAD_MIN_MACS = 8, 1 << 31
_HALF_NAMES = ("float16", "bfloat16")


def pads_pay(np_dtype, M, N, K) -> bool:
    """Whether a 2-D GEMM of these dims and (NumPy) dtype runs faster padded."""
    # (the integer tests first: a NumPy dtype's .name is a Python property, ~1.5 us on a tiny product)
    return (M | N | K) % PAD_ALIGN != 0 and M * N * K >= PAD_MIN_MACS and np_dtype.name in _HALF_NAMES


def padded_size(n: int) -> int:
    return -(-n // PAD_ALIGN) * PAD_ALIGN
