"""Calling a compiled kernel from Python: one C call, pointers taken straight from the arrays.

    launch = launcher()                         # the C extension, or the ctypes fallback
    launch(kernel_pointer(lib, "k"), out, x, y, 1024, 0.5)

The calling convention (what the code generator emits). Every kernel has the signature

    void k(void *const *bufs, const int64_t *ints, const double *floats);

and launch(fnptr, *args) sorts its arguments, keeping their order within each kind:
  - an array (NumPy ndarray, or any object with the buffer protocol) -> the next `bufs[i]`: the
    address of its first element (strided and negative-stride views included: the kernel indexes
    with its own strides, the launcher never copies);
  - a Python int or bool, or a NumPy integer/bool scalar -> the next `ints[j]` (int64);
  - a Python float or a NumPy floating scalar -> the next `floats[k]` (double).
A kernel with no scalars still takes the three parameters. The kernel runs with the GIL released.

Why an extension: the per-call cost of a ctypes launch is dominated by turning arrays into
pointers (`a.ctypes.data`, ~1 us per array). The extension reads the data pointer from the
ndarray struct (exact ndarray type) or through the buffer protocol, and calls the kernel directly;
bench/launch_overhead.py measures it against ctypes with pointers cached per storage. It is
compiled once per machine through the kernel cache (same key, lock and digest rules).

Threads: the kernels' OpenMP thread count is config.threads, set with set_num_threads(n)
(= ember.set_num_threads). The extension applies it in each calling thread before a launch
(omp_set_num_threads is per-thread state in libgomp); the ctypes path does the same through
libgomp's omp_set_num_threads (apply_num_threads(), also for code calling kernels via ctypes).
"""
from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import sys
import sysconfig
import threading
import warnings

import numpy as np

from . import codecache, config

EXTENSION_NAME = "ember_launcher"
MAX_ARGS = 1024              # a horizontally fused kernel can take a few hundred buffers
MAX_VIEWS = 64               # arguments that are not ndarrays but expose the buffer protocol

LAUNCHER_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <omp.h>

typedef void (*ember_kernel)(void *const *bufs, const int64_t *ints, const double *floats);

/* NumPy's PyArrayObject begins with PyObject_HEAD and then `char *data` (its documented
   PyArrayObject_fields layout, unchanged since NumPy 1.0). Used only for exact ndarrays. */
typedef struct { PyObject_HEAD char *data; } ember_array_head;

#define MAX_ARGS %(max_args)d
#define MAX_VIEWS %(max_views)d
static PyTypeObject *ndarray_type, *np_integer, *np_bool, *np_floating;
static int wanted_threads = 1;
static _Thread_local int applied_threads = 0;

static int as_int(PyObject *a, int64_t *out) {
    PyObject *index = PyNumber_Index(a);
    if (!index) return -1;
    long long v = PyLong_AsLongLong(index);
    Py_DECREF(index);
    if (v == -1 && PyErr_Occurred()) return -1;
    *out = v;
    return 0;
}

static PyObject *launch(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    void *bufs[MAX_ARGS]; int64_t ints[MAX_ARGS]; double floats[MAX_ARGS];
    Py_buffer views[MAX_VIEWS];
    int nb = 0, ni = 0, nf = 0, nv = 0;
    PyObject *result = NULL;
    if (nargs < 1 || nargs - 1 > MAX_ARGS) {
        PyErr_Format(PyExc_TypeError, "launch: expected a kernel pointer and at most %%d arguments, got %%zd",
                     MAX_ARGS, nargs);
        return NULL;
    }
    if (ndarray_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "launch: ember_launcher.init() was not called");
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(args[0]);
    if (fn == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "launch: the kernel pointer is NULL");
        return NULL;
    }
    for (Py_ssize_t i = 1; i < nargs; i++) {
        PyObject *a = args[i];
        if (Py_TYPE(a) == ndarray_type) { bufs[nb++] = ((ember_array_head *)a)->data; continue; }
        if (PyLong_Check(a)) {
            long long v = PyLong_AsLongLong(a);
            if (v == -1 && PyErr_Occurred()) goto done;
            ints[ni++] = v;
            continue;
        }
        if (PyFloat_Check(a)) { floats[nf++] = PyFloat_AS_DOUBLE(a); continue; }
        if (PyObject_TypeCheck(a, np_integer) || PyObject_TypeCheck(a, np_bool)) {
            if (as_int(a, &ints[ni++]) < 0) goto done;
            continue;
        }
        if (PyObject_TypeCheck(a, np_floating)) {
            double v = PyFloat_AsDouble(a);
            if (v == -1.0 && PyErr_Occurred()) goto done;
            floats[nf++] = v;
            continue;
        }
        if (PyObject_CheckBuffer(a)) {
            if (nv == MAX_VIEWS) {
                PyErr_Format(PyExc_TypeError, "launch: at most %%d arguments may be non-ndarray buffers", MAX_VIEWS);
                goto done;
            }
            if (PyObject_GetBuffer(a, &views[nv], PyBUF_STRIDES) < 0) goto done;
            bufs[nb++] = views[nv++].buf;
            continue;
        }
        PyErr_Format(PyExc_TypeError, "launch: argument %%zd must be an array, int or float, not %%.200s",
                     i, Py_TYPE(a)->tp_name);
        goto done;
    }
    if (applied_threads != wanted_threads) {     /* libgomp's thread count is per calling thread */
        omp_set_num_threads(wanted_threads);
        applied_threads = wanted_threads;
    }
    Py_BEGIN_ALLOW_THREADS
    ((ember_kernel)fn)(bufs, ints, floats);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (int v = 0; v < nv; v++) PyBuffer_Release(&views[v]);
    return result;
}

static PyObject *set_num_threads(PyObject *self, PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    wanted_threads = (int)n;
    Py_RETURN_NONE;
}

static PyObject *init(PyObject *self, PyObject *args) {
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyType_Type, &ndarray_type, &PyType_Type, &np_integer,
                          &PyType_Type, &np_bool, &PyType_Type, &np_floating)) return NULL;
    Py_INCREF(ndarray_type); Py_INCREF(np_integer); Py_INCREF(np_bool); Py_INCREF(np_floating);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL, "launch(fnptr, *args): call a kernel"},
    {"set_num_threads", set_num_threads, METH_O, "OpenMP threads for later launches"},
    {"init", init, METH_VARARGS, "init(ndarray, integer, bool_, floating)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "%(name)s", NULL, -1, methods};

PyMODINIT_FUNC PyInit_%(name)s(void) { return PyModule_Create(&module); }
"""

_state_lock = threading.Lock()
_launcher = None              # the chosen launch function, once decided
_extension = None             # the loaded extension module when it built
_gomp_set = None              # libgomp's omp_set_num_threads for the ctypes path
_applied = threading.local()  # per-thread OpenMP count already applied (ctypes path)


def _extension_source() -> str:
    # The interpreter's ABI is in the text so each Python gets its own cache entry.
    abi = f"/* for {sys.implementation.cache_tag} {sysconfig.get_config_var('SOABI')} */\n"
    return abi + LAUNCHER_SOURCE % {"name": EXTENSION_NAME, "max_args": MAX_ARGS, "max_views": MAX_VIEWS}


def build_extension():
    """Compile (once per machine) and import the launcher extension; raises on failure."""
    lib = codecache.load_c(_extension_source(), name=EXTENSION_NAME,
                           extra_flags=("-I" + sysconfig.get_paths()["include"],))
    # The import dlopens the path codecache just verified and loaded: the same handle.
    loader = importlib.machinery.ExtensionFileLoader(EXTENSION_NAME, lib._name)
    spec = importlib.util.spec_from_file_location(EXTENSION_NAME, lib._name, loader=loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    module.init(np.ndarray, np.integer, np.bool_, np.floating)
    module.set_num_threads(config.threads)
    return module


_KERNEL_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_ctypes_kernels: dict = {}    # fnptr -> ctypes function object


def apply_num_threads() -> None:
    """Make config.threads the OpenMP thread count of the calling thread (libgomp keeps it per
    thread); for code that calls kernels through ctypes itself. Cheap when already applied."""
    global _gomp_set
    if getattr(_applied, "threads", None) == config.threads:
        return
    if _gomp_set is None:
        _gomp_set = ctypes.CDLL("libgomp.so.1").omp_set_num_threads
        _gomp_set.argtypes = (ctypes.c_int,)
    _gomp_set(config.threads)
    _applied.threads = config.threads


def ctypes_launch(fnptr: int, *args) -> None:
    """The same convention as the extension's launch, through ctypes (the fallback)."""
    fn = _ctypes_kernels.get(fnptr)
    if fn is None:
        if not fnptr:
            raise ValueError("launch: the kernel pointer is NULL")
        fn = _ctypes_kernels[fnptr] = _KERNEL_TYPE(fnptr)
    bufs, ints, floats = [], [], []
    for i, a in enumerate(args, 1):
        if isinstance(a, np.ndarray):
            bufs.append(a.ctypes.data)
        elif isinstance(a, (int, np.integer, np.bool_)):
            if not -2**63 <= a < 2**63:        # ctypes would wrap it silently
                raise OverflowError(f"launch: argument {i} ({a}) does not fit in int64")
            ints.append(int(a))
        elif isinstance(a, (float, np.floating)):
            floats.append(float(a))
        elif isinstance(a, (bytearray, memoryview)):
            bufs.append(ctypes.addressof(ctypes.c_char.from_buffer(a)))
        else:
            raise TypeError(f"launch: argument {i} must be an array, int or float, not {type(a).__name__}")
    apply_num_threads()
    fn((ctypes.c_void_p * len(bufs))(*bufs), (ctypes.c_int64 * len(ints))(*ints),
       (ctypes.c_double * len(floats))(*floats))


def launcher():
    """launch(fnptr, *args): the extension when it builds here, else ctypes_launch (with one warning;
    config.strict raises instead). CompilerUnavailable propagates: without a compiler there are no
    kernels to launch."""
    global _launcher, _extension
    if _launcher is not None:
        return _launcher
    with _state_lock:
        if _launcher is None:
            try:
                _extension = build_extension()
                _launcher = _extension.launch
            except codecache.CCompileError as e:
                if config.strict:
                    raise
                warnings.warn(f"ember._inductor: the launcher extension did not build ({e.source_path}); "
                              f"kernels are launched through ctypes", RuntimeWarning, stacklevel=2)
                _launcher = ctypes_launch
            if config.align_allocations:
                _align_allocations()
    return _launcher


def _align_allocations() -> None:
    """From the first CPU kernel on, NumPy allocates 64-byte aligned blocks (aligned_alloc.py says
    why); where the allocator does not build, one warning (config.strict raises) and arrays stay as
    NumPy aligns them."""
    from . import aligned_alloc
    try:
        aligned_alloc.install()
    except codecache.CCompileError as e:
        if config.strict:
            raise
        warnings.warn(f"ember._inductor: the aligned allocator did not build ({e.source_path}); "
                      f"arrays keep NumPy's 16-byte alignment", RuntimeWarning, stacklevel=3)


def set_num_threads(n) -> None:
    """OpenMP threads used by compiled kernels (torch.set_num_threads)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    if n >= 2**31:
        raise ValueError(f"set_num_threads: {n} threads overflows the C int OpenMP takes")
    config.threads = n
    if _extension is not None:
        _extension.set_num_threads(n)
    apply_num_threads()           # this thread at once, for kernels called through ctypes directly


def get_num_threads() -> int:
    return config.threads
