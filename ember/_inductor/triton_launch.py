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
winner is stored next to the kernel source (`<source>.tune.json`, per kernel and size: `tuning_key`)
and read back by a warm process.
A row kernel of 64K+ lanes tunes its warps (half, the same, twice the generator's) the same way.
The timed launches are the compiled kernel's own `run`, queued behind a spin kernel (`_hold_gpu`)
so that the events time the GPU: timed through Triton's JIT launcher (~0.2 ms of host a launch,
more than a 0.18 ms kernel) the tuner once picked a 20% slower block for bf16 layer_norm.

Each compiled kernel's cubin is also kept next to the source (`<source>.<kernel>.<options>.sm<cc>.cubin` and
its launch facts in a `.json`: entry name, warps, shared memory, parameter count, options), so a
warm process launches it through CuPy's module loader without importing Triton at all (Triton's
import, its driver's import of torch and its cache-key hashing cost seconds; issue 18's warm start
is <= 200 ms). A kernel needing Triton's scratch buffers, or a launch with a pointer that is not
16-byte aligned (the cubin was specialised on alignment), goes through Triton's JIT instead.
"""
from __future__ import annotations

import concurrent.futures
import functools
import importlib.util
import os
import re
import sys

import numpy as np

from .._core.tensor import CUDA_BIT
from .._cuda.graphs import captures_underway, defer_check
from .._logging import trace_log
from . import diskstore
from .._cuda.triton_stream import follow_cupy_stream
from .wrapper import GuardMismatch, _Named, _plain_enough

TUNE_CONFIGS = ((512, 4), (1024, 4), (2048, 8), (4096, 8))
TUNE_MARGIN = 0.01      # another config must beat the generator's by this fraction (the timings are GPU-bound)
ROW_TUNING = 1          # 0: row kernels keep the generator's warps
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


def cached_source(key: str):
    """The module source stored under `key` by an earlier process (checked, not imported), or None."""
    data = diskstore.read_trusted(source_path(key))
    return data.decode() if data is not None and diskstore.sha256_hex(data) == key else None


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


def _capability() -> str:
    return _cuda()[0].cuda.Device().compute_capability


def _binary_paths(tune_path: str, name: str, options: dict) -> tuple:
    """A cubin per launch options: a row kernel's source serves every row count, each tuned apart."""
    block = "".join(f".{k[0].lower()}{v}" for k, v in sorted(options.items()))
    stem = f"{tune_path[:-len('.tune.json')]}.{name}{block}.sm{_capability()}"
    return stem + ".cubin", stem + ".json"


def tuning_key(name: str, meta: dict) -> str:
    """The tune file's key of a kernel at a size: a row kernel's source is the same for any number
    of rows (one program a row), but its best warps are not (bf16 softmax over 1024: 4 warps at
    2^20 elements, 2 at 2^27)."""
    return f"{name}@{meta['numel']}"


_PTX_PARAM = re.compile(r"\.param\s+\.\w+")


def _ptx_params(ptx: str, entry: str) -> int:
    """How many parameters the kernel's PTX entry takes (Triton appends its scratch pointers)."""
    head = ptx[ptx.index(f".entry {entry}("):]
    return len(_PTX_PARAM.findall(head[:head.index(")")]))


class KernelBinary:
    """A stored cubin loaded through CuPy: launched with the buffers' pointers and null scratch
    pointers, on CuPy's current stream (so a CUDA-graph capture records it)."""

    def __init__(self, cubin: bytes, facts: dict):
        cupy = _cuda()[0]
        self.module = cupy.cuda.function.Module()
        self.module.load(cubin)
        self.function = self.module.get_function(facts["entry"])
        if facts["shared"] > 49152:
            self.function.max_dynamic_shared_size_bytes = facts["shared"]
        self.block, self.shared, self.extra = (32 * facts["warps"], 1, 1), facts["shared"], facts["extra"]

    def launch(self, grid_x: int, ptrs: list) -> None:
        args = [np.uint64(p) for p in ptrs] + [np.uint64(0)] * self.extra
        self.function((grid_x, 1, 1), self.block, args, shared_mem=self.shared)


def _load_binary(tune_path, name, options):
    """The stored binary of kernel `name` compiled with `options`, or None."""
    if not tune_path:
        return None
    cubin_path, facts_path = _binary_paths(tune_path, name, options)
    facts = diskstore.read_json(facts_path) if os.path.lexists(facts_path) else None
    if not isinstance(facts, dict) or facts.get("options") != options:
        return None
    cubin = diskstore.read_trusted(cubin_path)
    if cubin is None or diskstore.sha256_hex(cubin) != facts.get("sha256"):
        return None
    return KernelBinary(cubin, facts)


def _store_binary(tune_path, name, options, compiled, n_buffers) -> None:
    meta = compiled.metadata
    if not tune_path or getattr(meta, "global_scratch_size", 0) or getattr(meta, "profile_scratch_size", 0):
        return
    cubin = compiled.asm.get("cubin")
    extra = _ptx_params(compiled.asm["ptx"], meta.name) - n_buffers
    if not cubin or extra not in (0, 1, 2):     # only Triton's two scratch pointers may follow the buffers
        return
    cubin_path, facts_path = _binary_paths(tune_path, name, options)
    diskstore.write_atomic(cubin_path, cubin)
    diskstore.write_json(facts_path, {"entry": meta.name, "warps": meta.num_warps, "shared": meta.shared,
                                      "extra": extra, "options": options, "sha256": diskstore.sha256_hex(cubin)})


class KernelCall(_Named):
    """One generated kernel bound to its launch facts; called with the wrapper's CUDA tensors.
    `fn` is the @triton.jit function, or a no-argument function returning it (loaded on demand:
    a warm process with the kernel's binary stored never imports Triton)."""

    def __init__(self, fn, name, meta, tune_path=None, tuning=None):
        """`tuning`: the winners stored at `tune_path` ({tuning_key: [XBLOCK, warps]}), when the caller
        read them once for all of a module's kernels; None: read here."""
        self._fn, self.meta, self.tune_path = fn, meta, tune_path
        self.compiled = self.binary = None
        self.grid_x = meta["grid"]
        self.options = {"num_warps": meta["num_warps"]}
        # a flat kernel of 64K+ elements, or a row kernel of 64K+ rows' lanes, is tuned on its first
        # call, unless a winner is on disk (column kernels, with no "rblock", keep their warps)
        work = meta["numel"] * (1 if meta["flat"] else meta.get("rblock", 0) * ROW_TUNING)
        self.needs_tuning = bool(tune_path and work >= 1 << 16)
        if meta["flat"]:
            self.options["XBLOCK"] = meta.get("xblock", 1024)
        if self.needs_tuning:
            tuned = (read_tuning(tune_path) if tuning is None else tuning).get(tuning_key(name, meta))
            if tuned:
                self._set_block(*tuned)
                self.needs_tuning = False
        self._name(name)
        if not self.needs_tuning:
            self.binary = _load_binary(tune_path, name, self.options)

    @property
    def fn(self):
        if not hasattr(self._fn, "warmup"):
            self._fn = self._fn()
        return self._fn

    def _set_block(self, xblock, warps):
        """A flat kernel's (XBLOCK, warps), a row kernel's (None, warps): its grid stays a program a row."""
        self.options = _block_options(xblock, warps)
        if xblock is not None:
            self.grid_x = -(-self.meta["numel"] // xblock)
        self.compiled = None

    def tuning_compiles(self, dtypes, default=True) -> list:
        """No-argument jobs compiling each configuration the tuner times, the generator's own only
        with `default` (run in threads: Triton's compile runs ptxas as a subprocess, so a kernel's
        3-4 configurations compile at once)."""
        mocks = [_Mock(d) for d in dtypes]
        own, *others = self._candidates()
        return [functools.partial(self.fn.warmup, *mocks, grid=(1,), **_block_options(*c))
                for c in ([own] if default else []) + others]

    def _candidates(self) -> list:
        """The (XBLOCK or None, warps) blocks the tuner times, the generator's own first."""
        own = (self.options.get("XBLOCK"), self.options["num_warps"])
        return list(dict.fromkeys([own, *self._configs()]))

    def _configs(self):
        if self.meta["flat"]:
            return TUNE_CONFIGS
        w, lanes = self.meta["num_warps"], self.meta["rblock"]
        return [(None, c) for c in dict.fromkeys((max(1, w // 2), w, 2 * w)) if c <= 16 and 32 * c <= max(lanes, 32)]

    def _compiled_now(self, compiled):
        self.compiled = compiled
        _store_binary(self.tune_path, self.__name__, self.options, compiled, len(self.meta["dtypes"]))

    def warm_up(self, dtypes):
        if self.binary is None:
            self._compiled_now(self.fn.warmup(*[_Mock(d) for d in dtypes], grid=(max(self.grid_x, 1),),
                                              **self.options))

    def __call__(self, *tensors):
        if self.grid_x == 0:
            return
        if self.needs_tuning:
            self.needs_tuning = False
            self._tune(tensors)
        ptrs = [t._data.data.ptr for t in tensors]         # CuPy arrays of ember CUDA tensors
        if self.binary is not None and not any(p & 15 for p in ptrs):
            self.binary.launch(self.grid_x, ptrs)
            return
        compiled = self.compiled
        if compiled is None or any(p & 15 for p in ptrs):
            follow_cupy_stream()
            compiled = self.fn[(self.grid_x,)](*tensors, **self.options)
            if self.compiled is None and not any(p & 15 for p in ptrs):
                self._compiled_now(compiled)
            self.compiled = compiled
            return
        compiled.run(*_run_args(compiled, self.grid_x, ptrs, self.options.get("XBLOCK")))

    def _tune(self, tensors):
        """Time each of `_configs()` on these buffers (the kernel writes only its outputs): compiled
        first, then timed in 3 interleaved rounds of 10 launches, each config's best round counted.
        Each round's launches are the compiled kernels' own (`run`, ~20 us of host each), queued
        behind a spin kernel that holds the GPU while the host enqueues them, so the events time
        the GPU, not the host: timed through Triton's JIT launcher (~0.2 ms a launch, more than a
        0.18 ms kernel) the tuner once gave bf16 softmax a 248 us block, not 184. Another config
        replaces the generator's only when it is > TUNE_MARGIN faster. Under a CUDA graph capture (no
        timing possible) the generator's config is kept and nothing is stored."""
        if captures_underway[0]:
            return
        import cupy
        follow_cupy_stream()
        configs = self._candidates()
        _run_jobs(self.tuning_compiles([t.dtype for t in tensors]))     # a no-op where warm_up compiled them
        ptrs = [t._data.data.ptr for t in tensors]
        launches = []
        for xblock, warps in configs:
            self._set_block(xblock, warps)
            compiled = self.fn[(self.grid_x,)](*tensors, **self.options)   # compiled (and run once) first
            launches.append((compiled.run, _run_args(compiled, self.grid_x, ptrs, xblock)))
        times = [float("inf")] * len(configs)
        for _ in range(3):
            for i, (run, args) in enumerate(launches):
                start, end = cupy.cuda.Event(), cupy.cuda.Event()
                _hold_gpu(2.0)
                start.record()
                for _ in range(10):
                    run(*args)
                end.record()
                end.synchronize()
                times[i] = min(times[i], cupy.cuda.get_elapsed_time(start, end))
        best = min(range(len(configs)), key=times.__getitem__)
        if times[best] > (1 - TUNE_MARGIN) * times[0]:
            best = 0
        trace_log("autotuning", lambda: f"{self.__name__}: " + ", ".join(
            f"{c} {t * 100:.1f} us" for c, t in zip(configs, times)) + f" -> {configs[best]}")
        self._set_block(*configs[best])
        tuning = read_tuning(self.tune_path)
        tuning[tuning_key(self.__name__, self.meta)] = list(configs[best])
        diskstore.write_json(self.tune_path, tuning)


_SPIN_SOURCE = r"""extern "C" __global__ void ember_spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}"""
_spin: list = []


def _hold_gpu(ms: float) -> None:
    """Keep the GPU busy for about `ms` milliseconds on the current stream (one thread spinning on
    its SM clock), so the launches queued after it run back to back once it ends."""
    cupy = _cuda()[0]
    if not _spin:
        rate_khz = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["clockRate"]
        _spin.append((cupy.RawKernel(_SPIN_SOURCE, "ember_spin"), rate_khz))
    kernel, rate_khz = _spin[0]
    kernel((1,), (1,), (np.int64(rate_khz * ms),))


def read_tuning(path) -> dict:
    """The block sizes tuned for a module's kernels ({tuning_key: [XBLOCK or None, warps]}), {} when none are stored."""
    if not path or not os.path.lexists(path):
        return {}
    payload = diskstore.read_json(path)
    return payload if isinstance(payload, dict) else {}


def _run_args(compiled, grid_x, ptrs, xblock) -> tuple:
    """compiled.run's arguments for one launch on CuPy's current stream (a flat kernel's XBLOCK
    constexpr is passed too, as Triton's own launch does)."""
    return (grid_x, 1, 1, _stream(), compiled.function, compiled.packed_metadata, None, None, None,
            *ptrs, *([xblock] if xblock is not None else []))


def _block_options(xblock, warps) -> dict:
    return {"num_warps": warps} if xblock is None else {"num_warps": warps, "XBLOCK": xblock}


def _run_jobs(jobs, workers=None) -> None:
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or min(32, os.cpu_count() or 8)) as pool:
        for f in [pool.submit(job) for job in jobs]:
            f.result()


def warm_up(calls_and_dtypes, workers=None):
    """Compile several kernels at once (Triton's compile runs ptxas as a subprocess: threads overlap),
    and every configuration of those that will tune on their first call."""
    jobs = [functools.partial(call.warm_up, dtypes) for call, dtypes in calls_and_dtypes]
    jobs += [job for call, dtypes in calls_and_dtypes if call.needs_tuning
             for job in call.tuning_compiles(dtypes, default=False)]
    _run_jobs(jobs, workers)

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
    """Eager's exception for the lowest error bit the kernel set, raised where the host next reads
    the device (`_cuda.device_checks.defer_read`: reading the flag now would stop the host until
    the GPU caught up, every call); under a CUDA graph capture, after each replay (graphs.defer_check;
    the kernels guard their accesses)."""
    if captures_underway[0] and defer_check(lambda: read_error(flag)):
        return
    from .._cuda.device_checks import defer_read
    defer_read(lambda: read_error(flag))


def read_error(flag):
    """Read the kernel's error flag (a device read) and raise eager's exception for its lowest bit."""
    rc = int(flag._data[0].get())
    if rc:
        flag._data.fill(0)
        from .codegen_c import KERNEL_ERRORS
        exc, message = KERNEL_ERRORS[rc & -rc]
        raise exc(message)
