"""ember.histc / Tensor.histc against PyTorch: bins over [min, max] or the data's range,
elements out of range and NaN not counted, the right edge in the last bin, bin boundaries
computed in the input's dtype (so elements near an edge land in PyTorch's bin), out=, meta,
no gradient, and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

from oracle import check, make

nan, inf = float("nan"), float("inf")


@pytest.mark.parametrize("kwargs", [dict(), dict(bins=4, min=0, max=3), dict(bins=4, min=2, max=2), dict(bins=1),
                                    dict(bins=3, min=0.5, max=4.5), dict(bins=7, min=-1, max=1),
                                    dict(bins=5, min=10, max=20)], ids=repr)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_histc(dtype, kwargs):
    check(lambda lib, x: lib.histc(x, **kwargs), make((6, 5), dtype), dtype=dtype)
    check(lambda lib, x: x.histc(**kwargs), make((30,), dtype), noncontig=True)


@pytest.mark.parametrize("bins", [1, 7, 10, 100, 1000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_near_bin_edges(dtype, bins):
    grid = np.linspace(-1, 1, 2001).astype(dtype)
    check(lambda lib, x: lib.histc(x, bins=bins, min=-1, max=1), grid)
    check(lambda lib, x: lib.histc(x, bins=bins), np.random.default_rng(bins).standard_normal(5000).astype(dtype))
    check(lambda lib, x: lib.histc(x, bins=10, min=0, max=1), np.array([0.1, 0.2, 0.3, 0.7, 1.0, 0.0], dtype))


@pytest.mark.parametrize("data,kwargs", [
    ([1., nan, 2.], dict(bins=2, min=0, max=3)), ([1., inf, -inf, 2.], dict(bins=2, min=0, max=3)),
    ([1., 1., 1.], dict(bins=4)), ([], dict(bins=3)), ([], dict(bins=3, min=0, max=1)),
    ([0., 1., 2., 3.], dict(bins=3, min=0, max=3)), (2.0, dict(bins=3)),
    ([1., nan, 2.], dict(bins=2)), ([1., inf, 2.], dict(bins=2)),                # range not finite
    ([1., 2.], dict(bins=4, min=3, max=1)), ([1., 2.], dict(bins=0)), ([1., 2.], dict(bins=-1)),
], ids=repr)
def test_edge_cases_and_errors(data, kwargs):
    check(lambda lib, x: lib.histc(x, **kwargs), np.array(data, dtype=np.float32))


@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool", "complex64"])
def test_unsupported_dtypes(dtype):
    check(lambda lib, x: lib.histc(x, bins=3), make((4,), dtype))


def test_out_meta_and_no_gradient():
    x = make((10,))
    check(lambda lib, x: lib.histc(x, 4, out=lib.empty(0)), x)
    check(lambda lib, x: lib.histc(x, 4, out=lib.empty(4, dtype=lib.float64)), x)   # same dtype required
    check(lambda lib, x: lib.histc(x.to("meta"), 4), x)
    check(lambda lib, x: lib.histc(x, 4, min=lib.tensor(-1.0), max=2), x)
    check(lambda lib, x: lib.histc(x.detach().requires_grad_(True), 4).requires_grad, x)
