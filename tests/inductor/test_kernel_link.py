"""The lean link of kernel libraries (codecache.link_flags, with GCC: -nostdlib, then only libgomp,
libm, libmvec and libgcc): what a kernel may call still resolves when the library is loaded, checked by
running it against NumPy: an OpenMP parallel loop on several threads (libgomp), vectorised math
(libmvec), a 128-bit division (libgcc's __divti3), a loop GCC turns into memset/memcpy (libc, from
the loading process); and a symbol that exists nowhere is still a compile error naming the kernel,
never a library that crashes when called."""
import numpy as np
import pytest

from ember._inductor import codecache
from ember._inductor.launch import launcher
from kernel_cache_env import private_cache  # noqa: F401

SOURCE = r"""
#include <math.h>
#include <stdint.h>
#include <omp.h>
%(tag)s
void parallel_tanh(void *const *bufs, const int64_t *ints, const double *floats) {
    float *out = (float *)bufs[0]; const float *x = (const float *)bufs[1]; int32_t *threads = bufs[2];
    #pragma omp parallel for num_threads(2)
    for (int64_t i = 0; i < ints[0]; i++) {
        out[i] = tanhf(x[i] * 2.0f + 1.0f);
        if (i == 0) threads[0] = omp_get_num_threads();
    }
}
void wide_divide(void *const *bufs, const int64_t *ints, const double *floats) {
    int64_t *out = bufs[0]; const int64_t *a = bufs[1]; const int64_t *b = bufs[2];
    for (int64_t i = 0; i < ints[0]; i++) {
        __int128 wide = (__int128)a[i] * (__int128)1000000007;    /* a 128-bit quotient: __divti3 */
        out[i] = (int64_t)(wide / (__int128)b[i] - (__int128)a[i] * (__int128)(1000000007 / b[i]));
    }
}
void zero_then_copy(void *const *bufs, const int64_t *ints, const double *floats) {
    double *out = bufs[0]; const double *x = bufs[1]; double *scratch = bufs[2];
    for (int64_t i = 0; i < ints[0]; i++) scratch[i] = 0.0;          /* GCC emits memset */
    for (int64_t i = 0; i < ints[0]; i++) out[i] = x[i];              /* and memcpy */
    for (int64_t i = 0; i < ints[0]; i++) out[i] += scratch[i];
}
"""


def _library(tag):
    return codecache.load_c(SOURCE % {"tag": f"/* {tag} */"})


def test_link_flags_name_every_library_a_kernel_calls():
    flags = codecache.link_flags()
    assert flags[0] == "-nostdlib" and "-lgcc" in flags and "-lm" in flags
    assert "-lgomp" in flags            # config.cflags has -fopenmp


def test_another_compiler_links_as_it_does_by_default(monkeypatch):
    from ember._inductor import config, machine
    facts = dict(machine.probe(), cc_version="clang version 17.0.6\nTarget: x86_64-pc-linux-gnu")
    monkeypatch.setattr(machine, "probe", lambda: facts)
    flags = codecache.link_flags()
    assert "-nostdlib" not in flags and flags[:len(config.ldflags)] == tuple(config.ldflags)


def test_openmp_math_libgcc_and_libc_calls_resolve_and_compute(private_cache):
    lib = _library("resolve")
    call = launcher()
    x = np.linspace(-2, 2, 10_001, dtype=np.float32)
    out, threads = np.empty_like(x), np.zeros(1, np.int32)
    call(codecache.kernel_pointer(lib, "parallel_tanh"), out, x, threads, x.size)
    np.testing.assert_allclose(out, np.tanh(x * 2 + 1), atol=2e-6)
    assert threads[0] == 2
    a = np.array([123456789012, -98765432109, 7, 0], np.int64)
    b = np.array([97, 13, 3, 5], np.int64)
    quotient = np.empty_like(a)
    call(codecache.kernel_pointer(lib, "wide_divide"), quotient, a, b, a.size)
    want = np.array([_trunc_div(int(ai) * 1000000007, int(bi)) - int(ai) * (1000000007 // int(bi))
                     for ai, bi in zip(a, b)], np.int64)
    np.testing.assert_array_equal(quotient, want)
    src = np.arange(1000, dtype=np.float64)
    dst, scratch = np.full_like(src, np.nan), np.full_like(src, 5.0)
    call(codecache.kernel_pointer(lib, "zero_then_copy"), dst, src, scratch, src.size)
    np.testing.assert_array_equal(dst, src)
    assert not scratch.any()


def _trunc_div(a: int, b: int) -> int:
    """C's integer division (toward zero) in Python integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def test_a_symbol_defined_nowhere_is_a_compile_error_naming_the_kernel(private_cache):
    source = ("#include <stdint.h>\nextern double ember_no_such_symbol(double);\n"
              "void calls_nothing(void *const *bufs, const int64_t *ints, const double *floats) {\n"
              "    ((double *)bufs[0])[0] = ember_no_such_symbol(floats[0]);\n}\n")
    with pytest.raises(codecache.CCompileError) as err:
        codecache.load_c(source)
    assert "calls_nothing" in str(err.value)
