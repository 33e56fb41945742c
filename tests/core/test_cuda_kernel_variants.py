"""The CUDA kernels are the CPU kernel files run on CuPy (ember/_cuda/kernels.py). What can be
checked without a GPU: every operator row with a CPU kernel gets a CUDA kernel made from the same
source, the CPU modules are untouched by it, and ``import ember`` loads none of it. (The kernels'
values are tested on a GPU: tests/cuda and scripts/device_cuda.sh.)"""
import subprocess
import sys

import pytest

import ember

cupy = pytest.importorskip("cupy", reason="the CUDA variants are compiled against CuPy's namespace")


def test_every_row_with_a_cpu_kernel_has_a_cuda_kernel_from_the_same_source():
    """... or, for the few names `overrides.OVERRIDES` replaces with an `Around`, a CUDA kernel
    (ember/_cuda) made from the variant's own CPU kernel, which it keeps for the other cases."""
    from ember._cuda import array_module, kernels, overrides
    from ember.ops.registry import ENTRIES
    around = {(m, n) for m, names in overrides.OVERRIDES.items() for n, v in names.items()
              if isinstance(v, overrides.Around)}
    rows = [e for e in ENTRIES.values() if e.cpu is not None and e.cuda is None]
    assert len(rows) > 400
    made_around = set()
    for row in rows:
        kernel = kernels.kernel_for(row)
        assert kernel is not None and kernel is not row.cpu, row.schema
        code = getattr(kernel, "__code__", None)
        if code is not None and hasattr(row.cpu, "__code__"):
            if (row.cpu.__module__, row.cpu.__name__) in around:
                assert "/ember/_cuda/" in code.co_filename.replace("\\", "/"), row.schema
                math_path = kernel.__closure__[0].cell_contents
                assert math_path.__code__.co_filename == row.cpu.__code__.co_filename
                made_around.add((row.cpu.__module__, row.cpu.__name__))
            else:
                assert code.co_filename == row.cpu.__code__.co_filename    # the same file, compiled again
        if hasattr(kernel, "__globals__") and "np" in kernel.__globals__:
            assert kernel.__globals__["np"] is array_module.xp
    assert made_around == around


def test_variants_leave_the_cpu_modules_alone():
    import numpy
    from ember._cuda import kernels
    from ember.ops.cpu import pointwise, random
    from ember._core import tensor
    v = kernels.variant("ember.ops.cpu.pointwise")
    assert v is not pointwise and pointwise.np is numpy and pointwise.wrap is tensor.wrap
    assert v.wrap is kernels.wrap_cuda
    r = kernels.variant("ember.ops.cpu.random")
    from ember._cuda import random as device_random
    assert r.rng is device_random.rng and random.rng is not device_random.rng
    x = ember.arange(6.0).reshape(2, 3)
    assert (x.exp().sum() - float(sum(__import__("math").exp(i) for i in range(6)))).abs() < 1e-3


def test_xp_answers_host_values_on_the_host():
    import numpy
    from ember._cuda.array_module import xp
    assert xp.prod((2, 3, 4)) == 24 and isinstance(xp.sqrt(4.0), numpy.floating)
    assert xp.ndarray is cupy.ndarray and xp.float32 is numpy.float32


def test_import_ember_imports_no_cupy():
    code = "import sys, ember; print(sorted(m for m in sys.modules if m.startswith(('cupy', 'ember._cuda'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
