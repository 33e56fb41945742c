"""Generated bindings: argument checking, out= and in-place semantics, and that the fast path
and the full dispatcher give the same results."""
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.utils._python_dispatch import TorchDispatchMode
from oracle import check, make


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.add(x, "a"),
    lambda lib, x: lib.add("a", x),
    lambda lib, x: lib.add(x),
    lambda lib, x: lib.add(x, x, beta=2),
    lambda lib, x: lib.sum(x, dim="0"),
    lambda lib, x: lib.sum(x, 0, keepdim=1),
    lambda lib, x: x.view("a", 2),
    lambda lib, x: lib.exp(x, x),
    lambda lib, x: lib.zeros(2, dtype="float32x"),
])
def test_argument_errors_match_torch_types(call):
    check(call, make((2, 3)))


def test_argument_error_names_op_and_argument():
    x = ember.zeros(2)
    with pytest.raises(TypeError, match=r"add\(\): argument 'other' \(position 2\) must be Tensor, not str"):
        ember.add(x, "a")


@pytest.mark.parametrize("dtype_in, dtype_out", [("float32", "float64"), ("int32", "int64"), ("float32", "int64"),
                                                  ("int64", "bool"), ("float64", "float16")])
def test_out_dtype_rules(dtype_in, dtype_out):
    def fn(lib, x):
        out = lib.zeros(2, 3, dtype=getattr(lib, dtype_out))
        r = lib.add(x, x, out=out)
        return r, out
    check(fn, make((2, 3), dtype_in))


def test_out_resizes_with_a_warning_like_torch():
    for lib in (torch, ember):
        out = lib.zeros(5)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lib.mul(lib.ones(2, 3), 2, out=out)
        assert tuple(out.shape) == (2, 3) and out.tolist() == [[2.0] * 3] * 2
        assert any("resized" in str(x.message) for x in w)
        empty = lib.zeros(0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            lib.mul(lib.ones(2), 2, out=empty)


@pytest.mark.parametrize("call", [
    lambda lib, x, y: x.add_(y),              # broadcast shape != self shape
    lambda lib, x, y: y.add_(0.5),           # float result into an int tensor
    lambda lib, x, y: y.mul_(x[0]),
])
def test_in_place_errors_leave_self_unchanged(call):
    check(call, make((3,)), make((2, 3), "int64"))


class _Passthrough(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count = getattr(self, "count", 0) + 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("program", [
    lambda lib, x, y: (x + y * 2 - 1).exp().sum(dim=0),
    lambda lib, x, y: lib.where(x > y, x, y).t().reshape(-1)[1:5],
    lambda lib, x, y: lib.softmax(x @ y.t(), dim=-1).max(dim=1).values,
])
def test_fast_path_and_dispatcher_agree(program):
    x, y = make((3, 4), seed=1), make((3, 4), seed=2)
    ex, ey = ember.from_numpy(x), ember.from_numpy(y)
    fast = program(ember, ex, ey)
    mode = _Passthrough()
    with mode:
        slow = program(ember, ex, ey)
    assert mode.count > 3
    np.testing.assert_array_equal(fast.numpy(), slow.numpy())
    np.testing.assert_allclose(fast.numpy(), program(torch, torch.from_numpy(x), torch.from_numpy(y)).numpy(),
                               rtol=1e-5, atol=1e-6)


def test_overload_packets_and_schemas():
    add = ember.ops.aten.add
    assert str(add.Tensor.schema) == str(torch.ops.aten.add.Tensor._schema).replace("aten::", "")
    assert str(add.out.schema) == str(torch.ops.aten.add.out._schema).replace("aten::", "")
    assert str(ember.ops.aten.add_.Tensor.schema) == str(torch.ops.aten.add_.Tensor._schema).replace("aten::", "")
    x = ember.ones(2)
    assert add(x, x).tolist() == [2.0, 2.0]
    assert ember.ops.aten.add.Tensor(x, x, alpha=3).tolist() == [4.0, 4.0]
