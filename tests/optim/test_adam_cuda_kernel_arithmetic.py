"""Adam's foreach CUDA kernel does the per-parameter kernel's arithmetic (same operations, FMA
contractions and order, for float32 and float64), checked on the PTX NVRTC makes of both
(scripts/adam_kernels_ptx.py): no GPU needed, only NVRTC (skipped without it)."""
import importlib.util
import os

import pytest

pytest.importorskip("cupy", reason="CuPy is not installed")
_SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "adam_kernels_ptx.py")
_spec = importlib.util.spec_from_file_location("adam_kernels_ptx", _SCRIPT)
ptx_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ptx_check)


@pytest.fixture(scope="module")
def nvrtc():
    lib = ptx_check.nvrtc()
    if lib is None:
        pytest.skip("no NVRTC library (set NVRTC_LIB)")
    return lib


def test_foreach_kernel_computes_the_per_parameter_kernels_bits(nvrtc):
    for tag, (only_foreach, only_single) in ptx_check.differences(nvrtc).items():
        assert not only_foreach and not only_single, (tag, only_foreach, only_single)


def test_the_check_sees_a_differently_contracted_negation(nvrtc):
    """The check fails where it should: `maximize ? -g : g` (the first foreach kernel's form)
    lets the compiler contract the update differently for -g."""
    from ember._cuda import optim
    old = optim._FOREACH_SOURCE.replace("flip_sign(_raw_grad[i], sign_mask)",
                                        "(sign_mask ? -_raw_grad[i] : _raw_grad[i])")
    assert old != optim._FOREACH_SOURCE
    foreach = ptx_check.ptx(nvrtc, old)
    single = ptx_check.ptx(nvrtc, optim._DIRECT_SOURCE)
    assert ptx_check.expression_trees(foreach, "ember_adam_foreach_f32") - \
        ptx_check.expression_trees(single, "ember_adam_step_f32")
