"""CUDA graphs (``ember.cuda.CUDAGraph``, ``ember.cuda.graph``, ``graph_pool_handle``) on CuPy's
stream capture: PyTorch's API and semantics.

A capture records the kernels launched on the capturing stream (never the default stream) into a
graph that ``replay`` launches again with one call. The graph holds device addresses, so every
buffer the capture allocates comes from the graph's *private pool* (a CuPy ``MemoryPool`` used
only inside captures sharing it): a buffer freed during capture goes back to that pool, never to
tensors made later, which a replay would otherwise overwrite. Graphs that share a pool
(``pool=other.pool()``) must be replayed in the order they were captured, as in PyTorch.

What a capture cannot record exactly raises instead of being baked in: CuPy refuses device-host
transfers on a capturing stream (``.item()``, ``.cpu()``, ``nonzero`` ...: a RuntimeError);
ember's CUDA random ops, seeded from the host generator per draw, raise naming the op (a replay would
give the same numbers every time); so does an optimizer step with host state
(`refuse_host_optimizer_state`). CuPy refuses cuBLAS under capture, so products on a capturing
stream run `captured_matmul` (cuBLAS through ctypes). Captures run in CUDA's relaxed mode by default: CuPy's pool
grows with ``cudaMalloc``, which the global mode refuses (PyTorch's allocator switches to relaxed
around its own ``cudaMalloc`` for the same reason).
Importing this module imports no CuPy; without a GPU its functions raise what a CPU build of
PyTorch raises.
"""
from __future__ import annotations

import sys
import weakref

captures_underway = [0]      # captures begun and not ended in this process: random kernels check it first
_deferred: dict = {}         # capturing stream's pointer -> the checks its capture runs after each replay
live_pools = weakref.WeakSet()   # graph pools alive: ember.cuda.memory_allocated/reserved count them


def _cupy(what="CUDAGraph"):
    """CuPy; without a usable GPU, the RuntimeError a CPU build of PyTorch gives for `what`."""
    from .. import cuda
    if not cuda.is_available():
        raise RuntimeError(f"Tried to instantiate dummy base class {what}")
    return cuda._cupy()


class _PoolHandle:
    """The opaque token of a graph memory pool (``graph_pool_handle()``, ``CUDAGraph.pool()``)."""

    __slots__ = ("memory", "__weakref__")

    def __init__(self):
        self.memory = _cupy("_graph_pool_handle").cuda.MemoryPool()
        live_pools.add(self)


def graph_pool_handle() -> _PoolHandle:
    """A new private memory pool that several captures may share (``graph(g, pool=handle)``)."""
    return _PoolHandle()


def is_current_stream_capturing() -> bool:
    """Whether a CUDA graph capture is underway on the current stream."""
    cupy = _cupy("_cuda_isCurrentStreamCapturing")
    return bool(captures_underway[0]) and bool(cupy.cuda.get_current_stream().is_capturing())


_MODES = {"global": "streamCaptureModeGlobal", "thread_local": "streamCaptureModeThreadLocal",
          "relaxed": "streamCaptureModeRelaxed"}


class CUDAGraph:
    """A captured CUDA graph: ``capture_begin``/``capture_end`` around the work (or ``with
    ember.cuda.graph(g):``), then ``replay()`` launches it on the current stream. (`keep_graph`
    is accepted for PyTorch's signature: CuPy instantiates the graph at ``capture_end``.)"""

    def __init__(self, keep_graph: bool = False):
        _cupy()
        self._graph = None           # cupy.cuda.graph.Graph once captured
        self._pool = None            # _PoolHandle: the memory the graph's kernels address
        self._capturing = None       # (stream, allocator context) while capturing
        self._current_stream = None  # cupy.cuda.get_current_stream, kept for replay's hot path
        self._checks = []            # checks deferred to after each replay (`defer_check`)

    def capture_begin(self, pool=None, capture_error_mode: str = "relaxed") -> None:
        """Begin capturing the work launched on the current stream into this graph."""
        cupy = _cupy()
        if self._graph is not None or self._capturing is not None:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph. To capture a new graph, "
                               "create a new instance.")
        if capture_error_mode not in _MODES:
            raise ValueError(f"capture_error_mode must be one of {sorted(_MODES)}, got {capture_error_mode!r}")
        if pool is not None and not isinstance(pool, _PoolHandle):
            raise TypeError(f"CUDAGraph.capture_begin: pool must come from graph_pool_handle() or "
                            f"CUDAGraph.pool(), got {type(pool).__name__}")
        stream = cupy.cuda.get_current_stream()
        if stream.ptr in (0, cupy.cuda.runtime.streamLegacy):
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, after capture, "
                               "it's ok to replay them on the default stream.)")
        self._pool = pool if pool is not None else _PoolHandle()
        allocator = cupy.cuda.using_allocator(self._pool.memory.malloc)
        allocator.__enter__()
        try:
            stream.begin_capture(getattr(cupy.cuda.runtime, _MODES[capture_error_mode]))
        except BaseException:
            allocator.__exit__(None, None, None)
            raise
        self._capturing = (stream, allocator)
        self._checks = _deferred[stream.ptr] = []
        captures_underway[0] += 1

    def capture_end(self) -> None:
        """End the capture; the graph is then ready to replay."""
        if self._capturing is None:
            raise RuntimeError("CUDAGraph.capture_end: no capture is underway on this graph")
        stream, allocator = self._capturing
        self._capturing = None
        captures_underway[0] -= 1
        _deferred.pop(stream.ptr, None)
        try:
            graph = stream.end_capture()
        finally:
            allocator.__exit__(None, None, None)
        self._graph, self._current_stream = graph, _cupy().cuda.get_current_stream

    def _abandon(self) -> None:
        """End a capture that an error interrupted, keeping nothing of it (the error that
        invalidated it is the one to report, not the end of capture's 'invalidated')."""
        try:
            self.capture_end()
        except _cupy().cuda.runtime.CUDARuntimeError:   # StreamCaptureInvalidated: the body's error says why
            pass
        self.reset()

    def replay(self) -> None:
        """Launch the captured work on the current stream."""
        graph = self._graph
        if graph is None:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        graph.launch(self._current_stream())
        checks = sys.modules.get("ember._cuda.device_checks")
        if checks is not None and checks.captured:    # its index checks may set the flag: read it at the next sync
            checks.pending.setdefault(_cupy().cuda.runtime.getDevice(), {})
        if self._checks:               # each reads the device and raises eager's error: at the next sync
            from .device_checks import defer_read
            for check in self._checks:
                defer_read(check)

    def reset(self) -> None:
        """Drop the captured graph and this graph's hold on its pool."""
        self._graph, self._pool, self._checks = None, None, []

    def pool(self) -> _PoolHandle:
        """The token of this graph's memory pool, to share it with a later capture."""
        if self._pool is None:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
        return self._pool


class graph:
    """``with ember.cuda.graph(g):`` captures the block's CUDA work into CUDAGraph `g`, on a side
    stream (`stream`, or one shared by all captures) made current inside the block."""

    default_capture_stream = None

    def __init__(self, cuda_graph: CUDAGraph, pool=None, stream=None, capture_error_mode: str = "relaxed"):
        from .. import cuda
        if not cuda.is_available():
            raise RuntimeError("ember.cuda.Stream requires CUDA support")
        if stream is None:
            if graph.default_capture_stream is None:
                graph.default_capture_stream = cuda.Stream()
            stream = graph.default_capture_stream
        self.cuda_graph, self.pool, self.capture_stream = cuda_graph, pool, stream
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        from .. import cuda
        cuda.synchronize()      # the capture starts after all the work queued before it
        self.capture_stream.__enter__()
        try:
            self.cuda_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.capture_stream.__exit__(*sys.exc_info())
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.cuda_graph.capture_end()
            else:
                self.cuda_graph._abandon()
        finally:
            self.capture_stream.__exit__(exc_type, exc, tb)
        return False


# -- what a capture refuses, and what it checks after each replay ------------------------------
def defer_check(check) -> bool:
    """Under a capture on the current stream, run `check` (it reads device values and raises the
    error eager raises) after each replay of the graph instead of now, since a capture cannot read
    the device: True. False where no capture is underway there (the caller checks now). Used by
    the fuser's kernel error flags and index_add's bounds: a replay that raises has run on
    sanitised indices, and its outputs are never returned."""
    if not captures_underway[0]:
        return False
    checks = _deferred.get(_cupy().cuda.get_current_stream().ptr)
    if checks is None:
        return False
    checks.append(check)
    return True


def refuse_host_draw() -> None:
    """Raise if a CUDA graph is capturing on the current stream: called by ember's CUDA random
    draws before they seed cuRAND from the host generator (`random.draw`). The op is named from the stack: the
    nearest public function of an ember kernel module."""
    if not is_current_stream_capturing():
        return
    from ..ops.registry import _OVERLOADS_BY_NAME
    ops = {name for _, name in _OVERLOADS_BY_NAME}
    frame, op, first = sys._getframe(1), None, None
    while frame is not None and op is None:
        name, module = frame.f_code.co_name, frame.f_globals.get("__name__", "")
        if not name.startswith(("_", "<")) and module.startswith(("ember.ops.", "ember._cuda.variant.")):
            op = name if name in ops else None      # a helper (uniform01) names no op: look further out
            first = first or name
        frame = frame.f_back
    op = op or first or "a random op"
    raise RuntimeError(f"{op}: ember's CUDA random ops seed each draw from the host generator, "
                       f"which a CUDA graph capture would record once: every replay would give the same "
                       f"numbers. Draw outside the captured region (or pass the random tensor as an input).")


def refuse_host_optimizer_state(optimizer, state) -> None:
    """Raise when a captured optimizer step would not replay exactly (called by Optimizer's step
    under capture): a step counter or other state kept on the host is updated once, at capture,
    and its value baked into the graph (PyTorch's error for a step with capturable=False); a
    state made during capture (state=None: the first step, e.g. SGD's momentum buffer cloned
    from the gradient) would be made again on every replay instead of updated."""
    name = type(optimizer).__name__
    if state is None:
        raise RuntimeError(f"Attempting CUDA graph capture of the first step() of {name}: it creates the "
                           f"optimizer state, which every replay would create again. Run a few warm-up steps "
                           f"before capturing.")
    for key, value in state.items():
        on_host = not getattr(value, "is_cuda", False)
        if on_host:
            raise RuntimeError(f"Attempting CUDA graph capture of step() for an instance of {name} but its "
                               f"state {key!r} lives on the host (param_groups' capturable is False): the "
                               f"captured step would replay its value at capture forever.")


# -- matrix products under capture --------------------------------------------------------
# CuPy refuses cuBLAS on a capturing stream (its setStream raises NotImplementedError), though
# cuBLAS GEMMs capture fine given a workspace of their own (no cudaMalloc inside cuBLAS). Under
# capture, `overrides.matmul` comes here: cublasGemmEx / cublasGemmStridedBatchedEx through ctypes
# on the libcublas CuPy loaded, with one handle and workspace per stream.
_CUDA_TYPES = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 14}
_WORKSPACE_BYTES = 32 << 20
_cublas: dict = {}     # "lib" -> ctypes library; stream pointer -> (handle, workspace)


def _cublas_for(stream_ptr):
    import ctypes
    lib = _cublas.get("lib")
    if lib is None:
        import cupy_backends.cuda.libs.cublas   # noqa: F401 - loads libcublas into the process
        with open("/proc/self/maps") as maps:
            path = next(line.split()[-1] for line in maps if "libcublas.so" in line)
        lib = _cublas["lib"] = ctypes.CDLL(path)
    entry = _cublas.get(stream_ptr)
    if entry is None:
        handle = ctypes.c_void_p()
        if lib.cublasCreate_v2(ctypes.byref(handle)):
            raise RuntimeError("cublasCreate failed")
        entry = _cublas[stream_ptr] = (handle, _cupy().cuda.Memory(_WORKSPACE_BYTES))
    handle, workspace = entry
    lib.cublasSetStream_v2(handle, ctypes.c_void_p(stream_ptr))   # (resets the workspace: set it after)
    lib.cublasSetWorkspace_v2(handle, ctypes.c_void_p(workspace.ptr), ctypes.c_size_t(_WORKSPACE_BYTES))
    return lib, handle


def _operand(a):
    """(array, op, leading dimension) of a row-major matrix (or batch) for a column-major GEMM."""
    cupy = _cupy()
    rows, cols = a.shape[-2:]
    item = a.itemsize
    if a.strides[-1] == item and (rows == 1 or a.strides[-2] == cols * item):
        return a, 0, cols                 # row-major: its transpose in column-major, as it is (N)
    if a.strides[-2] == item and (cols == 1 or a.strides[-1] == rows * item):
        return a, 1, rows                 # column-major (a transposed view): transposed (T)
    return cupy.ascontiguousarray(a), 0, cols


def captured_matmul(x, y):
    """x @ y on a capturing stream (2-D, or batches of equal shape) in cuBLAS, as eager's
    cupy.matmul computes it: halves with float32 accumulation, float32 on TF32 under the switch."""
    import ctypes
    import numpy
    from . import overrides
    cupy = _cupy()
    name = getattr(x.dtype, "name", "")
    if x.dtype != y.dtype or name not in _CUDA_TYPES or x.ndim < 2 or y.ndim < 2:
        raise RuntimeError(f"matmul of {x.dtype} {tuple(x.shape)} by {y.dtype} {tuple(y.shape)} cannot be "
                           f"captured in a CUDA graph by ember (matrices or batches of them, of float dtypes)")
    m, k, n = x.shape[-2], x.shape[-1], y.shape[-1]
    if y.ndim == 2 and x.ndim > 2:            # a batch times one matrix: one GEMM over the batch's rows
        return captured_matmul(cupy.ascontiguousarray(x).reshape(-1, k), y).reshape(x.shape[:-1] + (n,))
    lead = tuple(numpy.broadcast_shapes(x.shape[:-2], y.shape[:-2]))
    batched = bool(lead)
    batch = numpy_prod(lead)
    if batched:
        x = cupy.ascontiguousarray(cupy.broadcast_to(x, lead + (m, k))).reshape(batch, m, k)
        y = cupy.ascontiguousarray(cupy.broadcast_to(y, lead + (k, n))).reshape(batch, k, n)
    out = cupy.empty((batch, m, n) if batched else (m, n), x.dtype)
    if out.size == 0 or k == 0:
        out.fill(0)
        return out.reshape(lead + (m, n))
    (a, op_a, lda), (b, op_b, ldb) = _operand(y), _operand(x)   # C^T = Y^T X^T in column-major
    if name == "float64":
        compute, scalar = 70, ctypes.c_double
    else:
        compute, scalar = (77 if name == "float32" and overrides._tf32_allowed() else 69 if name == "float32"
                           else 68), ctypes.c_float
    alpha, beta = scalar(1.0), scalar(0.0)
    lib, handle = _cublas_for(cupy.cuda.get_current_stream().ptr)
    kind = _CUDA_TYPES[name]
    vp, i32 = ctypes.c_void_p, ctypes.c_int
    if batched:
        status = lib.cublasGemmStridedBatchedEx(
            handle, op_a, op_b, n, m, k, ctypes.byref(alpha), vp(a.data.ptr), kind, lda, ctypes.c_longlong(k * n),
            vp(b.data.ptr), kind, ldb, ctypes.c_longlong(m * k), ctypes.byref(beta), vp(out.data.ptr), kind, n,
            ctypes.c_longlong(m * n), i32(batch), compute, i32(-1))
    else:
        status = lib.cublasGemmEx(handle, op_a, op_b, n, m, k, ctypes.byref(alpha), vp(a.data.ptr), kind, lda,
                                  vp(b.data.ptr), kind, ldb, ctypes.byref(beta), vp(out.data.ptr), kind, n,
                                  compute, i32(-1))
    if status:
        raise RuntimeError(f"cuBLAS GEMM failed under CUDA graph capture (status {status})")
    return out.reshape(lead + (m, n))


def numpy_prod(shape) -> int:
    result = 1
    for n in shape:
        result *= n
    return result
