"""erf of 32-bit-or-narrower floats (special_math._erf_single: one erfc fit and the small-|x|
rational, both whole-array, in float64) stays within 1 float32 ulp of PyTorch's erf and of the
correctly rounded value, with its special values exact and no floating-point warnings."""
import math
import warnings

import numpy as np
import pytest
import torch

import ember


def _ulps(got, want):
    want32 = want.astype(np.float32)
    return np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want32)).astype(np.float64)


def test_dense_range_within_one_ulp_of_torch_and_of_libm():
    x = np.linspace(-7, 7, 400_001).astype(np.float32)
    got = ember.erf(ember.from_numpy(x)).numpy()
    assert got.dtype == np.float32
    assert _ulps(got, torch.erf(torch.from_numpy(x)).numpy().astype(np.float64)).max() <= 1
    exact = np.array([math.erf(float(v)) for v in x[::7]])
    assert _ulps(got[::7], exact).max() <= 1


@pytest.mark.parametrize("value", [0.0, -0.0, np.inf, -np.inf, np.nan, 3e38, -3e38, 1e-30, -1e-45,
                                   0.84375, -0.84375, float(np.nextafter(np.float32(0.84375), 0)), 6.0, 10.0])
def test_special_values_match_torch(value):
    x = np.array([value], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no overflow/invalid warnings from the unused branch
        got = ember.erf(ember.from_numpy(x)).numpy()
    want = torch.erf(torch.from_numpy(x)).numpy()
    assert np.signbit(got) == np.signbit(want)
    if not np.isfinite(value) or value == 0 or abs(value) >= 6:
        np.testing.assert_array_equal(got, want)            # +-0, +-1, nan exactly
    else:   # within 1 ulp of torch (Sleef) and of the correctly rounded value (ember's 1e-30 is, torch's is not)
        assert _ulps(got, want.astype(np.float64)).max() <= 1
        assert _ulps(got, np.array([math.erf(float(x[0]))])).max() <= 1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_narrow_floats_equal_the_float64_path(dtype):
    # the half types round the same float64 value either way: the fast path changes nothing there
    x = ember.linspace(-5, 5, 20_001).to(getattr(ember, dtype))
    got = ember.erf(x).float().numpy()
    want = torch.erf(torch.linspace(-5, 5, 20_001).to(getattr(torch, dtype)).float()).to(
        getattr(torch, dtype)).float().numpy()
    assert np.abs(got - want).max() <= np.abs(want).max() * 2.0 ** -7


def test_float64_keeps_the_fdlibm_path():
    x = np.linspace(-7, 7, 100_001)
    got = ember.erf(ember.from_numpy(x)).numpy()
    exact = np.array([math.erf(v) for v in x])
    assert np.abs(got - exact).max() <= 2 * np.spacing(1.0)
