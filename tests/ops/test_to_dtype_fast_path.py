"""``t.to(dtype)`` with one positional dtype skips the general argument parsing of ``Tensor.to``
(ember/ops/table/conversion.py): it must behave exactly as the parsed forms and as PyTorch --
values, dtypes, the same tensor back when nothing changes, autograd through ``_to_copy``, the
op a trace records, and every other argument form still parsed (and refused) as before."""
import numpy as np
import pytest
import torch

import ember
from tests.oracle import check

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool"]


def _source(dtype):
    a = np.array([0.0, -0.0, 1.5, -2.5, 3.75, 1e4, -7.0, 0.1], np.float32)
    return a.astype(np.float64) if dtype == "float64" else a


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", DTYPES)
def test_to_dtype_matches_torch(src, dst):
    check(lambda lib, x: x.to(getattr(lib, dst)).to(lib.float64), _source(src))
    check(lambda lib, x: x.t().to(getattr(lib, dst)).to(lib.float64), _source(src).reshape(2, 4))   # strided


@pytest.mark.parametrize("dst", DTYPES)
def test_same_dtype_returns_self_and_other_forms_agree(dst):
    x = ember.tensor(_source("float32")).to(getattr(ember, dst))
    t = torch.tensor(_source("float32")).to(getattr(torch, dst))
    assert x.to(x.dtype) is x and t.to(t.dtype) is t
    for dtype in (ember.float64, ember.int32, ember.float16):
        fast, parsed, keyword = x.to(dtype), x.to(dtype, copy=False), x.to(dtype=dtype)
        for other in (parsed, keyword):
            assert other.dtype is fast.dtype is dtype and (other is not fast or dtype is x.dtype)
            np.testing.assert_array_equal(other.to(ember.float64).numpy(), fast.to(ember.float64).numpy())
    assert x.to(x.dtype, copy=True) is not x     # copy=True still copies (the parsed form)


def test_gradient_through_to_dtype_matches_torch():
    a = _source("float32")
    results = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        y = x.to(lib.float64)
        z = (y * 3).to(lib.float16).to(lib.float32)
        assert type(y.grad_fn).__name__ == type(z.grad_fn).__name__ == "ToCopyBackward0"
        (z * z).sum().backward()
        results.append((z.detach().numpy(), x.grad.numpy(), str(x.grad.dtype).split(".")[1]))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2] == "float32"


def test_trace_records_the_same_to_copy_call():
    from ember.fx.experimental.proxy_tensor import make_fx

    def fast(x):
        return x.to(ember.float16)

    def parsed(x):
        return x.to(dtype=ember.float16)
    x = ember.ones(3)
    code = [make_fx(fn)(x).code for fn in (fast, parsed)]
    assert "_to_copy" in code[0] and code[0] == code[1]


@pytest.mark.parametrize("args", [("float32",), ([1],), (object(),)])
def test_other_forms_still_parsed_and_refused_like_torch(args):
    torch_args = tuple(getattr(torch, str(a).split(".")[1]) if isinstance(a, ember.dtype) else a for a in args)
    with pytest.raises(Exception) as theirs:
        torch.ones(2).to(*torch_args)
    with pytest.raises(theirs.type):
        ember.ones(2).to(*args)
