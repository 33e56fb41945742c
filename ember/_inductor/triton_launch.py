"""Loading and launching generated Triton kernels, and the CUDA pieces of the wrapper.

    module = load_module(source)           # one .py per graph under cache_dir/triton (diskstore rules)
    call = KernelCall(module.ember_k0, meta, checks_errors)
    call(*tensors)                          # ember CUDA tensors (data_ptr(), dtype) -> one launch

Triton's own cache (its compiled cubins) is placed in cache_dir/triton_cache unless
TRITON_CACHE_DIR says otherwise, so a warm process loads cubins instead of compiling. The first
launch of a kernel goes through Triton's JIT (which specialises on the pointers' 16-byte alignment
and compiles); later launches call the compiled kernel directly with raw pointers on CuPy's
current stream (so a CUDA-graph capture on that stream records them), re-entering the JIT only
when a pointer is not 16-byte aligned. `warm_up` compiles several kernels at once in threads.
A flat kernel's XBLOCK / num_warps is tuned on its first call over a few configurations; the
winner is stored next to the kernel source (`<source>.tune.json`) and read back by a warm process.
"""
from __future__ import annotations

import concurrent.futures
import importlib.util
import os
import sys

import numpy as np

from .._core.tensor import CUDA_BIT
from . import diskstore
from .wrapper import GuardMismatch, _Named, _plain_enough

TUNE_CONFIGS = ((512, 4), (1024, 4), (2048, 8), (4096, 8))
_modules: dict = {}


def _place_triton_cache():
    if "TRITON_CACHE_DIR" not in os.environ:
        path = diskstore.subdir("triton_cache")
        os.makedirs(path, mode=0o700, exist_ok=True)
        import triton
        triton.knobs.cache.dir = path


def source_path(key: str) -> str:
    return os.path.join(diskstore.subdir("triton"), f"ember_triton_{key[:40]}.py")


def _helpers_for_this_mode() -> None:
    """triton.jit decides per function, when it decorates, whether it is for the interpreter
    (TRITON_INTERPRET=1): helpers decorated the other way than the kernels cannot be called from
    them, so they are decorated again (and kernels that bound the old ones are loaded again)."""
    helpers = sys.modules.get("ember._inductor.triton_helpers")
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if helpers is not None and (type(helpers.set_error).__name__ == "InterpretedFunction") != interpreted:
        importlib.reload(helpers)
        _modules.clear()


def load_module(source: str, key: str | None = None):
    """The imported module of a generated source (written once, trusted only when ours)."""
    key = key or diskstore.sha256_hex(source.encode())
    _helpers_for_this_mode()
    if key in _modules:
        return _modules[key]
    _place_triton_cache()
    path = source_path(key)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with diskstore.locked(path):
        data = diskstore.read_trusted(path)
        if data is None or diskstore.sha256_hex(data) != key:
            diskstore.write_atomic(path, source.encode())
    name = f"ember_triton_{key[:40]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # Triton reads the source back through the module
    spec.loader.exec_module(module)
    _modules[key] = module
    return module


def load_cached_module(key: str):
    """The module stored under `key` by an earlier process, or None."""
    if key in _modules:
        return _modules[key]
    data = diskstore.read_trusted(source_path(key))
    if data is None or diskstore.sha256_hex(data) != key:
        return None
    return load_module(data.decode(), key)


class _Mock:
    """A pointer argument for compiling ahead of the first launch (16-byte aligned, no memory)."""

    def __init__(self, dtype):
        self.dtype = dtype

    @staticmethod
    def data_ptr():
        return 0


_cupy = []          # [cupy, wrap_cuda], imported on the first CUDA call (not by `import ember`)


def _cuda():
    if not _cupy:
        import cupy
        from .._cuda.kernels import wrap_cuda
        _cupy.extend((cupy, wrap_cuda))
    return _cupy


def _stream():
    return _cuda()[0].cuda.get_current_stream().ptr


class KernelCall(_Named):
    """One generated kernel bound to its launch facts; called with the wrapper's CUDA tensors."""

    def __init__(self, fn, name, meta, tune_path=None):
        self.fn, self.meta, self.tune_path = fn, meta, tune_path
        self.compiled = None
        self.grid_x = meta["grid"]
        self.options = {"num_warps": meta["num_warps"]}
        # a flat kernel of 64K+ elements is tuned on its first call, unless a winner is on disk
        self.needs_tuning = bool(meta["flat"] and tune_path and meta["numel"] >= 1 << 16)
        if meta["flat"]:
            self.options["XBLOCK"] = meta.get("xblock", 1024)
            tuned = _read_tuning(tune_path).get(name)
            if tuned:
                self._set_block(*tuned)
                self.needs_tuning = False
        self._name(name)

    def _set_block(self, xblock, warps):
        self.options = {"num_warps": warps, "XBLOCK": xblock}
        self.grid_x = -(-self.meta["numel"] // xblock)
        self.compiled = None

    def warm_up(self, dtypes):
        self.compiled = self.fn.warmup(*[_Mock(d) for d in dtypes], grid=(max(self.grid_x, 1),), **self.options)

    def __call__(self, *tensors):
        if self.grid_x == 0:
            return
        if self.needs_tuning:
            self.needs_tuning = False
            self._tune(tensors)
        ptrs = [t._data.data.ptr for t in tensors]         # CuPy arrays of ember CUDA tensors
        compiled = self.compiled
        if compiled is None or any(p & 15 for p in ptrs):
            self.compiled = self.fn[(self.grid_x,)](*tensors, **self.options)
            return
        if self.meta["flat"]:
            ptrs.append(self.options["XBLOCK"])      # constexprs are passed too (Triton's own launch does)
        compiled.run(self.grid_x, 1, 1, _stream(), compiled.function, compiled.packed_metadata, None,
                     None, None, *ptrs)

    def _tune(self, tensors):
        """Time each of TUNE_CONFIGS on these buffers (the kernel writes only its outputs); keep the best."""
        import cupy
        best = None
        for xblock, warps in TUNE_CONFIGS:
            self._set_block(xblock, warps)
            fn = self.fn[(self.grid_x,)]
            fn(*tensors, **self.options)
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            for _ in range(5):
                fn(*tensors, **self.options)
            end.record()
            end.synchronize()
            ms = cupy.cuda.get_elapsed_time(start, end)
            if best is None or ms < best[0]:
                best = (ms, xblock, warps)
        self._set_block(best[1], best[2])
        tuning = _read_tuning(self.tune_path)
        tuning[self.__name__] = [best[1], best[2]]
        diskstore.write_json(self.tune_path, tuning)


def _read_tuning(path) -> dict:
    if not path or not os.path.lexists(path):
        return {}
    payload = diskstore.read_json(path)
    return payload if isinstance(payload, dict) else {}


def warm_up(calls_and_dtypes, workers=None):
    """Compile several kernels at once (Triton's compile runs ptxas as a subprocess: threads overlap)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or min(32, os.cpu_count() or 8)) as pool:
        for f in [pool.submit(call.warm_up, dtypes) for call, dtypes in calls_and_dtypes]:
            f.result()

# -- the wrapper's CUDA pieces (wrapper.build_wrapper picks them for a plan on "cuda") ------------


class CudaInputCheck(_Named):
    def __init__(self, specs):
        self.specs = specs           # per input: (shape, byte strides, numpy dtype)
        self._name("check_inputs")

    def __call__(self, *tensors):
        ndarray = _cuda()[0].ndarray
        for t, (shape, strides, dtype) in zip(tensors, self.specs):
            a = t._data
            if type(a) is not ndarray or a.shape != shape or a.strides != strides or a.dtype != dtype:
                raise GuardMismatch()
            if t._keys != CUDA_BIT and not _plain_enough(t._keys, CUDA_BIT):
                raise GuardMismatch()


class CudaAlloc(_Named):
    def __init__(self, name, shape, strides, dtype):
        self.shape, self.dtype = shape, dtype.np
        self._name(f"alloc_{name}")

    def __call__(self):
        cupy, wrap_cuda = _cuda()
        return wrap_cuda(cupy.empty(self.shape, self.dtype))


def error_flag():
    import cupy
    from .._cuda.kernels import wrap_cuda
    return wrap_cuda(cupy.zeros(1, np.int32))


def raise_if_error(flag):
    """Raise eager's exception for the lowest error bit the kernel set (a device read: a sync)."""
    rc = int(flag._data[0].get())
    if rc:
        flag._data.fill(0)
        from .codegen_c import KERNEL_ERRORS
        exc, message = KERNEL_ERRORS[rc & -rc]
        raise exc(message)
