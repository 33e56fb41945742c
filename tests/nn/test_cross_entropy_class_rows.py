"""nll's common case (ops/cpu/loss.py `_nll`: [N, C] log-probabilities, every target a valid class,
no class weights, an ignore_index no class can equal) computed in a few NumPy calls: the same bits as
the general code (reached by an ignore_index that is a class no target uses), values as PyTorch's,
and the general code's errors and edge cases where the shortcut must not apply."""
import numpy as np
import pytest
import torch

import ember

F = {"ember": ember.nn.functional, "torch": torch.nn.functional}


def _loss(lib, fn, x, t, **kw):
    mod = ember if lib == "ember" else torch
    return getattr(F[lib], fn)(mod.from_numpy(x.copy()), mod.from_numpy(t.copy()), **kw).numpy()


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("tdtype", [np.int64, np.uint8])
def test_shortcut_equals_the_general_code_and_torch(fn, reduction, dtype, tdtype):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((67, 6)) * 5).astype(dtype)
    t = rng.integers(0, 5, 67).astype(tdtype)          # class 5 is never a target
    fast = _loss("ember", fn, x, t, reduction=reduction)
    general = _loss("ember", fn, x, t, reduction=reduction, ignore_index=5)
    np.testing.assert_array_equal(fast, general)
    if tdtype is np.int64:                             # torch: int64 class targets (uint8 too, in nll)
        np.testing.assert_allclose(fast, _loss("torch", fn, x, t, reduction=reduction), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("bad", [-1, 6, 1000])
def test_out_of_range_target_still_raises_torchs_error(bad):
    x = np.zeros((4, 6), np.float32)
    t = np.array([0, 1, bad, 2])
    with pytest.raises(IndexError) as theirs:
        _loss("torch", "cross_entropy", x, t)
    with pytest.raises(type(theirs.value), match="out of bounds"):
        _loss("ember", "cross_entropy", x, t)


def test_ignored_targets_weights_and_empty_batches_match_torch():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    t = np.array([0, 1, 2, 3, -100, 1, -100, 0])
    w = rng.random(4).astype(np.float32)
    cases = [(t, dict()), (t, dict(reduction="none")), (np.where(t < 0, 1, t), dict(ignore_index=1))]
    for targets, kw in cases:
        np.testing.assert_allclose(_loss("ember", "cross_entropy", x, targets, **kw),
                                   _loss("torch", "cross_entropy", x, targets, **kw), rtol=1e-6)
    ours = ember.nn.functional.cross_entropy(ember.from_numpy(x), ember.from_numpy(t), weight=ember.from_numpy(w))
    theirs = torch.nn.functional.cross_entropy(torch.from_numpy(x), torch.from_numpy(t), weight=torch.from_numpy(w))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    empty_x, empty_t = np.zeros((0, 4), np.float32), np.zeros(0, np.int64)
    for reduction in ("mean", "sum", "none"):
        np.testing.assert_array_equal(_loss("ember", "cross_entropy", empty_x, empty_t, reduction=reduction),
                                      _loss("torch", "cross_entropy", empty_x, empty_t, reduction=reduction))


def test_non_finite_logits_propagate_as_in_torch():
    x = np.array([[np.inf, 0, 1], [0, np.nan, 1], [-np.inf, 0, 0]], np.float32)
    t = np.array([0, 2, 0])
    with np.errstate(all="ignore"):
        ours = _loss("ember", "cross_entropy", x, t, reduction="none")
    np.testing.assert_array_equal(ours, _loss("torch", "cross_entropy", x, t, reduction="none"))
