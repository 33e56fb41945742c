"""Gradients of the pointwise family (and of where/clamp/fill_/complex/random ops): finite
differences (ember.autograd.gradcheck, float64, broadcasting) and equality with PyTorch's
gradients on the same inputs (float32 and float64, non-contiguous inputs, in-place variants,
Python-number operands, subgradient points). The harness is shared with test_grad_activation.py.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.ops.derivatives import pointwise as formulas


# ---------------------------------------------------------------------------------------
# harness
# ---------------------------------------------------------------------------------------
class Case(NamedTuple):
    key: str                 # the formula it exercises ("<op>.<overload>")
    fn: Callable             # fn(lib, *tensors) -> tensor
    inputs: tuple            # per input: (shape, low, high), "bool:<shape>" or an ndarray
    gradcheck: bool = True


D, P, U1 = (-2.0, 2.0), (0.5, 2.0), (-0.9, 0.9)
S, B = (3, 4), (4,)
TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "float64": dict(rtol=1e-7, atol=1e-9)}


def make_arrays(case, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for spec in case.inputs:
        if isinstance(spec, np.ndarray):
            out.append(spec)
        elif isinstance(spec, str):  # "bool:3,4"
            shape = tuple(int(s) for s in spec.split(":")[1].split(","))
            out.append(rng.random(shape) > 0.5)
        else:
            shape, lo, hi = spec
            out.append(rng.uniform(lo, hi, size=shape))
    return out


def _leaf(lib, arr, dtype, noncontig):
    if arr.dtype == np.bool_:
        return lib.from_numpy(arr.copy())
    arr = arr.astype(dtype)
    if noncontig and arr.ndim >= 1:
        arr = np.repeat(arr, 2, axis=-1)[..., ::2]  # same values, stride 2 in the last dim
        t = lib.from_numpy(arr)
    else:
        t = lib.from_numpy(arr.copy())
    return t.requires_grad_(True)


def run_grads(lib, fn, arrays, dtype, noncontig=False, seed=1):
    """Inputs' .grad after fn(...).backward(random gradient), as NumPy (None where none)."""
    ts = [_leaf(lib, a, dtype, noncontig and i == 0) for i, a in enumerate(arrays)]
    out = fn(lib, *ts)
    rng = np.random.default_rng(seed)
    g = rng.uniform(-1, 1, size=tuple(out.shape))
    if out.is_complex():
        g = g + 1j * rng.uniform(-1, 1, size=tuple(out.shape))
    g = g.astype(str(out.dtype).split(".")[-1])
    out.backward(lib.from_numpy(g))
    return [None if not t.requires_grad or t.grad is None else as_numpy(t.grad) for t in ts], out.requires_grad


def as_numpy(t):
    """A NumPy copy of a gradient (torch's may be a lazy ZeroTensor or have the conj bit)."""
    if isinstance(t, torch.Tensor):
        if t._is_zerotensor():
            return np.zeros(tuple(t.shape), dtype=torch.empty(0, dtype=t.dtype).numpy().dtype)
        t = t.resolve_conj()
    return t.detach().numpy().copy()


def compare_with_torch(fn, arrays, dtype, noncontig=False):
    """ember's input gradients equal PyTorch's (or both raise the same exception type)."""
    try:
        expected = run_grads(torch, fn, arrays, dtype, noncontig)
    except Exception as e:  # noqa: BLE001 - ember must raise the same type
        with pytest.raises(type(e)):
            run_grads(ember, fn, arrays, dtype, noncontig)
        return
    got = run_grads(ember, fn, arrays, dtype, noncontig)
    assert got[1] == expected[1]
    for i, (a, b) in enumerate(zip(got[0], expected[0])):
        assert (a is None) == (b is None), f"input {i}: ember grad {a}, torch grad {b}"
        if a is not None:
            assert a.dtype == b.dtype, f"input {i}: {a.dtype} vs {b.dtype}"
            np.testing.assert_allclose(a, b, equal_nan=True, err_msg=f"input {i}", **TOL[dtype])


def run_gradcheck(fn, arrays):
    """gradcheck in float64; the first input is non-contiguous (stride 2 in its last dim)."""
    ins = [ember.from_numpy(a.copy()) if a.dtype == np.bool_ else _leaf(ember, a, "float64", i == 0)
           for i, a in enumerate(arrays)]
    assert gradcheck(lambda *xs: fn(ember, *xs), tuple(ins))


def case_id(case):
    return case.key


# ---------------------------------------------------------------------------------------
# cases
# ---------------------------------------------------------------------------------------
_UNARY = {  # formula key -> (torch function name, domain)
    "neg": D, "negative": D, "exp": D, "exp2": D, "expm1": D, "log": P, "log2": P, "log10": P,
    "log1p": (-0.5, 2.0), "sqrt": P, "rsqrt": P, "sin": D, "cos": D, "tan": (-1.2, 1.2), "asin": U1,
    "acos": U1, "atan": D, "arcsin": U1, "arccos": U1, "arctan": D, "sinh": D, "cosh": D, "tanh": D,
    "asinh": D, "acosh": (1.2, 3.0), "atanh": U1, "arcsinh": D, "arccosh": (1.2, 3.0), "arctanh": U1,
    "sigmoid": D, "erf": D, "erfc": D, "erfinv": U1, "reciprocal": P, "deg2rad": D, "rad2deg": D,
    "floor": D, "ceil": D, "trunc": D, "fix": D, "round": D, "sign": D, "sgn": D, "frac": D,
    "square": D, "conj_physical": D, "abs": D, "positive": D, "angle": D, "nan_to_num": D, "conj": D,
    "resolve_conj": D, "real": D,
}

CASES = [Case(k, (lambda lib, x, n=k: getattr(lib, n)(x)), ((S, *dom),)) for k, dom in _UNARY.items()]
CASES += [
    Case("round.decimals", lambda lib, x: lib.round(x, decimals=1), ((S, *D),)),
    Case("add.Tensor", lambda lib, x, y: lib.add(x, y, alpha=2), ((S, *D), (B, *D))),
    Case("sub.Tensor", lambda lib, x, y: lib.sub(x, y, alpha=0.5), ((S, *D), (B, *D))),
    Case("subtract.Tensor", lambda lib, x, y: lib.subtract(x, y), (((2, 1, 4), *D), ((3, 1), *D))),
    Case("rsub.Tensor", lambda lib, x, y: lib.rsub(x, y, alpha=3), ((S, *D), (B, *D))),
    Case("mul.Tensor", lambda lib, x, y: x * y, (((2, 1, 4), *D), ((3, 1), *D))),
    Case("multiply.Tensor", lambda lib, x, y: lib.multiply(x, y), ((S, *D), (B, *D))),
    Case("div.Tensor", lambda lib, x, y: x / y, ((S, *D), (B, *P))),
    Case("divide.Tensor", lambda lib, x, y: lib.divide(y, x), ((S, *P), (B, *D))),
    Case("true_divide.Tensor", lambda lib, x, y: lib.true_divide(x, y), ((S, *D), (B, *P))),
    Case("div.Tensor_mode", lambda lib, x, y: lib.div(x, y, rounding_mode="floor"), ((S, *D), (B, *P))),
    Case("div.Tensor_mode", lambda lib, x, y: lib.div(x, y, rounding_mode=None), ((S, *D), (B, *P))),
    Case("divide.Tensor_mode", lambda lib, x, y: lib.divide(x, y, rounding_mode="trunc"), ((S, *D), (B, *P))),
    Case("remainder.Tensor", lambda lib, x, y: lib.remainder(x, y), ((S, *D), (B, *P))),
    Case("fmod.Tensor", lambda lib, x, y: lib.fmod(x, y), ((S, *D), (B, *P))),
    Case("copysign.Tensor", lambda lib, x, y: lib.copysign(x, y), ((S, *D), (B, *D))),
    Case("xlogy.Tensor", lambda lib, x, y: lib.xlogy(x, y), ((S, *D), (B, *P))),
    Case("xlogy.Scalar_Self", lambda lib, y: lib.xlogy(2.5, y), ((S, *P),)),
    Case("pow.Tensor_Tensor", lambda lib, x, y: lib.pow(x, y), ((S, *P), (B, *D))),
    Case("pow.Scalar", lambda lib, y: lib.pow(1.7, y), ((S, *D),)),
    Case("float_power.Tensor_Tensor", lambda lib, x, y: lib.float_power(x, y), ((S, *P), (B, *D))),
    Case("float_power.Scalar", lambda lib, y: lib.float_power(0.7, y), ((S, *D),)),
    Case("float_power_.Tensor", lambda lib, x, y: (x * 1).float_power_(y), ((S, *P), (B, *D))),
    Case("atan2", lambda lib, x, y: lib.atan2(x, y), ((S, *D), (B, *P))),
    Case("arctan2", lambda lib, x, y: lib.arctan2(x, y), ((S, *D), (B, *D))),
    Case("maximum", lambda lib, x, y: lib.maximum(x, y), ((S, *D), (B, *D))),
    Case("minimum", lambda lib, x, y: lib.minimum(x, y), ((S, *D), (B, *D))),
    Case("fmax", lambda lib, x, y: lib.fmax(x, y), ((S, *D), (B, *D))),
    Case("fmin", lambda lib, x, y: lib.fmin(x, y), ((S, *D), (B, *D))),
    Case("hypot", lambda lib, x, y: lib.hypot(x, y), ((S, *D), (B, *D))),
    Case("logaddexp", lambda lib, x, y: lib.logaddexp(x, y), ((S, *D), (B, *D))),
    Case("logaddexp2", lambda lib, x, y: lib.logaddexp2(x, y), ((S, *D), (B, *D))),
    Case("lerp.Scalar", lambda lib, x, y: lib.lerp(x, y, 0.3), ((S, *D), (B, *D))),
    Case("lerp.Tensor", lambda lib, x, y, w: lib.lerp(x, y, w), ((S, *D), (B, *D), ((3, 1), 0, 1))),
    Case("addcmul", lambda lib, x, y, z: lib.addcmul(x, y, z, value=0.5), ((S, *D), (B, *D), ((3, 1), *D))),
    Case("addcdiv", lambda lib, x, y, z: lib.addcdiv(x, y, z, value=2), ((S, *D), (B, *D), ((3, 1), *P))),
    Case("where.self", lambda lib, c, x, y: lib.where(c, x, y), ("bool:3,4", (B, *D), ((3, 1), *D))),
    Case("clamp.Tensor", lambda lib, x, lo, hi: lib.clamp(x, lo, hi), ((S, *D), (B, -1, 0), ((3, 1), 0, 1))),
    Case("clamp.Tensor", lambda lib, x, lo, hi: lib.clamp(x, hi, lo), ((S, *D), (B, -1, 0), ((3, 1), 0, 1))),
    Case("clamp.Tensor", lambda lib, x, lo: lib.clamp(x, min=lo), ((S, *D), (B, *D))),
    Case("clamp.Tensor", lambda lib, x, hi: lib.clamp(x, max=hi), ((S, *D), (B, *D))),
    Case("clip.Tensor", lambda lib, x, lo, hi: lib.clip(x, lo, hi), ((S, *D), (B, -1, 0), ((3, 1), 0, 1))),
    Case("clamp", lambda lib, x: lib.ops.aten.clamp.default(x, -0.5, 0.7), ((S, *D),)),
    Case("clip", lambda lib, x: lib.ops.aten.clip.default(x, None, 0.7), ((S, *D),)),
    Case("clamp_min.Tensor", lambda lib, x, lo: lib.clamp_min(x, lo), ((S, *D), (B, *D))),
    Case("clamp_max.Tensor", lambda lib, x, hi: lib.clamp_max(x, hi), ((S, *D), (B, *D))),
    Case("clamp_min", lambda lib, x: lib.ops.aten.clamp_min.default(x, 0.3), ((S, *D),)),
    Case("clamp_max", lambda lib, x: lib.ops.aten.clamp_max.default(x, 0.3), ((S, *D),)),
    Case("fill_.Scalar", lambda lib, x: (x * 2).fill_(1.5) * x, ((S, *D),)),
    Case("fill_.Tensor", lambda lib, x, v: (x * 2).fill_(v) * x, ((S, *D), ((), *D))),
    Case("zero_", lambda lib, x: (x * 2).zero_() + x, ((S, *D),)),
    Case("complex", lambda lib, x, y: (lib.complex(x, y) * lib.complex(y, x)).abs(), ((S, *D), (S, *D))),
    Case("polar", lambda lib, x, y: lib.real(lib.polar(x, y)) + 2 * lib.imag(lib.polar(x, y)),
         ((S, *P), (S, *D))),
    # Python-number operands
    Case("mul.Tensor", lambda lib, x: x * 2, ((S, *D),)),
    Case("mul.Tensor", lambda lib, x: 2.5 * x, ((S, *D),)),
    Case("add.Tensor", lambda lib, x: x + 1.5, ((S, *D),)),
    Case("add.Tensor", lambda lib, x: 1 + x, ((S, *D),)),
    Case("rsub.Tensor", lambda lib, x: 2 - x, ((S, *D),)),
    Case("sub.Tensor", lambda lib, x: x - 2, ((S, *D),)),
    Case("div.Tensor", lambda lib, x: x / 3, ((S, *D),)),
    Case("div.Tensor", lambda lib, x: 3 / x, ((S, *P),)),
    Case("pow.Tensor_Tensor", lambda lib, x: x ** 2, ((S, *D),)),
    Case("pow.Tensor_Tensor", lambda lib, x: x ** 0.5, ((S, *P),)),
    Case("pow.Tensor_Tensor", lambda lib, x: x ** -1, ((S, *P),)),
    Case("pow.Scalar", lambda lib, x: 2 ** x, ((S, *D),)),
    Case("where.self", lambda lib, x: lib.where(x > 0, x, 0.0), ((S, *D),)),
    Case("clamp.Tensor", lambda lib, x: lib.clamp(x, -0.5, 0.5), ((S, *D),)),
    Case("maximum", lambda lib, x: lib.maximum(x, lib.zeros_like(x)), ((S, *D),)),
    # in-place variants reuse the functional formula
    *[Case(k, f, ins) for k, f, ins in [
        ("add.Tensor", lambda lib, x, z: (x * 1).add_(z, alpha=2), ((S, *D), (B, *D))),
        ("sub.Tensor", lambda lib, x, z: (x * 1).sub_(z), ((S, *D), (B, *D))),
        ("mul.Tensor", lambda lib, x, z: (x * 1).mul_(z), ((S, *D), (B, *D))),
        ("div.Tensor", lambda lib, x, z: (x * 1).div_(z), ((S, *D), (B, *P))),
        ("pow.Tensor_Tensor", lambda lib, x, z: (x * 1).pow_(z), ((S, *P), (B, *D))),
        ("exp", lambda lib, x: (x * 1).exp_(), ((S, *D),)),
        ("tanh", lambda lib, x: (x * 1).tanh_(), ((S, *D),)),
        ("sigmoid", lambda lib, x: (x * 1).sigmoid_(), ((S, *D),)),
        ("sqrt", lambda lib, x: (x * 1).sqrt_(), ((S, *P),)),
        ("abs", lambda lib, x: (x * 1).abs_(), ((S, *D),)),
        ("neg", lambda lib, x: (x * 1).neg_(), ((S, *D),)),
        ("clamp.Tensor", lambda lib, x: (x * 1).clamp_(-0.5, 0.5), ((S, *D),)),
        ("lerp.Tensor", lambda lib, x, y, w: (x * 1).lerp_(y, w), ((S, *D), (B, *D), ((3, 1), 0, 1))),
        ("addcmul", lambda lib, x, y, z: (x * 1).addcmul_(y, z), ((S, *D), (B, *D), ((3, 1), *D))),
        ("mul.Tensor", lambda lib, x: (x * 1).mul_(3), ((S, *D),)),
        ("add.Tensor", lambda lib, x: (x * 1).add_(3), ((S, *D),)),
    ]],
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_gradcheck(case):
    run_gradcheck(case.fn, make_arrays(case))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_matches_torch(case, dtype):
    compare_with_torch(case.fn, make_arrays(case), dtype, noncontig=(dtype == "float64"))


def test_every_formula_has_a_case():
    covered = {c.key for c in CASES} | set(_RANDOM) | {"remainder.Scalar_Tensor", "floor_divide", "imag"}
    assert set(formulas.FORMULAS) <= covered, set(formulas.FORMULAS) - covered


# ---------------------------------------------------------------------------------------
# subgradient points: kinks, ties, zero bases
# ---------------------------------------------------------------------------------------
_KINKS = np.array([-1.0, -0.5, 0.0, 0.0, 0.5, 1.0, 2.0, -2.0])
_TIES = np.array([-1.0, 0.5, 0.0, 2.0, 0.5, 1.0, 3.0, -2.0])
SUBGRADIENT = [
    ("abs", lambda lib, x: x.abs(), (_KINKS,)),
    ("sign/floor/round", lambda lib, x: x.sign() + x.floor() + x.round() + x.ceil() + x.trunc(), (_KINKS,)),
    ("clamp boundary", lambda lib, x: lib.clamp(x, -0.5, 0.5), (_KINKS,)),
    ("clamp tensor boundary", lambda lib, x, lo, hi: lib.clamp(x, lo, hi), (_KINKS, _TIES, _TIES + 1)),
    ("clamp min>max", lambda lib, x, lo, hi: lib.clamp(x, lo, hi), (_KINKS, _TIES + 1, _TIES)),
    ("clamp_min tie", lambda lib, x, lo: lib.clamp_min(x, lo), (_KINKS, _TIES)),
    ("maximum ties", lambda lib, x, y: lib.maximum(x, y), (_KINKS, _TIES)),
    ("minimum ties", lambda lib, x, y: lib.minimum(x, y), (_KINKS, _TIES)),
    ("fmax ties+nan", lambda lib, x, y: lib.fmax(x, y), (_KINKS, np.where(_TIES > 2, np.nan, _TIES))),
    ("fmin ties+nan", lambda lib, x, y: lib.fmin(x, y), (np.where(_KINKS > 1, np.nan, _KINKS), _TIES)),
    ("pow zero base, scalar exponents", lambda lib, x: x ** 2 + x ** 0 + x ** 3, (_KINKS,)),
    ("pow zero base sqrt", lambda lib, x: x.abs() ** 0.5, (_KINKS,)),
    ("pow zero base tensor exponent", lambda lib, x, y: lib.pow(x, y), (_KINKS, np.abs(_TIES) - 1)),
    ("pow.Scalar zero base", lambda lib, y: lib.pow(0.0, y), (np.abs(_TIES),)),
    ("copysign zero", lambda lib, x, y: lib.copysign(x, y), (_KINKS, _TIES)),
    ("xlogy zero", lambda lib, x, y: lib.xlogy(x, y), (_KINKS, np.abs(_TIES))),
    ("nan_to_num", lambda lib, x: lib.nan_to_num(x), (np.array([1.0, np.nan, np.inf, -np.inf, 0.5]),)),
    ("hypot", lambda lib, x, y: lib.hypot(x, y), (_KINKS, _TIES)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,fn,arrays", SUBGRADIENT, ids=[s[0] for s in SUBGRADIENT])
def test_subgradients_match_torch(name, fn, arrays, dtype):
    compare_with_torch(fn, list(arrays), dtype)


# ---------------------------------------------------------------------------------------
# complex inputs
# ---------------------------------------------------------------------------------------
def _cplx(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-2, 2, shape) + 1j * rng.uniform(-2, 2, shape)).astype(np.complex128)


COMPLEX = [
    ("abs", lambda lib, z: z.abs()),
    ("real", lambda lib, z: lib.real(z)),
    ("imag", lambda lib, z: lib.imag(z)),
    ("conj", lambda lib, z: lib.conj(z) * 1),
    ("conj_physical", lambda lib, z: lib.conj_physical(z)),
    ("mul", lambda lib, z: z * lib.from_numpy(_cplx(B, 7))),
    ("mul self", lambda lib, z: z * z),
    ("add", lambda lib, z: z + z * 2),
    ("sub", lambda lib, z: z - 1j),
    ("div", lambda lib, z: 1 / z),
    ("exp", lambda lib, z: z.exp()),
    ("tanh", lambda lib, z: z.tanh()),
    ("angle", lambda lib, z: z.angle()),
]


@pytest.mark.parametrize("name,fn", COMPLEX, ids=[c[0] for c in COMPLEX])
def test_complex_matches_torch(name, fn):
    z = _cplx(S, 3)
    got = _complex_grad(ember, fn, z)
    expected = _complex_grad(torch, fn, z)
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)


def _complex_grad(lib, fn, z):
    t = lib.from_numpy(z.copy()).requires_grad_(True)
    out = fn(lib, t)
    g = _cplx(tuple(out.shape), 5) if out.is_complex() else np.random.default_rng(5).uniform(-1, 1, tuple(out.shape))
    out.backward(lib.from_numpy(g))
    return as_numpy(t.grad)


def test_unsupported_complex_derivative_raises():
    z = ember.from_numpy(_cplx(S, 3)).requires_grad_(True)
    with pytest.raises(NotImplementedError, match="sgn"):
        z.sgn().abs().sum().backward()


# ---------------------------------------------------------------------------------------
# ops without a derivative in PyTorch, random ops, non-differentiable ops
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [lambda lib, x: lib.floor_divide(x, 0.7), lambda lib, x: lib.remainder(2.0, x)],
                         ids=["floor_divide", "remainder.Scalar_Tensor"])
def test_backward_not_implemented_like_torch(fn):
    for lib in (torch, ember):
        x = lib.from_numpy(np.linspace(0.5, 2, 6)).requires_grad_(True)
        y = fn(lib, x)
        assert y.requires_grad
        with pytest.raises(RuntimeError, match="derivative for aten::"):
            y.sum().backward()


_RANDOM = {
    "normal.Tensor_float": lambda lib, x: lib.normal(x, 1.0),
    "normal.float_Tensor": lambda lib, x: lib.normal(0.5, x.abs() + 1),
    "normal.Tensor_Tensor": lambda lib, x: lib.normal(x, x.abs() + 1),
    "bernoulli": lambda lib, x: lib.bernoulli(x.sigmoid()),
    "bernoulli.p": lambda lib, x: lib.bernoulli(x, 0.3),
    "uniform_": lambda lib, x: (x * 1).uniform_(),
    "normal_": lambda lib, x: (x * 1).normal_(),
    "bernoulli_.float": lambda lib, x: (x * 1).bernoulli_(0.5),
    "bernoulli_.Tensor": lambda lib, x: (x * 1).bernoulli_(x.sigmoid().detach()),
    "exponential_": lambda lib, x: (x * 1).exponential_(),
    "geometric_": lambda lib, x: (x * 1).geometric_(0.5),
    "log_normal_": lambda lib, x: (x * 1).log_normal_(),
    "cauchy_": lambda lib, x: (x * 1).cauchy_(),
    "random_.from": lambda lib, x: (x * 1).random_(0, 5),
    "random_.to": lambda lib, x: (x * 1).random_(5),
    "random_": lambda lib, x: (x * 1).random_(),
}


@pytest.mark.parametrize("key", sorted(_RANDOM))
def test_random_ops_pass_zero_gradient(key):
    compare_with_torch(_RANDOM[key], [np.random.default_rng(0).uniform(-1, 1, S)], "float64")


NONDIFF = [
    lambda lib, x: x > 0, lambda lib, x: lib.eq(x, x), lambda lib, x: x.ne(0.5), lambda lib, x: lib.le(x, x),
    lambda lib, x: lib.greater_equal(x, 0), lambda lib, x: lib.isnan(x), lambda lib, x: lib.isfinite(x),
    lambda lib, x: lib.isinf(x), lambda lib, x: lib.signbit(x), lambda lib, x: lib.isclose(x, x),
    lambda lib, x: lib.logical_and(x, x), lambda lib, x: lib.logical_not(x), lambda lib, x: lib.isposinf(x),
    lambda lib, x: lib.zeros_like(x), lambda lib, x: lib.ones_like(x), lambda lib, x: lib.full_like(x, 2.0),
    lambda lib, x: lib.empty_like(x), lambda lib, x: lib.rand_like(x), lambda lib, x: lib.randn_like(x),
    lambda lib, x: lib.randint_like(x, 5), lambda lib, x: x.new_zeros(2), lambda lib, x: x.new_ones(2),
    lambda lib, x: x.new_full((2,), 1.0), lambda lib, x: x.new_empty(2),
    lambda lib, x: lib.linspace(x[0, 0], 3.0, 4), lambda lib, x: lib.logspace(x[0, 0], 1.0, 3),
    lambda lib, x: lib.arange(3.0), lambda lib, x: lib.zeros(2), lambda lib, x: lib.randn(2),
]


@pytest.mark.parametrize("i", range(len(NONDIFF)))
def test_nondifferentiable_ops(i):
    fn = NONDIFF[i]
    for lib in (torch, ember):
        x = lib.from_numpy(np.random.default_rng(0).uniform(-1, 1, S)).requires_grad_(True)
        out = fn(lib, x)
        assert out.requires_grad is False and out.grad_fn is None, lib


def test_op_without_formula_raises():
    from ember._core.dispatch import DispatchKey
    from ember.ops.registry import OPERATORS
    for name in ("aten::linalg_svdvals", "aten::cholesky", "aten::linalg_cholesky", "aten::quantile.scalar"):
        op = OPERATORS.get(name)
        if op is not None and DispatchKey.Autograd not in op.kernels and op.composite is None:
            break
    else:
        pytest.skip("every candidate op has a derivative formula now")
    a = np.random.default_rng(0).uniform(-1, 1, (3, 3))
    x = ember.from_numpy(a @ a.T + 3 * np.eye(3)).requires_grad_(True)
    args = (x, 0.5) if "quantile" in name else (x,)
    with pytest.raises(NotImplementedError, match=name.split("::")[1].split(".")[0]):
        op(*args)


# ---------------------------------------------------------------------------------------
# double backward
# ---------------------------------------------------------------------------------------
GRADGRAD = [
    ("exp", lambda x, y: x.exp() * y), ("tanh", lambda x, y: x.tanh() * y), ("sigmoid", lambda x, y: x.sigmoid()),
    ("mul", lambda x, y: x * y), ("div", lambda x, y: x / (y.abs() + 1)), ("pow", lambda x, y: (x.abs() + 1) ** y),
    ("pow scalar", lambda x, y: x ** 3), ("log/sqrt", lambda x, y: (x.abs() + 1).log() + (y.abs() + 1).sqrt()),
    ("sin/atan", lambda x, y: x.sin() * y.atan()), ("maximum", lambda x, y: ember.maximum(x, y) * x),
]


@pytest.mark.parametrize("name,fn", GRADGRAD, ids=[g[0] for g in GRADGRAD])
def test_gradgradcheck(name, fn):
    rng = np.random.default_rng(2)
    x = ember.from_numpy(rng.uniform(-2, 2, (2, 3))).requires_grad_(True)
    y = ember.from_numpy(rng.uniform(-2, 2, (3,))).requires_grad_(True)
    assert gradgradcheck(fn, (x, y))
