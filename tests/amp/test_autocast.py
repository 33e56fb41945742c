"""ember.autocast against torch.autocast on the CPU (the lists and the mechanism are the same on
CUDA, where tests/cuda runs them): which ops change dtype, values, gradients, nesting."""
import numpy as np
import pytest
import torch

import ember
from oracle import assert_same

RNG = np.random.default_rng(0)
A, B = RNG.standard_normal((4, 8)).astype(np.float32), RNG.standard_normal((8, 3)).astype(np.float32)
IMG, W = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32), RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)

PROGRAMS = {
    "mm": lambda lib, a, b: lib.mm(a, b),
    "matmul @": lambda lib, a, b: a @ b,
    "bmm": lambda lib, a, b: lib.bmm(a[None], b[None]),
    "addmm": lambda lib, a, b: lib.addmm(lib.ones(3), a, b),
    "linear": lambda lib, a, b: lib.nn.functional.linear(a, b.t()),
    "conv2d": lambda lib, a, b: lib.nn.functional.conv2d(lib.tensor(IMG), lib.tensor(W), padding=1),
    "add stays": lambda lib, a, b: a + 1,
    "matmul then add": lambda lib, a, b: (a @ b) + a[:, :3],
    "mse_loss in float32": lambda lib, a, b: lib.nn.functional.mse_loss((a @ b), lib.zeros(4, 3)),
    "float64 is not cast": lambda lib, a, b: a.double() @ b.double(),
    "int stays": lambda lib, a, b: lib.arange(6).reshape(2, 3) @ lib.arange(6).reshape(3, 2),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_autocast_ops_like_torch(name, dtype):
    fn = PROGRAMS[name]
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        want = fn(torch, torch.tensor(A), torch.tensor(B))
    with ember.autocast("cpu", dtype=getattr(ember, dtype)):
        got = fn(ember, ember.tensor(A), ember.tensor(B))
    assert_same(got, want, rtol=2e-2, atol=2e-2)


def test_gradients_come_back_in_the_leaves_dtype():
    grads = []
    for lib in (torch, ember):
        a = lib.tensor(A, requires_grad=True)
        b = lib.tensor(B, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            y = (a @ b).float().sum()
        y.backward()
        assert a.grad.dtype == lib.float32
        grads.append((a.grad, b.grad))
    for e, t in zip(grads[1], grads[0]):
        assert_same(e, t, rtol=2e-2, atol=2e-2)


def test_nesting_disabling_and_decorator():
    for lib in (torch, ember):
        a, b = lib.tensor(A), lib.tensor(B)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            assert (a @ b).dtype == lib.bfloat16
            with lib.autocast("cpu", enabled=False):
                assert (a @ b).dtype == lib.float32
            assert (a @ b).dtype == lib.bfloat16
        assert (a @ b).dtype == lib.float32

        @lib.autocast("cpu", dtype=lib.bfloat16)
        def product(x, y):
            return x @ y
        assert product(a, b).dtype == lib.bfloat16


def test_errors_like_torch():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError):
            lib.autocast("nope")
        with pytest.raises(ValueError):
            lib.autocast(3)
    assert ember.amp.is_autocast_available("cuda") and ember.amp.is_autocast_available("cpu")
