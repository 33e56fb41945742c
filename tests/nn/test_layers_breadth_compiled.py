"""The new layers under ember.compile: each is a composition of ops, so it is captured into one
graph without breaks and the compiled call gives eager's values and gradients. Layers whose
arguments need data (lengths, targets checked against the class count) graph-break instead, and
still give eager's values."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._dynamo import explain

RNG = np.random.default_rng(4)


def t(*shape, grad=True):
    return ember.tensor(RNG.standard_normal(shape).astype(np.float32), requires_grad=grad)


# (callable, argument makers, whether capture is expected to be break-free)
CASES = [
    ("MaxPool3d", lambda: nn.MaxPool3d(2, return_indices=True), lambda: [t(2, 3, 4, 6, 6)], True),
    ("AvgPool3d", lambda: nn.AvgPool3d(3, padding=1, stride=2, ceil_mode=True), lambda: [t(2, 3, 5, 6, 6)], True),
    ("AdaptiveAvgPool3d", lambda: nn.AdaptiveAvgPool3d((2, 3, None)), lambda: [t(2, 3, 5, 6, 6)], True),
    ("LPPool3d", lambda: nn.LPPool3d(2, 2), lambda: [t(2, 3, 4, 6, 6)], True),
    ("ConvTranspose3d", lambda: nn.ConvTranspose3d(2, 3, 2, stride=2, padding=1), lambda: [t(1, 2, 3, 3, 3)], True),
    ("ReplicationPad3d", lambda: nn.ReplicationPad3d((1, 2, 0, 1, 2, 0)), lambda: [t(2, 3, 4, 4, 4)], True),
    ("LocalResponseNorm", lambda: nn.LocalResponseNorm(3), lambda: [t(2, 5, 4, 4)], True),
    ("Upsample area", lambda: nn.Upsample(size=(3, 2), mode="area"), lambda: [t(2, 3, 7, 5)], True),
    ("ChannelShuffle", lambda: nn.ChannelShuffle(2), lambda: [t(2, 4, 3)], True),
    ("grid_sample", lambda: (lambda x, th: F.grid_sample(x, F.affine_grid(th, [2, 3, 4, 5], align_corners=True),
                                                         padding_mode="reflection", align_corners=True)),
     lambda: [t(2, 3, 6, 7), t(2, 2, 3)], True),
    ("pdist", lambda: (lambda x: F.pdist(x, 1.5)), lambda: [t(5, 3)], True),
    ("TripletMarginLoss", lambda: nn.TripletMarginLoss(swap=True), lambda: [t(4, 5), t(4, 5), t(4, 5)], True),
    ("CosineEmbeddingLoss", lambda: nn.CosineEmbeddingLoss(0.1),
     lambda: [t(4, 5), t(4, 5), ember.tensor([1.0, -1.0, 1.0, -1.0])], True),
    ("PoissonNLLLoss", lambda: nn.PoissonNLLLoss(full=True),
     lambda: [t(4, 5), ember.tensor(RNG.poisson(2, (4, 5)).astype(np.float32))], True),
    ("CTCLoss", lambda: nn.CTCLoss(), lambda: [t(6, 2, 4).log_softmax(-1), ember.tensor([[1, 2], [3, 3]]),
                                                ember.tensor([6, 5]), ember.tensor([2, 2])], False),
    ("EmbeddingBag", lambda: nn.EmbeddingBag(10, 3, mode="max"), lambda: [ember.randint(0, 10, (4, 3))], False),
    ("GaussianNLLLoss", lambda: nn.GaussianNLLLoss(), lambda: [t(4, 3), t(4, 3), t(4, 3).abs()], False),
]


@pytest.mark.parametrize("name,make,args,break_free", CASES, ids=[c[0] for c in CASES])
def test_compiled_equals_eager(name, make, args, break_free):
    fn = make()
    inputs = args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = explain(fn)(*inputs)
        assert (report.graph_break_count == 0) == break_free, [r.reason for r in report.break_reasons]
        eager = fn(*inputs)
        compiled = ember.compile(fn)(*inputs)
    eager_first = eager[0] if isinstance(eager, tuple) else eager
    compiled_first = compiled[0] if isinstance(compiled, tuple) else compiled
    np.testing.assert_allclose(compiled_first.detach().numpy(), eager_first.detach().numpy(), rtol=1e-6, atol=1e-6)
    leaves = [x for x in inputs if x.is_leaf and x.requires_grad]
    if not leaves or not eager_first.requires_grad:
        return
    grads_eager = ember.autograd.grad(eager_first.sum(), leaves)
    grads_compiled = ember.autograd.grad(compiled_first.sum(), leaves)
    for a, b in zip(grads_compiled, grads_eager):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
