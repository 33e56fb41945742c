"""Oracle tests of the special-function ops (ember/ops/table/special_functions.py) against PyTorch,
and of their float64 accuracy against mpmath where PyTorch's own kernel is less exact."""
import math

import mpmath
import numpy as np
import pytest
import torch

import ember
from oracle import DEVICE, check, device_scope, make
from autograd._grad_oracle import grad_check

POINTS = np.array([0.3, 1.5, 2.0, 7.25, -1.5, -0.2, 30.0, 1e-3, 0.5, 3.75, -2.5, 11.0])


@pytest.mark.parametrize("name", ["lgamma", "digamma", "i0", "sinc", "logit"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16"])
def test_unary_values_and_dtypes(name, dtype):
    x = POINTS if dtype.startswith("float") else make((7,), dtype)
    check(lambda lib, t: getattr(lib, name)(t), x.astype(dtype) if dtype.startswith("float") else x,
          rtol=1e-9 if dtype == "float64" else None)
    check(lambda lib, t: getattr(t, name)(), make((3, 4), dtype), noncontig=True)


def test_poles_and_infinities():
    edge = np.array([0.0, -0.0, -1.0, -2.0, 1.0, 2.0, np.inf, -np.inf, np.nan])
    for name in ("lgamma", "digamma"):
        check(lambda lib, t: getattr(lib, name)(t), edge)
    check(lambda lib, t: lib.polygamma(1, t), np.array([0.0, 1.0, np.inf, np.nan]), rtol=1e-8)  # torch: 5e-10
    check(lambda lib, t: lib.logit(t), np.array([0.0, 1.0, 0.5, -1.0, 2.0]))


def test_complex_inputs_refused_or_supported_as_torch():
    z = make((4,), "complex64")
    for name in ("lgamma", "digamma", "i0"):
        check(lambda lib, t: getattr(lib, name)(t), z)
    check(lambda lib, t: lib.sinc(t), z)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6])
def test_polygamma(n):
    x = np.abs(POINTS) + 0.1
    check(lambda lib, t: lib.polygamma(n, t), x, rtol=1e-8)
    check(lambda lib, t: t.polygamma(n), x.astype("float32"))
    check(lambda lib, t: t.clone().polygamma_(n), x.astype("float32"))
    check(lambda lib, t: lib.polygamma(-1, t), x)


def test_float64_accuracy_against_mpmath():
    mpmath.mp.dps = 30
    x = np.abs(POINTS) + 0.05
    got = ember.tensor(x).lgamma().numpy()
    np.testing.assert_allclose(got, [float(mpmath.loggamma(v)) for v in x], rtol=1e-13, atol=1e-14)
    got = ember.tensor(x).digamma().numpy()
    np.testing.assert_allclose(got, [float(mpmath.digamma(v)) for v in x], rtol=1e-13, atol=1e-14)
    got = ember.polygamma(2, ember.tensor(x)).numpy()
    np.testing.assert_allclose(got, [float(mpmath.polygamma(2, v)) for v in x], rtol=1e-12)
    a, z = np.array([0.5, 1.0, 2.0, 5.0, 30.0, 100.0]), np.array([0.1, 1.0, 3.0, 4.0, 35.0, 90.0])
    got = ember.igamma(ember.tensor(a), ember.tensor(z)).numpy()
    np.testing.assert_allclose(got, [float(mpmath.gammainc(p, 0, q, regularized=True)) for p, q in zip(a, z)],
                               rtol=1e-12)


def test_mvlgamma():
    x = np.array([2.5, 3.0, 7.1, 1.6])
    for p in (1, 2, 3):
        check(lambda lib, t: lib.mvlgamma(t, p), x)
        check(lambda lib, t: t.mvlgamma(p), x.astype("float32"))
    check(lambda lib, t: lib.mvlgamma(t, 0), x)
    check(lambda lib, t: t.clone().mvlgamma_(2), x)


def test_logit_eps():
    x = np.array([0.0, 1e-4, 0.3, 0.9999, 1.0])
    for eps in (None, 1e-3, 0.0, -1.0):
        check(lambda lib, t: lib.logit(t, eps), x)
        check(lambda lib, t: t.clone().logit_(eps), x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_incomplete_gamma(dtype):
    a = np.array([0.5, 1.0, 2.0, 5.0, 30.0, 0.0, -1.0, 3.0]).astype(dtype)
    x = np.array([0.1, 1.0, 3.0, 4.0, 35.0, 1.0, 1.0, 0.0]).astype(dtype)
    for name in ("igamma", "igammac"):
        check(lambda lib, p, q: getattr(lib, name)(p, q), a, x, rtol=1e-8 if dtype == "float64" else None)
        check(lambda lib, p, q: getattr(p.clone(), name + "_")(q), a, x, rtol=1e-8 if dtype == "float64" else None)
    check(lambda lib, p, q: lib.igamma(p, q), make((3,), "int64"), make((3,), "int64"))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int16"])
def test_gcd_lcm(dtype):
    a, b = make((4, 5), dtype, low=-12, high=12), make((5,), dtype, low=-12, high=12)
    for name in ("gcd", "lcm"):
        check(lambda lib, x, y: getattr(lib, name)(x, y), a, b)
        check(lambda lib, x, y: getattr(x.clone(), name + "_")(y), a, b)
        check(lambda lib, x, y: getattr(lib, name)(x, y), a.astype("float32"), b.astype("float32"))


def test_heaviside():
    x = np.array([-1.0, 0.0, 2.0, np.nan, -0.0])
    check(lambda lib, t, v: lib.heaviside(t, v), x, np.array([0.5]))
    check(lambda lib, t, v: t.clone().heaviside_(v), x, np.array([0.25, 0.5, 0.75, 1.0, 2.0]))
    check(lambda lib, t, v: lib.heaviside(t, v), make((3,), "int64"), make((3,), "int64"))
    check(lambda lib, t, v: lib.heaviside(t, v), x, np.array([1], dtype="int64"))     # dtypes differ
    check(lambda lib, t, v: lib.heaviside(t, v), make((2,), "complex64"), make((2,), "complex64"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_nextafter(dtype):
    x = np.array([1.0, 0.0, -1.0, 3.0, 0.0, 5.0])
    y = np.array([2.0, -1.0, -2.0, 3.0, 1.0, -np.inf])
    check(lambda lib, a, b: lib.nextafter(a, b), x, y, dtype=dtype, rtol=0, atol=0)
    check(lambda lib, a, b: a.clone().nextafter_(b), x, y, dtype=dtype, rtol=0, atol=0)
    check(lambda lib, a, b: lib.nextafter(a, b), make((3,), "int64"), make((3,), "int64"))
    # every pair of edge values: signed zeros, subnormals (CuPy's float32 nextafter flushes them), the
    # largest finite values, infinities, NaN
    edges = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -1e-40, 3.4e38, 6e-8, 5e-324, 1.7e308])
    check(lambda lib, a, b: lib.nextafter(a, b), np.repeat(edges, edges.size), np.tile(edges, edges.size),
          dtype=dtype, rtol=0, atol=0)


def test_ldexp_frexp():
    check(lambda lib, a, b: lib.ldexp(a, b), make((3, 4)), make((4,), "int64"))
    check(lambda lib, a, b: a.ldexp(b), make((3,), "int64"), make((3,), "int64"))
    check(lambda lib, a, b: a.clone().ldexp_(b), make((3,)), make((3,), "int32"))
    for dtype in ("float32", "float64", "float16"):
        x = np.array([0.0, -3.5, 1e-3, 1024.0, np.inf, -np.inf, np.nan, 6.0]).astype(dtype)
        check(lambda lib, t: tuple(lib.frexp(t)), x)
        check(lambda lib, t: tuple(t.frexp()), x)
    check(lambda lib, t: lib.frexp(t), make((3,), "int64"))


def test_meta_shapes_and_dtypes():
    check(lambda lib, t: str(lib.digamma(t.to("meta")).dtype).split(".")[-1], make((2, 3), "int64"))
    check(lambda lib, t: [str(x.dtype).split(".")[-1] for x in lib.frexp(t.to("meta"))], make((2, 3)))
    check(lambda lib, a, b: tuple(lib.gcd(a.to("meta"), b.to("meta")).shape), make((2, 1), "int64"),
          make((3,), "int64"))


@pytest.mark.parametrize("fn", [
    lambda lib, x: x.lgamma(), lambda lib, x: x.digamma(), lambda lib, x: lib.polygamma(2, x),
    lambda lib, x: lib.mvlgamma(x + 2, 2), lambda lib, x: x.sinc(), lambda lib, x: (x / 5 + 0.3).logit(),
    lambda lib, x: lib.ldexp(x, lib.tensor([1, 2, 3])),
], ids=["lgamma", "digamma", "polygamma", "mvlgamma", "sinc", "logit", "ldexp"])
def test_gradients(fn):
    x = np.array([0.7, 1.3, 2.9])
    grad_check(fn, x)


def test_incomplete_gamma_gradient_wrt_x_only():
    a = torch.tensor([0.5, 2.0, 5.0], dtype=torch.float64)
    grad_check(lambda lib, x: lib.igamma(lib.tensor([0.5, 2.0, 5.0], dtype=lib.float64), x),
               np.array([0.7, 1.3, 2.9]))
    grad_check(lambda lib, x: lib.igammac(lib.tensor([0.5, 2.0, 5.0], dtype=lib.float64), x),
               np.array([0.7, 1.3, 2.9]))
    for lib in (torch, ember):
        p = lib.tensor([0.5, 2.0], dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError):
            lib.igamma(p, lib.tensor([1.0, 2.0], dtype=lib.float64)).sum().backward()
    assert a is not None


def test_frexp_gradient_and_nondifferentiable_ops():
    grad_check(lambda lib, x: lib.frexp(x)[0], np.array([0.7, -3.3, 9.0]), gradcheck=False)
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with pytest.raises(RuntimeError):
            lib.heaviside(x, lib.tensor([0.5])).sum().backward()
    x, y = np.array([0.7, -3.3, 2.0]), np.array([1.0, -4.0, 2.0])
    if _torch_differentiates_nextafter():
        grad_check(lambda lib, x, y: lib.nextafter(x, y), x, y, gradcheck=False)
        return
    # an older PyTorch (the GPU machine's) has no derivative for nextafter; 2.13's formula
    # (derivatives.yaml): grad where self != other, else 0, and none for other
    with device_scope():
        a = ember.tensor(x, requires_grad=True, device=DEVICE)
        b = ember.tensor(y, requires_grad=True, device=DEVICE)
        ga, gb = ember.autograd.grad(ember.nextafter(a, b), (a, b), ember.tensor([1.5, -2.0, 3.0], device=DEVICE))
    np.testing.assert_array_equal(ga.cpu().numpy(), np.where(x != y, [1.5, -2.0, 3.0], 0))
    np.testing.assert_array_equal(gb.cpu().numpy(), np.zeros(3))


def _torch_differentiates_nextafter():
    x = torch.tensor([1.0], dtype=torch.float64, requires_grad=True)
    try:
        torch.nextafter(x, torch.tensor([2.0], dtype=torch.float64)).sum().backward()
    except NotImplementedError:
        return False
    return True


def test_compiled_matches_eager():
    def f(x, y):
        return x.lgamma() + x.digamma() * y.sinc() + ember.polygamma(1, x) - x.logit(1e-3)
    x, y = ember.tensor([0.2, 0.6, 0.9]), ember.tensor([0.0, 0.5, 2.0])
    np.testing.assert_allclose(ember.compile(f)(x, y).numpy(), f(x, y).numpy(), rtol=1e-6)
    assert math.isfinite(float(f(x, y).sum()))


@pytest.mark.parametrize("name,args", [("digamma", ()), ("psi", ()), ("i0", ()), ("sinc", ()), ("logit", ()),
                                       ("gammaln", ()), ("multigammaln", (2,))])
def test_torch_special_names(name, args):
    check(lambda lib, t: getattr(lib.special, name)(t, *args), np.array([1.3, 2.5, 0.7]) + 0.1)


def test_torch_special_names_with_two_operands():
    a, x = np.array([0.5, 2.0, 3.0]), np.array([1.0, 0.5, 4.0])
    check(lambda lib, p, q: lib.special.gammainc(p, q), a, x, rtol=1e-8)
    check(lambda lib, p, q: lib.special.gammaincc(p, q), a, x, rtol=1e-8)
    check(lambda lib, p: lib.special.polygamma(2, p), a, rtol=1e-8)
