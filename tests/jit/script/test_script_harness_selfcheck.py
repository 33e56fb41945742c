"""The acceptance harness must catch what it claims to compare: a program suite that passes is only
evidence if a wrong value, dtype, shape, container kind, scalar type, requires_grad flag or
exception makes the comparison fail. Also checks the torch oracle path and the value trees the
fresh process exchanges (round trip through _fresh_process_runner's encode/decode)."""
import os
import tempfile

import numpy as np
import pytest
import torch

import ember
import script_harness as h
from _fresh_process_runner import decode, encode


def _t(values, dtype="float32", lib=ember):
    return lib.from_numpy(np.array(values, dtype=dtype))


@pytest.mark.parametrize("got,want", [
    (_t([1.0, 2.0]), _t([1.0, 2.5])),                       # value
    (_t([1.0, 2.0], "float64"), _t([1.0, 2.0])),            # dtype
    (_t([[1.0, 2.0]]), _t([1.0, 2.0])),                     # shape
    (_t([1, 2], "int64"), _t([1, 3], "int64")),             # exact ints
    ((_t([1.0]),), [_t([1.0])]),                            # tuple vs list
    ((_t([1.0]),), (_t([1.0]), _t([1.0]))),                 # length
    (1, 1.0),                                               # int vs float
    (True, 1),                                              # bool vs int
    (1.0, 1.001),                                           # float value
    ("a", "b"),                                             # str
    (None, 0),                                              # None
    (_t([1.0]), 1.0),                                       # tensor vs scalar
])
def test_assert_same_catches_differences(got, want):
    with pytest.raises(AssertionError):
        h.assert_same(got, want, "x", 1e-5, 1e-6)


def test_assert_same_checks_requires_grad_and_accepts_equal():
    a = _t([1.0, 2.0])
    b = _t([1.0, 2.0]).requires_grad_(True)
    with pytest.raises(AssertionError):
        h.assert_same(a, b, "x", 1e-5, 1e-6)
    h.assert_same((a, [1, 2.0, None, "s"]), (_t([1.0, 2.0]), [1, 2.0, None, "s"]), "x", 1e-5, 1e-6)
    h.assert_same(_t([1.0, 2.0], lib=torch), a, "x", 1e-5, 1e-6)  # across libraries: dtype by name


def test_exception_checks():
    h.same_exception(ValueError("bad 3 here"), ValueError("bad 3"), "x")
    with pytest.raises(AssertionError):
        h.same_exception(RuntimeError("bad 3"), ValueError("bad 3"), "x")
    with pytest.raises(AssertionError):
        h.same_exception(ValueError("other"), ValueError("bad 3"), "x")
    with pytest.raises(AssertionError):  # a script run that returns where eager raised
        h.assert_outcome(("ok", 1, []), ("exc", ValueError("v")), "x", 1e-5, 1e-6, h.same_exception)
    with pytest.raises(AssertionError):  # and one that raises where eager returned
        h.assert_outcome(("exc", ValueError("v")), ("ok", 1, []), "x", 1e-5, 1e-6, h.same_exception)


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_torch_oracle_exception_text():
    @torch.jit.script
    def f(x):
        if x.sum() > 0:
            raise ValueError("positive {}".format(x.dim()))
        return x
    with pytest.raises(torch.jit.Error) as info:
        f(torch.ones(2))
    h.torch_exception(info.value, ValueError("positive 1"), "x")
    with pytest.raises(AssertionError):
        h.torch_exception(info.value, ValueError("positive 2"), "x")


def test_fresh_process_value_trees_round_trip():
    folder = tempfile.mkdtemp(prefix="ember_script_tree_")
    value = (_t([1.0, 2.0]), [_t([3], "int64"), None], {"k": 2.5}, True, 3, "s",
             _t([[True, False]], "bool"), _t(1.5))
    tree = encode(value, folder, "v", ember, [0])
    assert all(os.path.exists(os.path.join(folder, f"v_{i}.npy")) for i in range(1, 5))
    h.assert_same(decode(tree, folder, ember), value, "round trip", 0.0, 0.0)
    # the parent's encoder (NumPy inputs) speaks the same format
    inputs = (np.ones((2, 2), "float32"), [np.arange(3)], None, 2, 0.5, False)
    back = decode(h._encode(inputs, folder, "in", [0]), folder, ember)
    h.assert_same(back, h.to_lib(inputs, ember), "inputs", 0.0, 0.0)


def _double_if_positive(x):
    if x.sum() > 0:
        return x * 2
    return x


def test_fresh_process_stage_compares_for_real():
    """The whole save -> fresh interpreter -> load -> run path, and that it catches a wrong result."""
    prog = h.P(_double_if_positive, h.signed((3,)))
    scope = {"__name__": "selfcheck_fresh_scope", "PROGRAMS": [prog], "_double_if_positive": _double_if_positive}
    eager = h.eager_outcomes(prog, scope)
    h._stage_fresh(prog, scope, eager, [prog])
    wrong = [("ok", out[1] + 1e-3, out[2]) for out in eager]
    with pytest.raises(AssertionError):
        h._stage_fresh(prog, scope, wrong, [prog])
