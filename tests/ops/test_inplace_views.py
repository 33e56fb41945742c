"""In-place view ops: t_, transpose_, swapaxes_, swapdims_, squeeze_ (three overloads) and
unsqueeze_ change the tensor's own shape and strides (same storage; other views keep theirs),
bump its version, record PyTorch's grad_fn (TBackward1, SqueezeBackward3/4/5 ...), and raise
PyTorch's errors. Every case runs in ember and PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from oracle import check, check_as_2_13, make, torch_raises

OPS = {
    "t_ 2-d": (lambda x: x.t_(), (2, 3)),
    "t_ 1-d": (lambda x: x.t_(), (4,)),
    "t_ 0-d": (lambda x: x.t_(), ()),
    "t_ 3-d": (lambda x: x.t_(), (2, 3, 4)),
    "transpose_": (lambda x: x.transpose_(0, 2), (2, 3, 4)),
    "transpose_ negative": (lambda x: x.transpose_(-1, 0), (2, 3)),
    "transpose_ same dim": (lambda x: x.transpose_(1, 1), (2, 3)),
    "transpose_ out of range": (lambda x: x.transpose_(0, 5), (2, 3)),
    "swapaxes_": (lambda x: x.swapaxes_(0, 1), (2, 3)),
    "swapdims_": (lambda x: x.swapdims_(1, 0), (2, 3)),
    "squeeze_": (lambda x: x.squeeze_(), (2, 1, 3, 1)),
    "squeeze_ dim": (lambda x: x.squeeze_(1), (2, 1, 3)),
    "squeeze_ dim not 1": (lambda x: x.squeeze_(0), (2, 1, 3)),
    "squeeze_ dims": (lambda x: x.squeeze_((1, 3)), (2, 1, 3, 1)),
    "squeeze_ 0-d": (lambda x: x.squeeze_(0), ()),
    "squeeze_ out of range": (lambda x: x.squeeze_(5), (2, 3)),
    "unsqueeze_": (lambda x: x.unsqueeze_(1), (2, 3)),
    "unsqueeze_ end": (lambda x: x.unsqueeze_(-1), (2, 3)),
    "unsqueeze_ 0-d": (lambda x: x.unsqueeze_(0), ()),
    "unsqueeze_ out of range": (lambda x: x.unsqueeze_(4), (2, 3)),
}


@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("name", sorted(OPS))
def test_inplace_view_result(name, noncontig):
    fn, shape = OPS[name]

    def prog(lib, x):
        r = fn(x)
        assert r is x
        return x, x.stride(), x.shape
    check(prog, make(shape), noncontig=noncontig and len(shape) > 0, check_stride=True)


@pytest.mark.parametrize("name", sorted(set(OPS) - {"t_ 3-d"}))  # (PyTorch's meta t_ raises AssertionError)
def test_meta(name):
    fn, shape = OPS[name]
    program = lambda lib, x: (lambda m: (fn(m), m.shape, m.stride())[1:])(x.to("meta"))  # noqa: E731
    if name in _META_DIM_CHECK_2_13:    # an older PyTorch's meta kernel asserts instead (the GPU machine's)
        check_as_2_13(program, make(shape), raises=IndexError, oracle_is_current=torch_raises(
            lambda: fn(torch.ones(shape, device="meta")), IndexError))
        return
    check(program, make(shape))


# in-place views whose meta kernel raises IndexError for a bad dim from PyTorch 2.13 on (AssertionError before)
_META_DIM_CHECK_2_13 = {"transpose_ out of range", "unsqueeze_ out of range"}


@pytest.mark.parametrize("name", ["t_ 2-d", "transpose_", "squeeze_", "squeeze_ dims", "unsqueeze_", "swapaxes_"])
def test_shares_storage_and_bumps_version(name):
    fn, shape = OPS[name]

    def prog(lib, x):
        flat = x.view(-1)
        before = x._version
        ptr = x.data_ptr()
        fn(x)
        x.mul_(2)  # writes through the new view reach the old ones
        return flat, x._version - before, x.data_ptr() == ptr, flat.shape
    check(prog, make(shape))


@pytest.mark.parametrize("name", ["t_ 2-d", "transpose_", "swapaxes_", "swapdims_", "squeeze_", "squeeze_ dim",
                                  "squeeze_ dims", "unsqueeze_"])
def test_autograd(name):
    fn, shape = OPS[name]

    def prog(lib, a, w):
        a = a.detach().requires_grad_(True)
        b = a * 2
        fn(b)
        (b * w.reshape(b.shape)).sum().backward()
        return b.grad_fn.name(), a.grad, b
    base = make(shape, "float64")
    check(prog, base, make((int(np.prod(shape)),), "float64"))


@pytest.mark.parametrize("prog", [
    lambda lib: lib.ones(2, 3, requires_grad=True).t_(),                       # a leaf
    lambda lib: lib.ones(2, 3, requires_grad=True)[0].unsqueeze_(0),           # a view of a leaf
    lambda lib: lib.ones(2, 3, 4).t_(),
])
def test_errors(prog):
    check(lambda lib: prog(lib))


def test_overloads_resolve_like_pytorch():
    check(lambda lib, x: [x.clone().squeeze_().shape, x.clone().squeeze_(1).shape, x.clone().squeeze_((1,)).shape,
                          x.clone().squeeze_(dim=1).shape], make((2, 1, 3)))
    check(lambda lib, x: x.squeeze_(1.5), make((2, 1, 3)))  # TypeError in both
    assert not hasattr(ember, "t_") and not hasattr(torch, "t_")
