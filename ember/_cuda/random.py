"""Random draws on the GPU for the CUDA variants of the random kernels (ember/ops/cpu/random.py,
dropout): the same kernel source, argument checks and distributions as on the CPU, with the
values drawn by cuRAND's Philox on the device.

Reproducibility: each draw takes one 64-bit word from its ``ember.Generator`` (the CUDA default
generator, or the one passed) to seed Philox at offset 0, so ``ember.cuda.manual_seed`` /
``ember.manual_seed``, ``get_state``/``set_state`` and ``fork_rng`` work unchanged, and the
values differ from the CPU's (as PyTorch's CUDA values differ from its CPU's).

`draw` is the one place a device draw happens (a hook for anything that must refuse or record
random work, e.g. under CUDA-graph capture).
"""
from __future__ import annotations

import math

import cupy
import numpy

_PHILOX = 161           # CURAND_RNG_PSEUDO_PHILOX4_32_10 (curand.h): counter-based, seeding is cheap
_handles: dict = {}     # device id -> cuRAND generator
_U64 = numpy.dtype(numpy.uint64)


def _handle():
    from cupy.cuda import curand    # (here: loading cuRAND needs the CUDA libraries)
    dev = cupy.cuda.runtime.getDevice()
    h = _handles.get(dev)
    if h is None:
        h = _handles[dev] = curand.createGenerator(_PHILOX)
    curand.setStream(h, cupy.cuda.get_current_stream().ptr)
    return h


def draw(generator, kind: str, shape) -> cupy.ndarray:
    """`shape` values from `generator`: kind "bits" (uint64, uniform over all 64 bits) or "normal"
    (float64, standard normal)."""
    from cupy.cuda import curand
    from . import graphs
    if graphs.captures_underway[0]:
        graphs.refuse_host_draw()   # the seed below is a host value: a capture would replay one draw forever
    seed = int(generator._rng.bit_generator.random_raw())
    n = math.prod(shape)
    h = _handle()
    curand.setPseudoRandomGeneratorSeed(h, seed)
    curand.setGeneratorOffset(h, 0)
    if kind == "bits":
        out = cupy.empty(2 * n, numpy.uint32)
        if n:
            curand.generate(h, out.data.ptr, 2 * n)
        return out.view(numpy.uint64).reshape(shape)
    even = n + (n & 1)          # cuRAND's normal draws come in pairs
    out = cupy.empty(even, numpy.float64)
    if even:
        curand.generateNormalDouble(h, out.data.ptr, even, 0.0, 1.0)
    return out[:n].reshape(shape)


def _shape(size):
    return () if size is None else (size,) if isinstance(size, (int, numpy.integer)) else tuple(size)


class DeviceDraws:
    """The ``numpy.random.Generator`` methods the random kernels call, drawing on the device."""

    __slots__ = ("generator",)

    def __init__(self, generator):
        self.generator = generator

    def integers(self, low, high=None, size=None, dtype=numpy.int64, endpoint=False):
        """Uniform integers in [low, high) ([low, high] with `endpoint`), reduced modulo the range
        from 64 random bits (as PyTorch's CUDA random_); the sum wraps in uint64, exact in range."""
        if high is None:
            low, high = 0, low
        span = int(high) - int(low) + (1 if endpoint else 0)
        if span <= 0:
            raise ValueError("high <= low")
        bits = draw(self.generator, "bits", _shape(size))
        if span < 1 << 64:
            bits = bits & numpy.uint64(span - 1) if span & (span - 1) == 0 else bits % numpy.uint64(span)
        out = bits + numpy.uint64(int(low) % (1 << 64))
        return out if numpy.dtype(dtype) == _U64 else out.view(numpy.int64).astype(dtype, copy=False)

    def random(self, size=None):
        """Uniform float64 in [0, 1): 53 random bits."""
        return (draw(self.generator, "bits", _shape(size)) >> numpy.uint64(11)).astype(numpy.float64) * 2.0 ** -53

    def standard_normal(self, size=None):
        return draw(self.generator, "normal", _shape(size))

    def standard_exponential(self, size=None):
        return -cupy.log1p(-self.random(size))

    def standard_cauchy(self, size=None):
        return cupy.tan(math.pi * (self.random(size) - 0.5))

    def geometric(self, p, size=None):
        """Trials up to the first success: ceil(log(u) / log(1 - p)) for u in (0, 1], at least 1."""
        u = 1.0 - self.random(size)
        return cupy.maximum(cupy.ceil(cupy.log(u) / math.log1p(-p)), 1).astype(numpy.int64)

    def permutation(self, n):
        return cupy.argsort(draw(self.generator, "bits", (int(n),)))


def rng(generator) -> DeviceDraws:
    """What a CUDA variant's ``rng(generator)`` returns: draws from `generator` (a CUDA
    ``ember.Generator``) or, for None, from ``ember.cuda``'s default generator."""
    from .. import cuda
    if generator is None:
        generator = cuda.default_generator()
    else:
        from .._core.random import Generator
        if not isinstance(generator, Generator):
            raise TypeError(f"expected an ember.Generator, got {type(generator).__name__}")
        if generator.device.type != "cuda":
            raise RuntimeError(f"Expected a 'cuda' device type for generator but found '{generator.device.type}'")
    return DeviceDraws(generator)
