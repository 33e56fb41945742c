"""Native eager kernels compile one per library (native_kernels.kernel_source): each kernel's
translation unit holds its own body and no other kernel's, compiles on its own for float32 and
float64 and exports its symbol; a program's first use of one kernel compiles that kernel only
(counted by codecache's compile counter)."""
import re

import numpy as np
import pytest

from ember._inductor import codecache, native_kernels
from ember._inductor.launch import launcher
from kernel_cache_env import private_cache  # noqa: F401

DTYPES = [np.dtype(np.float32), np.dtype(np.float64)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_every_kernel_compiles_alone_with_only_its_body(dtype):
    names = native_kernels.kernel_names(dtype)
    assert len(names) == len(set(names)) and {"softmax_fwd", "axpy", "sgd_momentum_step"} <= set(names)
    suffix = native_kernels.DTYPES[dtype][1]
    for name in names:
        text = native_kernels.kernel_source(name, dtype)
        assert re.findall(r"^K\((\w+)\)", text, re.M) == [name]
        lib = codecache.load_c(text, name=f"{name}_{suffix}")       # the shared on-disk cache: reused later
        assert codecache.kernel_pointer(lib, f"{name}_{suffix}")


def test_an_unknown_kernel_name_is_a_value_error():
    with pytest.raises(ValueError, match="no_such_kernel"):
        native_kernels.kernel_source("no_such_kernel", DTYPES[0])


def test_first_use_compiles_that_kernel_only(private_cache, monkeypatch):
    monkeypatch.setattr(native_kernels, "_kernels", {})
    monkeypatch.setattr(native_kernels, "_libs", {})
    launcher()                          # the launcher extension: built once per process, not counted
    codecache.reset_counters()
    fn = native_kernels.kernel("axpy", DTYPES[0])
    assert codecache.counters["compile"] == 1
    x, y = np.ones(5, np.float32), np.arange(5, dtype=np.float32)
    fn(x, y, x.size, 2.0)
    np.testing.assert_array_equal(x, 1 + 2 * np.arange(5, dtype=np.float32))
    assert native_kernels.kernel("axpy", DTYPES[0]) is fn and codecache.counters["compile"] == 1
    native_kernels.kernel("relu_bwd", DTYPES[0])
    assert codecache.counters["compile"] == 2
