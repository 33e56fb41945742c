"""The op oracle's own helpers for the GPU run: the tie-insensitive comparison
(oracle.assert_same_up_to_ties), used where PyTorch's CUDA sort orders equal elements in no fixed
way, accepts any order of ties and nothing else; `check_as_2_13` / `torch_raises` check ember
against PyTorch 2.13's behaviour where the device's older PyTorch differs, and nothing looser."""
import numpy as np
import pytest
import torch

import ember
from oracle import assert_same_up_to_ties, make


def _pair(arr):
    return ember.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


@pytest.mark.parametrize("dim", [0, -1])
def test_ties_reordered_are_accepted(dim):
    ex, tx = _pair(make((4, 6), "int64", low=0, high=2))   # many ties
    e, t = ember.sort(ex, dim=dim, stable=True), torch.sort(tx, dim=dim, stable=True)
    # torch's indices with the ties of every slice in reverse order: another valid sort
    flipped = torch.sort(tx.flip(dim), dim=dim, stable=True)
    n = tx.shape[dim] - 1
    t_other = (flipped.values, n - flipped.indices)
    assert not torch.equal(t_other[1], t.indices)        # (the input does have ties to reorder)
    assert_same_up_to_ties(e, t_other, ex, tx, dim)
    assert_same_up_to_ties(e.indices, t_other[1], ex, tx, dim)    # argsort: indices alone


def test_wrong_values_or_indices_are_caught():
    ex, tx = _pair(make((3, 5), "float64"))
    e, t = ember.sort(ex, 1), torch.sort(tx, 1)
    assert_same_up_to_ties(e, t, ex, tx, 1)
    repeated = e.indices.clone()
    repeated[:, 1] = repeated[:, 0]                       # an index twice, one missing
    with pytest.raises(AssertionError):
        assert_same_up_to_ties((e.values, repeated), t, ex, tx, 1)
    with pytest.raises(AssertionError):                   # indices that gather other values
        assert_same_up_to_ties(e.indices.flip(1), t.indices, ex, tx, 1)
    with pytest.raises(AssertionError):                   # values out of order
        assert_same_up_to_ties((e.values.flip(1), e.indices), t, ex, tx, 1)
    with pytest.raises(AssertionError):                   # another index dtype
        assert_same_up_to_ties(e.indices.int(), t.indices, ex, tx, 1)


def test_nan_and_topk():
    arr = make((4, 6), "float64")
    arr.reshape(-1)[::3] = np.nan
    ex, tx = _pair(arr)
    assert_same_up_to_ties(ember.topk(ex, 3, 1), torch.topk(tx, 3, 1), ex, tx, 1)
    assert_same_up_to_ties(ember.argsort(ex, 0, True), torch.argsort(tx, 0, True), ex, tx, 0)


# ---------------------------------------------------------------------------------------
# check_as_2_13 / torch_raises: ember against PyTorch 2.13's behaviour on an older oracle
# ---------------------------------------------------------------------------------------
def test_check_as_2_13_on_an_older_oracle_checks_ember_alone():
    from oracle import check_as_2_13
    x = make((3, 4))
    err = check_as_2_13(lambda lib, x: x.rot90(1, (0, 4)), x, raises=IndexError, oracle_is_current=False)
    assert isinstance(err, IndexError)
    with pytest.raises(pytest.fail.Exception):          # ember does not raise
        check_as_2_13(lambda lib, x: x.rot90(1, (0, 1)), x, raises=IndexError, oracle_is_current=False)
    with pytest.raises(RuntimeError):                    # ember raises another type: not accepted
        check_as_2_13(lambda lib, x: x.view(5), x, raises=IndexError, oracle_is_current=False)

    def modifies_then_fails(lib, x):
        x.add_(1)
        raise IndexError("late")
    with pytest.raises(AssertionError, match="input modified"):
        check_as_2_13(modifies_then_fails, x, raises=IndexError, oracle_is_current=False)


def test_check_as_2_13_on_a_current_oracle_is_check():
    from oracle import check_as_2_13
    with pytest.raises(AssertionError):                  # a real comparison with torch
        check_as_2_13(lambda lib, x: x + (1 if lib is ember else 2), make((3,)), raises=IndexError,
                      oracle_is_current=True)


def test_torch_raises_probes_the_installed_torch():
    from oracle import torch_raises
    assert torch_raises(lambda: torch.zeros(2).view(3), RuntimeError)
    assert not torch_raises(lambda: torch.zeros(2).view(2), RuntimeError)
    assert not torch_raises(lambda: torch.zeros(2).view(3), IndexError)   # another type: not this behaviour


def test_default_device_context_leaves_no_torch_mode_behind():
    # torch.set_default_device("cpu") installs a TorchFunctionMode: a leftover one changed every later
    # torch warning's location and dynamo's graphs in the same worker (43 failures in a full run)
    import torch
    from oracle import _default_device
    before = getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None)
    with _default_device("cpu"):
        assert torch.get_default_device() == torch.device("cpu")
    assert getattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context", None) is before
