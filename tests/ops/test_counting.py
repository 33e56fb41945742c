"""Oracle tests of bincount, histogram, nonzero_static, index_reduce and fill_diagonal_
(ember/ops/table/counting.py) against PyTorch."""
import numpy as np
import pytest
import torch

import ember
from oracle import check, make
from autograd._grad_oracle import grad_check


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int16"])
def test_bincount(dtype):
    x = make((20,), dtype, low=0, high=7)
    check(lambda lib, t: lib.bincount(t), x)
    check(lambda lib, t: t.bincount(minlength=12), x)
    for wdtype in ("float32", "float64", "int64", "float16"):
        check(lambda lib, t, w: lib.bincount(t, w), x, make((20,), wdtype))
    check(lambda lib, t: lib.bincount(t), np.array([], dtype=dtype))
    check(lambda lib, t: lib.bincount(t, minlength=3), np.array([], dtype=dtype))


def test_bincount_errors():
    check(lambda lib, t: lib.bincount(t), np.array([1, -1]))
    check(lambda lib, t: lib.bincount(t), np.array([[1, 2]]))
    check(lambda lib, t: lib.bincount(t), np.array([1.0, 2.0]))
    check(lambda lib, t: lib.bincount(t), np.array([True, False]))
    check(lambda lib, t: lib.bincount(t, minlength=-1), np.array([1, 2]))
    check(lambda lib, t, w: lib.bincount(t, w), np.array([1, 2]), np.array([1.0]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histogram(dtype):
    x = make((4, 5), dtype)
    for kw in (dict(), dict(bins=7), dict(bins=3, range=(-1.0, 2.0)), dict(bins=4, density=True),
               dict(bins=5, range=(0.0, 10.0), density=True)):
        check(lambda lib, t: tuple(lib.histogram(t, **kw)), x)
        check(lambda lib, t: tuple(t.histogram(**kw)), x)
    check(lambda lib, t, w: tuple(lib.histogram(t, 4, weight=w)), x, make((4, 5), dtype, low=0))
    check(lambda lib, t, w: tuple(lib.histogram(t, 4, weight=w, density=True)), x, make((4, 5), dtype, low=0))
    check(lambda lib, t, b: tuple(lib.histogram(t, b)), x, np.array([-3.0, -1.0, 0.0, 0.5, 2.0]).astype(dtype))
    check(lambda lib, t, b: tuple(t.histogram(b, density=True)), x, np.array([-2.0, 0.0, 1.0]).astype(dtype))
    check(lambda lib, t: tuple(lib.histogram(t, 3)), np.array([1.0, 1.0]).astype(dtype))
    check(lambda lib, t: tuple(lib.histogram(t, 2)), np.array([]).astype(dtype))
    check(lambda lib, t: lib.histogram(t, 3).hist, x)


def test_histogram_errors():
    # cpu_first=False: PyTorch has no CUDA histogram, so on the GPU its dispatcher refuses before these
    # checks (NotImplementedError); histogram indexes nothing, so its CUDA run is the oracle there
    check(lambda lib, t: lib.histogram(t, 2), np.array([1, 2]), cpu_first=False)
    check(lambda lib, t: lib.histogram(t, 0), np.array([1.0, 2.0]), cpu_first=False)
    check(lambda lib, t: lib.histogram(t, 2, range=(3.0, 1.0)), np.array([1.0, 2.0]), cpu_first=False)
    check(lambda lib, t: lib.histogram(t, 2), np.array([1.0, np.nan]), cpu_first=False)


def test_nonzero_static():
    x = make((3, 4), "int64", low=0, high=1)
    for size, fill in ((0, -1), (2, -1), (12, -1), (15, 7), (20, 0)):
        check(lambda lib, t: lib.nonzero_static(t, size=size, fill_value=fill), x)
        check(lambda lib, t: t.nonzero_static(size=size), x)
    check(lambda lib, t: lib.nonzero_static(t, size=3), make((), "float32"))
    check(lambda lib, t: tuple(lib.nonzero_static(t.to("meta"), size=5).shape), x)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "float64"])
def test_index_reduce(reduce, dtype):
    x, src = make((5, 3), dtype), make((6, 3), dtype)
    index = np.array([0, 4, 0, 2, 4, 4])
    for include_self in (True, False):
        check(lambda lib, t, i, s: lib.index_reduce(t, 0, i, s, reduce, include_self=include_self), x, index, src)
        check(lambda lib, t, i, s: t.clone().index_reduce_(0, i, s, reduce, include_self=include_self),
              x, index, src)
    check(lambda lib, t, i, s: t.index_reduce(1, i, s, reduce), x, np.array([2, 2, 0, 1]), make((5, 4), dtype))
    check(lambda lib, t, i, s: t.index_reduce(-1, i, s, reduce), x, np.array([2, -1]), make((5, 2), dtype))


def test_index_reduce_errors():
    x, src, index = make((5, 3)), make((2, 3)), np.array([0, 1])
    check(lambda lib, t, i, s: t.index_reduce(0, i, s, "sum"), x, index, src)
    check(lambda lib, t, i, s: t.index_reduce(0, i, s, "mean"), x, index, make((2, 3), "float64"))
    check(lambda lib, t, i, s: t.index_reduce(2, i, s, "mean"), x, index, src)
    check(lambda lib, t, i, s: t.index_reduce(0, i, s, "amax"), x, np.array([0, 9]), src)


@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (7, 2), (3, 3, 3), (4, 4, 4, 4)])
def test_fill_diagonal_(shape):
    for wrap in (False, True):
        check(lambda lib, t: t.clone().fill_diagonal_(2.5, wrap), make(shape))
        check(lambda lib, t: t.fill_diagonal_(-1, wrap) is t, make(shape, "int64"))
    check(lambda lib, t: t.t().clone().fill_diagonal_(1.0), make((4, 3)))
    base = make((6, 6))
    check(lambda lib, t: (t[::2, 1:].fill_diagonal_(9.0, True), t)[1], base)


def test_fill_diagonal_errors_and_gradient():
    check(lambda lib, t: t.fill_diagonal_(1.0), make((3,)))
    check(lambda lib, t: t.fill_diagonal_(1.0), make((3, 3, 2)))
    grad_check(lambda lib, t: (t * 2).fill_diagonal_(0.5, True), np.random.default_rng(0).standard_normal((5, 2)))
