"""Triton's own launcher on ember's current stream.

Triton's JIT launcher (``kernel[grid](...)``, ``CompiledKernel[grid](...)``) asks its driver for the
current stream, and the driver asks PyTorch (``torch.cuda``'s current stream). ember's current
stream is CuPy's. Under ``ember.cuda.stream(s)`` or a CUDA graph capture (on a side stream) such a
launch would go to PyTorch's stream, the default one: outside the capture, so a replay skips the
kernel and reads what it wrote at capture time, and racing the side stream's work. ember's own
launchers (`_inductor.triton_launch.KernelBinary`, `_cuda.launch`) pass CuPy's stream themselves.
"""
from __future__ import annotations

import os

_done = [False]


def follow_cupy_stream() -> None:
    """Make Triton's driver answer CuPy's current stream while it is not the default one (PyTorch's
    otherwise, so torch's own Triton launches under ``torch.cuda.stream`` keep theirs). Once per process."""
    if _done[0] or os.environ.get("TRITON_INTERPRET") == "1":   # (the interpreter has no streams)
        return
    import cupy
    from triton.runtime import driver
    active = driver.active
    torch_stream, cupy_stream = active.get_current_stream, cupy.cuda.get_current_stream

    def get_current_stream(device=None):
        ptr = cupy_stream().ptr
        return ptr if ptr else torch_stream(device)
    active.get_current_stream = get_current_stream
    _done[0] = True
