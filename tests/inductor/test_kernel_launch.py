"""Launching kernels (the launcher extension and its ctypes fallback, same convention): pointers of
arrays of every dtype, strided and negative-stride views, scalars of each kind; values checked with
NumPy; bad arguments raise; ember.set_num_threads reaches the kernels' OpenMP runtime."""
import threading

import numpy as np
import pytest
import torch

import ember
from ember._inductor import codecache, config, launch
from kernel_cache_env import private_cache  # noqa: F401

# out_f64[i] = a_f32[i] + b_i32[i] + c_u8[i] + d_bool[i] + e_i64[i] + f_f64[i] + ints[1]*floats[0] + floats[1]
# out_i64[i] = e_i64[i] * ints[2]
MIXED = r"""
#include <stdint.h>
#include <stdbool.h>
void mixed(void *const *bufs, const int64_t *ints, const double *floats) {
    double *out = bufs[0]; int64_t *out_i = bufs[1];
    const float *a = bufs[2]; const int32_t *b = bufs[3]; const uint8_t *c = bufs[4];
    const bool *d = bufs[5]; const int64_t *e = bufs[6]; const double *f = bufs[7];
    for (int64_t i = 0; i < ints[0]; i++) {
        out[i] = (double)a[i] + b[i] + c[i] + d[i] + (double)e[i] + f[i] + (double)ints[1] * floats[0] + floats[1];
        out_i[i] = e[i] * ints[2];
    }
}
"""

# out[i] = x[i * step] : the kernel indexes with its own element stride (may be negative)
STRIDED = r"""
#include <stdint.h>
void gather_strided(void *const *bufs, const int64_t *ints, const double *floats) {
    float *out = bufs[0]; const float *x = bufs[1];
    for (int64_t i = 0; i < ints[0]; i++) out[i] = x[i * ints[1]];
}
"""

THREADS = r"""
#include <stdint.h>
#include <omp.h>
void report_threads(void *const *bufs, const int64_t *ints, const double *floats) {
    int64_t *out = bufs[0];
    out[0] = omp_get_max_threads();
    #pragma omp parallel
    {
        #pragma omp single
        out[1] = omp_get_num_threads();
    }
}
"""


@pytest.fixture(params=["extension", "ctypes"])
def launch_fn(request, private_cache):
    return launch.launcher() if request.param == "extension" else launch.ctypes_launch


def test_the_extension_is_the_launcher_here(private_cache):
    assert launch.launcher() is not launch.ctypes_launch     # this machine has Python.h and a compiler


def kernel(source, name):
    return codecache.kernel_pointer(codecache.load_c(source), name)


@pytest.mark.parametrize("ints_as", [int, np.int64, np.int32])
@pytest.mark.parametrize("floats_as", [float, np.float64, np.float32])
def test_arrays_of_several_dtypes_and_scalars(launch_fn, ints_as, floats_as):
    rng = np.random.default_rng(0)
    n = 17
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.integers(-100, 100, n).astype(np.int32)
    c = rng.integers(0, 255, n).astype(np.uint8)
    d = rng.integers(0, 2, n).astype(np.bool_)
    e = rng.integers(-2**40, 2**40, n).astype(np.int64)
    f = rng.standard_normal(n)
    out, out_i = np.zeros(n), np.zeros(n, np.int64)
    launch_fn(kernel(MIXED, "mixed"), out, out_i, a, b, c, d, e, f,
              ints_as(n), ints_as(3), floats_as(0.25), floats_as(-1.5), True)
    k, s, t = float(ints_as(3)), float(floats_as(0.25)), float(floats_as(-1.5))
    want = a.astype(np.float64) + b + c + d + e.astype(np.float64) + f + k * s + t
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(out_i, e * 1)     # ints[2] is True -> 1


@pytest.mark.parametrize("step", [1, 2, 3, -1, -2])
def test_views_pass_the_address_of_their_first_element(launch_fn, step):
    base = np.arange(40, dtype=np.float32)
    view = base[5::step] if step > 0 else base[30::step]
    n = view.shape[0]
    out = np.zeros(n, np.float32)
    launch_fn(kernel(STRIDED, "gather_strided"), out, view, n, step)
    np.testing.assert_array_equal(out, view)


def test_zero_d_and_readonly_and_subclass_arrays(launch_fn):
    x = np.full((), 7.0, np.float32)
    out = np.zeros(1, np.float32)
    launch_fn(kernel(STRIDED, "gather_strided"), out, x, 1, 1)
    assert out[0] == 7.0
    ro = np.arange(3, dtype=np.float32)
    ro.flags.writeable = False
    out = np.zeros(3, np.float32)
    launch_fn(kernel(STRIDED, "gather_strided"), out, ro, 3, 1)
    np.testing.assert_array_equal(out, ro)
    sub = np.arange(3, dtype=np.float32).view(type("Sub", (np.ndarray,), {}))
    out = np.zeros(3, np.float32)
    launch_fn(kernel(STRIDED, "gather_strided"), out, sub, 3, 1)
    np.testing.assert_array_equal(out, [0, 1, 2])


def test_buffer_protocol_objects(private_cache):
    out = bytearray(12)
    src = np.array([1.5, 2.5, 3.5], np.float32)
    launch.launcher()(kernel(STRIDED, "gather_strided"), memoryview(out), src, 3, 1)
    np.testing.assert_array_equal(np.frombuffer(out, np.float32), src)


@pytest.mark.parametrize("bad, message", [("text", "argument 2 must be an array, int or float, not str"),
                                          (None, "argument 2 must be an array, int or float, not NoneType"),
                                          (1 + 2j, "argument 2 must be an array, int or float, not complex")])
def test_bad_arguments_raise_type_error(launch_fn, bad, message):
    out = np.zeros(1, np.float32)
    with pytest.raises(TypeError, match=message):
        launch_fn(kernel(STRIDED, "gather_strided"), out, bad, 1, 1)


def test_null_pointer_and_too_many_arguments(launch_fn):
    with pytest.raises(ValueError, match="NULL"):
        launch_fn(0, np.zeros(1))
    if launch_fn is not launch.ctypes_launch:
        with pytest.raises(TypeError, match="at most"):
            launch_fn(kernel(STRIDED, "gather_strided"), *([1] * (launch.MAX_ARGS + 1)))


def test_int_overflow_raises(launch_fn):
    with pytest.raises(OverflowError):
        launch_fn(kernel(STRIDED, "gather_strided"), np.zeros(1, np.float32), np.zeros(1, np.float32), 2**70, 1)


@pytest.fixture
def restore_threads():
    before = config.threads
    yield
    ember.set_num_threads(before)


def threads_seen(launch_fn):
    out = np.zeros(2, np.int64)
    launch_fn(kernel(THREADS, "report_threads"), out)
    return out.tolist()


def test_set_num_threads_reaches_the_kernels(launch_fn, restore_threads):
    for n in (2, 1, 3):
        ember.set_num_threads(n)
        assert ember.get_num_threads() == n
        assert threads_seen(launch_fn) == [n, n]


def test_set_num_threads_applies_in_other_python_threads(launch_fn, restore_threads):
    ember.set_num_threads(2)
    seen = []
    worker = threading.Thread(target=lambda: seen.append(threads_seen(launch_fn)))
    worker.start()
    worker.join()
    assert seen == [[2, 2]]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, 2**40])
def test_set_num_threads_rejects_what_torch_rejects(restore_threads, bad):
    with pytest.raises(Exception) as theirs:
        torch.set_num_threads(bad)
    with pytest.raises(type(theirs.value)):
        ember.set_num_threads(bad)
    assert ember.get_num_threads() == config.threads


def test_set_num_threads_reaches_kernels_called_through_ctypes_directly(private_cache, restore_threads):
    lib = codecache.load_c(THREADS)
    for n in (3, 1):
        ember.set_num_threads(n)
        out = np.zeros(2, np.int64)
        import ctypes
        lib.report_threads((ctypes.c_void_p * 1)(out.ctypes.data), None, None)
        assert out.tolist() == [n, n]


@pytest.mark.parametrize("strict", [False, True])
def test_launcher_falls_back_to_ctypes_when_the_extension_does_not_build(private_cache, monkeypatch, strict):
    import sysconfig
    monkeypatch.setattr(launch, "_launcher", None)
    monkeypatch.setattr(launch, "_extension", None)
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"include": "/nonexistent/include"})
    monkeypatch.setattr(config, "strict", strict)
    if strict:
        with pytest.raises(codecache.CCompileError, match="ember_launcher"):
            launch.launcher()
        return
    with pytest.warns(RuntimeWarning, match="launched through ctypes"):
        fn = launch.launcher()
    assert fn is launch.ctypes_launch
    out = np.zeros(3, np.float32)
    fn(kernel(STRIDED, "gather_strided"), out, np.arange(3, dtype=np.float32), 3, 1)
    np.testing.assert_array_equal(out, [0, 1, 2])
