"""Oracle tests of the activation family against PyTorch (values, dtypes, in-place variants,
ember.nn.functional's wrappers, Meta kernels and errors)."""
import numpy as np
import pytest

import ember
from oracle import FLOAT_DTYPES, INT_DTYPES, check, check_raises, make

NON_FLOAT = ("bool",) + INT_DTYPES + ("complex64",)
SHAPES = [(3, 4), (), (0, 3), (2, 3, 5)]


def values(dtype="float32"):
    """Finite values across the interesting range plus NaN, infinities and signed zero."""
    base = np.concatenate([np.linspace(-6, 6, 25), [-1e-3, 1e-3, -0.0, 0.0, 25.0, -25.0, 0.5, -0.5, 3.0, -3.0,
                                                    np.inf, -np.inf, np.nan]])
    return base.astype(np.float64)


def ints(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    lo = 0 if dtype in ("bool", "uint8") else -8
    return rng.integers(lo, 9, size=shape).astype(np.float64)


# (F name, extra kwargs, torch namespace also?, complex supported?)
FLOAT_OPS = {
    "leaky_relu": [{}, {"negative_slope": 0.2}, {"negative_slope": -1.5}],
    "elu": [{}, {"alpha": 0.5}],
    "selu": [{}],
    "celu": [{}, {"alpha": 2.0}],
    "gelu": [{}, {"approximate": "tanh"}],
    "silu": [{}],
    "mish": [{}],
    "softplus": [{}, {"beta": 2, "threshold": 5}, {"beta": 0.5, "threshold": 1.5}],
    "hardsigmoid": [{}],
    "hardswish": [{}],
    "logsigmoid": [{}],
    "hardshrink": [{}, {"lambd": 1.5}, {"lambd": -1}],
    "softshrink": [{}, {"lambd": 1.5}, {"lambd": 0}],
    "sigmoid": [{}],
    "tanh": [{}],
    "softsign": [{}],
    "tanhshrink": [{}],
}
INT_OK = {"relu", "relu6", "hardtanh", "threshold"}


def fn(name, kw):
    if name == "threshold":
        return lambda lib, x: lib.nn.functional.threshold(x, 0.5, -2.0, **kw)
    return lambda lib, x: getattr(lib.nn.functional, name)(x, **kw)


@pytest.mark.parametrize("name", list(FLOAT_OPS))
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_float_activations(name, dtype):
    for kw in FLOAT_OPS[name]:
        check(fn(name, kw), values(), dtype=dtype)


@pytest.mark.parametrize("name", list(FLOAT_OPS) + sorted(INT_OK))
@pytest.mark.parametrize("dtype", NON_FLOAT)
def test_other_dtypes(name, dtype):
    """Integer/bool/complex inputs: the same result or the same exception type as PyTorch."""
    kw = FLOAT_OPS.get(name, [{}])[0]
    check(fn(name, kw), ints((3, 4), dtype), dtype=dtype)


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "gelu", "softplus", "hardswish", "silu"])
@pytest.mark.parametrize("shape", SHAPES)
def test_shapes_noncontig_meta(name, shape):
    check(fn(name, {}), make(shape, "float32"), noncontig=True)
    check(lambda lib, x: getattr(lib.nn.functional, name)(x.to("meta")), make(shape, "float32"))


@pytest.mark.parametrize("name", list(FLOAT_OPS) + sorted(INT_OK))
def test_meta(name):
    kw = FLOAT_OPS.get(name, [{}])[-1]
    f = fn(name, kw)
    check(lambda lib, x: f(lib, x.to("meta")), make((2, 3), "float32"), dtype="bfloat16")


@pytest.mark.parametrize("dtype", ("float16", "bfloat16", "float64") + INT_DTYPES)
def test_clamp_like_integers(dtype):
    x = ints((4, 5), dtype)
    check(lambda lib, x: (lib.relu(x), x.relu(), lib.nn.functional.relu6(x)), x, dtype=dtype)
    if dtype != "uint8":
        check(lambda lib, x: (lib.nn.functional.hardtanh(x), lib.nn.functional.hardtanh(x, -2.5, 3.7)), x,
              dtype=dtype)
    check(lambda lib, x: (lib.nn.functional.hardtanh(x, 0.5, 3.7), lib.nn.functional.hardtanh(x, 2, 2)), x,
          dtype=dtype)
    check(lambda lib, x: (lib.threshold(x, 1.5, 7.5), lib.threshold(x, 2, -1), lib.threshold(x, -100, 5)), x,
          dtype=dtype)


def test_relu_threshold_values():
    check(lambda lib, x: (lib.relu(x), lib.nn.functional.relu6(x), lib.threshold(x, 0.5, 20)), values(),
          dtype="float32")
    check(lambda lib, x: lib.nn.functional.hardtanh(x, -2, 2), values(), dtype="float64")


@pytest.mark.parametrize("name,kw", [("elu", {"alpha": 0.7}), ("celu", {"alpha": 0.5}), ("selu", {}),
                                     ("leaky_relu", {"negative_slope": 0.3}), ("relu", {}), ("relu6", {}),
                                     ("hardtanh", {"min_val": -0.5, "max_val": 0.5}), ("silu", {}), ("mish", {}),
                                     ("hardsigmoid", {}), ("hardswish", {}), ("threshold", {})])
def test_inplace_flag(name, kw):
    """F.<name>(x, inplace=True) writes into x and returns it."""
    f = fn(name, dict(kw, inplace=True))
    check(lambda lib, x: (f(lib, x), x), values(), dtype="float32")
    x = ember.tensor([-1.0, 0.5, 2.0])
    v = x._version
    assert f(ember, x) is x and x._version > v


def test_inplace_functions():
    check(lambda lib, x: (lib.relu_(x), x.relu_(), x), values(), dtype="float32")
    check(lambda lib, x: (lib.selu_(x), lib.celu_(x, 2.0), x), values(), dtype="float64")
    check(lambda lib, x: (lib.threshold_(x, 0.0, 1.0), x), values(), dtype="float32")
    for name, kw in [("relu_", {}), ("leaky_relu_", {"negative_slope": 0.5}), ("elu_", {"alpha": 2.0}),
                     ("hardtanh_", {"min_val": -0.2}), ("threshold_", {"threshold": 1.0, "value": 3.0}),
                     ("selu_", {}), ("celu_", {})]:
        check(lambda lib, x: (getattr(lib.nn.functional, name)(x, **kw), x), values(), dtype="float32")
    check(lambda lib, x: (lib.relu_(x), x), ints((5,), "int32"), dtype="int32")


def test_out_variants():
    check_raises(lambda lib, x, o: lib.relu(x, out=o), make((3, 4)), make((3, 4)), exc=TypeError)
    check(lambda lib, x, o: (lib.nn.functional.softplus(x, out=o), lib.threshold(x, 0, 1, out=o), o), make((3, 4)),
          make((3, 4)))
    check(lambda lib, x, o: (lib.ops.aten.gelu.out(x, out=o), o), make((3, 4)), make((3, 4)))
    check_raises(lambda lib, x: lib.threshold(x, 1, 1000), ints((3,), "uint8"), dtype="uint8", exc=RuntimeError)
    check_raises(lambda lib, x: lib.threshold(x, 1, -256), ints((3,), "uint8"), dtype="uint8", exc=RuntimeError)
    check_raises(lambda lib, x: lib.nn.functional.hardtanh(x, 0, 1000), ints((3,), "int8"), dtype="int8",
                 exc=RuntimeError)


def test_gelu_precision():
    """Exact gelu needs erf: compare tightly in float64."""
    check(lambda lib, x: lib.nn.functional.gelu(x), np.linspace(-8, 8, 101), dtype="float64", rtol=1e-12,
          atol=1e-14)


# ---------------------------------------------------------------------------------------
# prelu, glu
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,wshape", [((2, 3), (3,)), ((2, 3, 4), (3,)), ((2, 3, 4, 5), (1,)), ((5,), (1,)),
                                          ((), (1,)), ((), ()), ((4, 3), ()), ((0, 3), (3,)), ((2, 1, 4), (1,))])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_prelu(shape, wshape, dtype):
    check(lambda lib, x, w: (lib.prelu(x, w), x.prelu(w), lib.nn.functional.prelu(x, w)), make(shape),
          make(wshape, seed=1), dtype=dtype)
    check(lambda lib, x, w: lib.prelu(x.to("meta"), w.to("meta")), make(shape), make(wshape, seed=1),
          dtype=dtype)


def test_prelu_noncontig_and_errors():
    check(lambda lib, x, w: lib.prelu(x.mT, w), make((4, 3)), make((4,), seed=1), noncontig=True)
    check_raises(lambda lib, x, w: lib.prelu(x, w), make((2, 3)), make((2,)), exc=RuntimeError, match="Mismatch")
    check_raises(lambda lib, x, w: lib.prelu(x, w), make((2, 3)), make((1, 3)), exc=RuntimeError, match="1D")
    check_raises(lambda lib, x, w: lib.prelu(x, w), make((3,)), make((3,)), exc=RuntimeError)
    check_raises(lambda lib, x, w: lib.prelu(x, w), make(()), make((3,)), exc=RuntimeError)
    check_raises(lambda lib, x, w: lib.prelu(x, w.double()), make((2, 3)), make((3,)), exc=RuntimeError,
                 match="Type promoting")
    for dtype in NON_FLOAT:
        check(lambda lib, x, w: lib.prelu(x, w), ints((2, 3), dtype), ints((3,), dtype), dtype=dtype)
    check_raises(lambda lib, x: lib.prelu(x, 0.25), make((2, 3)), exc=TypeError)


@pytest.mark.parametrize("shape,dim", [((4,), -1), ((2, 6), 1), ((2, 6), -1), ((4, 3), 0), ((2, 0, 4), 2),
                                       ((2, 4, 3), 1)])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_glu(shape, dim, dtype):
    check(lambda lib, x: lib.nn.functional.glu(x, dim), make(shape), dtype=dtype)
    check(lambda lib, x: lib.nn.functional.glu(x.to("meta"), dim=dim), make(shape), dtype=dtype)


def test_glu_errors():
    F = lambda lib: lib.nn.functional  # noqa: E731
    check(lambda lib, x: F(lib).glu(x, 0), make((4, 3)), noncontig=True)
    check_raises(lambda lib, x: F(lib).glu(x), make((3,)), exc=RuntimeError, match="even")
    check_raises(lambda lib, x: F(lib).glu(x), make(()), exc=RuntimeError, match="scalars")
    check_raises(lambda lib, x: F(lib).glu(x, 2), make((4, 2)), exc=IndexError)
    for dtype in NON_FLOAT:
        check(lambda lib, x: F(lib).glu(x), ints((2, 4), dtype), dtype=dtype)


# ---------------------------------------------------------------------------------------
# argument errors
# ---------------------------------------------------------------------------------------
def test_argument_errors():
    F = lambda lib: lib.nn.functional  # noqa: E731
    x = make((3, 4))
    check_raises(lambda lib, x: F(lib).gelu(x, approximate="x"), x, exc=RuntimeError, match="approximate")
    check_raises(lambda lib, x: F(lib).gelu(x, "tanh"), x, exc=TypeError)
    check_raises(lambda lib, x: F(lib).softshrink(x, -1), x, exc=RuntimeError, match="lambda")
    check_raises(lambda lib, x: F(lib).softshrink(x, -1), x, dtype="float64", exc=RuntimeError)
    check_raises(lambda lib, x: F(lib).celu(x, 0.0), x, exc=RuntimeError, match="alpha")
    check_raises(lambda lib, x: F(lib).hardtanh(x, 2, 1), x, exc=ValueError)
    check_raises(lambda lib, x: F(lib).hardtanh(x, -1, 1), ints((3,), "uint8"), dtype="uint8", exc=RuntimeError,
                 match="unsigned")
    check_raises(lambda lib, x: F(lib).leaky_relu(x, "a"), x, exc=TypeError)
    check_raises(lambda lib, x: F(lib).softplus(x, beta=None), x, exc=TypeError)
    check_raises(lambda lib, x: F(lib).relu([1.0, 2.0]), x, exc=(TypeError, AttributeError))
    check_raises(lambda lib, x: lib.relu(x), ints((3,), "bool"), dtype="bool", exc=RuntimeError)
    check_raises(lambda lib, x: x.relu_(), ints((3,), "bool"), dtype="bool", exc=RuntimeError)
    check_raises(lambda lib, x: F(lib).elu_(x), ints((3,), "int64"), dtype="int64", exc=NotImplementedError)
    check(lambda lib, x: F(lib).hardtanh(x, 2.0, 2.0), x)
    check(lambda lib, x: (lib.ops.aten.hardtanh(x, 2.0, 1.0), lib.celu(x, alpha=0.5), x.hardshrink(0.2)), x)


def test_rrelu_eval():
    F = lambda lib: lib.nn.functional  # noqa: E731
    check(lambda lib, x: (F(lib).rrelu(x), F(lib).rrelu(x, 0.1, 0.5), lib.rrelu(x)), values(), dtype="float32")
    check(lambda lib, x: (F(lib).rrelu(x, inplace=True), x), values(), dtype="float64")
    check(lambda lib, x: (F(lib).rrelu_(x, 0.2, 0.4), lib.rrelu_(x), x), values(), dtype="float32")
