"""The machine probe: ISA facts agree with /proc/cpuinfo, the probe runs once per machine (on disk),
a damaged probe file is re-probed, and the libmvec prelude gives vectorised math that agrees with
NumPy."""
import ctypes
import os

import numpy as np
import pytest

from ember._inductor import codecache, config, machine
from kernel_cache_env import private_cache, run_child  # noqa: F401


def cpuinfo_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


@pytest.mark.skipif(not os.path.exists("/proc/cpuinfo"), reason="needs /proc/cpuinfo")
def test_isa_agrees_with_cpuinfo(private_cache):
    flags = cpuinfo_flags()
    info = codecache.isa()
    for name in ("avx", "avx2", "fma", "avx512f", "avx512bw"):
        assert info[name] == (name in flags), name
    assert info["vector_bits"] == (512 if "avx512f" in flags else 256 if "avx" in flags else 128)


def machine_files(cache):
    return [os.path.join(cache, n) for n in os.listdir(cache) if n.startswith("machine-") and n.endswith(".json")]


def test_probe_is_stored_and_read_by_a_new_process(private_cache):
    (path,) = machine_files(private_cache)
    assert os.stat(path).st_mode & 0o077 == 0
    code = """
import json
from ember._inductor import machine
facts = machine.probe()
print(json.dumps({"probe": machine.counters["probe"], "version": facts["cc_version"]}))
"""
    got = run_child(code, private_cache)
    assert got == {"probe": 0, "version": machine.probe()["cc_version"]}


def test_damaged_probe_file_is_probed_again(private_cache):
    (path,) = machine_files(private_cache)
    with open(path, "r+b") as f:
        f.seek(70)
        f.write(b"#")
    code = """
import json
from ember._inductor import machine
facts = machine.probe()
print(json.dumps({"probe": machine.counters["probe"], "version": facts["cc_version"]}))
"""
    got = run_child(code, private_cache)
    assert got == {"probe": 1, "version": machine.probe()["cc_version"]}


def test_compiler_is_part_of_the_probe_key(private_cache, tmp_path, monkeypatch):
    # another compiler binary (a copy at another path) is probed on its own and gets other kernel keys
    facts = machine.probe()
    src = "void f(void) {}\n"
    key = codecache.cache_key(src)
    copy = tmp_path / "copy-cc"
    with open(facts["cc_path"], "rb") as f:
        copy.write_bytes(f.read())
    os.chmod(copy, 0o755)
    monkeypatch.setattr(config, "cc", str(copy))
    assert codecache.cache_key(src) != key
    assert machine.probe()["cc_path"] == str(copy)


VECTOR_MATH = """
#include <math.h>
#include <stdint.h>
%s
void vmath(void *const *bufs, const int64_t *ints, const double *floats) {
    float *out = bufs[0]; const float *x = bufs[1];
    int64_t n = ints[0];
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) {
        out[0 * n + i] = expf(x[i]);
        out[1 * n + i] = logf(x[i] + 4.0f);
        out[2 * n + i] = tanhf(x[i]);
        out[3 * n + i] = sinf(x[i]);
        out[4 * n + i] = cosf(x[i]);
        out[5 * n + i] = powf(x[i] + 4.0f, 1.5f);
    }
}
"""


def test_vector_math_prelude_calls_libmvec_and_agrees_with_numpy(private_cache):
    if not machine.isa()["libmvec"]:     # asked here, not at collection: only the private cache is probed
        pytest.skip("glibc libmvec is not usable here")
    prelude = codecache.vector_math_prelude()
    assert "#pragma omp declare simd notinbranch\nfloat expf(float);" in prelude
    assert "float powf(float, float);" in prelude and "double exp(double);" in prelude
    lib = codecache.load_c(VECTOR_MATH % prelude)
    with open(lib._name, "rb") as f:
        assert b"_ZGV" in f.read()            # the vector variants are what the kernel calls
    n = 1003                                  # a tail after the vector loop
    x = np.linspace(-3.5, 3.5, n, dtype=np.float32)
    out = np.zeros(6 * n, np.float32)
    bufs = (ctypes.c_void_p * 2)(out.ctypes.data, x.ctypes.data)
    lib.vmath(bufs, (ctypes.c_int64 * 1)(n), (ctypes.c_double * 1)())
    xd = x.astype(np.float64)
    want = [np.exp(xd), np.log(xd + 4), np.tanh(xd), np.sin(xd), np.cos(xd), (xd + 4) ** 1.5]
    for got, ref in zip(out.reshape(6, n), want):
        # libmvec promises <= 4 ulp; compare in float32 ulps of the reference
        ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
        assert np.max(np.abs(got - ref) / ulp) <= 4


def test_prelude_is_empty_when_libmvec_is_off(private_cache, monkeypatch):
    monkeypatch.setattr(config, "use_libmvec", False)
    assert codecache.vector_math_prelude() == ""
    assert "-lmvec" not in codecache.link_flags()
    assert codecache.isa()["libmvec"] is False


@pytest.mark.parametrize("edit", ["other-compiler", "missing-field", "bad-function-name"])
def test_probe_file_naming_another_compiler_is_not_trusted(private_cache, edit):
    # even with a matching digest (written by this user), the file cannot choose what gets executed
    from ember._inductor import diskstore
    (path,) = machine_files(private_cache)
    facts = diskstore.read_json(path)
    if edit == "other-compiler":
        facts["cc_path"] = "/bin/sh"
    elif edit == "missing-field":
        del facts["cc_version"]
    else:
        facts["libmvec_functions"] = ["expf(float); system"]
    diskstore.write_json(path, facts)
    code = """
import json
from ember._inductor import machine
facts = machine.probe()
print(json.dumps({"probe": machine.counters["probe"], "cc_path": facts["cc_path"],
                  "prelude_ok": "system" not in machine.vector_math_prelude()}))
"""
    got = run_child(code, private_cache)
    assert got == {"probe": 1, "cc_path": machine.probe()["cc_path"], "prelude_ok": True}
