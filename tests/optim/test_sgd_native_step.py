"""SGD with momentum's default (for-loop) update runs one native C loop per parameter
(optim/sgd.py `_native_step`): equal to the three in-place ops it replaces, and to PyTorch's
for-loop, to the bit; the cases it must leave to the ops (overlapping memory, odd layouts, dispatch
modes, Nesterov) still compute the ops' result; version counters move as the ops move them."""
import numpy as np
import pytest
import torch

import ember
from ember.optim import sgd as sgd_module

SHAPES = [(7, 5), (13,), (1,), (0, 3), (33, 17), (512, 9)]

CONFIGS = {
    "momentum": dict(lr=0.05, momentum=0.9),
    "dampening": dict(lr=0.05, momentum=0.8, dampening=0.3),
    "decay_maximize": dict(lr=0.01, momentum=0.7, weight_decay=0.01, maximize=True),
    "nesterov": dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
    "lr_zero": dict(lr=0.0, momentum=0.9),
    "int_hyper": dict(lr=1, momentum=1),
}


def _run(lib, dtype, config, steps=4, grads_of=None):
    rng = np.random.default_rng(0)
    params = [lib.from_numpy(rng.standard_normal(s).astype(dtype)).requires_grad_() for s in SHAPES]
    opt = lib.optim.SGD(params, **config)
    grad_rng = np.random.default_rng(1)
    for _ in range(steps):
        for p in params:
            g = grad_rng.standard_normal(p.shape).astype(dtype)
            p.grad = lib.from_numpy(g) if grads_of is None else grads_of(lib, g)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


def _ops_only(monkeypatch):
    monkeypatch.setattr(sgd_module, "_native_step", lambda *a: False)


def _launches(monkeypatch):
    calls = []
    real = sgd_module._native_step

    def counting(*args):
        ran = real(*args)
        calls.append(ran)
        return ran
    monkeypatch.setattr(sgd_module, "_native_step", counting)
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(CONFIGS))
def test_native_step_equals_the_ops_and_torch_to_the_bit(name, dtype, monkeypatch):
    calls = _launches(monkeypatch)
    native, _ = _run(ember, dtype, CONFIGS[name])
    if not CONFIGS[name].get("nesterov"):
        assert any(calls), "the native step never ran"
    theirs, _ = _run(torch, dtype, CONFIGS[name])
    _ops_only(monkeypatch)
    ops, _ = _run(ember, dtype, CONFIGS[name])
    for a, b, c in zip(native, ops, theirs):
        np.testing.assert_array_equal(a, b)
        if CONFIGS[name].get("weight_decay"):
            # eager's out-of-place grad.add(param, alpha=decay) rounds twice (ATen's: one fmadd),
            # before the update this file is about
            np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(a, c)


def test_extreme_values_round_as_the_ops(monkeypatch):
    big = np.array([3e38, -3e38, 1e-45, np.inf, -np.inf, np.nan, 0.0, -0.0], np.float32)

    def run():
        p = ember.from_numpy(big.copy()).requires_grad_()
        opt = ember.optim.SGD([p], lr=0.5, momentum=0.99, dampening=0.1)
        for g in (big[::-1].copy(), big.copy(), np.full(8, 1e38, np.float32)):
            p.grad = ember.from_numpy(g)
            opt.step()
        return p.detach().numpy().copy(), opt.state[p]["momentum_buffer"].numpy().copy()
    with np.errstate(all="ignore"):
        native = run()
        _ops_only(monkeypatch)
        ops = run()
    for a, b in zip(native, ops):
        np.testing.assert_array_equal(a, b)


def _transposed(lib, g):
    return lib.from_numpy(np.ascontiguousarray(g.T)).t() if g.ndim == 2 and min(g.shape) > 1 else lib.from_numpy(g)


def test_a_transposed_gradient_runs_the_ops(monkeypatch):
    """The buffer is the gradient's clone (its strides too): the kernel indexes flat memory, so a
    transposed gradient and buffer take the ops' path, whose result this must be."""
    calls = _launches(monkeypatch)
    ours, _ = _run(ember, np.float32, CONFIGS["dampening"], grads_of=_transposed)
    transposed = [len(s) == 2 and min(s) > 1 for s in SHAPES]
    assert calls and not any(c for c, t in zip(calls, transposed * 3) if t)
    assert any(c for c, t in zip(calls, transposed * 3) if not t)
    _ops_only(monkeypatch)
    ops, _ = _run(ember, np.float32, CONFIGS["dampening"], grads_of=_transposed)
    for a, b in zip(ours, ops):
        np.testing.assert_array_equal(a, b)


def test_a_gradient_of_another_dtype_is_refused_as_torch_refuses_it():
    as_double = lambda lib, g: lib.from_numpy(g.astype(np.float64))      # noqa: E731
    with pytest.raises(RuntimeError) as theirs:
        _run(torch, np.float32, CONFIGS["momentum"], grads_of=as_double)
    with pytest.raises(type(theirs.value)):
        _run(ember, np.float32, CONFIGS["momentum"], grads_of=as_double)


def test_gradient_aliasing_the_buffer_or_parameter_runs_the_ops(monkeypatch):
    """A gradient that is the momentum buffer itself (or the parameter's memory): the ops read
    values the earlier ops wrote, so one pass would differ; the native step must refuse."""
    def run(alias):
        p = ember.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32)).requires_grad_()
        opt = ember.optim.SGD([p], lr=0.1, momentum=0.5)
        p.grad = ember.from_numpy(np.ones(12, np.float32))
        opt.step()
        for _ in range(3):
            buf = opt.state[p]["momentum_buffer"]
            p.grad = buf if alias == "buffer" else p.detach()
            opt.step()
        return p.detach().numpy().copy()
    for alias in ("buffer", "param"):
        calls = _launches(monkeypatch)
        native = run(alias)
        assert not any(calls)
        monkeypatch.undo()
        _ops_only(monkeypatch)
        ops = run(alias)
        monkeypatch.undo()
        np.testing.assert_array_equal(native, ops)


def test_version_counters_move_as_the_ops_move_them(monkeypatch):
    def versions():
        p = ember.from_numpy(np.ones(5, np.float32)).requires_grad_()
        opt = ember.optim.SGD([p], lr=0.1, momentum=0.9)
        for _ in range(3):
            p.grad = ember.ones(5)
            opt.step()
        return p._version, opt.state[p]["momentum_buffer"]._version
    native = versions()
    _ops_only(monkeypatch)
    assert native == versions()


def test_a_graph_that_saved_the_parameter_refuses_after_a_native_step():
    p = ember.from_numpy(np.ones(4, np.float32)).requires_grad_()
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = ember.ones(4)
    opt.step()
    loss = (p * p).sum()                 # saves p
    p.grad = ember.ones(4)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_a_dispatch_mode_sees_the_ops():
    from ember.utils._python_dispatch import TorchDispatchMode

    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    p = ember.from_numpy(np.ones(4, np.float32)).requires_grad_()
    opt = ember.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = ember.ones(4)
    opt.step()
    p.grad = ember.ones(4)
    with Record():
        opt.step()
    assert any("mul_" in s for s in seen) and sum("add_" in s for s in seen) >= 2
