"""F's 3-D, adaptive-with-indices, LP, fractional and unpooling functions (ember/nn/functional_pool.py)
vs PyTorch: values, indices, input gradients and the exception types of bad arguments."""
import numpy as np
import pytest

from grad_oracle import check_grad
from oracle import check_raises

RNG = np.random.default_rng(1)


def f(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


MAX_POOL3D = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
              dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0), dilation=(2, 1, 1), ceil_mode=True),
              dict(kernel_size=3, stride=2, ceil_mode=True, return_indices=True),
              dict(kernel_size=(1, 2, 2), stride=1, return_indices=True)]


@pytest.mark.parametrize("kwargs", MAX_POOL3D)
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 4, 5, 6)])
def test_max_pool3d(kwargs, shape):
    check_grad(lambda lib, x: lib.nn.functional.max_pool3d(x, **kwargs), f(*shape))


def test_max_pool3d_with_indices_float64_and_ties():
    x = np.round(f(2, 2, 4, 4, 4, dtype=np.float64))  # many equal values: the first in window order wins
    check_grad(lambda lib, x: lib.nn.functional.max_pool3d_with_indices(x, 2, 1), x)


AVG_POOL3D = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
              dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
              dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
              dict(kernel_size=(1, 2, 3), stride=(2, 1, 1), divisor_override=5)]


@pytest.mark.parametrize("kwargs", AVG_POOL3D)
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 4, 5, 6)])
def test_avg_pool3d(kwargs, shape):
    check_grad(lambda lib, x: lib.nn.functional.avg_pool3d(x, **kwargs), f(*shape))


@pytest.mark.parametrize("size", [1, 3, (2, None, 4), (5, 6, 7), (4, 4, 3), (8, 9, 10)])
def test_adaptive_pool3d(size):
    x = f(2, 3, 5, 6, 7)
    check_grad(lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, size), x)
    check_grad(lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, size, return_indices=True), x)
    check_grad(lambda lib, x: lib.nn.functional.adaptive_max_pool3d_with_indices(x[0], size), x)


def test_adaptive_max_pool_with_indices_1d_2d():
    check_grad(lambda lib, x: lib.nn.functional.adaptive_max_pool1d_with_indices(x, 3), f(2, 3, 8))
    check_grad(lambda lib, x: lib.nn.functional.adaptive_max_pool2d_with_indices(x, (3, None)), f(2, 3, 7, 5))


@pytest.mark.parametrize("norm_type", [1, 2, 3.5])
def test_lp_pool(norm_type):
    x = np.abs(f(2, 3, 6, 7, 8)) + 0.1
    check_grad(lambda lib, x: lib.nn.functional.lp_pool1d(x, norm_type, 3, stride=2), x[:, :, 0, 0])
    check_grad(lambda lib, x: lib.nn.functional.lp_pool2d(x, norm_type, (2, 3), ceil_mode=True), x[:, :, 0])
    check_grad(lambda lib, x: lib.nn.functional.lp_pool3d(x, norm_type, 2, stride=(1, 2, 3)), x)


@pytest.mark.parametrize("kwargs", [dict(output_size=(3, 4)), dict(output_size=5), dict(output_ratio=(0.5, 0.5)),
                                    dict(output_ratio=(0.7, 0.3))])
@pytest.mark.parametrize("kernel", [2, (3, 2)])
def test_fractional_max_pool2d(kwargs, kernel):
    import ember
    import torch
    x, samples = f(2, 3, 9, 10), RNG.random((2, 3, 2)).astype(np.float32)

    def run(lib, x):
        return lib.nn.functional.fractional_max_pool2d(x, kernel, return_indices=True, _random_samples=(
            torch if lib is torch else ember).tensor(samples), **kwargs)
    check_grad(run, x)


@pytest.mark.parametrize("kwargs", [dict(output_size=(2, 3, 4)), dict(output_ratio=0.5)])
def test_fractional_max_pool3d(kwargs):
    import ember
    import torch
    x, samples = f(2, 3, 6, 7, 9, dtype=np.float64), RNG.random((2, 3, 3))
    check_grad(lambda lib, x: lib.nn.functional.fractional_max_pool3d_with_indices(
        x, (2, 1, 3), _random_samples=(torch if lib is torch else ember).tensor(samples), **kwargs), x)
    check_grad(lambda lib, x: lib.nn.functional.fractional_max_pool3d(
        x[0], 2, _random_samples=(torch if lib is torch else ember).tensor(samples[:1]), **kwargs), x)


def test_fractional_max_pool_draws_its_own_samples():
    import ember
    x = ember.tensor(f(2, 3, 9, 10))
    out, idx = ember.nn.functional.fractional_max_pool2d(x, 2, output_size=4, return_indices=True)
    assert tuple(out.shape) == (2, 3, 4, 4)
    np.testing.assert_array_equal(out.numpy(), x.flatten(2).gather(2, idx.flatten(2)).reshape(out.shape).numpy())


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_roundtrip(n):
    import torch
    x = f(2, 3, *[6] * n)
    pool = getattr(torch.nn.functional, f"max_pool{n}d")
    out, idx = pool(torch.tensor(x), 2, stride=2, return_indices=True)
    check_grad(lambda lib, y, i: getattr(lib.nn.functional, f"max_unpool{n}d")(y, i, 2), out.numpy(), idx.numpy())
    check_grad(lambda lib, y, i: getattr(lib.nn.functional, f"max_unpool{n}d")(y, i, 2, output_size=[7] * n),
               out.numpy(), idx.numpy())


BAD = [
    lambda lib, x: lib.nn.functional.max_pool3d(x[0, 0], 2),
    lambda lib, x: lib.nn.functional.max_pool3d(x, 0),
    lambda lib, x: lib.nn.functional.max_pool3d(x, 2, stride=0),
    lambda lib, x: lib.nn.functional.max_pool3d(x, 2, padding=2),
    lambda lib, x: lib.nn.functional.max_pool3d(x, 5),
    lambda lib, x: lib.nn.functional.max_pool3d(x, (2, 2)),
    lambda lib, x: lib.nn.functional.avg_pool3d(x, 5),
    lambda lib, x: lib.nn.functional.avg_pool3d(x, (2, 2)),
    lambda lib, x: lib.nn.functional.avg_pool3d(x.int(), 2),
    lambda lib, x: lib.nn.functional.adaptive_max_pool3d(x, (2, 2)),
    lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x[0, 0], 2),
    lambda lib, x: lib.nn.functional.adaptive_avg_pool3d(x, -1),
    lambda lib, x: lib.nn.functional.max_unpool2d(x[0], (x[0] * 0 + 100).long(), 2),
    lambda lib, x: lib.nn.functional.max_unpool2d(x[0], x[0, :, 0].long(), 2),
    lambda lib, x: lib.nn.functional.max_unpool2d(x[0], x[0], 2),
    lambda lib, x: lib.nn.functional.fractional_max_pool2d(x[0], 2),
    lambda lib, x: lib.nn.functional.fractional_max_pool2d(x[0], 2, output_size=4),
    lambda lib, x: lib.nn.functional.fractional_max_pool2d(x[0], 2, output_ratio=0.5),
    lambda lib, x: lib.nn.functional.fractional_max_pool2d(x[0], 2, output_ratio=(0.5, 0.5, 0.5)),
]


@pytest.mark.parametrize("fn", BAD, ids=range(len(BAD)))
def test_bad_arguments_raise_torchs_exception_type(fn):
    check_raises(fn, f(1, 2, 4, 4, 4))


def test_fractional_max_pool2d_with_indices():
    import ember
    import torch
    x, samples = f(3, 9, 10), RNG.random((1, 3, 2)).astype(np.float32)
    check_grad(lambda lib, x: lib.nn.functional.fractional_max_pool2d_with_indices(
        x, 3, output_size=(4, 5), _random_samples=(torch if lib is torch else ember).tensor(samples)), x)
