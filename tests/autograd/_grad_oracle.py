"""Gradient oracle for derivative-formula tests: gradcheck in ember (float64 finite
differences) and the same program's gradients in PyTorch 2.13, on the same inputs.

    grad_check(lambda lib, x: lib.sum(x, 1), rand(3, 4))

Float64 arrays become differentiable leaves; other NumPy arrays (int / bool) become plain
tensors; anything else is passed as is. ``noncontig=True`` hands the function a transposed view
of a contiguous leaf (same values), so formulas see non-contiguous inputs. With
``EMBER_ORACLE_DEVICE=cuda`` every tensor is made on the GPU, in both libraries.
"""
from __future__ import annotations

import numpy as np
import torch

import ember
from oracle import DEVICE, TORCH_BEFORE_2_13, device_scope

RNG = np.random.default_rng(0)


def rand(*shape, low=-2.0, high=2.0):
    """Distinct float64 values (no ties, so max/sort/median are differentiable), none within 1e-4 of
    a grid point such as 0 (|x| and relu stay differentiable for gradcheck's 1e-6 steps, whichever
    draws an xdist worker made before)."""
    n = int(np.prod(shape)) if shape else 1
    vals = RNG.permutation(np.linspace(low, high, n + 1)[1:] + 1e-4 + 0.9 * RNG.uniform(0, 1e-3, n))
    return vals.reshape(shape)


def _leaves(lib, arrays, noncontig):
    leaves, inputs = [], []
    for a in arrays:
        if isinstance(a, np.ndarray) and a.dtype == np.float64:
            base = np.ascontiguousarray(a.T) if noncontig and a.ndim >= 2 else a.copy()
            t = lib.tensor(base, dtype=lib.float64, requires_grad=True, device=DEVICE)
            leaves.append(t)
            inputs.append(("leaf", t))
        elif isinstance(a, np.ndarray):
            inputs.append(("const", lib.from_numpy(a.copy()).to(DEVICE)))
        else:
            inputs.append(("const", a))
    return leaves, inputs


def _prepare(lib, inputs, leaves, noncontig):
    out, k = [], 0
    for kind, v in inputs:
        if kind == "leaf":
            x = leaves[k]
            k += 1
            out.append(x.mT if noncontig and x.ndim >= 2 else x)
        else:
            out.append(v)
    return out


def _flat(out):
    if isinstance(out, (tuple, list)):
        res = []
        for o in out:
            res.extend(_flat(o))
        return res
    return [out]


def _diff_outputs(out):
    return [o for o in _flat(out) if o.dtype in (ember.float64, torch.float64)]


def _gradgradcheck(fn, leaves):
    """gradcheck of the first gradients (with grad enabled inside, so the finite-difference
    evaluations, which gradcheck runs under no_grad, can still differentiate)."""
    n = len(leaves)
    outs = fn(*leaves)
    gos = tuple(ember.tensor(RNG.standard_normal(tuple(o.shape)), requires_grad=True, device=DEVICE) for o in outs)

    def first_grad(*args):
        with ember.enable_grad():
            xs = [a if a.requires_grad else a.detach().requires_grad_(True) for a in args[:n]]
            grads = ember.autograd.grad(fn(*xs), xs, list(args[n:]), create_graph=True, allow_unused=True)
        return tuple(g.contiguous() for g in grads if g is not None)
    return ember.autograd.gradcheck(first_grad, tuple(leaves) + gos)


def grad_check(fn, *arrays, noncontig=False, gradcheck=True, gradgrad=False, atol=1e-7):
    """gradcheck `fn(ember, *inputs)` and compare its gradients with `fn(torch, *inputs)`."""
    with device_scope():
        _grad_check(fn, arrays, noncontig, gradcheck, gradgrad, atol)


def _grad_check(fn, arrays, noncontig, gradcheck, gradgrad, atol):
    leaves_e, inputs_e = _leaves(ember, arrays, noncontig)
    leaves_t, inputs_t = _leaves(torch, arrays, noncontig)

    def run_e(*xs):
        # contiguous: gradcheck fills a zeros_like(output) through .view(-1)
        return tuple(o.contiguous() for o in _diff_outputs(fn(ember, *_prepare(ember, inputs_e, list(xs),
                                                                                   noncontig))))

    if gradcheck:
        assert ember.autograd.gradcheck(run_e, tuple(leaves_e))
    if gradgrad:
        assert _gradgradcheck(run_e, leaves_e)
    outs_e = run_e(*leaves_e)
    outs_t = _diff_outputs(fn(torch, *_prepare(torch, inputs_t, leaves_t, noncontig)))
    assert len(outs_e) == len(outs_t), "differentiable outputs differ"
    gos = [RNG.standard_normal(tuple(o.shape)) for o in outs_t]
    ge = ember.autograd.grad(list(outs_e), leaves_e, [ember.tensor(g, device=DEVICE) for g in gos], allow_unused=True)
    try:
        gt = torch.autograd.grad(outs_t, leaves_t, [torch.tensor(g, device=DEVICE) for g in gos], allow_unused=True)
    except (RuntimeError, NotImplementedError) as exc:
        if TORCH_BEFORE_2_13 and gradcheck and "derivative for" in str(exc) and "not implemented" in str(exc):
            return   # a derivative the older PyTorch lacks (the GPU machine's): ember's gradcheck above is the oracle
        raise
    for a, b in zip(ge, gt):
        if b is None:
            assert a is None or not np.any(a.cpu().numpy()), "ember has a gradient where torch has none"
            continue
        assert a is not None, "ember has no gradient where torch has one"
        assert tuple(a.shape) == tuple(b.shape) and a.device.type == DEVICE   # gradients stay on the device
        np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-7, atol=atol)
