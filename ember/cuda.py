"""``ember.cuda``: devices, streams, events, seeding and memory of the CUDA backend (ember/_cuda).

Where no GPU is usable (CuPy missing, or no device), every query answers what a CPU-only build
of PyTorch answers, so device-selection code runs unchanged: ``is_available()`` is False,
seeding is a silent no-op and what needs a device raises PyTorch's
``AssertionError("Torch not compiled with CUDA enabled")``. CuPy is imported on first use.
Memory figures are CuPy's memory pool (the caching allocator of ember's CUDA tensors).
"""
from __future__ import annotations

import sys

from ._core.storage import report_device_errors

__all__ = ["is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all",
           "synchronize", "current_device", "set_device", "device", "get_device_name", "get_device_capability",
           "empty_cache", "is_bf16_supported", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "reset_peak_memory_stats", "Stream", "Event", "current_stream", "stream", "default_generator",
           "CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing"]

_NOT_COMPILED = "Torch not compiled with CUDA enabled"
_count: list = []          # [number of devices], probed once
_peak = [0, False]         # [peak bytes since the last reset, whether allocations are tracked]
_generator: list = []
_pending_seed: list = []   # a seed given before the CUDA default generator existed


def _cupy():
    """CuPy, or raise PyTorch's error of a build without CUDA."""
    if not is_available():
        raise AssertionError(_NOT_COMPILED)
    import cupy
    return cupy


def device_count() -> int:
    if not _count:
        try:
            import cupy
            _count.append(cupy.cuda.runtime.getDeviceCount())
        except Exception:  # noqa: BLE001 - ImportError, or CUDARuntimeError (no driver/device): no CUDA
            _count.append(0)
    return _count[0]


def is_available() -> bool:
    return device_count() > 0


def is_initialized() -> bool:
    return is_available()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return is_available() and get_device_capability()[0] >= 8


def _index(d) -> int:
    from ._core.device import device as _device
    if d is None:
        return current_device()
    if isinstance(d, int):
        return d
    d = _device(d)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return current_device() if d.index is None else d.index


def current_device() -> int:
    return _cupy().cuda.runtime.getDevice()


def set_device(d) -> None:
    _cupy().cuda.runtime.setDevice(_index(d))


class device:
    """``with ember.cuda.device(1):`` makes device 1 current inside the block."""

    def __init__(self, d):
        self.index = -1 if d is None else _index(d)

    def __enter__(self):
        self.saved = current_device()
        if self.index >= 0:
            set_device(self.index)

    def __exit__(self, *exc):
        set_device(self.saved)


def synchronize(d=None) -> None:
    cupy = _cupy()
    with cupy.cuda.Device(_index(d)):
        cupy.cuda.runtime.deviceSynchronize()
    report_device_errors()   # what the device found in earlier calls (device_checks)


def get_device_name(d=None) -> str:
    props = _cupy().cuda.runtime.getDeviceProperties(_index(d))
    name = props["name"]
    return name.decode() if isinstance(name, bytes) else name


def get_device_capability(d=None) -> tuple:
    props = _cupy().cuda.runtime.getDeviceProperties(_index(d))
    return props["major"], props["minor"]


# -- streams and events: CuPy's ------------------------------------------------------------
class Stream:
    """A CUDA stream (a CuPy stream); ``with ember.cuda.stream(s):`` makes it current."""

    def __init__(self, device=None, priority=0):
        with _cupy().cuda.Device(_index(device)):
            self.cupy_stream = _cupy().cuda.Stream(non_blocking=True, priority=priority)

    def synchronize(self) -> None:
        self.cupy_stream.synchronize()
        report_device_errors()

    def query(self) -> bool:
        return self.cupy_stream.done

    def wait_event(self, event) -> None:
        self.cupy_stream.wait_event(event.cupy_event)

    def wait_stream(self, stream) -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    @property
    def cuda_stream(self) -> int:
        return self.cupy_stream.ptr

    def __enter__(self):
        self.cupy_stream.__enter__()
        return self

    def __exit__(self, *exc):
        self.cupy_stream.__exit__(*exc)


def current_stream(device=None) -> Stream:
    s = object.__new__(Stream)
    s.cupy_stream = _cupy().cuda.get_current_stream()
    return s


def stream(s):
    """Context manager: `s` is the current stream inside (None: no change)."""
    import contextlib
    return contextlib.nullcontext() if s is None else s


class Event:
    """A CUDA event; ``start.elapsed_time(end)`` is the milliseconds between two recorded events."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.cupy_event = _cupy().cuda.Event(block=blocking, disable_timing=not enable_timing,
                                             interprocess=interprocess)

    def record(self, stream=None) -> None:
        self.cupy_event.record(None if stream is None else stream.cupy_stream)

    def synchronize(self) -> None:
        self.cupy_event.synchronize()
        report_device_errors()

    def query(self) -> bool:
        return self.cupy_event.done

    def wait(self, stream=None) -> None:
        (stream or current_stream()).wait_event(self)

    def elapsed_time(self, end) -> float:
        return _cupy().cuda.get_elapsed_time(self.cupy_event, end.cupy_event)


# -- seeding: CUDA random ops draw from their own generator --------------------------------
def default_generator(index=None):
    """The generator CUDA random ops use when given none (ember.Generator('cuda'))."""
    if not _generator:
        from ._core.random import Generator
        _generator.append(Generator("cuda"))
        if _pending_seed:
            _generator[0].manual_seed(_pending_seed[-1])
    return _generator[0]


def _seed_from_cpu(seed: int) -> None:
    """``ember.manual_seed`` seeds CUDA too, as torch.manual_seed does: the default generator if
    it exists, else the one made first (no CuPy import, no device probe)."""
    if _generator:
        _generator[0].manual_seed(seed)
    else:
        _pending_seed[:] = [seed]


def manual_seed(seed) -> None:
    if is_available():   # PyTorch defers this until CUDA initialises: without CUDA, it never runs
        default_generator().manual_seed(seed)


def seed() -> None:
    if is_available():
        default_generator().seed()


manual_seed_all, seed_all = manual_seed, seed


# -- memory: CuPy's pool is the caching allocator -------------------------------------------
def _graph_pools(measure) -> int:
    """Bytes of the CUDA graphs' private pools (by `measure`: "used_bytes" or "total_bytes")."""
    graphs = sys.modules.get("ember._cuda.graphs")
    return sum(getattr(pool.memory, measure)() for pool in list(graphs.live_pools)) if graphs else 0


def memory_allocated(device=None) -> int:
    if not is_available():
        return 0
    return _cupy().get_default_memory_pool().used_bytes() + _graph_pools("used_bytes")


def _track_peak() -> None:
    """Route allocations through a wrapper of the pool that records the peak. Installed by the
    first peak query (it costs a Python call per allocation, so not before anyone asks):
    peaks count from then on."""
    if _peak[1]:
        return
    cupy = _cupy()
    pool = cupy.get_default_memory_pool()

    def malloc(size):
        block = pool.malloc(size)
        used = pool.used_bytes()
        if used > _peak[0]:
            _peak[0] = used
        return block
    cupy.cuda.set_allocator(malloc)
    _peak[:] = [pool.used_bytes(), True]


def max_memory_allocated(device=None) -> int:
    """The most bytes held by tensors since `reset_peak_memory_stats` (or since the first call of
    either function: peaks are recorded from then on)."""
    if not is_available():
        return 0
    _track_peak()      # (the peak is the default pool's; graph pools count as they are now)
    return max(_peak[0] + _graph_pools("used_bytes"), memory_allocated(device))


def memory_reserved(device=None) -> int:
    if not is_available():
        return 0
    return _cupy().get_default_memory_pool().total_bytes() + _graph_pools("total_bytes")


def reset_peak_memory_stats(device=None) -> None:
    if is_available():
        _track_peak()
        _peak[0] = _cupy().get_default_memory_pool().used_bytes()


def empty_cache() -> None:
    if is_available():
        _cupy().get_default_memory_pool().free_all_blocks()


# -- CUDA graphs: ember/_cuda/graphs.py, imported on first use ------------------------------
def __getattr__(name):
    if name in ("CUDAGraph", "graph", "graph_pool_handle", "is_current_stream_capturing"):
        from ._cuda import graphs
        return getattr(graphs, name)
    if name == "make_graphed_callables":
        from ._cuda.graphed_callables import make_graphed_callables
        return make_graphed_callables
    raise AttributeError(f"module 'ember.cuda' has no attribute {name!r}")
