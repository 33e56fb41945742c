"""Decompositions of the nn, loss, linalg, indexing and creation families, and the generated entries
(in-place and out= overloads, composites), against their operators run eagerly (decomp_harness.py):
values, dtypes, shapes, running statistics written back, seeded random ops drawing eager's values,
float64 gradients, traced graphs of core and kept-whole ops only."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from decomp_harness import TABLE, check_grads, check_sample, op_of, tensor

F32, F64 = "float32", "float64"


def idx(values, dtype="int64"):
    return ember.tensor(np.array(values, dtype=dtype))


def x4(dtype=F64, seed=0, layout="contiguous"):
    return tensor((2, 3, 4, 5), dtype, seed, layout)


# name -> builders of (args, kwargs) from a float dtype; every builder runs in float32 and float64
SAMPLES = {
    # nn
    "linear": [lambda d: ((tensor((3, 4), d, 1), tensor((5, 4), d, 2), tensor((5,), d, 3)), {}),
               lambda d: ((tensor((2, 3, 4), d, 1, "transposed"), tensor((5, 3), d, 2)), {}),
               lambda d: ((tensor((4,), d, 1), tensor((4,), d, 2)), {}),
               lambda d: ((tensor((3, 4), d, 1), tensor((4,), d, 2), tensor((), d, 3)), {})],
    "bilinear": [lambda d: ((tensor((3, 4), d, 1), tensor((3, 2), d, 2), tensor((5, 4, 2), d, 3), tensor((5,), d, 4)),
                            {}),
                 lambda d: ((tensor((2, 3, 4), d, 1), tensor((2, 3, 2), d, 2), tensor((5, 4, 2), d, 3)), {})],
    "layer_norm": [lambda d: ((tensor((3, 4), d, 1), [4], tensor((4,), d, 2), tensor((4,), d, 3)), {}),
                   lambda d: ((x4(d, 1, "transposed"), [4, 5]), {}), lambda d: ((tensor((0, 4), d), [4]), {}),
                   lambda d: ((tensor((3, 4), d, 1), [3]), {})],
    "rms_norm": [lambda d: ((tensor((3, 4), d, 1), [4], tensor((4,), d, 2)), {}),
                 lambda d: ((x4(d, 1), [4, 5], None, 1e-3), {})],
    "batch_norm": [lambda d: ((x4(d, 1), tensor((3,), d, 2), tensor((3,), d, 3), tensor((3,), d, 4),
                               tensor((3,), d, 5, low=0.5), True, 0.1, 1e-5, False), {}),
                   lambda d: ((x4(d, 1, "transposed"), None, None, tensor((3,), d, 4), tensor((3,), d, 5, low=0.5),
                               False, 0.1, 1e-5, False), {}),
                   lambda d: ((tensor((4, 3), d, 1), None, None, None, None, True, 0.1, 1e-5, False), {}),
                   lambda d: ((tensor((1, 3), d, 1), None, None, tensor((3,), d), tensor((3,), d), True, 0.1, 1e-5,
                               False), {})],
    "instance_norm": [lambda d: ((x4(d, 1), tensor((3,), d, 2), tensor((3,), d, 3), tensor((3,), d, 4),
                                  tensor((3,), d, 5, low=0.5), True, 0.1, 1e-5, False), {}),
                      lambda d: ((x4(d, 1), None, None, tensor((3,), d, 4), tensor((3,), d, 5, low=0.5), False, 0.1,
                                  1e-5, False), {})],
    "group_norm": [lambda d: ((tensor((2, 6, 4), d, 1), 3, tensor((6,), d, 2), tensor((6,), d, 3)), {}),
                   lambda d: ((tensor((2, 6, 4), d, 1), 4), {})],
    "_ember_normalize": [lambda d: ((tensor((3, 4), d, 1), 2.0, 1, 1e-12), {}),
                         lambda d: ((tensor((3, 4), d, 1, "transposed"), 1.0, 0, 0.5), {})],
    "cosine_similarity": [lambda d: ((tensor((3, 4), d, 1), tensor((4,), d, 2)), {}),
                          lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), 0, 1e-3), {})],
    "pairwise_distance": [lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2)), {}),
                          lambda d: ((tensor((3, 4), d, 1), tensor((4,), d, 2), 1.0, 1e-6, True), {}),
                          lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), float("inf")), {})],
    "pad": [lambda d: ((tensor((2, 3, 4), d, 1), [1, 2]), {}), lambda d: ((tensor((2, 3, 4), d, 1), [1, -1, 2, 0],
                                                                           "constant", 2.5), {}),
            lambda d: ((tensor((2, 3, 4), d, 1), [2, 3], "reflect"), {}),
            lambda d: ((tensor((1, 2, 3, 4), d, 1), [1, 2, 2, 1], "reflect"), {}),
            lambda d: ((tensor((2, 3, 4), d, 1), [2, 3], "replicate"), {}),
            lambda d: ((tensor((1, 2, 3, 4), d, 1), [1, 3, 2, 1], "circular"), {}),
            lambda d: ((tensor((2, 3, 4), d, 1), [-1, 2], "circular"), {}),
            lambda d: ((tensor((2, 3, 4), d, 1), [4, 0], "reflect"), {})],
    "scaled_dot_product_attention": [
        lambda d: ((tensor((2, 3, 5, 4), d, 1), tensor((2, 3, 6, 4), d, 2), tensor((2, 3, 6, 4), d, 3)), {}),
        lambda d: ((tensor((2, 5, 4), d, 1), tensor((2, 6, 4), d, 2), tensor((2, 6, 3), d, 3), None, 0.0, True), {}),
        lambda d: ((tensor((2, 5, 4), d, 1), tensor((2, 6, 4), d, 2), tensor((2, 6, 3), d, 3),
                    tensor((5, 6), "bool", 4)), {"scale": 0.3}),
        lambda d: ((tensor((2, 5, 4), d, 1), tensor((2, 6, 4), d, 2), tensor((2, 6, 3), d, 3), tensor((5, 6), d, 4)),
                   {}),
        lambda d: ((tensor((1, 4, 5, 4), d, 1), tensor((1, 2, 6, 4), d, 2), tensor((1, 2, 6, 4), d, 3)),
                   {"enable_gqa": True}),
        lambda d: ((tensor((2, 5, 4), d, 1), tensor((2, 6, 4), d, 2), tensor((2, 6, 3), d, 3), None, 0.3), {}),
        lambda d: ((tensor((2, 2, 4), d, 1), tensor((2, 2, 4), d, 2), tensor((2, 2, 3), d, 3),
                    ember.tensor([[True, False], [False, False]])), {})],
    "max_pool2d": [lambda d: ((x4(d, 1), [2, 2]), {}), lambda d: ((x4(d, 1), [3, 2], [2, 1], [1, 1], 1, True), {})],
    "max_pool1d": [lambda d: ((tensor((2, 3, 7), d, 1), [2]), {}),
                   lambda d: ((tensor((3, 7), d, 1), [3], [2], [1]), {})],
    "max_pool1d_with_indices": [lambda d: ((tensor((2, 3, 7), d, 1), [2], [1], [1], [2], True), {})],
    "avg_pool1d": [lambda d: ((tensor((2, 3, 7), d, 1), [2]), {}),
                   lambda d: ((tensor((3, 7), d, 1), [3], [2], [1], True, False), {})],
    "adaptive_avg_pool1d": [lambda d: ((tensor((2, 3, 7), d, 1), [3]), {})],
    "adaptive_max_pool1d": [lambda d: ((tensor((2, 3, 7), d, 1), [3]), {})],
    "prelu": [lambda d: ((x4(d, 1), tensor((3,), d, 2)), {}),
              lambda d: ((tensor((3, 4), d, 1), tensor((1,), d, 2)), {}),
              lambda d: ((tensor((3, 4), d, 1), tensor((3,), d, 2)), {})],
    # losses
    "mse_loss": [lambda d, r=r: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), r), {}) for r in (0, 1, 2)] +
                [lambda d: ((tensor((3, 4), d, 1), tensor((4,), d, 2)), {}),
                 lambda d: ((tensor((0,), d), tensor((0,), d)), {})],
    "l1_loss": [lambda d, r=r: ((tensor((3, 4), d, 1, "transposed"), tensor((3, 4), d, 2), r), {}) for r in (0, 1, 2)],
    "smooth_l1_loss": [lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), 1, 0.5), {}),
                       lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), 0, 0.0), {}),
                       lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), 2, -1.0), {})],
    "huber_loss": [lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), 1, 0.7), {}),
                   lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), 0, 0.0), {})],
    "binary_cross_entropy_with_logits": [
        lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2, low=0, high=1)), {}),
        lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2, low=0, high=1), tensor((4,), d, 3), tensor((4,), d, 4,
                                                                                                   low=0.5), 2), {})],
    "kl_div": [lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2, low=0, high=1)), {}),
               lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), 2), {"log_target": True}),
               lambda d: ((tensor((3, 4), d, 1), ember.tensor([0.0, 0.5, float("nan"), 1.0]).to(getattr(ember, d)), 0),
                          {})],
    "nll_loss_nd": [lambda d: ((tensor((3, 5), d, 1), idx([0, 4, 2])), {})] +
                   [lambda d, r=r: ((tensor((3, 5, 2), d, 1), idx([[0, 1], [4, -100], [2, 2]]),
                                     tensor((5,), d, 2, low=0.1), r), {}) for r in (0, 1, 2)] + [
                    lambda d: ((tensor((5,), d, 1), idx(3)), {}),
                    lambda d: ((tensor((3, 5), d, 1), idx([1, 1, 1]), None, 1, 1), {})],
    "cross_entropy_loss": [lambda d: ((tensor((3, 5), d, 1), idx([0, 4, 2])), {})] +
                          [lambda d, r=r: ((tensor((3, 5, 2), d, 1), idx([[0, 1], [4, -100], [2, 2]]),
                                            tensor((5,), d, 2, low=0.1), r, -100, 0.2), {}) for r in (0, 1, 2)] + [
                           lambda d: ((tensor((3, 5), d, 1), idx([0, 4, -100]), None, 1, -100, 0.3), {}),
                           lambda d: ((tensor((3, 5), d, 1), tensor((3, 5), d, 2, low=0, high=1)), {}),
                           lambda d: ((tensor((3, 5), d, 1), tensor((3, 5), d, 2, low=0, high=1), tensor((5,), d, 3),
                                       0, -100, 0.1), {})],
    # linalg
    "dot": [lambda d: ((tensor((4,), d, 1), tensor((4,), d, 2)), {}),
            lambda d: ((tensor((4,), d, 1), tensor((3,), d, 2)), {})],
    "vdot": [lambda d: ((tensor((4,), d, 1), tensor((4,), d, 2)), {}),
             lambda d: ((tensor((4,), d, 1).to(ember.complex128), tensor((4,), d, 2).to(ember.complex128) * 1j), {})],
    "mv": [lambda d: ((tensor((3, 4), d, 1, "transposed"), tensor((4,), d, 2)), {})],
    "matmul": [lambda d: ((tensor((4,), d, 1), tensor((4,), d, 2)), {}),
               lambda d: ((tensor((4,), d, 1), tensor((4, 3), d, 2)), {}),
               lambda d: ((tensor((3, 4), d, 1), tensor((4,), d, 2)), {}),
               lambda d: ((tensor((2, 3, 4), d, 1, "transposed"), tensor((3, 5), d, 2)), {}),
               lambda d: ((tensor((2, 3, 4), d, 1), tensor((4,), d, 2)), {}),
               lambda d: ((tensor((4,), d, 1), tensor((2, 4, 3), d, 2)), {}),
               lambda d: ((tensor((2, 1, 3, 4), d, 1), tensor((5, 4, 2), d, 2)), {}),
               lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2)), {})],
    "addmv": [lambda d: ((tensor((3,), d, 1), tensor((3, 4), d, 2), tensor((4,), d, 3)), {"beta": 0.5, "alpha": 2}),
              lambda d: ((ember.full((3,), float("nan"), dtype=getattr(ember, d)), tensor((3, 4), d, 2),
                          tensor((4,), d, 3)),
                         {"beta": 0})],
    "baddbmm": [lambda d: ((tensor((3, 5), d, 1), tensor((2, 3, 4), d, 2), tensor((2, 4, 5), d, 3)), {"alpha": 0.5})],
    "addbmm": [lambda d: ((tensor((3, 5), d, 1), tensor((2, 3, 4), d, 2), tensor((2, 4, 5), d, 3)), {"beta": 2})],
    "outer": [lambda d: ((tensor((3,), d, 1), tensor((4,), d, 2)), {})],
    "ger": [lambda d: ((tensor((3,), d, 1), tensor((4,), d, 2)), {})],
    "addr": [lambda d: ((tensor((3, 4), d, 1), tensor((3,), d, 2), tensor((4,), d, 3)), {"beta": 2, "alpha": 0.5})],
    "inner": [lambda d: ((tensor((3, 4), d, 1), tensor((2, 4), d, 2)), {}),
              lambda d: ((tensor((4,), d, 1), tensor((4,), d, 2)), {}),
              lambda d: ((tensor((), d, 1), tensor((2, 4), d, 2)), {})],
    "kron": [lambda d: ((tensor((2, 3), d, 1), tensor((4, 2), d, 2)), {}),
             lambda d: ((tensor((3,), d, 1), tensor((2, 2), d, 2)), {})],
    "linalg_cross": [lambda d: ((tensor((4, 3), d, 1), tensor((4, 3), d, 2)), {}),
                     lambda d: ((tensor((3, 4), d, 1), tensor((3, 1), d, 2)), {"dim": 0})],
    "cross": [lambda d: ((tensor((4, 3), d, 1), tensor((4, 3), d, 2)), {}),
              lambda d: ((tensor((3, 3), d, 1), tensor((3, 3), d, 2), 0), {})],
    "trace": [lambda d: ((tensor((3, 4), d, 1),), {}), lambda d: ((tensor((3, 4), "int64", 1),), {})],
    "linalg_matrix_power": [lambda d, n=n: ((tensor((3, 3), d, 1), n), {}) for n in (0, 1, 2, 5, -2)],
    "matrix_power": [lambda d: ((tensor((2, 3, 3), d, 1), 3), {})],
    "cholesky": [lambda d: ((ember.eye(3, dtype=getattr(ember, d)) * 2 + 0.1, True), {})],
    "linalg_matmul": [lambda d: ((tensor((2, 3, 4), d, 1), tensor((4, 2), d, 2)), {})],
    "inverse": [lambda d: ((tensor((3, 3), d, 1) + ember.eye(3, dtype=getattr(ember, d)) * 4,), {})],
    "det": [lambda d: ((tensor((3, 3), d, 1),), {})], "slogdet": [lambda d: ((tensor((3, 3), d, 1),), {})],
    # indexing
    "index_add": [lambda d: ((tensor((5, 3), d, 1), 0, idx([0, 4, 0]), tensor((3, 3), d, 2)), {"alpha": 2}),
                  lambda d: ((tensor((3, 5), d, 1), 1, idx([1, 2]), tensor((3, 2), d, 2)), {})],
    "index_copy": [lambda d: ((tensor((5, 3), d, 1), 0, idx([0, 4, 1]), tensor((3, 3), d, 2)), {})],
    "index_fill.int_Scalar": [lambda d: ((tensor((3, 5), d, 1), 1, idx([0, 3]), -1.5), {})],
    "index_fill.int_Tensor": [lambda d: ((tensor((3, 5), d, 1), 0, idx([2]), tensor((), d, 2)), {})],
    "masked_fill.Scalar": [lambda d: ((tensor((3, 4), d, 1, "transposed"), tensor((4,), "bool", 2), 7), {})],
    "masked_fill.Tensor": [lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), "bool", 2), tensor((), d, 3)), {})],
    "take": [lambda d: ((tensor((3, 4), d, 1, "transposed"), idx([[0, 11], [5, 3]])), {})],
    "take_along_dim": [lambda d: ((tensor((3, 4), d, 1), idx([[0], [3], [1]]), 1), {}),
                       lambda d: ((tensor((3, 4), d, 1), idx([2, 7])), {})],
    "put": [lambda d: ((tensor((3, 4), d, 1), idx([0, 11, 5]), tensor((3,), d, 2)), {}),
            lambda d: ((tensor((3, 4), d, 1), idx([1, 1]), tensor((2,), d, 2), True), {})],
    "argwhere": [lambda d: ((ember.tensor([[0.0, 1.5], [2.0, 0.0]]).to(getattr(ember, d)),), {})],
    "nonzero_numpy": [lambda d: ((ember.tensor([[0.0, 1.5], [2.0, 0.0]]).to(getattr(ember, d)),), {})],
    "scatter.value_reduce": [lambda d, r=r: ((tensor((3, 4), d, 1), 1, idx([[0, 1], [3, 3], [2, 0]]), 2.0),
                                             {"reduce": r})
                             for r in ("add", "multiply")],
    "scatter.reduce": [lambda d, r=r: ((tensor((3, 4), d, 1), 0, idx([[0, 1], [2, 0]]), tensor((2, 2), d, 2)),
                                       {"reduce": r})
                       for r in ("add", "multiply")],
    # creation
    "zeros": [lambda d: (([2, 3],), {"dtype": getattr(ember, d)}), lambda d: (([0, 2],), {})],
    "ones": [lambda d: (([2, 3],), {"dtype": getattr(ember, d)}), lambda d: (([3],), {})],
    "zeros_like": [lambda d: ((tensor((3, 4), d, 1, "transposed"),), {}),
                   lambda d: ((tensor((3, 4), d),), {"dtype": ember.int64})],
    "ones_like": [lambda d: ((tensor((3, 4), d, 1, "transposed"),), {})],
    "empty_like": [lambda d: ((tensor((3, 4), d, 1, "transposed"),), {}),
                   lambda d: ((tensor((3, 4), d, 1, "broadcast"),), {})],
    "new_zeros": [lambda d: ((tensor((3,), d), [2, 2]), {})],
    "new_ones": [lambda d: ((tensor((3,), d), [2]), {"dtype": ember.int64})],
    "new_full": [lambda d: ((tensor((3,), d), [2, 1], 2.5), {})],
    "new_empty": [lambda d: ((tensor((3,), d), [2, 3]), {})],
    "new_empty_strided": [lambda d: ((tensor((3,), d), [2, 3], [1, 2]), {})],
    "arange": [lambda d: ((5,), {}), lambda d: ((4.5,), {"dtype": getattr(ember, d)})],
    "arange.start": [lambda d: ((1, 7), {}), lambda d: ((-1.5, 2.0), {})],
    "linspace": [lambda d, n=n: ((0.0, 1.0, n), {"dtype": getattr(ember, d)}) for n in (0, 1, 2, 7)] +
                [lambda d: ((-3, 10, 6), {"dtype": ember.int64}), lambda d: ((2.0, -1.0, 5), {})],
    "logspace": [lambda d: ((0.0, 2.0, 5), {"dtype": getattr(ember, d)}), lambda d: ((-1, 1, 4, 2.0), {})],
    "eye": [lambda d: ((3,), {"dtype": getattr(ember, d)}), lambda d: ((0,), {})],
    "eye.m": [lambda d: ((2, 4), {}), lambda d: ((3, 2), {"dtype": ember.bool})],
    "rand_like": [lambda d: ((tensor((3, 4), d, 1),), {}), lambda d: ((tensor((3, 4), d, 1, "transposed"),), {})],
    "randn_like": [lambda d: ((tensor((3, 4), d, 1, "transposed"),), {})],
    "fill_.Scalar": [lambda d: ((tensor((3, 4), d, 1), 2.5), {})],
    "fill_.Tensor": [lambda d: ((tensor((3, 4), d, 1, "transposed"), tensor((), d, 2)), {})],
    "zero_": [lambda d: ((tensor((3, 4), d, 1),), {})],
    "zero": [lambda d: ((tensor((3, 4), d, 1),), {})],
    "float_power_.Tensor": [lambda d: ((tensor((3, 4), d, 1, low=0.5), tensor((3, 4), d, 2)), {})],
}
NO_VALUES = {"empty_like", "new_empty", "new_empty_strided"}
STRIDES = {"zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "new_empty_strided", "fill_.Tensor"}
SAMPLED = set(SAMPLES) | {"dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_decomposition_matches_eager(name):
    outcomes = []
    for build in SAMPLES[name]:
        for dtype in (F32, F64):
            outcomes.append(check_sample(name, lambda: build(dtype), strides=name in STRIDES,
                                         values=name not in NO_VALUES))
        check_grads(name, lambda: build(F64), frozen=RUNNING_STATS.get(name, ()))
    assert "compared" in outcomes


RUNNING_STATS = {"batch_norm": (3, 4), "instance_norm": (3, 4)}     # buffers: never require grad


@pytest.mark.parametrize("name", ["nll_loss", "cross_entropy"])
def test_every_target_ignored_gives_torchs_gradient(name):
    """mean over no kept target is nan; its gradient is zero in PyTorch (eager ember gave nan)."""
    import torch
    x = np.random.default_rng(0).random((3, 5))
    t = torch.tensor(x, requires_grad=True)
    getattr(torch.nn.functional, name)(t, torch.tensor([1, 1, 1]), ignore_index=1).backward()
    for fn in (getattr(ember.nn.functional, name),
               lambda a, b, **k: TABLE[op_of(name.replace("nll_loss", "nll_loss_nd").replace(
                   "cross_entropy", "cross_entropy_loss"))](a, b, None, 1, k["ignore_index"])):
        e = ember.tensor(x, requires_grad=True)
        fn(e, idx([1, 1, 1]), ignore_index=1).backward()
        np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())


def test_nll_loss_target_out_of_bounds_raises():
    """eager checks the targets (data) and raises IndexError; the decomposition cannot read data: it
    relies on gather's bounds check, which raises too (as PyTorch's decomposition relies on the
    device's gather)."""
    for name in ("nll_loss_nd", "cross_entropy_loss"):
        args = (tensor((3, 5), F64, 1), idx([0, 5, 2]))
        with pytest.raises(IndexError, match="out of bounds"):
            ember.ops.registry.OPERATORS["aten::" + name](*args)
        with pytest.raises(RuntimeError, match="out of bounds"):
            TABLE[op_of(name)](*args)


@pytest.mark.parametrize("name", ["dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"])
@pytest.mark.parametrize("p,train", [(0.3, True), (0.0, True), (1.0, True), (0.5, False), (1.5, True)])
def test_dropout_draws_eagers_mask_under_the_same_seed(name, p, train):
    for dtype in (F32, F64):
        for seed in (0, 7):
            check_sample(name, lambda: ((tensor((4, 3, 5), dtype, 1), p, train), {}), seed=seed)
    check_grads(name, lambda: ((tensor((4, 3, 5), F64, 1), p, train), {}))


def test_dropout_masks_differ_between_seeds():
    """The comparison above could pass with a constant mask: two seeds must give two masks."""
    fn = TABLE[op_of("dropout")]
    x = ember.ones(200, dtype=ember.float64)
    ember.manual_seed(0)
    a = fn(x, 0.5, True)
    ember.manual_seed(1)
    b = fn(x, 0.5, True)
    assert not np.array_equal(a.numpy(), b.numpy()) and 0 < (a.numpy() == 0).sum() < 200


def test_batch_norm_writes_running_stats_as_eager():
    """Training-mode batch_norm's running mean/var (the unbiased variance) updated in place, decomposed
    and traced: the graph writes them with copy_, replaying updates them again."""
    from ember._functorch import make_fx
    rm, rv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    x = x4(F64, 3)
    out = TABLE[op_of("batch_norm")](x, None, None, rm, rv, True, 0.1, 1e-5, False)
    erm, erv = ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64)
    expected = ember.ops.aten.batch_norm.default(x, None, None, erm, erv, True, 0.1, 1e-5, False)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-10)
    np.testing.assert_allclose(rm.numpy(), erm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), erv.numpy(), rtol=1e-12)
    gm = make_fx(lambda t, m, v: ember.ops.aten.batch_norm.default(t, None, None, m, v, True, 0.1, 1e-5, False),
                 decomposition_table=TABLE)(x, ember.zeros(3, dtype=ember.float64), ember.ones(3, dtype=ember.float64))
    assert "copy_" in {getattr(n.target, "name", "")[6:] for n in gm.graph.nodes}


# generated entries: derived in-place / out= overloads, in-place rows, composites
GENERATED = {
    "add_.Tensor": lambda d: ((tensor((3, 4), d, 1), tensor((4,), d, 2)), {"alpha": 2}),
    "mul.out": lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2)), {"out": tensor((3, 4), d, 3)}),
    "sigmoid_": lambda d: ((tensor((3, 4), d, 1, "transposed"),), {}),
    "leaky_relu_": lambda d: ((tensor((3, 4), d, 1), 0.3), {}),
    "gelu.out": lambda d: ((tensor((3, 4), d, 1),), {"out": tensor((3, 4), d, 3)}),
    "max.dim_max": lambda d: ((tensor((3, 4), d, 1), 1), {"values": tensor((3,), d), "indices": idx([0, 0, 0])}),
    "sum.IntList_out": lambda d: ((tensor((3, 4), d, 1), [1]), {"out": tensor((3,), d)}),
    "cumsum_": lambda d: ((tensor((3, 4), d, 1), 1), {}),
    "clamp_": lambda d: ((tensor((3, 4), d, 1), -0.5, 0.5), {}),
    "addcmul_": lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), d, 2), tensor((3, 4), d, 3)), {"value": 3}),
    "index_add_": lambda d: ((tensor((5, 3), d, 1), 0, idx([0, 4]), tensor((2, 3), d, 2)), {}),
    "masked_fill_.Scalar": lambda d: ((tensor((3, 4), d, 1), tensor((3, 4), "bool", 2), 1.5), {}),
    "scatter_add_": lambda d: ((tensor((3, 4), d, 1), 1, idx([[0, 1], [3, 3], [2, 0]]), tensor((3, 2), d, 2)), {}),
    "index_put_": lambda d: ((tensor((3, 4), d, 1), [idx([0, 2])], tensor((4,), d, 2)), {}),
    "dropout_": lambda d: ((tensor((3, 4), d, 1), 0.4, True), {}),
    "reshape": lambda d: ((tensor((3, 4), d, 1, "transposed"), [2, 6]), {}),
    "flatten.using_ints": lambda d: ((x4(d, 1), 1, 2), {}),
    "chunk": lambda d: ((tensor((3, 4), d, 1), 2, 1), {}),
    "movedim.int": lambda d: ((x4(d, 1), 0, -1), {}),
    "narrow": lambda d: ((tensor((3, 4), d, 1, "transposed"), 1, 1, 2), {}),
    "tensor_split.sections": lambda d: ((tensor((3, 5), d, 1), 3, 1), {}),
    "hstack": lambda d: (([tensor((3, 4), d, 1), tensor((3, 2), d, 2)],), {}),
    "tile": lambda d: ((tensor((3, 4), d, 1), [2, 1, 2]), {}),
    "rot90": lambda d: ((tensor((3, 4), d, 1), 3, [0, 1]), {}),
    "diagflat": lambda d: ((tensor((2, 2), d, 1), -1), {}),
    "unflatten.int": lambda d: ((tensor((3, 4), d, 1), 1, [2, -1]), {}),
    "broadcast_to": lambda d: ((tensor((4,), d, 1), [3, 4]), {}),
    "atleast_3d": lambda d: ((tensor((4,), d, 1),), {}),
    "detach": lambda d: ((tensor((3, 4), d, 1),), {}),
}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_entry(name):
    for dtype in (F32, F64):
        assert check_sample(name, lambda: GENERATED[name](dtype), strides=True,
                            trace=not name.endswith("_") and "out" not in name) == "compared"


@pytest.mark.parametrize("name,make", [
    ("add_.Tensor", lambda: ((tensor((3, 4), "int64"), tensor((3, 4), F64)), {})),          # float into int
    ("mul.out", lambda: ((tensor((3, 4), F64), tensor((3, 4), F64)), {"out": tensor((3, 4), "int64")})),
    ("add_.Tensor", lambda: ((tensor((4,), F64), tensor((3, 4), F64)), {})),               # would broadcast self
    ("max.dim_max", lambda: ((tensor((3, 4), F64), 1), {"values": tensor((3,), F32), "indices": idx([0, 0, 0])})),
])
def test_generated_entry_refuses_as_eager(name, make):
    assert check_sample(name, make) == "raises"
