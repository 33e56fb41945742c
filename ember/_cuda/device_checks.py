"""Index checks on the GPU, reported where the host synchronises anyway.

PyTorch's CUDA kernels check an embedding's indices and cross-entropy's targets on the device (a
device-side assert) and report a failure at the next call that synchronises. Checking them on
the host costs a device sync per call (two for ``idx.min() < 0 or idx.max() >= n``): the host
stops queueing kernels and the GPU then idles while it catches up.

Here a check is a kernel (or a line of the op's own kernel) that writes into a per-device flag
in device memory: the sequence number of the first failing check in stream order and the
offending value. The host keeps the pending checks' exceptions, so the error raised is ember's
(the op's exception type and message, with the value) -- raised at the next point that reads
device memory on the host: ``Tensor.item`` / ``tolist`` / ``numpy`` / printing, a copy to the CPU,
``ember.cuda.synchronize`` and ``Stream`` / ``Event.synchronize`` (`ember._core.storage.
report_device_errors`). Reading the flag there costs one 16-byte copy, and only when checks are
pending; after LIMIT pending checks one is forced (the messages' memory stays bounded). With
``CUDA_LAUNCH_BLOCKING=1`` in the environment (PyTorch's switch) every check is read at its op.

Between the failing op and the report, what is computed from its output is garbage (CuPy's
indexing wraps an out-of-range index, so nothing faults), as in PyTorch, but it cannot reach the
host without passing a report. Unlike PyTorch, whose CUDA context is lost, ember clears the flag
when it raises and keeps working. In-place ops keep their synchronous checks: they must leave
their inputs unchanged when they fail.

A check captured into a CUDA graph writes the flag at every replay: its message is kept for good,
and a replay marks the device's flag as to be read (`CUDAGraph.replay`). The flag must exist
before the capture (a first check under capture raises: run the step once first, as PyTorch's
warm-up), or the capture would allocate it from the graph's pool and memset it at each replay.
"""
from __future__ import annotations

import os

import cupy
import numpy

from . import graphs, launch as _direct

LIMIT = 1024
BLOCKING = os.environ.get("CUDA_LAUNCH_BLOCKING", "0") not in ("", "0")

_SOURCE = r"""
template <typename I> __device__ void check_range(const I* idx, long long n, long long lo, long long hi,
                                                  long long skip, unsigned long long* flag, long long seq) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        long long v = idx[i];
        if (v != skip && (v < lo || v >= hi) && atomicCAS(flag, 0ULL, (unsigned long long)seq) == 0ULL)
            flag[1] = (unsigned long long)v;
    }
}
extern "C" __global__ void check_range_i64(const long long* idx, long long n, long long lo, long long hi,
                                           long long skip, unsigned long long* flag, long long seq) {
    check_range<long long>(idx, n, lo, hi, skip, flag, seq);
}
extern "C" __global__ void check_range_i32(const int* idx, long long n, long long lo, long long hi,
                                           long long skip, unsigned long long* flag, long long seq) {
    check_range<int>(idx, n, lo, hi, skip, flag, seq);
}
"""
_KERNEL_NAMES = {numpy.dtype(numpy.int64): "check_range_i64", numpy.dtype(numpy.int32): "check_range_i32"}
INDEX_DTYPES = tuple(_KERNEL_NAMES)
_module: list = []
_launch = _direct.launcher("pqqqqpq")

pending: dict = {}     # device id -> {sequence number: (exception type, message with {value})}
_flags: dict = {}      # device id -> uint64[2] device array: first failing sequence number, its value
_sequence = [0]
captured: dict = {}    # sequence number -> (exception type, message) of the checks in CUDA graphs
readers: dict = {}     # device id -> [functions that read a kernel's own error flag and raise its error]


def _capturing() -> bool:
    return bool(graphs.captures_underway[0]) and graphs.is_current_stream_capturing()


def register(exc, message: str):
    """A new pending check on the current device: (its flag array, its sequence number). The
    op's kernel sets the flag (`check_range` shows how); `message` may name ``{value}``."""
    device = cupy.cuda.runtime.getDevice()
    flag = _flags.get(device)
    capturing = _capturing()
    if flag is None:
        if capturing:
            raise RuntimeError("a CUDA graph capture reached ember's first device-side index check on this device: "
                               "run the captured work once before capturing (PyTorch's warm-up)")
        flag = _flags[device] = cupy.zeros(2, numpy.uint64)
    _sequence[0] += 1
    if capturing:
        captured[_sequence[0]] = (exc, message)
    pending.setdefault(device, {})[_sequence[0]] = (exc, message)
    return flag, _sequence[0]


def defer_read(read) -> None:
    """Run `read` (it reads device memory and raises the error eager would) at the next report
    instead of now: the fuser's kernels' error flags and the checks of a CUDA graph replay, as
    PyTorch's compiled kernels report a device-side assert at the next synchronising call."""
    device = cupy.cuda.runtime.getDevice()
    readers.setdefault(device, []).append(read)
    pending.setdefault(device, {})
    if BLOCKING or len(readers[device]) >= LIMIT:
        raise_pending()


def after_launch() -> None:
    """Called by an op once its checking kernel is queued: reads the flags now under
    CUDA_LAUNCH_BLOCKING or when too many checks are pending."""
    if (BLOCKING or sum(map(len, pending.values())) >= LIMIT) and not _capturing():
        raise_pending()


def expect_in_range(index, lo: int, hi: int, exc, message: str, skip=None) -> None:
    """Check on the device that every value of int64/int32 device array `index` other than
    `skip` lies in [lo, hi); a failure raises ``exc(message.format(value=...))`` at the next
    report. Integer dtypes without a kernel here are checked on the host (a sync)."""
    if not index.size:
        return
    name = _KERNEL_NAMES.get(index.dtype)
    if name is None:
        bad = index[(index < lo) | (index >= hi)] if skip is None else \
            index[(index != skip) & ((index < lo) | (index >= hi))]
        if bad.size:
            raise exc(message.format(value=int(bad[0])))
        return
    if not _module:
        _module.append(cupy.RawModule(code=_SOURCE))
    index = cupy.ascontiguousarray(index)
    flag, seq = register(exc, message)
    _launch(_direct.function_pointer(_module[0].get_function(name)), max(1, min((index.size + 255) // 256, 1024)),
            256, index.data.ptr, index.size, lo, hi, lo if skip is None else skip, flag.data.ptr, seq)   # (lo: in range anyway)
    after_launch()


def raise_pending() -> None:
    """Read the flag of every device with pending checks; raise the first failed check's
    exception (its flag cleared), else forget the checks."""
    for device in list(pending):
        checks, reads = pending.pop(device), readers.pop(device, ())
        flag = _flags.get(device)
        with cupy.cuda.Device(device):
            cupy.cuda.runtime.deviceSynchronize()   # (a check may have run on another stream)
            first = None
            for read in reads:    # every one, each clearing its flag, before the first error is raised
                try:
                    read()
                except Exception as exc:  # noqa: BLE001 (re-raised below)
                    first = first or exc
            if first is not None:
                if flag is not None:
                    flag.fill(0)     # (the index checks' own report is dropped with theirs)
                raise first
            if flag is None:
                continue
            seq, value = (int(v) for v in flag.get())
            if not seq:
                continue
            flag.fill(0)
        exc, message = checks[seq] if seq in checks else captured[seq]
        raise exc(message.format(value=numpy.uint64(value).astype(numpy.int64).item()))
