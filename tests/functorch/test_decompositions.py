"""Every written decomposition (ember/_functorch/decompositions) against its operator run eagerly:
pointwise ops, activations, reductions and shape ops on contiguous, transposed, broadcast, 0-d
and empty inputs in float32, float64 and int64 (an op that refuses a dtype eagerly must refuse it
decomposed, with the same exception type), nan/inf inputs, float64 gradients, and the traced
graph (core and kept-whole ops only). The nn, loss, linalg, indexing and creation families are in
test_decompositions_nn.py; the harness is decomp_harness.py."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from decomp_harness import LAYOUTS, TABLE, check_grads, check_sample, op_of, special, tensor

DTYPES = ("float32", "float64", "int64")

# one-tensor ops: name -> extra positional args, kwargs
UNARY = {
    "frac": (), "square": (), "exp2": (), "deg2rad": (), "rad2deg": (), "sgn": (), "positive": (),
    "isposinf": (), "isneginf": (), "isfinite": (), "isreal": (), "nan_to_num": (),
    "round.decimals": ((), {"decimals": 2}),
    "relu6": (), "hardtanh": ((-0.5, 0.7),), "leaky_relu": ((0.2,),), "elu": ((1.3, 0.8, 1.1),), "selu": (),
    "celu": ((0.7,),), "gelu": (), "silu": (), "softplus": ((2.0, 3.0),), "mish": (), "hardsigmoid": (),
    "hardswish": (), "log_sigmoid": (), "hardshrink": ((0.7,),), "softshrink": ((0.7,),), "threshold": ((0.3, -4.0),),
    "clamp_min": ((0.1,),), "clamp_max": ((0.1,),), "arcsin": (), "arccos": (), "arctan": (), "arcsinh": (),
    "arccosh": (), "arctanh": (), "negative": (), "fix": (), "clip": ((-0.5, 0.5),), "glu": ((-1,),),
    "angle": (),
}
# two-tensor ops (a number second where the name says so)
BINARY = ("floor_divide", "rsub.Tensor", "copysign.Tensor", "float_power.Tensor_Tensor", "logaddexp", "logaddexp2",
          "fmax", "fmin", "xlogy.Tensor", "max.other", "min.other", "clamp_min.Tensor", "clamp_max.Tensor",
          "subtract.Tensor", "multiply.Tensor", "divide.Tensor", "true_divide.Tensor", "not_equal.Tensor",
          "less.Tensor", "less_equal.Tensor", "greater.Tensor", "greater_equal.Tensor", "arctan2", "isclose",
          "lerp.Tensor", "clip.Tensor")


def _unary_args(name):
    spec = UNARY[name]
    args = spec[0] if spec else ()
    kwargs = spec[1] if len(spec) > 1 else {}
    return tuple(args), kwargs


def _range_for(name):
    return (1.1, 3.0) if name == "arccosh" else (-0.9, 0.9) if name in ("arctanh", "arcsin", "arccos") else (-2, 2)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    args, kwargs = _unary_args(name)
    low, high = _range_for(name)
    outcomes = []
    for dtype in DTYPES:
        for layout in LAYOUTS:
            outcomes.append(check_sample(name, lambda: ((tensor((3, 4), dtype, 1, layout, low, high),) + args, kwargs),
                                         trace=layout in ("contiguous", "transposed")))
    for dtype in ("float32", "float64"):
        # gelu(+inf): see test_gelu_of_plus_infinity
        outcomes.append(check_sample(name, lambda: ((special(dtype, plus_inf=name != "gelu"),) + args, kwargs)))
    assert "compared" in outcomes
    assert check_grads(name, lambda: ((tensor((3, 4), "float64", 2, "transposed", low, high),) + args, kwargs)) \
        or name in NO_GRADIENT


NO_GRADIENT = {"angle", "isposinf", "isneginf", "isfinite", "isreal", "fix", "frac", "sgn", "round.decimals", "nan_to_num"}


def test_gelu_of_plus_infinity():
    """Eager float32 gelu(+inf) is what PyTorch's CPU kernel gives on this machine (nan from its
    AVX-512 code, inf from its AVX2 code; ember mirrors it); the decomposition gives the
    mathematical inf, as PyTorch's own decomposition does."""
    import torch
    from torch._refs.nn.functional import gelu as torch_gelu
    x = ember.tensor([np.inf], dtype=ember.float32)
    eager = torch.nn.functional.gelu(torch.tensor([np.inf], dtype=torch.float32)).item()
    np.testing.assert_equal(ember.nn.functional.gelu(x).item(), eager)
    expected = torch_gelu(torch.tensor([np.inf], dtype=torch.float32)).item()
    assert TABLE[op_of("gelu")](x).item() == expected == np.inf


def test_gelu_tanh_and_bad_approximation():
    for dtype in ("float32", "float64"):
        check_sample("gelu", lambda: ((tensor((3, 4), dtype, 3, "transposed"),), {"approximate": "tanh"}))
        check_sample("gelu", lambda: ((special(dtype, plus_inf=False),), {"approximate": "tanh"}))
    assert check_grads("gelu", lambda: ((tensor((3, 4), "float64", 3),), {"approximate": "tanh"}))
    assert check_sample("gelu", lambda: ((tensor(),), {"approximate": "erf"})) == "raises"


def _second(name, x, dtype, seed):
    if name == "lerp.Tensor":
        weight_dtype = "float64" if dtype == "int64" else dtype
        return tensor(x.shape, x.dtype.name, seed), tensor(x.shape, weight_dtype, seed + 1)
    if name in ("clamp_min.Tensor", "clamp_max.Tensor", "clip.Tensor"):
        return (tensor((4,) if x.dim() else (), dtype, seed),)
    return (tensor(x.shape, dtype, seed, low=0.2 if name.startswith(("float_power", "xlogy")) else -2),)


@pytest.mark.parametrize("name", BINARY)
def test_binary(name):
    outcomes = []
    for dtype in DTYPES:
        for layout in LAYOUTS:
            def make(dtype=dtype, layout=layout):
                x = tensor((3, 4), dtype, 4, layout, low=0.2 if name.startswith(("float_power", "xlogy")) else -2)
                return (x,) + _second(name, x, dtype, 5), {}
            outcomes.append(check_sample(name, make, trace=layout in ("contiguous", "broadcast")))
        # broadcasting against a row
        outcomes.append(check_sample(name, lambda: ((tensor((3, 4), dtype, 6),) +
                                                    _second(name, tensor((4,), dtype, 6), dtype, 7), {})))
    for dtype in ("float32", "float64"):
        outcomes.append(check_sample(name, lambda: ((special(dtype), ember.flip(special(dtype), [0])) +
                                                    ((tensor((10,), dtype, 3),) if name == "lerp.Tensor" else ()), {})))
    assert "compared" in outcomes
    check_grads(name, lambda: ((tensor((3, 4), "float64", 8, "transposed", 0.2, 2),) +
                               _second(name, tensor((3, 4), "float64", 8), "float64", 9), {}))


@pytest.mark.parametrize("name,number", [("rsub.Tensor", 2.5), ("rsub.Tensor", 3), ("float_power.Scalar", 2.0),
                                         ("lerp.Scalar", 0.3), ("lerp.Scalar", 0.8), ("remainder.Scalar_Tensor", 5),
                                         ("xlogy.Scalar_Self", 3.0), ("floor_divide", 2)])
def test_number_operands(name, number):
    for dtype in DTYPES:
        for layout in LAYOUTS:
            if name == "lerp.Scalar":
                make = lambda: ((tensor((3, 4), dtype, 1, layout), tensor((3, 4), dtype, 2, layout), number), {})
            elif name in ("remainder.Scalar_Tensor", "xlogy.Scalar_Self", "float_power.Scalar"):
                make = lambda: ((number, tensor((3, 4), dtype, 1, layout, 0.5, 3)), {})
            else:
                make = lambda: ((tensor((3, 4), dtype, 1, layout), number), {})
            check_sample(name, make, trace=layout == "contiguous")


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_ternary(name):
    for dtype in DTYPES:
        for layout in LAYOUTS:
            make = lambda: ((tensor((3, 4), dtype, 1, layout), tensor((3, 4), dtype, 2, layout),
                             tensor((4,), dtype, 3, low=0.5)), {"value": 2})
            check_sample(name, make, trace=layout == "contiguous")
    assert check_grads(name, lambda: ((tensor(), tensor(seed=2, layout="transposed"), tensor((4,), seed=3, low=0.5)),
                                      {"value": 0.5}))


def test_divide_with_rounding_mode():
    for mode in ("floor", "trunc", None):
        for dtype in DTYPES:
            check_sample("divide.Tensor_mode", lambda: ((tensor((3, 4), dtype, 1), tensor((3, 4), dtype, 2, low=0.5)),
                                                        {"rounding_mode": mode}))


# reductions: name -> list of (extra args, kwargs)
REDUCTIONS = {
    "sum": [((), {}), ((), {"dtype": ember.float64})], "nansum": [((), {}), (([1], True), {})],
    "nanmean": [((), {}), ((0,), {})], "max": [((), {})], "min": [((), {})],
    "aminmax": [((), {}), ((), {"dim": 1, "keepdim": True}), ((), {"dim": 0})],
    "var": [((), {}), ((False,), {})], "var.dim": [(([1], True, True), {}), ((0, False), {})],
    "std": [((), {})], "std.dim": [(([0, 1],), {})], "std.correction": [(([1],), {"correction": 2})],
    "var_mean": [((False,), {})], "var_mean.dim": [(([1],), {})], "var_mean.correction": [((None,), {"correction": 0})],
    "std_mean": [((), {})], "std_mean.dim": [(([0],), {})], "std_mean.correction": [(([1],), {"keepdim": True})],
    "linalg_vector_norm": [((), {}), ((1, [1]), {}), ((float("inf"),), {}), ((float("-inf"), [0], True), {}),
                           ((0,), {}), ((3.5, [1]), {}), ((2, None, False), {"dtype": ember.float64})],
    "norm.Scalar": [((), {}), ((1,), {})], "norm.ScalarOpt_dim": [((3, [1]), {}), ((None, [0], True), {})],
    "norm.ScalarOpt_dim_dtype": [((2, [1], False), {"dtype": ember.float64})],
    "norm.ScalarOpt_dtype": [((1,), {"dtype": ember.float64})],
    "logsumexp": [(([1],), {}), (([0, 1], True), {})], "all": [((), {})], "all.dim": [((1,), {}), ((0, True), {})],
    "all.dims": [((), {}), (([0, 1],), {})], "count_nonzero": [((), {}), ((1,), {})],
    "count_nonzero.dim_IntList": [(([0],), {})], "softmax.int": [((1,), {}), ((0, ember.float64), {})],
    "log_softmax.int": [((1,), {}), ((-1, ember.float64), {})], "argsort": [((), {}), ((0, True), {})],
    "argsort.stable": [((), {"stable": True, "dim": 0})], "msort": [((), {})],
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reduction(name):
    outcomes = []
    for args, kwargs in REDUCTIONS[name]:
        for dtype in DTYPES + ("bool", "uint8"):
            for layout in LAYOUTS:
                if layout == "0-d" and any(isinstance(a, list) and a for a in args):
                    continue        # a dim list names dims a 0-d tensor lacks
                outcomes.append(check_sample(name, lambda: ((tensor((3, 4), dtype, 1, layout),) + args, kwargs),
                                             trace=layout in ("contiguous", "transposed")))
        if name not in ("argsort", "argsort.stable", "msort"):
            outcomes.append(check_sample(name, lambda: ((ember.stack([special(), special()]),) + args, kwargs)))
        check_grads(name, lambda: ((tensor((3, 4), "float64", 2, "transposed"),) + args, kwargs))
    assert "compared" in outcomes


def test_softmax_of_all_minus_inf_rows_and_grads():
    rows = ember.tensor([[-np.inf, -np.inf], [0.0, -np.inf], [np.inf, 1.0]])
    for name in ("softmax.int", "log_softmax.int", "logsumexp"):
        check_sample(name, lambda: ((rows.clone(), [1] if name == "logsumexp" else 1), {}))
        assert check_grads(name, lambda: ((tensor((2, 5), seed=4), [1] if name == "logsumexp" else 1), {}))


# shape ops: name -> list of make functions of (x) -> (args, kwargs); results compared with strides
SHAPE = {
    "squeeze": [lambda x: ((x.unsqueeze(1),), {})],
    "transpose.int": [lambda x: ((x, 0, 1), {}), lambda x: ((x.unsqueeze(0), -1, 0), {})],
    "t": [lambda x: ((x,), {}), lambda x: ((x[0],), {})],
    "unbind.int": [lambda x: ((x,), {}), lambda x: ((x, 1), {})],
    "split.Tensor": [lambda x: ((x, 2), {}), lambda x: ((x, 3, 1), {}), lambda x: ((x, 10), {})],
    "split.sizes": [lambda x: ((x, [1, 3], 1), {})],
    "unfold": [lambda x: ((x, 1, 2, 1), {}), lambda x: ((x, 1, 2, 2), {}), lambda x: ((x, 0, 5, 1), {})],
    "stack": [lambda x: (([x, x * 2],), {}), lambda x: (([x, x], -1), {})],
    "repeat_interleave.self_int": [lambda x: ((x, 2), {}), lambda x: ((x, 3, 1), {})],
    "roll": [lambda x: ((x, 1), {}), lambda x: ((x, [1, -2], [0, 1]), {}), lambda x: ((x, 5, 1), {})],
    "tril": [lambda x: ((x,), {}), lambda x: ((x, 1), {})], "triu": [lambda x: ((x, -1), {})],
    "diag_embed": [lambda x: ((x,), {}), lambda x: ((x, 1), {}), lambda x: ((x, -2, 0, 2), {})],
    "diag": [lambda x: ((x,), {}), lambda x: ((x[0], 1), {}), lambda x: ((x[0], -2), {})],
    "contiguous": [lambda x: ((x,), {})], "detach": [lambda x: ((x,), {})],
    "pixel_shuffle": [lambda x: ((ember.cat([x] * 4).reshape(1, 4, 3, 4) if x.numel() == 12 else x, 2), {})],
    "pixel_unshuffle": [lambda x: ((x.reshape(1, 3, 2, 2) if x.numel() == 12 else x, 2), {})],
}


@pytest.mark.parametrize("name", sorted(SHAPE))
def test_shape(name):
    outcomes = []
    for build in SHAPE[name]:
        for dtype in ("float32", "float64", "int64"):
            for layout in LAYOUTS:
                try:
                    build(tensor((3, 4), dtype, 1, layout))
                except (IndexError, RuntimeError):
                    continue            # the sample indexes dims this layout (0-d, empty) lacks
                outcomes.append(check_sample(name, lambda: build(tensor((3, 4), dtype, 1, layout)), strides=True,
                                             trace=layout != "empty"))
        check_grads(name, lambda: build(tensor((3, 4), "float64", 2, "transposed")))
    assert "compared" in outcomes


def test_view_decompositions_are_views():
    """transpose, t, unfold and squeeze decompose into views: the result shares the input's storage."""
    for name, args in (("transpose.int", (0, 1)), ("t", ()), ("unfold", (1, 2, 1)), ("squeeze", ())):
        x = tensor((3, 1, 4) if name == "squeeze" else (3, 4))
        out = TABLE[op_of(name)](x, *args)
        x.view(-1)[0] = 123.0
        assert 123.0 in out.numpy(), name


def test_every_written_decomposition_is_sampled():
    """A new entry in the families must come with samples here or in test_decompositions_nn.py."""
    from ember._functorch import decompositions
    from test_decompositions_nn import SAMPLED as NN_SAMPLED
    from importlib import import_module
    from ember._functorch.decompositions.aliases import ALIASES
    written = set(ALIASES)
    for family in decompositions.FAMILIES:
        written |= set(import_module(f"ember._functorch.decompositions.{family}").DECOMPOSITIONS)
    sampled = (set(UNARY) | set(BINARY) | set(REDUCTIONS) | set(SHAPE) | NN_SAMPLED |
               {"addcmul", "addcdiv", "divide.Tensor_mode", "float_power.Scalar", "lerp.Scalar",
                "remainder.Scalar_Tensor", "xlogy.Scalar_Self"})
    assert sorted(written - sampled) == []
