"""Gradients at singular points: every differentiable op evaluated where its derivative formula
has a 0/0, x/0, 0 * inf or a tie (atan2 at the origin, pow with base 0, sqrt/abs/norm at 0, std
of constant input, xlogy at 0, clamp at its bounds, softmax at -inf, losses at 0 and 1 ...)
gives PyTorch's gradient there: the same finite subgradient, the same inf or nan, or no
gradient at all. Inputs are float64 leaves; `backward(ones)` from each output."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

inf, nan = float("inf"), float("nan")

# name -> (program(lib, *leaves), values of each leaf)
CASES = {
 "atan2": (lambda L, a, b: L.atan2(a, b), [[0., 0., 1., -0., 0., inf, 0.], [0., -0., 0., 0., inf, inf, nan]]),
 "hypot": (lambda L, a, b: L.hypot(a, b), [[0., 0., 3., -0., inf], [0., 1., 0., 0., 0.]]),
 "pow_t_t": (lambda L, a, b: L.pow(a, b), [[0., 0., 0., 0., -1., 2., -0., 0.], [0., 1., 2., 0.5, 0.5, 0., 3., -1.]]),
 "pow_t_s0": (lambda L, a: L.pow(a, 0), [[0., 1., -2.]]),
 "pow_t_s.5": (lambda L, a: L.pow(a, 0.5), [[0., 1., -2.]]),
 "pow_t_s2": (lambda L, a: L.pow(a, 2), [[0., 1., -2.]]),
 "pow_t_s1": (lambda L, a: L.pow(a, 1), [[0., 1., -2.]]),
 "pow_t_s-1": (lambda L, a: L.pow(a, -1), [[0., 1., -2.]]),
 "pow_t_s3": (lambda L, a: L.pow(a, 3.), [[0., 1., -2.]]),
 "pow_t_s1.5": (lambda L, a: L.pow(a, 1.5), [[0., 1., -2.]]),
 "pow_s_t 0": (lambda L, b: L.pow(0., b), [[0., 1., -1., 2.5]]),
 "pow_s_t 2": (lambda L, b: L.pow(2., b), [[0., 1., -1., 2.5]]),
 "pow_s_t -2": (lambda L, b: L.pow(-2., b), [[0., 1., -1., 2.]]),
 "float_power": (lambda L, a, b: L.float_power(a, b), [[0., 0., 0., 2.], [0., 1., -1., 0.]]),
 "sqrt": (lambda L, a: L.sqrt(a), [[0., -0., 1., -1., inf]]),
 "rsqrt": (lambda L, a: L.rsqrt(a), [[0., -0., 1., -1., inf]]),
 "abs": (lambda L, a: L.abs(a), [[0., -0., 1., -1., nan]]),
 "sgn": (lambda L, a: L.sgn(a), [[0., -0., 1., -1.]]),
 "sign": (lambda L, a: L.sign(a), [[0., -0., 1., -1.]]),
 "xlogy": (lambda L, a, b: L.xlogy(a, b), [[0., 0., 0., 1., 0., 1., 0.], [0., -1., 1., 0., nan, -1., inf]]),
 "copysign": (lambda L, a, b: L.copysign(a, b), [[0., 0., -0., 1., -1.], [1., -1., 1., -0., 0.]]),
 "norm": (lambda L, a: L.norm(a), [[0., 0., 0.]]),
 "norm p1": (lambda L, a: L.norm(a, 1), [[0., 0., 1.]]),
 "norm p3": (lambda L, a: L.norm(a, 3), [[0., 0., 0.]]),
 "norm p.5": (lambda L, a: L.norm(a, 0.5), [[0., 0., 1.]]),
 "norm pinf": (lambda L, a: L.norm(a, inf), [[0., 0., 0.]]),
 "norm pinf ties": (lambda L, a: L.norm(a, inf), [[1., -1., 0.5]]),
 "norm p-inf": (lambda L, a: L.norm(a, -inf), [[1., -1., 0.5]]),
 "norm p0": (lambda L, a: L.norm(a, 0), [[0., 1., 2.]]),
 "norm dim": (lambda L, a: L.norm(a.reshape(2,2), dim=1), [[0., 0., 1., 2.]]),
 "linalg.vector_norm": (lambda L, a: L.linalg.vector_norm(a), [[0., 0.]]),
 "linalg.vector_norm p3": (lambda L, a: L.linalg.vector_norm(a, 3), [[0., 0.]]),
 "linalg.norm": (lambda L, a: L.linalg.norm(a), [[0., 0.]]),
 "linalg.norm fro": (lambda L, a: L.linalg.norm(a.reshape(1,2)), [[0., 0.]]),
 "linalg.matrix_norm": (lambda L, a: L.linalg.matrix_norm(a.reshape(2,2)), [[0., 0., 0., 0.]]),
 "frobenius": (lambda L, a: L.norm(a.reshape(2,2), p='fro'), [[0., 0., 0., 0.]]),
 "std const": (lambda L, a: L.std(a), [[1., 1., 1.]]),
 "std dim const": (lambda L, a: L.std(a.reshape(1,3), 1), [[1., 1., 1.]]),
 "std one elt": (lambda L, a: L.std(a), [[1.]]),
 "var one elt": (lambda L, a: L.var(a), [[1.]]),
 "std_mean const": (lambda L, a: L.std_mean(a)[0], [[2., 2.]]),
 "var const": (lambda L, a: L.var(a), [[1., 1., 1.]]),
 "normalize 0": (lambda L, a: L.nn.functional.normalize(a.reshape(1,2)), [[0., 0.]]),
 "cosine_sim 0": (lambda L, a, b: L.nn.functional.cosine_similarity(a.reshape(1,2), b.reshape(1,2)),
                  [[0., 0.], [1., 2.]]),
 "pairwise_distance": (lambda L, a, b: L.nn.functional.pairwise_distance(a.reshape(1,2), b.reshape(1,2)),
                       [[1., 2.], [1., 2.]]),
 "log 0": (lambda L, a: L.log(a), [[0., -1.]]),
 "div 0": (lambda L, a, b: L.div(a, b), [[0., 1., 0.], [0., 0., 1.]]),
 "reciprocal 0": (lambda L, a: L.reciprocal(a), [[0., -0.]]),
 "prod zeros": (lambda L, a: L.prod(a), [[0., 0., 2.]]),
 "prod one zero": (lambda L, a: L.prod(a), [[0., 3., 2.]]),
 "prod dim zeros": (lambda L, a: L.prod(a.reshape(2,2), 1), [[0., 0., 0., 2.]]),
 "cumprod zeros": (lambda L, a: L.cumprod(a, 0), [[2., 0., 3., 0., 4.]]),
 "logsumexp -inf": (lambda L, a: L.logsumexp(a, 0), [[-inf, -inf]]),
 "logsumexp inf": (lambda L, a: L.logsumexp(a, 0), [[inf, 1.]]),
 "logcumsumexp -inf": (lambda L, a: L.logcumsumexp(a, 0), [[-inf, -inf, 1.]]),
 "softmax -inf": (lambda L, a: L.softmax(a, 0), [[-inf, 0., 1.]]),
 "log_softmax -inf": (lambda L, a: L.log_softmax(a, 0), [[-inf, 0., 1.]]),
 "max ties": (lambda L, a: L.max(a), [[1., 1., 0.]]),
 "amax ties": (lambda L, a: L.amax(a, 0), [[1., 1., 0.]]),
 "maximum ties": (lambda L, a, b: L.maximum(a, b), [[1., 2.], [1., 3.]]),
 "fmax nan": (lambda L, a, b: L.fmax(a, b), [[nan, 1., nan, 1.], [1., nan, nan, 1.]]),
 "clamp edge": (lambda L, a: L.clamp(a, 0., 1.), [[0., 1., 0.5, -1.]]),
 "clamp nan": (lambda L, a: L.clamp(a, 0., 1.), [[nan, 1.]]),
 "relu 0": (lambda L, a: L.relu(a), [[0., -0., 1.]]),
 "hardtanh edge": (lambda L, a: L.nn.functional.hardtanh(a), [[-1., 1., 0.]]),
 "leaky_relu 0": (lambda L, a: L.nn.functional.leaky_relu(a), [[0., -0.]]),
 "elu 0": (lambda L, a: L.nn.functional.elu(a), [[0., -0.]]),
 "gelu": (lambda L, a: L.nn.functional.gelu(a), [[0., -inf, inf]]),
 "silu inf": (lambda L, a: L.nn.functional.silu(a), [[-inf, inf]]),
 "softplus inf": (lambda L, a: L.nn.functional.softplus(a), [[-inf, inf, 30.]]),
 "sigmoid inf": (lambda L, a: L.sigmoid(a), [[-inf, inf]]),
 "tanh inf": (lambda L, a: L.tanh(a), [[-inf, inf]]),
 "hardswish edge": (lambda L, a: L.nn.functional.hardswish(a), [[-3., 3., 0.]]),
 "hardsigmoid edge": (lambda L, a: L.nn.functional.hardsigmoid(a), [[-3., 3., 0.]]),
 "relu6 edge": (lambda L, a: L.nn.functional.relu6(a), [[0., 6.]]),
 "threshold edge": (lambda L, a: L.nn.functional.threshold(a, 1., 0.), [[1., 2.]]),
 "softshrink edge": (lambda L, a: L.nn.functional.softshrink(a, 0.5), [[0.5, -0.5]]),
 "hardshrink edge": (lambda L, a: L.nn.functional.hardshrink(a, 0.5), [[0.5, -0.5]]),
 "mish": (lambda L, a: L.nn.functional.mish(a), [[-inf, inf, 0.]]),
 "logsigmoid": (lambda L, a: L.nn.functional.logsigmoid(a), [[-inf, inf, 0.]]),
 "asin 1": (lambda L, a: L.asin(a), [[1., -1.]]),
 "acos 1": (lambda L, a: L.acos(a), [[1., -1.]]),
 "atanh 1": (lambda L, a: L.atanh(a), [[1., -1.]]),
 "acosh 1": (lambda L, a: L.acosh(a), [[1.]]),
 "erfinv 1": (lambda L, a: L.erfinv(a), [[1., -1.]]),
 "log1p -1": (lambda L, a: L.log1p(a), [[-1.]]),
 "angle 0": (lambda L, a: L.angle(a), [[0., -1., 1.]]),
 "remainder": (lambda L, a, b: L.remainder(a, b), [[1., 1.], [0., 1.]]),
 "fmod": (lambda L, a, b: L.fmod(a, b), [[1., 1.], [0., 1.]]),
 "mse 0": (lambda L, a, b: L.nn.functional.mse_loss(a, b), [[1., 2.], [1., 2.]]),
 "l1 0": (lambda L, a, b: L.nn.functional.l1_loss(a, b), [[1., 2.], [1., 2.]]),
 "smooth_l1 0": (lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b), [[1., 2.], [1., 2.]]),
 "smooth_l1 beta0": (lambda L, a, b: L.nn.functional.smooth_l1_loss(a, b, beta=0.), [[1., 2.], [1., 3.]]),
 "huber 0": (lambda L, a, b: L.nn.functional.huber_loss(a, b), [[1., 2.], [1., 2.]]),
 "bce 0/1": (lambda L, a, b: L.nn.functional.binary_cross_entropy(a, b), [[0., 1., 0.5], [0., 1., 1.]]),
 "kl_div 0": (lambda L, a, b: L.nn.functional.kl_div(a, b), [[0., 1.], [0., 1.]]),
 "cross_entropy -inf": (lambda L, a: L.nn.functional.cross_entropy(a.reshape(1,3), L.tensor([1])), [[-inf, 0., 1.]]),
 "nll": (lambda L, a: L.nn.functional.nll_loss(a.reshape(1,3), L.tensor([1])), [[-inf, 0., 1.]]),
 "rms_norm 0": (lambda L, a: L.nn.functional.rms_norm(a.reshape(1,2), (2,)), [[0., 0.]]),
 "layer_norm const": (lambda L, a: L.nn.functional.layer_norm(a.reshape(1,2), (2,)), [[1., 1.]]),
 "batch_norm const": (lambda L, a: L.nn.functional.batch_norm(a.reshape(2,1), None, None, training=True), [[1., 1.]]),
 "group_norm const": (lambda L, a: L.nn.functional.group_norm(a.reshape(1,2,1), 1), [[1., 1.]]),
 "max_pool ties": (lambda L, a: L.nn.functional.max_pool1d(a.reshape(1,1,4), 2), [[1., 1., 2., 2.]]),
 "median ties": (lambda L, a: L.median(a), [[1., 1., 1.]]),
 "quantile ties": (lambda L, a: L.quantile(a, 0.5), [[1., 1., 1., 1.]]),
 "trace 0": (lambda L, a: L.trace(a.reshape(2,2)), [[0., 0., 0., 0.]]),
 "det singular": (lambda L, a: L.linalg.det(a.reshape(2,2)), [[1., 1., 1., 1.]]),
 "det zero": (lambda L, a: L.linalg.det(a.reshape(2,2)), [[0., 0., 0., 0.]]),
 "cumsum inf": (lambda L, a: L.cumsum(a, 0), [[inf, 1.]]),
 "mean inf": (lambda L, a: L.mean(a), [[inf, 1.]]),
 "nan_to_num": (lambda L, a: L.nan_to_num(a), [[nan, inf, -inf, 1.]]),
 "where nan": (lambda L, a: L.where(a > 0, a, L.zeros_like(a)), [[nan, 1., -1.]]),
 "sqrt via pow": (lambda L, a: (a * a).sqrt(), [[0., 1.]]),
 "exp inf": (lambda L, a: L.exp(a), [[-inf, inf]]),
 "addcdiv 0": (lambda L, a, b: L.addcdiv(a, a, b), [[1., 0.], [0., 0.]]),
 "lerp": (lambda L, a, b: L.lerp(a, b, 0.5), [[inf, 1.], [inf, 1.]]),
 "logaddexp inf": (lambda L, a, b: L.logaddexp(a, b), [[inf, -inf, inf], [inf, -inf, 1.]]),
 "logaddexp2 inf": (lambda L, a, b: L.logaddexp2(a, b), [[inf, -inf, inf], [inf, -inf, 1.]]),
 "std corr0 const": (lambda L, a: L.std(a, correction=0), [[3., 3.]]),
 "frac": (lambda L, a: L.frac(a), [[inf, 1.5]]),
 "trunc": (lambda L, a: L.trunc(a), [[1.]]),
 "square 0": (lambda L, a: L.square(a), [[0.]]),
 "tan pi/2": (lambda L, a: L.tan(a), [[float(np.pi/2)]]),
 "nansum": (lambda L, a: L.nansum(a), [[nan, 1.]]),
 "nanmean": (lambda L, a: L.nanmean(a), [[nan, 1.]]),
 "nanmean allnan": (lambda L, a: L.nanmean(a), [[nan, nan]]),
}
COMPLEX_CASES = {
    "abs": (lambda L, a: L.abs(a), [[0j, 1 + 1j, -2j]]),
    "angle": (lambda L, a: L.angle(a), [[0j, 1 + 1j]]),
    "sqrt": (lambda L, a: L.sqrt(a), [[1 + 1j, -4 + 0j]]),
    "norm": (lambda L, a: L.linalg.vector_norm(a), [[0j, 0j]]),
    "norm p1": (lambda L, a: L.linalg.vector_norm(a, 1), [[0j, 1j]]),
    "mul": (lambda L, a, b: a * b, [[0j, 1j], [1 + 1j, 0j]]),
    "div": (lambda L, a, b: a / b, [[0j, 1j], [1 + 1j, 2j]]),
    "pow 0": (lambda L, a: a ** 0, [[0j, 1j]]),
    "pow 2": (lambda L, a: a ** 2, [[0j, 1j]]),
}


def _grads(lib, program, values, dtype):
    leaves = [lib.tensor(v, dtype=getattr(lib, dtype), requires_grad=True) for v in values]
    out = program(lib, *leaves)
    out.backward(lib.ones_like(out))
    grads = []
    for x in leaves:
        g = x.grad
        if g is not None and lib is torch and g._is_zerotensor():
            g = torch.zeros_like(x)
        grads.append(None if g is None else np.array(g.detach().numpy()))
    return grads


def _compare(program, values, dtype, rtol=1e-7, atol=1e-12):
    expected = _grads(torch, program, values, dtype)
    got = _grads(ember, program, values, dtype)
    for i, (e, t) in enumerate(zip(got, expected)):
        assert (e is None) == (t is None), f"input {i}: ember grad {e}, torch {t}"
        if t is not None:
            assert e.dtype == t.dtype
            np.testing.assert_allclose(e, t, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"input {i}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_at_singular_point(name):
    program, values = CASES[name]
    _compare(program, values, "float64")


@pytest.mark.parametrize("name", ["atan2", "hypot", "pow_t_t", "sqrt", "abs", "xlogy", "copysign", "norm",
                                  "norm p3", "std const", "normalize 0", "cosine_sim 0", "nanmean allnan",
                                  "bce 0/1", "kl_div 0", "det zero"])
def test_gradient_at_singular_point_float32(name):
    program, values = CASES[name]
    _compare(program, values, "float32", rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_gradient_at_singular_point(name):
    program, values = COMPLEX_CASES[name]
    _compare(lambda L, *xs: L.real(program(L, *xs)) + L.imag(program(L, *xs)) if program(L, *xs).is_complex()
             else program(L, *xs), values, "complex128")


@pytest.mark.parametrize("name", ["atan2", "hypot", "norm", "std const", "xlogy", "pow_t_s.5"])
def test_double_backward_at_singular_point(name):
    program, values = CASES[name]

    def second(L, *xs):
        out = program(L, *xs)
        grads = L.autograd.grad(out.sum(), xs, create_graph=True)
        return sum(g.sum() for g in grads)
    _compare(second, values, "float64")
