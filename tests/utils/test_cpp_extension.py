"""ember.utils.cpp_extension: C++ built on the fly against ember/extension.h, checked against
eager ember and PyTorch; the kernel cache shared with the fuser (a second process loads without
compiling); an extension function as an ember.library operator under autograd and ember.compile."""
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import ember
from ember._inductor import codecache, config

from cpp_ext_sources import API, API_FUNCTIONS, RAW_LOOP_FILE, SEED_001

pytest.importorskip("pybind11", reason="C++ extensions need pybind11 (the `cpp` extra)")
pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "c++")) is None,
                                reason="no C++ compiler ($CXX or c++) on this machine")


@pytest.fixture(scope="module")
def cpp_extension():
    from ember.utils import cpp_extension
    return cpp_extension


@pytest.fixture(scope="module")
def api(cpp_extension, tmp_path_factory):
    build = tmp_path_factory.mktemp("cpp_build")
    module = cpp_extension.load_inline(name="ember_test_api", cpp_sources=[SEED_001, API],
                                       functions=API_FUNCTIONS, build_directory=str(build))
    assert (build / "main.cpp").read_text().startswith(SEED_001)
    return module


def pair(*shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(shape).astype(dtype) for _ in range(2)]
    return [ember.from_numpy(a.copy()) for a in arrays], [torch.from_numpy(a.copy()) for a in arrays]


def test_seed_001_sin_add_is_x_sin_plus_y_sin(api):
    (x, y), (tx, ty) = pair(3, 4)
    out = api.sin_add(x, y)
    assert isinstance(out, ember.Tensor) and out.dtype == ember.float32
    np.testing.assert_allclose(out.numpy(), (x.sin() + y.sin()).numpy(), rtol=0, atol=0)
    np.testing.assert_allclose(out.numpy(), (tx.sin() + ty.sin()).numpy(), rtol=1e-6)
    # a non-contiguous view goes in as itself (the handle wraps the ember tensor, no copy)
    np.testing.assert_allclose(api.sin_add(x.t(), y.t()).numpy(), (tx.t().sin() + ty.t().sin()).numpy(), rtol=1e-6)


def test_operators_methods_and_braced_lists_match_torch(api):
    (x, y), (tx, ty) = pair(2, 3, seed=1)
    tz = (2.0 - tx) * ty / 4 + (-tx)
    tz += 1
    tz *= ty
    want = tz.view(-1).clamp(-1, 1).view_as(tx) + (tx > 0) - 3 * tx.abs().sqrt()
    np.testing.assert_allclose(api.arith(x, y).numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    values, indices = api.max_dim(x)
    tv, ti = tx.max(1)
    np.testing.assert_array_equal(values.numpy(), tv.numpy())
    np.testing.assert_array_equal(indices.numpy(), ti.numpy())
    assert api.max_all(x).item() == tx.max().item()
    np.testing.assert_array_equal(api.cat_rows(x, y).numpy(), torch.cat([tx, ty], 0).numpy())
    np.testing.assert_allclose(api.sum_keep(x).numpy(), tx.sum([0], keepdim=True).numpy(), rtol=1e-6)
    assert api.to_double(x).dtype == ember.float64


def test_metadata_accessors_match_torch(api):
    (x, _), (tx, _) = pair(2, 3, 4)
    for e, t in ((x, tx), (x.transpose(0, 2), tx.transpose(0, 2)), (x[:, 1], tx[:, 1])):
        sizes, strides, numel, dim, code, contiguous, last, itemsize = api.describe(e)
        assert (sizes, strides) == (list(t.shape), list(t.stride()))
        assert (numel, dim, contiguous, last, itemsize) == (t.numel(), t.dim(), t.is_contiguous(), t.size(-1),
                                                            t.element_size())
        assert code == 6              # at::kFloat, PyTorch's ScalarType numbering
    for dtype in (ember.float64, ember.int64, ember.int32, ember.bool, ember.uint8):
        assert api.describe(ember.zeros(1, dtype=dtype))[4] == dtype.scalar_type_code


def test_factories_with_options(api):
    zeros2, ones, empty, full, izeros = api.factories(3)
    assert (zeros2.shape, zeros2.dtype, zeros2.abs().sum().item()) == ((3, 2), ember.float32, 0)
    assert ones.dtype == ember.float64 and ones.tolist() == [1.0, 1.0, 1.0]
    assert empty.shape == (0, 3) and empty.dtype == ember.int64
    assert full.tolist() == [3.5, 3.5]
    assert izeros.dtype == ember.int32


def test_dtypes_cross_as_scalar_types_and_tensors_print_as_in_python(api):
    for dtype in (ember.float32, ember.float64, ember.int64, ember.int32, ember.bool, ember.uint8):
        out = api.zeros_of(2, dtype)
        assert out.dtype == dtype and out.tolist() == [0, 0]
    with pytest.raises(TypeError, match="incompatible function arguments"):
        api.zeros_of(2, "float32")
    x = ember.tensor([1.5, -2.0])
    assert api.printed(x) == f"{x} Float"


def test_data_ptr_reads_the_tensors_memory(api):
    x = ember.tensor([[1.5, 2.0], [3.0, 4.0]])
    assert api.first_float(x) == 1.5
    assert api.first_float(x[1]) == 3.0              # the address of the view's first element
    assert api.first_float(x.t()[1]) == 2.0
    n = ember.arange(10).reshape(2, 5).t()
    assert api.element_sum(n) == 45


def test_data_ptr_type_and_storage_checks(api):
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        api.first_float(ember.zeros(2, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found Int"):
        api.element_sum(ember.zeros(2, dtype=ember.int32))
    with pytest.raises(RuntimeError, match="doesn't have storage"):
        api.first_float(ember.empty(3, device="meta"))


def test_torch_check_raises_with_its_message(api):
    with pytest.raises(RuntimeError, match=r"^checked_double: expected a 2-D tensor, got 3-D$"):
        api.checked_double(ember.zeros(1, 2, 3))
    assert api.checked_double(ember.ones(2, 2)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    with pytest.raises(RuntimeError, match=r"Expected x.numel\(\) > 0 to be true, but got false"):
        api.bare_check(ember.zeros(0))
    with pytest.raises(ValueError, match="value_check: empty"):
        api.value_check(ember.zeros(0))


def test_errors_of_ember_ops_cross_cpp_with_their_type_and_message(api):
    x, tx = ember.zeros(2, 3), torch.zeros(2, 3)
    with pytest.raises(RuntimeError) as torch_error:
        tx.view(7, 7)
    with pytest.raises(RuntimeError) as ember_error:
        x.view(7, 7)
    with pytest.raises(type(torch_error.value), match="invalid for input of size 6") as cpp_error:
        api.bad_view(x)
    assert str(cpp_error.value) == str(ember_error.value)


def test_arguments_that_are_not_tensors_are_type_errors(api):
    with pytest.raises(TypeError, match="incompatible function arguments"):
        api.sin_add(np.zeros(2, np.float32), ember.zeros(2))
    with pytest.raises(TypeError):
        api.sin_add(ember.zeros(2))
    assert api.maybe_defined(None) is False and api.maybe_defined(ember.zeros(1)) is True


def test_load_builds_a_file_with_a_raw_loop(cpp_extension, tmp_path):
    path = tmp_path / "axpy.cpp"
    path.write_text(RAW_LOOP_FILE)
    module = cpp_extension.load(name="ember_test_axpy", sources=[str(path)])
    (x, y), (tx, ty) = pair(5, 7, seed=3)
    np.testing.assert_allclose(module.axpy(x, y, 0.5).numpy(), (tx + 0.5 * ty).numpy(), rtol=1e-6)
    np.testing.assert_allclose(module.axpy(x.t(), y.t(), -2.0).numpy(), (tx.t() - 2 * ty.t()).numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="axpy: expected float32 tensors, got Double"):
        module.axpy(x.double(), y.double(), 1.0)
    with pytest.raises(RuntimeError, match="same shape"):
        module.axpy(x, y[:2], 1.0)
    before = dict(codecache.counters)
    again = cpp_extension.load(name="ember_test_axpy", sources=[str(path)])
    assert again is module and codecache.counters["compile"] == before["compile"]


def test_compile_error_quotes_the_compiler_message_and_the_line(cpp_extension):
    source = "at::Tensor broken(at::Tensor x) {\n  return x.sin() + undeclared_name;\n}\n"
    with pytest.raises(RuntimeError) as error:
        cpp_extension.load_inline(name="ember_test_broken", cpp_sources=[source], functions=["broken"])
    message = str(error.value)
    assert "Error building extension 'ember_test_broken'" in message
    assert re.search(r".undeclared_name. was not declared in this scope", message)     # (locale's quotes)
    assert "return x.sin() + undeclared_name;" in message          # the compiler's quote of the line
    kept = message.split("its source is kept at ")[1].split(")")[0]
    assert f"{kept}:2:20: error" in message                       # line 2 of the source as written
    assert os.path.exists(kept) and "undeclared_name" in open(kept).read()


def test_bad_arguments_are_rejected_before_compiling(cpp_extension):
    before = codecache.counters["compile"]
    with pytest.raises(ValueError, match="valid C\\+\\+/Python identifier"):
        cpp_extension.load_inline(name="bad-name", cpp_sources=[SEED_001], functions=["sin_add"])
    with pytest.raises(ValueError, match="functions must name C\\+\\+ functions"):
        cpp_extension.load_inline(name="ok_name", cpp_sources=[SEED_001], functions=["sin_add); system(\"x"])
    with pytest.raises(TypeError, match="cpp_sources must be a string or a list of strings"):
        cpp_extension.load_inline(name="ok_name", cpp_sources=[b"bytes"], functions=["sin_add"])
    with pytest.raises(ValueError, match="not a C\\+\\+ source file"):
        cpp_extension.load(name="ok_name", sources=["kernel.py"])
    with pytest.raises(NotImplementedError, match="cuda_sources"):
        cpp_extension.load_inline(name="ok_name", cpp_sources=[SEED_001], cuda_sources=["__global__ void k() {}"])
    assert codecache.counters["compile"] == before


def test_no_compiler_is_a_clear_runtime_error(cpp_extension, monkeypatch):
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    with pytest.raises(RuntimeError, match="no C\\+\\+ compiler: '/nonexistent/c\\+\\+'"):
        cpp_extension.load_inline(name="ember_test_nocxx", cpp_sources=[SEED_001], functions=["sin_add"])


def test_cache_key_covers_everything_the_build_depends_on(cpp_extension):
    facts = {"path": "/usr/bin/c++", "version": "g++ 12"}
    base = dict(name="m", contents=["src"], paths=[], facts=facts, cflags=["-O2"], ldflags=[],
                headers="h1", abi="cpython-311", pybind11_version="3.1")
    key = cpp_extension.cache_key(**base)
    assert key == cpp_extension.cache_key(**base)
    for change in ({"contents": ["src2"]}, {"name": "m2"}, {"cflags": ["-O3"]}, {"ldflags": ["-lm"]},
                   {"headers": "h2"}, {"abi": "cpython-312"}, {"pybind11_version": "2.13"},
                   {"facts": {"path": "/usr/bin/c++", "version": "g++ 13"}},
                   {"facts": {"path": "/opt/clang++", "version": "g++ 12"}}, {"paths": ["/a.cpp"]}):
        assert cpp_extension.cache_key(**{**base, **change}) != key, change


_SECOND_PROCESS = """
import json, sys, time
import ember
from ember._inductor import codecache
from ember.utils.cpp_extension import load_inline
source = sys.stdin.read()
start = time.perf_counter()
module = load_inline(name="ember_test_api", cpp_sources=json.loads(source), functions=json.loads(sys.argv[1]))
elapsed = time.perf_counter() - start
x, y = ember.ones(3), ember.zeros(3)
print(json.dumps({"counters": codecache.counters, "seconds": elapsed, "value": module.sin_add(x, y).tolist()}))
"""


def test_a_second_process_loads_from_the_cache_without_compiling(api):
    env = dict(os.environ, EMBER_CACHE_DIR=config.cache_dir, PYTHONPATH=os.getcwd())
    proc = subprocess.run([sys.executable, "-c", _SECOND_PROCESS, json.dumps(API_FUNCTIONS)],
                          input=json.dumps([SEED_001, API]), capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["counters"]["compile"] == 0 and report["counters"]["disk_hit"] == 1, report
    np.testing.assert_allclose(report["value"], [np.sin(1.0)] * 3, rtol=1e-6)
    print(f"cpp_extension: second-process load took {report['seconds'] * 1e3:.1f} ms")   # bench/cpp_extension_load.py


def test_a_tampered_library_is_rebuilt_not_loaded(api):
    from ember.utils.cpp_extension import _modules
    key = next(k for k, m in _modules.items() if m is api)
    so_path = os.path.join(config.cache_dir, "kernels", key + ".so")
    assert os.stat(so_path).st_mode & 0o077 == 0               # private, like the fuser's kernels
    with open(so_path, "rb") as f:
        data = bytearray(f.read())
    data[-16:] = b"\xff" * 16
    tampered = so_path + ".tampered"
    with open(tampered, "wb") as f:
        f.write(data)
    os.chmod(tampered, 0o700)
    os.replace(tampered, so_path)      # a new inode: the copy this process has mapped stays intact
    env = dict(os.environ, EMBER_CACHE_DIR=config.cache_dir, PYTHONPATH=os.getcwd())
    proc = subprocess.run([sys.executable, "-c", _SECOND_PROCESS, json.dumps(API_FUNCTIONS)],
                          input=json.dumps([SEED_001, API]), capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["counters"]["rejected"] == 1 and report["counters"]["compile"] == 1, report
    np.testing.assert_allclose(report["value"], [np.sin(1.0)] * 3, rtol=1e-6)
