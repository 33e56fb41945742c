"""out= dtypes op by op against PyTorch: for every operator with an out= overload, a float32 and
an int64 input written into out tensors of seven dtypes must succeed (with PyTorch's values and
out's dtype) or raise PyTorch's exception type. Covers the casting rules (can_cast for
promoting ops, the exact dtype for abs/floor/clamp/mm/gather ..., the input's dtype for
amax/amin, out's dtype as the computation dtype for sum/prod/cumsum, bool outs for isposinf,
TypeError for cat)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.ops.registry import OPERATORS

_ARGS = {  # op -> lambda L, x: (args, kwargs) for ops whose schema defaults are not enough
    "clamp": lambda L, x: ((x, 0.1, 0.5), {}), "clip": lambda L, x: ((x, 0.1, 0.5), {}),
    "clamp_min": lambda L, x: ((x, 0.2), {}), "clamp_max": lambda L, x: ((x, 0.2), {}),
    "where": lambda L, x: ((x > 0.3, x, x * 2), {}),
    "index_select": lambda L, x: ((x, 0, L.tensor([0, 1])), {}),
    "index_reduce": lambda L, x: ((x, 0, L.tensor([1, 0]), x * 2, "amax"), {}),
    "gather": lambda L, x: ((x, 1, L.zeros(2, 3, dtype=L.long)), {}),
    "masked_select": lambda L, x: ((x, x > 0.3), {}),
    "take": lambda L, x: ((x, L.tensor([0, 1])), {}),
    "take_along_dim": lambda L, x: ((x, L.zeros(2, 3, dtype=L.long), 1), {}),
    "complex": lambda L, x: ((x, x), {}), "polar": lambda L, x: ((x, x), {}),
    "matmul": lambda L, x: ((x, x.t()), {}), "mm": lambda L, x: ((x, x.t()), {}),
    "bmm": lambda L, x: ((x.unsqueeze(0), x.t().unsqueeze(0)), {}),
    "addmm": lambda L, x: ((L.ones(2, 2, dtype=x.dtype), x, x.t()), {}),
    "addmv": lambda L, x: ((L.ones(2, dtype=x.dtype), x, L.ones(3, dtype=x.dtype)), {}),
    "addbmm": lambda L, x: ((L.ones(2, 2, dtype=x.dtype), x.unsqueeze(0), x.t().unsqueeze(0)), {}),
    "baddbmm": lambda L, x: ((L.ones(1, 2, 2, dtype=x.dtype), x.unsqueeze(0), x.t().unsqueeze(0)), {}),
    "addr": lambda L, x: ((L.ones(2, 3, dtype=x.dtype), x[0, :2], x[1]), {}),
    "dot": lambda L, x: ((x[0], x[1]), {}), "vdot": lambda L, x: ((x[0], x[1]), {}),
    "mv": lambda L, x: ((x, x[0]), {}), "outer": lambda L, x: ((x[0], x[1]), {}),
    "ger": lambda L, x: ((x[0], x[1]), {}), "inner": lambda L, x: ((x, x), {}), "kron": lambda L, x: ((x, x), {}),
    "cross": lambda L, x: ((x, x), {"dim": 1}), "cat": lambda L, x: (([x, x],), {}),
    "stack": lambda L, x: (([x, x],), {}), "msort": lambda L, x: ((x,), {}), "tril": lambda L, x: ((x,), {}),
    "triu": lambda L, x: ((x,), {}), "nonzero": lambda L, x: ((x,), {}), "round": lambda L, x: ((x,), {}),
    "pow": lambda L, x: ((x, 2.0), {}), "float_power": lambda L, x: ((x, 2.0), {}),
    "lerp": lambda L, x: ((x, x * 2, 0.5), {}), "addcmul": lambda L, x: ((x, x, x), {}),
    "addcdiv": lambda L, x: ((x, x, x + 1), {}), "threshold": lambda L, x: ((x, 0.3, 0.0), {}),
    "leaky_relu": lambda L, x: ((x,), {}), "histc": lambda L, x: ((x,), {"bins": 4}),
    **{name: (lambda L, x: ((x, x + 1), {})) for name in ("div", "divide", "true_divide", "floor_divide", "remainder",
                                                         "fmod", "xlogy")},
    **{name: (lambda L, x: ((x, 1), {})) for name in ("cumsum", "cumprod", "logcumsumexp", "sum", "nansum", "mean",
                                                     "nanmean", "prod", "amax", "amin", "argmax", "argmin",
                                                     "logsumexp")},
}
_FUNCTIONAL = {"leaky_relu", "elu", "gelu", "silu", "mish", "softplus", "hardtanh", "hardsigmoid", "hardswish",
               "log_sigmoid", "threshold", "hardshrink", "softshrink"}
_ALIAS = {"log_sigmoid": "logsigmoid"}

# Both the input dtype and the out dtype are wrong for these: PyTorch reports the out dtype,
# ember the unsupported input dtype (NotImplementedError); the error type differs.
_BOTH_WRONG = {("bitwise_and", "float32"), ("bitwise_or", "float32"), ("bitwise_xor", "float32"),
               ("bitwise_left_shift", "float32"), ("bitwise_right_shift", "float32"), ("bitwise_not", "float32"),
               ("frac", "int64"), ("gelu", "int64"), ("hardshrink", "int64"), ("histc", "int64"), ("lerp", "int64"),
               ("logcumsumexp", "int64"), ("softplus", "int64"), ("nansum", "int64"), ("addbmm", "int64"),
               ("hypot", "int64"), ("logaddexp", "int64"), ("logaddexp2", "int64"),
               ("gcd", "float32"), ("lcm", "float32"), ("igamma", "int64"), ("igammac", "int64"), ("nextafter", "int64")}
OUT_DTYPES = ["float32", "float64", "float16", "int64", "int32", "bool", "complex64"]


def _fn(L, name):
    obj = L.nn.functional if name in _FUNCTIONAL else L
    return getattr(obj, _ALIAS.get(name, name), None)


def _args(L, name, schema, in_dtype):
    x = (L.arange(1, 7, dtype=L.float64).reshape(2, 3) / 10 * (10 if in_dtype == "int64" else 1)).to(
        getattr(L, in_dtype))
    if name in _ARGS:
        return _ARGS[name](L, x)
    args = []
    for a in schema.arguments:
        if a.kwarg_only or a.has_default:
            continue
        args.append({"Tensor": x if not args else x * 2 + 1, "Scalar": 0.5 if in_dtype == "float32" else 2,
                     "int": 1}[a.type])
    return tuple(args), {}


def _outcome(L, name, schema, in_dtype, out_dtype):
    args, kwargs = _args(L, name, schema, in_dtype)
    out = L.empty(0, dtype=getattr(L, out_dtype))
    try:
        r = _fn(L, name)(*args, **kwargs, out=out)
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)
    assert r is out
    return "ok", (str(out.dtype).split(".")[-1], np.asarray(out.to(L.complex128 if out.is_complex() else L.float64)
                                                            .tolist()))


_OUT_OPS = sorted({op.schema.name: op.schema for op in OPERATORS.values() if op.schema.is_out and op.derived}.items())


@pytest.mark.parametrize("name,schema", _OUT_OPS, ids=[n for n, _ in _OUT_OPS])
def test_out_dtypes(name, schema):
    assert _fn(ember, name) is not None and _fn(torch, name) is not None
    for in_dtype in ("float32", "int64"):
        for out_dtype in OUT_DTYPES:
            got, expected = _outcome(ember, name, schema, in_dtype, out_dtype), _outcome(torch, name, schema, in_dtype,
                                                                                         out_dtype)
            if (name, in_dtype) in _BOTH_WRONG and got[0] is NotImplementedError and expected[0] is RuntimeError:
                continue
            where = f"{name}({in_dtype}, out={out_dtype})"
            assert got[0] is expected[0], f"{where}: ember {got}; torch {expected}"
            if got[0] == "ok":
                assert got[1][0] == expected[1][0], where
                np.testing.assert_allclose(got[1][1], expected[1][1], rtol=2e-3, atol=1e-3, err_msg=where)


def test_sum_computes_in_the_out_dtype():
    # PyTorch sums x cast to int32, not the float sum cast afterwards
    for lib in (ember, torch):
        x = lib.tensor([[0.5, 0.6, 0.7], [1.5, 1.6, 2.9]])
        assert lib.sum(x, 1, out=lib.empty(0, dtype=lib.int32)).tolist() == [0, 4]
        assert lib.cumsum(x, 1, out=lib.empty(0, dtype=lib.int64)).tolist() == [[0, 0, 0], [1, 2, 4]]
        with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double"):
            lib.sum(x, 1, dtype=lib.float64, out=lib.empty(0))


def test_failed_out_leaves_out_unchanged():
    out = ember.full((2,), 7.0, dtype=ember.float64)
    with pytest.raises(RuntimeError):
        ember.mm(ember.ones(2, 2), ember.ones(2, 1), out=out)
    with pytest.raises(RuntimeError):
        ember.amax(ember.ones(2, 2), 1, out=out)
    assert out.tolist() == [7.0, 7.0]
