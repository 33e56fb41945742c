"""add_/sub_ with alpha (the optimizers' `p.add_(g, alpha=-lr)`) bit for bit against PyTorch: ATen
computes x + alpha * y as one fused multiply-add with alpha rounded to the tensor's dtype; ember's
native `axpy` kernel does the same in one pass. Every layout the kernel does not take (strided,
broadcast, aliased, other dtypes) keeps the NumPy path and PyTorch's values to rounding."""
import numpy as np
import pytest
import torch

import ember
from ember.ops import native

LAYOUTS = ["contiguous", "transposed_other", "broadcast_other", "aliased", "self_strided"]


def _operands(lib, layout, dtype, rng):
    x = rng.standard_normal((64, 33)).astype(dtype)
    y = rng.standard_normal((64, 33)).astype(dtype)
    tx = lib.from_numpy(x.copy())
    if layout == "contiguous":
        return tx, lib.from_numpy(y.copy())
    if layout == "transposed_other":
        return tx, lib.from_numpy(np.ascontiguousarray(y.T).copy()).t()
    if layout == "broadcast_other":
        return tx, lib.from_numpy(y[0].copy())
    if layout == "aliased":
        return tx, tx
    return lib.from_numpy(rng.standard_normal((64, 66)).astype(dtype))[:, ::2], lib.from_numpy(y.copy())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["add_", "sub_"])
@pytest.mark.parametrize("alpha", [-0.01, 0.9, 3, -1e-3])
def test_alpha_update_bit_equal_to_torch(op, dtype, layout, alpha):
    results = []
    for lib in (torch, ember):
        x, y = _operands(lib, layout, dtype, np.random.default_rng(0))
        getattr(x, op)(y, alpha=alpha)
        results.append(x.numpy())
    if layout == "contiguous" and native.kernel("axpy", np.dtype(dtype)) is not None:
        np.testing.assert_array_equal(results[1], results[0])       # the kernel: bit for bit
    else:   # NumPy's multiply-then-add: one more rounding (cancellation near 0 needs the atol)
        tol = 1e-6 if dtype == np.float32 else 1e-14
        np.testing.assert_allclose(results[1], results[0], rtol=tol, atol=tol)


def test_the_kernel_runs_for_a_contiguous_float_update(native_calls):
    if native.kernel("axpy", np.dtype(np.float32)) is None:
        pytest.skip("no C compiler: the NumPy path serves")
    native_calls.clear()
    p = ember.ones(10)
    p.add_(ember.full((10,), 2.0), alpha=-0.5)
    assert native_calls == ["axpy"] and p.tolist() == [0.0] * 10


def test_complex_alpha_on_a_float_tensor_errors_as_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            lib.ones(3).add_(lib.ones(3), alpha=1j)


def test_integer_tensors_keep_their_path():
    for lib in (torch, ember):
        x = lib.arange(6)
        x.add_(lib.arange(6), alpha=3)
        assert x.tolist() == [0, 4, 8, 12, 16, 20]
