"""Elementwise CUDA kernels launched straight from their arguments: the short road for the common
case of CuPy's ufuncs (`array_module._Ufunc` asks here first) and for relu.

A CuPy ufunc call on a tiny array is mostly host work: argument and dtype resolution, broadcast,
the kernel-cache key, the CArray/CIndexer packing of every operand (`cupy.add` alone was 8.7 us on
the lent H100, PyTorch's whole ``add`` 10 us). Where the operands need none of that -- same shape,
same dtype, C-contiguous, on the current device -- a kernel compiled once per (op, dtype) from
`_source()` is launched through cuLaunchKernel with the raw pointers and the element count
(`launch.py`). Anything else (broadcasting, mixed dtypes, strided views, Python numbers, other
keyword arguments) returns None and the caller runs CuPy's ufunc: the result is the same array
either way, since each kernel's expression is the one CuPy's ufunc evaluates for that dtype
(``out0 = in0 + in1``, ``exp(in0)``). relu is PyTorch CUDA's (see `UNARY`).

float16 and bfloat16 operands (most elementwise calls of a bf16 autocast step) are loaded to
float32, computed there and rounded once to nearest even, as PyTorch's CUDA kernels and CuPy's
float16 arithmetic do; only the correctly rounded operations (+ - * /, negation, relu) take
them, where float32's 24 bits make that one rounding exact (no double-rounding error at 2p+2
bits). Their transcendental functions stay with CuPy.
"""
from __future__ import annotations

import struct

import cupy
import numpy
from cupy.cuda import driver

from .._core import dtype as _dt
from .launch import _parameters, current_device as _get_device

_ndarray = cupy.ndarray
_launch_kernel = driver.launchKernel
_current_stream = cupy.cuda.get_current_stream

# dtype -> C type; "half" and "bf16" are 16-bit storage computed in float (fused.PRELUDE's load/store)
_C_TYPES = {numpy.dtype(numpy.float32): "float", numpy.dtype(numpy.float64): "double",
            numpy.dtype(numpy.int32): "int", numpy.dtype(numpy.int64): "long long",
            numpy.dtype(numpy.float16): "half", _dt.bfloat16.np: "bf16"}
_FLOATS = ("float", "double")
_HALVES = ("half", "bf16")

# ufunc name -> (C expression of a (and b), the C types it is compiled for)
BINARY = {"add": ("a + b", tuple(_C_TYPES.values())), "subtract": ("a - b", tuple(_C_TYPES.values())),
          "multiply": ("a * b", tuple(_C_TYPES.values())), "true_divide": ("a / b", _FLOATS + _HALVES),
          "divide": ("a / b", _FLOATS + _HALVES)}
UNARY = {"exp": ("exp(a)", _FLOATS), "log": ("log(a)", _FLOATS), "sqrt": ("sqrt(a)", _FLOATS),
         "tanh": ("tanh(a)", _FLOATS), "negative": ("-a", tuple(_C_TYPES.values())),
         # PyTorch CUDA's relu (clamp_min(x, 0): NaN stays NaN, -0.0 becomes 0.0; its CPU relu keeps -0.0)
         "relu": ("(a > (T)0 || a != a) ? a : (T)0", tuple(_C_TYPES.values()))}

# the sum of all elements of a small contiguous float array in one block (no CUB/reduction-kernel
# set-up on the host): each thread strides over the input, then a tree in shared memory. Sums
# accumulate in the input's type, as PyTorch's CUDA sum of float32 and float64.
SUM_ALL_LIMIT = 1 << 16
_SUM_ALL = """extern "C" __global__ void sum_all_TAG(const T* x, T* out, long long n) {
    __shared__ T acc[256];
    T s = 0;
    for (long long i = threadIdx.x; i < n; i += 256) s += x[i];
    acc[threadIdx.x] = s;
    __syncthreads();
    for (int w = 128; w > 0; w >>= 1) {
        if (threadIdx.x < w) acc[threadIdx.x] += acc[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[0] = acc[0];
}"""

_LOOP = "for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; " \
        "i += (long long)gridDim.x * blockDim.x)"


def _source() -> str:
    from .fused import PRELUDE     # load_bf16/store_bf16, load_half/store_half
    lines = [PRELUDE]
    for table, params, load in ((BINARY, "const S* x, const S* y", "T a = LOAD(x[i]), b = LOAD(y[i]);"),
                                (UNARY, "const S* x", "T a = LOAD(x[i]);")):
        for name, (expr, ctypes) in table.items():
            for ctype in ctypes:
                tag = ctype.replace(" ", "_")
                half = ctype in _HALVES
                storage, compute = ("unsigned short", "float") if half else (ctype, ctype)
                loaded = load.replace("LOAD", f"load_{ctype}") if half else load.replace("LOAD", "")
                stored = f"store_{ctype}({expr})" if half else expr
                lines.append(f'extern "C" __global__ void {name}_{tag}({params.replace("S", storage)}, '
                             f'{storage}* out, long long n) {{ typedef {compute} T; {_LOOP} {{ {loaded} '
                             f'out[i] = {stored}; }} }}')
    for ctype in _FLOATS:
        lines.append(_SUM_ALL.replace("TAG", ctype).replace("T", ctype))
    return "\n".join(lines)


_module: list = []          # the RawModule, compiled on first use (CuPy caches it on disk)
_functions: dict = {}       # (name, dtype, device) -> CUfunction address, or None: no kernel for dtype
_alive: list = []           # the Function objects behind those addresses (their module stays loaded)


def function(name, dtype, device):
    """The CUfunction of ufunc `name` for `dtype` on `device`, or None."""
    key = (name, dtype, device)
    ptr = _functions.get(key, False)
    if ptr is not False:
        return ptr
    ctype = _C_TYPES.get(dtype)
    spec = BINARY.get(name) or UNARY.get(name) or {"sum_all": ("", _FLOATS)}.get(name)
    if ctype is None or spec is None or ctype not in spec[1]:
        ptr = None
    else:
        if not _module:
            _module.append(cupy.RawModule(code=_source()))
        kernel = _module[0].get_function(f"{name}_{ctype.replace(' ', '_')}")
        kernel = getattr(kernel, "kernel", kernel)     # (a RawKernel's Function for the current device)
        _alive.append(kernel)
        ptr = kernel.ptr
    _functions[key] = ptr
    return ptr


# (x, out, n) and (x, y, out, n) launches written out for the tiny-op path: `launch.launcher`'s
# generic ``*values`` form costs ~0.2 us more a call; the parameter block is launch.py's
_pack3, _pack4 = struct.Struct("3q").pack_into, struct.Struct("4q").pack_into


def _launch3(ptr, blocks, a, b, c):
    p = _parameters
    _pack3(p.slots, 0, a, b, c)
    _launch_kernel(ptr, blocks, 1, 1, 256, 1, 1, 0, _current_stream().ptr, p.address, 0)


def _launch4(ptr, blocks, a, b, c, d):
    p = _parameters
    _pack4(p.slots, 0, a, b, c, d)
    _launch_kernel(ptr, blocks, 1, 1, 256, 1, 1, 0, _current_stream().ptr, p.address, 0)


def _fits(out, x):
    """`out` (an ``out=`` argument) can take the kernel's result for operand `x` in place: same
    shape, dtype and layout, and no input overlapping it other than element for element (CuPy's
    ufunc copies such an input first: those calls stay with it)."""
    return out.__class__ is _ndarray and out.dtype is x.dtype and out._c_contiguous and out.shape == x.shape


def _partly_overlaps(a, out) -> bool:
    ap, op, nbytes = a.data.ptr, out.data.ptr, out.nbytes
    return ap != op and ap < op + nbytes and op < ap + nbytes


def _kernel(name, x):
    """The kernel `name` for `x`'s dtype and device, or None: none compiled for it, or `x` is not
    on the current device."""
    dtype, device = x.dtype, x.data.device_id
    ptr = _functions.get((name, dtype, device), False)
    if ptr is False:
        ptr = function(name, dtype, device)
    return None if ptr is None or device != _get_device() else ptr


def _launch(name, x, operands, kwargs, launch):
    """Ufunc `name` over `operands` (the first is `x`) by one launch of its kernel: the result
    array, or None where CuPy's ufunc must run: no kernel (`_kernel`), or an `out=` that does not
    fit or partly overlaps an operand."""
    ptr = _kernel(name, x)
    if ptr is None:
        return None
    if not kwargs:
        out = _ndarray(x.shape, x.dtype)
    else:
        out = kwargs.get("out")
        if len(kwargs) != 1 or not _fits(out, x) or any(_partly_overlaps(a, out) for a in operands):
            return None
    n = x.size
    if n:
        launch(ptr, min((n + 255) >> 8, 8192), *[a.data.ptr for a in operands], out.data.ptr, n)
    return out


def binary(name):
    """``run(args, kwargs)`` for ufunc `name`: the result array, or None where CuPy's ufunc must run."""
    def run(args, kwargs):
        if len(args) != 2:
            return None
        x, y = args
        if x.__class__ is not _ndarray or y.__class__ is not _ndarray:
            return None
        if y.dtype is not x.dtype or not x._c_contiguous or not y._c_contiguous or x.shape != y.shape:
            return None
        return _launch(name, x, args, kwargs, _launch4)
    return run


def inplace(name):
    """``run(x, y)`` writing ufunc `name` of arrays `x` and `y` into `x` by one launch (a tiny
    ``add_``: the CPU rule's update, CuPy's ``out=`` and the ufunc path are ~5 frames): True when
    launched, None where the general in-place path must run (another dtype, shape or layout, an
    operand partly overlapping `x`; y may be x itself, read element for element)."""
    def run(x, y):
        if y.__class__ is not _ndarray or y.dtype is not x.dtype or not x._c_contiguous \
                or not y._c_contiguous or x.shape != y.shape or _partly_overlaps(y, x):
            return None
        ptr = _kernel(name, x)
        if ptr is None:
            return None
        n = x.size
        if n:
            xp = x.data.ptr
            _launch4(ptr, min((n + 255) >> 8, 8192), xp, y.data.ptr, xp, n)
        return True
    return run


def unary(name):
    """``run(args, kwargs)`` for ufunc `name` of one operand (see `binary`)."""
    def run(args, kwargs):
        if len(args) != 1:
            return None
        x = args[0]
        if x.__class__ is not _ndarray or not x._c_contiguous:
            return None
        return _launch(name, x, args, kwargs, _launch3)
    return run


def sum_all(a):
    """The 0-d sum of every element of `a` (np.add.reduce(a, axis=None)), or None: `a` not a small
    contiguous float32/float64 array on the current device."""
    if a.__class__ is not _ndarray or not a._c_contiguous or a.size > SUM_ALL_LIMIT:
        return None
    ptr = _kernel("sum_all", a)
    if ptr is None:
        return None
    out = _ndarray((), a.dtype)
    _launch3(ptr, 1, a.data.ptr, out.data.ptr, a.size)
    return out


def direct(ufunc_name):
    """The direct launcher of a CuPy ufunc name, or None where there is none."""
    if ufunc_name in BINARY:
        return binary(ufunc_name)
    if ufunc_name in UNARY:
        return unary(ufunc_name)
    return None


_relu = unary("relu")


def relu(original):
    """activation.relu on the GPU: one launch for a contiguous tensor of a dtype in `UNARY`
    (the CPU source's form is three: maximum, a comparison and a masked copy)."""
    from .kernels import wrap_cuda

    def run(x):
        arr = x._data
        out = _relu((arr,), None) if arr.__class__ is _ndarray else None
        return original(x) if out is None else wrap_cuda(out)
    run.__name__ = "relu"
    return run
