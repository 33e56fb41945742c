"""Compare the arithmetic of Adam's CUDA kernels without a GPU: NVRTC compiles the per-parameter
kernel (ember/_cuda/optim.py `_DIRECT_SOURCE`) and the foreach kernel (`_FOREACH_SOURCE`) to PTX,
and every floating-point result of every loop body becomes an expression tree (leaves `x`,
commutative operands sorted): equal sets of trees mean the same operations, contractions (FMA)
and rounding order, so the two kernels compute the same bits. The compiler chooses contractions
per expression shape -- `maximize ? -g : g` once made it fuse g*g differently -- which a test on
the device sees as one-ulp differences in some elements, and this script shows as extra trees.

    NVRTC_LIB=/path/to/libnvrtc.so.13 python scripts/adam_kernels_ptx.py
"""
from __future__ import annotations

import ctypes
import os
import re
import sys

_FLOAT_OP = re.compile(r"\s*((?:fma|mul|add|sub|div|sqrt|neg|rcp|abs)\.[a-z0-9.]*f(?:32|64))\s+(.*);")
_COMMUTATIVE = ("mul", "add", "fma")


def nvrtc():
    """NVRTC through ctypes: NVRTC_LIB, else the CUDA 13 / 12 library names."""
    for name in filter(None, (os.environ.get("NVRTC_LIB"), "libnvrtc.so.13", "libnvrtc.so.12")):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def ptx(lib, source: str, arch: str = "compute_90") -> str:
    prog = ctypes.c_void_p()
    if lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"adam.cu", 0, None, None):
        raise RuntimeError("nvrtcCreateProgram failed")
    options = (ctypes.c_char_p * 1)(f"--gpu-architecture={arch}".encode())
    failed = lib.nvrtcCompileProgram(prog, 1, options)
    size = ctypes.c_size_t()
    if failed:
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(log.value.decode())
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    text = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, text)
    return text.value.decode()


def expression_trees(ptx_text: str, entry: str) -> set:
    """The expression trees of kernel `entry`'s floating-point results (each straight-line run of
    float instructions is a body; registers not computed in it are leaves)."""
    start = ptx_text.index(".entry " + entry)
    end = ptx_text.find(".entry", start + 1)
    trees, expr = set(), {}
    for line in ptx_text[start:None if end < 0 else end].splitlines():
        match = _FLOAT_OP.match(line)
        if not match:
            if re.match(r"\s*(setp|bra|\$L)", line):
                expr = {}
            continue
        kind = match.group(1).split(".")[0]
        dst, *srcs = (a.strip() for a in match.group(2).split(","))
        args = [expr.get(s, "x") for s in srcs]
        if kind in _COMMUTATIVE:
            args[:2] = sorted(args[:2])
        expr[dst] = f"{kind}({','.join(args)})"
        trees.add(expr[dst])
    return trees


def differences(lib) -> dict:
    """dtype tag -> (trees only the foreach kernel has, trees only the per-parameter kernel has)."""
    from ember._cuda import optim
    single, foreach = ptx(lib, optim._DIRECT_SOURCE), ptx(lib, optim._FOREACH_SOURCE)
    out = {}
    for tag in ("f32", "f64"):
        a = expression_trees(single, "ember_adam_step_" + tag)
        b = expression_trees(foreach, "ember_adam_foreach_" + tag)
        out[tag] = (b - a, a - b)
    return out


if __name__ == "__main__":
    library = nvrtc()
    if library is None:
        sys.exit("no NVRTC library: set NVRTC_LIB")
    worst = 0
    for tag, (only_foreach, only_single) in differences(library).items():
        print(f"{tag}: foreach-only trees {len(only_foreach)}, per-parameter-only trees {len(only_single)}")
        for tree in sorted(only_foreach | only_single):
            print("   ", tree)
        worst = max(worst, len(only_foreach) + len(only_single))
    sys.exit(1 if worst else 0)
