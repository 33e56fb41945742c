"""Oracle tests of the loss functions (ember.nn.functional.*_loss, cross_entropy, kl_div ...)."""
import warnings

import numpy as np
import pytest

from oracle import check, make, ALL_DTYPES

HALF_TOL = {"float16": dict(rtol=1e-2, atol=1e-2), "bfloat16": dict(rtol=5e-2, atol=5e-2)}
REDUCTIONS = ["none", "mean", "sum"]


def F(lib):
    return lib.nn.functional


def tol(dtype):
    return HALF_TOL.get(dtype, {})


def targets(shape, n_classes, seed=0, ignore=None):
    t = np.random.default_rng(seed).integers(0, n_classes, size=shape)
    if ignore is not None and t.size:
        t.reshape(-1)[::3] = ignore
    return t


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ---------------------------------------------------------------------------------------
# nll_loss / cross_entropy
# ---------------------------------------------------------------------------------------
_ND = [((4, 5), (4,)), ((5,), ()), ((3, 5, 2), (3, 2)), ((2, 5, 3, 2), (2, 3, 2)), ((2, 5, 2, 1, 2), (2, 2, 1, 2)),
       ((0, 5), (0,))]


@pytest.mark.parametrize("xs,ts", _ND)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(xs, ts, reduction):
    x, t, w = make(xs), targets(ts, 5, ignore=None), make((5,), low=0.1)
    check(lambda lib, x, t: F(lib).nll_loss(x, t, reduction=reduction), x, t, noncontig=True)
    check(lambda lib, x, t, w: F(lib).nll_loss(x, t, w, reduction=reduction), x, t, w, dtype=None)
    t2 = targets(ts, 5, ignore=2)
    check(lambda lib, x, t, w: F(lib).nll_loss(x, t, w, ignore_index=2, reduction=reduction), x, t2, w)
    check(lambda lib, x, t: F(lib).nll_loss(x.to("meta"), t.to("meta"), reduction=reduction), x, t)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_nll_loss_dtypes(dtype):
    check(lambda lib, x, t: F(lib).nll_loss(x.to(getattr(lib, dtype)), t), make((4, 5)), targets((4,), 5), **tol(dtype))
    check(lambda lib, x, t: F(lib).nll_loss(x, t.to(getattr(lib, dtype))), make((4, 5)), targets((4,), 5))


def test_nll_loss_all_ignored_and_errors():
    check(lambda lib, x, t: F(lib).nll_loss(x, t, ignore_index=1), make((3, 4)), np.ones(3, np.int64))
    check(lambda lib, x, t: F(lib).nll_loss(x, t), make((3, 4)), np.array([0, 1, 4]))
    check(lambda lib, x, t: F(lib).nll_loss(x, t), make((3, 4)), np.array([0, -1, 2]))
    check(lambda lib, x, t: F(lib).nll_loss(x, t), make((3, 4)), np.array([0, 1]))
    check(lambda lib, x, t: F(lib).nll_loss(x, t), make(()), np.array(0))
    check(lambda lib, x, t: F(lib).nll_loss(x, t), make((3, 4)), np.zeros((3, 2), np.int64))
    check(lambda lib, x, t, w: F(lib).nll_loss(x, t, w), make((3, 4)), np.array([0, 1, 2]), make((3,)))
    check(lambda lib, x, t: F(lib).nll_loss(x, t), make((2, 4, 3)), np.zeros((2, 2), np.int64))
    check(lambda lib, x, t: F(lib).nll_loss(x, t), make((2, 4, 3, 3)), np.zeros((2, 3), np.int64))
    check(lambda lib, x, t: F(lib).nll_loss(x, t), make((2, 4, 3, 3)), np.full((2, 3, 3), 7))
    check(lambda lib, x, t: F(lib).nll_loss(x, t, reduction="avg"), make((3, 4)), np.array([0, 1, 2]))
    check(lambda lib, x, t: F(lib).nll_loss(x, t, size_average=False), make((3, 4)), np.array([0, 1, 2]))
    check(lambda lib, x, t: F(lib).nll_loss(x, t, reduce=False), make((3, 4)), np.array([0, 1, 2]))


@pytest.mark.parametrize("xs,ts", _ND)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("ls", [0.0, 0.2])
def test_cross_entropy_class_targets(xs, ts, reduction, ls):
    x, w = make(xs), make((5,), low=0.1)
    t = targets(ts, 5, ignore=3)
    check(lambda lib, x, t: F(lib).cross_entropy(x, t, reduction=reduction, label_smoothing=ls), x, targets(ts, 5),
          noncontig=True)
    check(lambda lib, x, t, w: F(lib).cross_entropy(x, t, w, ignore_index=3, reduction=reduction,
                                                    label_smoothing=ls), x, t, w)
    check(lambda lib, x, t: F(lib).cross_entropy(x, t, ignore_index=3, reduction=reduction, label_smoothing=ls),
          x.astype(np.float64), t)
    check(lambda lib, x, t: F(lib).cross_entropy(x.to("meta"), t.to("meta"), reduction=reduction), x, t)


@pytest.mark.parametrize("xs", [(4, 5), (5,), (3, 5, 2), (2, 5, 3, 2), (0, 5)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("ls", [0.0, 0.1])
def test_cross_entropy_prob_targets(xs, reduction, ls):
    x, p, w = make(xs), make(xs, low=0, high=1), make((5,), low=0.1)
    check(lambda lib, x, p: F(lib).cross_entropy(x, p, reduction=reduction, label_smoothing=ls), x, p,
          noncontig=True)
    check(lambda lib, x, p, w: F(lib).cross_entropy(x, p, w, reduction=reduction, label_smoothing=ls), x, p, w,
          dtype="float64")
    check(lambda lib, x, p: F(lib).cross_entropy(x.to("meta"), p.to("meta"), reduction=reduction), x, p)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cross_entropy_dtypes(dtype):
    check(lambda lib, x, t: F(lib).cross_entropy(x, t), make((4, 5), dtype), targets((4,), 5), **tol(dtype))
    check(lambda lib, x, p: F(lib).cross_entropy(x, p), make((4, 5), dtype), make((4, 5), dtype, low=0, high=1),
          **tol(dtype))


def test_cross_entropy_errors():
    check(lambda lib, x, t: F(lib).cross_entropy(x, t), make((3, 4)), np.array([0, 1, 4]))
    check(lambda lib, x, t: F(lib).cross_entropy(x, t), make((3, 4)), np.array([0, 1]))
    check(lambda lib, x, t: F(lib).cross_entropy(x, t), make((3, 4)), make((3,)))
    check(lambda lib, x, t: F(lib).cross_entropy(x, t, label_smoothing=1.5), make((3, 4)), np.array([0, 1, 2]))
    check(lambda lib, x, p: F(lib).cross_entropy(x, p, ignore_index=1), make((3, 4)), make((3, 4)))
    check(lambda lib, x, p, w: F(lib).cross_entropy(x, p, w), make((3, 4)), make((3, 4)), make((3,)))


# ---------------------------------------------------------------------------------------
# regression losses
# ---------------------------------------------------------------------------------------
_PAIRS = [((3, 4), (3, 4)), ((), ()), ((0, 2), (0, 2)), ((3, 4), (4,)), ((2, 3, 1), (3, 4))]


@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {}),
                                     ("smooth_l1_loss", dict(beta=0.5)), ("smooth_l1_loss", dict(beta=0.0)),
                                     ("huber_loss", {}), ("huber_loss", dict(delta=2.5))])
@pytest.mark.parametrize("a,b", _PAIRS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(name, kw, a, b, reduction):
    fn = lambda lib, x, y: getattr(F(lib), name)(x, y, reduction=reduction, **kw)  # noqa: E731
    check(fn, make(a), make(b), noncontig=True)
    check(fn, make(a), make(b), dtype="float64")
    check(lambda lib, x, y: getattr(F(lib), name)(x.to("meta"), y.to("meta"), reduction=reduction, **kw), make(a),
          make(b))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_loss_dtypes(name, dtype, reduction):
    check(lambda lib, x, y: getattr(F(lib), name)(x, y, reduction=reduction), make((3, 4), dtype),
          make((3, 4), dtype), **tol(dtype))


def test_regression_loss_errors_and_mixed():
    check(lambda lib, x, y: F(lib).mse_loss(x, y), make((3, 4)), make((3, 5)))
    check(lambda lib, x, y: F(lib).mse_loss(x, y.to(lib.float64)), make((3, 4)), make((3, 4)))
    check(lambda lib, x, y: F(lib).l1_loss(x, y.to(lib.int64)), make((3, 4)), make((3, 4)))
    check(lambda lib, x, y: F(lib).smooth_l1_loss(x, y, beta=-1.0), make((3, 4)), make((3, 4)))
    check(lambda lib, x, y: F(lib).huber_loss(x, y, delta=0.0), make((3, 4)), make((3, 4)))
    check(lambda lib, x, y: F(lib).mse_loss(x, y, reduction="avg"), make((3, 4)), make((3, 4)))


# ---------------------------------------------------------------------------------------
# binary cross entropy, kl_div
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 3), (5,)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(shape, reduction):
    x, y = make(shape, low=0, high=1), make(shape, low=0, high=1)
    check(lambda lib, x, y: F(lib).binary_cross_entropy(x, y, reduction=reduction), x, y, noncontig=True)
    check(lambda lib, x, y, w: F(lib).binary_cross_entropy(x, y, w, reduction=reduction), x, y,
          make(shape[-1:], low=0, high=2), dtype="float64")
    check(lambda lib, x, y: F(lib).binary_cross_entropy(x.to("meta"), y.to("meta"), reduction=reduction), x, y)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_binary_cross_entropy_dtypes(dtype):
    check(lambda lib, x, y: F(lib).binary_cross_entropy(x, y), make((3, 4), dtype, low=0, high=1),
          make((3, 4), dtype, low=0, high=1), **tol(dtype))


def test_binary_cross_entropy_edges_and_errors():
    x = np.array([0.0, 1.0, 0.5, 1.0], np.float32)
    y = np.array([1.0, 0.0, 0.5, 1.0], np.float32)
    check(lambda lib, x, y: F(lib).binary_cross_entropy(x, y, reduction="none"), x, y)  # log clamped at -100
    check(lambda lib, x, y: F(lib).binary_cross_entropy(x, y), make((3,), low=0.5, high=1.5), make((3,), low=0,
                                                                                                     high=1))
    check(lambda lib, x, y: F(lib).binary_cross_entropy(x, y), make((3,), low=0, high=1), make((3,), low=2))
    check(lambda lib, x, y: F(lib).binary_cross_entropy(x, y), make((3,), low=0, high=1), make((4,), low=0, high=1))
    check(lambda lib, x, y: F(lib).binary_cross_entropy(x, y.double()), make((3,), low=0, high=1),
          make((3,), low=0, high=1))


@pytest.mark.parametrize("shape", [(3, 4), (), (0, 3)])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits(shape, reduction):
    x, y = make(shape, low=-30, high=30), make(shape, low=0, high=1)
    fn = F
    check(lambda lib, x, y: fn(lib).binary_cross_entropy_with_logits(x, y, reduction=reduction), x, y,
          noncontig=True)
    if shape:
        check(lambda lib, x, y, w, pw: fn(lib).binary_cross_entropy_with_logits(x, y, w, reduction=reduction,
                                                                               pos_weight=pw),
              x, y, make(shape[-1:], low=0, high=2), make(shape[-1:], low=0, high=3), dtype="float64")
        check(lambda lib, x, y, w, pw: lib.binary_cross_entropy_with_logits(x, y, w, pw, 1), x, y,
              make(shape[-1:], low=0, high=2), make(shape[-1:], low=0, high=3))
        check(lambda lib, x, y: lib.binary_cross_entropy_with_logits(x, y), x, y)
    check(lambda lib, x, y: fn(lib).binary_cross_entropy_with_logits(x.to("meta"), y.to("meta"),
                                                                     reduction=reduction), x, y)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_bce_with_logits_dtypes(dtype):
    check(lambda lib, x, y: F(lib).binary_cross_entropy_with_logits(x, y), make((3, 4), dtype),
          make((3, 4), dtype, low=0, high=1), **tol(dtype))


def test_bce_with_logits_errors():
    check(lambda lib, x, y: F(lib).binary_cross_entropy_with_logits(x, y), make((3, 4)), make((4,)))


@pytest.mark.parametrize("shape", [(3, 4), (), (0, 3)])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(shape, reduction, log_target):
    x = np.log(make(shape, low=0.05, high=1))
    t = make(shape, low=0, high=1)
    if t.size:
        t.reshape(-1)[0] = 0.0  # xlogy(0, 0) = 0
    if log_target:
        t = np.log(t + 0.1)
    fn = lambda lib, x, t: F(lib).kl_div(x, t, reduction=reduction, log_target=log_target)  # noqa: E731
    check(fn, x, t, noncontig=True)
    check(fn, x, t, dtype="float64")
    check(lambda lib, x, t: F(lib).kl_div(x.to("meta"), t.to("meta"), reduction=reduction), x, t)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_kl_div_dtypes(dtype):
    check(lambda lib, x, t: F(lib).kl_div(x, t, reduction="batchmean"), make((3, 4), dtype, high=0),
          make((3, 4), dtype, low=0, high=1), **tol(dtype))
    check(lambda lib, x, t: lib.kl_div(x, t), make((3, 4), dtype, high=0), make((3, 4), dtype, low=0, high=1),
          **tol(dtype))  # torch.kl_div's default reduction is 'none'
    check(lambda lib, x, t: lib.kl_div(x, t, 1, log_target=True), make((3, 4), dtype, high=0),
          make((3, 4), dtype, high=0), **tol(dtype))
