"""Kernel launches through cuLaunchKernel straight from Python values.

CuPy's ``RawKernel.__call__`` packs a Python object per argument and looks its function up per
call (about half of a tiny op's host time on the lent H100); ``ElementwiseKernel.__call__`` also
resolves types and broadcasts every operand (Adam's twelve: ~45 us a call). Here a launch packs
its arguments into one reused, per-thread parameter block with a `struct` format made once per
signature, and passes the block's address to the driver, which copies the values at the launch.

A signature is one letter per kernel parameter: ``p`` a device pointer (pass ``arr.data.ptr``),
``q`` a 64-bit integer, ``i`` a 32-bit integer, ``f`` a float, ``d`` a double. Each value sits in
an 8-byte slot of its own (the driver reads ``sizeof(param)`` bytes at each slot's address).
The tiny-op path (`elementwise`) keeps two launches of fixed arity written out on the same block:
the generic ``*values`` form below costs ~0.2 us more a call.
"""
from __future__ import annotations

import ctypes
import struct
import threading

import cupy
import numpy
from cupy.cuda import driver, runtime

_launch_kernel = driver.launchKernel
_current_stream = cupy.cuda.get_current_stream
current_device = runtime.getDevice
_ndarray = cupy.ndarray

SLOTS = 16
_SLOT_FORMATS = {"p": "Q", "q": "q", "i": "i4x", "f": "f4x", "d": "d"}


class _Parameters(threading.local):
    """This thread's parameter block: SLOTS 8-byte slots and the array of their addresses."""

    def __init__(self):
        self.slots = ctypes.create_string_buffer(8 * SLOTS)
        base = ctypes.addressof(self.slots)
        self.pointers = (ctypes.c_void_p * SLOTS)(*(base + 8 * i for i in range(SLOTS)))
        self.address = ctypes.addressof(self.pointers)


_parameters = _Parameters()
_launchers: dict = {}


def launcher(signature: str):
    """``launch(function_ptr, blocks, threads, *values)`` for kernels of `signature` (made once):
    `blocks` and `threads` are ints (x only) or (x, y) / (x, y, z) tuples; launched on the
    current stream with no dynamic shared memory."""
    run = _launchers.get(signature)
    if run is not None:
        return run
    if len(signature) > SLOTS:
        raise ValueError(f"launcher(): {len(signature)} parameters, the block holds {SLOTS}")
    pack = struct.Struct("<" + "".join(_SLOT_FORMATS[c] for c in signature)).pack_into

    def run(function, blocks, threads, *values):
        p = _parameters
        pack(p.slots, 0, *values)
        gx, gy, gz = (blocks, 1, 1) if blocks.__class__ is int else (tuple(blocks) + (1, 1))[:3]
        tx, ty, tz = (threads, 1, 1) if threads.__class__ is int else (tuple(threads) + (1, 1))[:3]
        _launch_kernel(function, gx, gy, gz, tx, ty, tz, 0, _current_stream().ptr, p.address, 0)
    _launchers[signature] = run
    return run


_functions: dict = {}     # (id(RawKernel), device) -> (RawKernel, CUfunction address)


def function_pointer(kernel) -> int:
    """The CUfunction address of CuPy RawKernel `kernel` on the current device (CuPy compiles
    and loads it on first use; the RawKernel is held so that its module stays loaded)."""
    key = (id(kernel), current_device())
    entry = _functions.get(key)
    if entry is None or entry[0] is not kernel:
        entry = _functions[key] = (kernel, kernel.kernel.ptr)
    return entry[1]


# the argument classes a RawKernel call may pass, as signature letters
_ARG_CODES = {_ndarray: "p", numpy.int64: "q", numpy.int32: "i", numpy.float32: "f", numpy.float64: "d"}
_by_classes: dict = {}    # tuple of argument classes -> launcher, or None (not expressible)


def call(kernel, blocks, threads, args) -> None:
    """``kernel(blocks, threads, args)`` as CuPy's RawKernel call takes it (device arrays and
    NumPy scalars), launched directly; any other argument (a Python number: CuPy picks its C type)
    goes through CuPy's call. `blocks` and `threads` as in `launcher`."""
    classes = tuple(map(type, args))
    run = _by_classes.get(classes, False)
    if run is False:
        codes = [_ARG_CODES.get(c) for c in classes]
        run = _by_classes[classes] = None if None in codes or len(codes) > SLOTS else launcher("".join(codes))
    if run is None:
        kernel(blocks if blocks.__class__ is tuple else (blocks,), threads if threads.__class__ is tuple else (threads,),
               args)
        return
    run(function_pointer(kernel), blocks, threads, *[a.data.ptr if a.__class__ is _ndarray else a for a in args])
