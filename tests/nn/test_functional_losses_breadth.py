"""F's margin, embedding and likelihood losses and ctc_loss (ember/nn/functional_margin_losses.py,
functional_ctc.py) vs PyTorch: values for every reduction, input gradients, bad-argument exceptions."""
import warnings

import numpy as np
import pytest
import torch

import ember
from grad_oracle import check_grad
from oracle import check_raises

RNG = np.random.default_rng(2)
REDUCTIONS = ["none", "mean", "sum"]


def f(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def signs(*shape):
    return np.where(RNG.random(shape) > 0.5, 1.0, -1.0).astype(np.float32)


def F(lib):
    return lib.nn.functional


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_embedding_and_ranking_losses(reduction):
    check_grad(lambda lib, a, b, y: F(lib).cosine_embedding_loss(a, b, y, margin=0.2, reduction=reduction),
               f(4, 5), f(4, 5), signs(4), diff=(0, 1))
    check_grad(lambda lib, a, b, y: F(lib).cosine_embedding_loss(a, b, y, reduction=reduction),
               f(5), f(5), signs(), diff=(0, 1))
    check_grad(lambda lib, a, y: F(lib).hinge_embedding_loss(a, y, margin=0.5, reduction=reduction),
               f(4, 5), signs(4, 5))
    check_grad(lambda lib, a, b, y: F(lib).margin_ranking_loss(a, b, y, margin=0.1, reduction=reduction),
               f(6), f(6), signs(6), diff=(0, 1))
    check_grad(lambda lib, a, y: F(lib).soft_margin_loss(a, y, reduction=reduction), f(4, 5), signs(4, 5))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_losses(reduction):
    labels = (RNG.random((4, 5)) > 0.5).astype(np.float32)
    weight = RNG.random(5).astype(np.float32)
    check_grad(lambda lib, a, y, w: F(lib).multilabel_soft_margin_loss(a, y, weight=w, reduction=reduction),
               f(4, 5), labels, weight)
    # targets end at the first -1; later entries are ignored; repeats count twice
    target = np.array([[3, 0, -1, 1, 2], [1, 1, 4, -1, -1], [-1, 2, 3, 0, 0], [0, 1, 2, 3, 4]])
    check_grad(lambda lib, a, y: F(lib).multilabel_margin_loss(a, y, reduction=reduction), f(4, 5), target)
    check_grad(lambda lib, a, y: F(lib).multilabel_margin_loss(a, y, reduction=reduction), f(5), target[1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss(reduction, p):
    weight = RNG.random(5).astype(np.float32)
    check_grad(lambda lib, a, y, w: F(lib).multi_margin_loss(a, y, p=p, margin=0.7, weight=w, reduction=reduction),
               f(4, 5), RNG.integers(0, 5, 4), weight)
    check_grad(lambda lib, a, y: F(lib).multi_margin_loss(a, y, p=p, reduction=reduction), f(5),
               RNG.integers(0, 5, ()))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_triplet_losses(reduction):
    for kw in (dict(), dict(margin=0.5, p=1.5, swap=True), dict(p=1, eps=1e-3)):
        check_grad(lambda lib, a, b, c: F(lib).triplet_margin_loss(a, b, c, reduction=reduction, **kw),
                   f(4, 5), f(4, 5), f(4, 5), diff=(0, 1, 2))

    def manhattan(x, y):
        return (x - y).abs().sum(-1)
    check_grad(lambda lib, a, b, c: F(lib).triplet_margin_with_distance_loss(
        a, b, c, distance_function=manhattan, margin=0.3, swap=True, reduction=reduction),
        f(4, 5), f(4, 5), f(4, 5), diff=(0, 1, 2))
    check_grad(lambda lib, a, b, c: F(lib).triplet_margin_with_distance_loss(a, b, c, reduction=reduction),
               f(5), f(5), f(5), diff=(0, 1, 2))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_likelihood_losses(reduction):
    counts = RNG.poisson(2, (4, 5)).astype(np.float32)
    check_grad(lambda lib, a, y: F(lib).poisson_nll_loss(a, y, full=True, reduction=reduction), f(4, 5), counts)
    check_grad(lambda lib, a, y: F(lib).poisson_nll_loss(a, y, log_input=False, eps=1e-3, reduction=reduction),
               np.abs(f(4, 5)), counts)
    for var in (np.abs(f(4, 5)), np.abs(f(4, 1)), np.abs(f(4)) + 1e-8):  # var below eps is clamped
        check_grad(lambda lib, a, y, v: F(lib).gaussian_nll_loss(a, y, v, full=True, reduction=reduction),
                   f(4, 5), f(4, 5), var, diff=(0, 2))
    check_grad(lambda lib, a, y: F(lib).gaussian_nll_loss(a, y, 0.5, reduction=reduction), f(4, 5), f(4, 5))


def test_legacy_reduction_arguments_warn_and_apply():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_grad(lambda lib, a, y: F(lib).soft_margin_loss(a, y, size_average=False), f(4, 5), signs(4, 5))
        check_grad(lambda lib, a, y: F(lib).multilabel_soft_margin_loss(a, y, reduce=False), f(4, 5),
                   (RNG.random((4, 5)) > 0.5).astype(np.float32))


BAD = [
    (lambda lib, a, b, y: F(lib).cosine_embedding_loss(a, b, y.reshape(2, 2)), (f(4, 5), f(4, 5), signs(4))),
    (lambda lib, a, b, y: F(lib).cosine_embedding_loss(a[0], b, y), (f(4, 5), f(4, 5), signs(4))),
    (lambda lib, a, b, y: F(lib).margin_ranking_loss(a, b, y.reshape(2, 2)), (f(4), f(4), signs(4))),
    (lambda lib, a, b, y: F(lib).soft_margin_loss(a, b, reduction="avg"), (f(4), f(4), signs(4))),
    (lambda lib, a, y: F(lib).multi_margin_loss(a, y, p=3), (f(4, 5), RNG.integers(0, 5, 4))),
    (lambda lib, a, y: F(lib).multi_margin_loss(a, y, weight=a), (f(4, 5), RNG.integers(0, 5, 4))),
    (lambda lib, a, y: F(lib).multi_margin_loss(a, y), (f(4, 5), RNG.integers(0, 5, 3))),
    (lambda lib, a, y: F(lib).multi_margin_loss(a, y), (f(4, 5), np.array([0, 1, 5, 2]))),
    (lambda lib, a, y: F(lib).multi_margin_loss(a, y), (f(2, 4, 5), RNG.integers(0, 5, (2, 4)))),
    (lambda lib, a, y: F(lib).multilabel_margin_loss(a, y), (f(4, 5), np.zeros((4, 4), dtype=np.int64))),
    (lambda lib, a, y: F(lib).multilabel_margin_loss(a, y), (f(2, 3), np.array([[0, 3, -1], [1, -1, 0]]))),
    (lambda lib, a, b, c: F(lib).triplet_margin_loss(a, b, c, margin=0), (f(4, 5), f(4, 5), f(4, 5))),
    (lambda lib, a, b, c: F(lib).triplet_margin_loss(a, b, c[0]), (f(4, 5), f(4, 5), f(4, 5))),
    (lambda lib, a, b, c: F(lib).triplet_margin_with_distance_loss(a, b, c, reduction="x"),
     (f(4, 5), f(4, 5), f(4, 5))),
    (lambda lib, a, y, v: F(lib).gaussian_nll_loss(a, y, v), (f(4, 5), f(4, 5), np.abs(f(3)))),
    (lambda lib, a, y, v: F(lib).gaussian_nll_loss(a, y, -v), (f(4, 5), f(4, 5), np.abs(f(4, 5)))),
    (lambda lib, a, y, v: F(lib).gaussian_nll_loss(a, y, v, reduction="avg"), (f(4, 5), f(4, 5), np.abs(f(4, 5)))),
    (lambda lib, a, y: F(lib).gaussian_nll_loss(a, y, -1.0), (f(4, 5), f(4, 5))),
]


@pytest.mark.parametrize("case", BAD, ids=range(len(BAD)))
def test_bad_arguments_raise_torchs_exception_type(case):
    fn, arrays = case
    check_raises(fn, *arrays)


# ctc ----------------------------------------------------------------------------------------------
def _ctc(lib, logits, targets, input_lengths, target_lengths, **kwargs):
    """The loss and the gradient of the logits through log_softmax (the documented use; see
    functional_ctc.py on what PyTorch returns as the log_probs gradient)."""
    logits = lib.tensor(logits, requires_grad=True)
    def to(v):
        return v if isinstance(v, tuple) else lib.tensor(v)
    loss = F(lib).ctc_loss(F(lib).log_softmax(logits, -1), to(targets), to(input_lengths), to(target_lengths),
                           **kwargs)
    grad = np.random.default_rng(0).standard_normal(tuple(loss.shape)).astype(np.float32)
    loss.backward(lib.tensor(grad))
    return loss.detach().numpy(), logits.grad.numpy()


def _compare(*args, **kwargs):
    t_loss, t_grad = _ctc(torch, *args, **kwargs)
    e_loss, e_grad = _ctc(ember, *args, **kwargs)
    np.testing.assert_allclose(e_loss, t_loss, rtol=1e-4, atol=1e-4)
    if np.all(np.isfinite(t_grad)):
        np.testing.assert_allclose(e_grad, t_grad, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", range(5))
def test_ctc_loss(reduction, case):
    steps, batch, classes, width = 12, 4, 5, 4
    logits = f(steps, batch, classes)
    target_lengths = RNG.integers(0, width + 1, batch)
    input_lengths = RNG.integers(2 * target_lengths, steps + 1) if case % 2 else np.full(batch, steps)
    targets = RNG.integers(1, classes, (batch, width))
    if case == 3:
        targets[:, 1] = targets[:, 0]  # repeated labels need a blank between them
    blank = 0 if case != 4 else classes - 1
    if blank:
        targets = RNG.integers(0, classes - 1, (batch, width))
    _compare(logits, targets, input_lengths, target_lengths, reduction=reduction, blank=blank)
    concatenated = np.concatenate([targets[i, :target_lengths[i]] for i in range(batch)])
    _compare(logits, concatenated, tuple(int(v) for v in input_lengths), tuple(int(v) for v in target_lengths),
             reduction=reduction, blank=blank)


@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_loss_impossible_alignment(zero_infinity):
    logits, targets = f(3, 2, 5), np.array([[1, 1, 1], [1, 2, 3]])  # 1 1 1 needs 5 frames
    _compare(logits, targets, np.array([3, 3]), np.array([3, 3]), reduction="none", zero_infinity=zero_infinity)
    _compare(logits, targets, np.array([3, 3]), np.array([3, 3]), reduction="sum", zero_infinity=zero_infinity)


def test_ctc_loss_unbatched():
    _compare(f(6, 5), np.array([1, 2, 2]), np.array(6), np.array(3), reduction="none")
    _compare(f(6, 5), np.array([1, 2, 2]), (5,), (3,), reduction="mean")


CTC_BAD = [
    dict(log_probs=f(5, 2, 4), targets=np.array([[1, 2], [1, 1]]), input_lengths=np.array([5, 5, 5]),
         target_lengths=np.array([2, 2])),
    dict(log_probs=f(5, 2, 4), targets=np.array([[1, 2], [1, 1]]), input_lengths=np.array([5, 6]),
         target_lengths=np.array([2, 2])),
    dict(log_probs=f(5, 2, 4), targets=np.array([[1, 2], [1, 1]]), input_lengths=np.array([5, 5]),
         target_lengths=np.array([2, 2]), blank=4),
    dict(log_probs=f(5, 2, 4), targets=np.array([[1, 2], [1, 1]]), input_lengths=np.array([5, 5]),
         target_lengths=np.array([2, 3])),
    dict(log_probs=f(2, 5, 2, 4), targets=np.array([[1, 2], [1, 1]]), input_lengths=np.array([5, 5]),
         target_lengths=np.array([2, 2])),
    dict(log_probs=f(5, 4), targets=np.array([1, 2]), input_lengths=5, target_lengths=2),
]


@pytest.mark.parametrize("kwargs", CTC_BAD, ids=range(len(CTC_BAD)))
def test_ctc_loss_bad_arguments_raise_torchs_exception_type(kwargs):
    def run(lib, log_probs, targets, input_lengths, target_lengths, blank=0):
        return F(lib).ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=blank)
    names = ("log_probs", "targets", "input_lengths", "target_lengths")
    check_raises(lambda lib, *a: run(lib, *a, blank=kwargs.get("blank", 0)), *[kwargs[n] for n in names])
