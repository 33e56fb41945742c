"""Host time of one cuBLAS GEMM call as ember makes it (CuPy's cublas bindings) vs torch.mm, on the
device: is the time in cuBLAS (heuristics, workspace) or around it? Prints us per call (enqueue only;
the device is synchronised outside the timing), medians of 5 batches of N calls.

    python3 scripts/device_cublas_host.py
"""
import ctypes
import statistics
import time

import cupy
import numpy
import torch
from cupy.cuda import cublas, device

N = 200


def host_us(fn):
    fn()
    cupy.cuda.Device().synchronize()
    out = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(N):
            fn()
        out.append((time.perf_counter() - t) / N * 1e6)
        cupy.cuda.Device().synchronize()
        torch.cuda.synchronize()
    return statistics.median(out)


def cases():
    one = numpy.array((1.0, 0.0), numpy.float32)
    p1, p0 = one.ctypes.data, one.ctypes.data + 4
    h = device.get_cublas_handle()
    for (M, K, Nn), dt, ct in (((4, 4, 4), numpy.float32, 0), ((8192, 768, 2304), "bf16", 14),
                               ((8192, 3072, 768), "bf16", 14)):
        if dt == "bf16":
            x = cupy.ones((M, K), numpy.uint16)
            y = cupy.ones((K, Nn), numpy.uint16)
            out = cupy.empty((M, Nn), numpy.uint16)
            tx = torch.ones(M, K, device="cuda", dtype=torch.bfloat16)
            ty = torch.ones(K, Nn, device="cuda", dtype=torch.bfloat16)
        else:
            x, y, out = cupy.ones((M, K), dt), cupy.ones((K, Nn), dt), cupy.empty((M, Nn), dt)
            tx, ty = torch.ones(M, K, device="cuda"), torch.ones(K, Nn, device="cuda")
        tag = f"{M}x{K}x{Nn} {dt if isinstance(dt, str) else 'f32'}"
        yield tag, "gemmEx", lambda: cublas.gemmEx(h, 0, 0, Nn, M, K, p1, y.data.ptr, ct, Nn, x.data.ptr, ct, K,
                                                    p0, out.data.ptr, ct, Nn, 68, -1)
        yield tag, "gemmStridedBatchedEx", lambda: cublas.gemmStridedBatchedEx(
            h, 0, 0, Nn, M, K, p1, y.data.ptr, ct, Nn, 0, x.data.ptr, ct, K, 0, p0, out.data.ptr, ct, Nn, M * Nn, 1, 68, -1)
        if dt == numpy.float32:
            yield tag, "sgemm", lambda: cublas.sgemm(h, 0, 0, Nn, M, K, p1, y.data.ptr, Nn, x.data.ptr, K, p0,
                                                      out.data.ptr, Nn)
        yield tag, "cupy.ndarray alloc", lambda: cupy.ndarray((M, Nn), numpy.float32)
        yield tag, "torch.mm", lambda: torch.mm(tx, ty)
        yield tag, "torch.empty", lambda: torch.empty(M, Nn, device="cuda")


def main():
    print("card:", torch.cuda.get_device_name(), "| cupy", cupy.__version__, "| torch", torch.__version__)
    results = {}
    for tag, name, fn in cases():
        results[(tag, name)] = host_us(fn)
    # the same after giving cuBLAS a workspace (PyTorch does: cublasSetWorkspace_v2 on its handles)
    lib = None
    for so in ("libcublas.so.13", "libcublas.so"):
        try:
            lib = ctypes.CDLL(so)
            break
        except OSError:
            pass
    ws = cupy.empty(32 << 20, numpy.uint8)
    if lib is not None:
        rc = lib.cublasSetWorkspace_v2(ctypes.c_void_p(device.get_cublas_handle()), ctypes.c_void_p(ws.data.ptr),
                                       ctypes.c_size_t(ws.nbytes))
        print("cublasSetWorkspace_v2 rc", rc)
        for tag, name, fn in cases():
            if name.startswith(("gemm", "sgemm")):
                results[(tag, name + " +workspace")] = host_us(fn)
    for (tag, name), us in results.items():
        print(f"{tag:22s} {name:32s} {us:8.2f} us/call")


main()
