"""The fast path of direct bindings (``Op(..., direct_binding=True)``) against the dispatcher.

A direct binding calls the CPU kernel straight when the key set is just {CPU} and no key is
included in TLS; every other binding calls ``op.call``. These tests check that the choice is
visible, that both paths compute the same thing, and that nothing that needs to see an op
(a Python dispatch mode, a Profiler fallback, autograd) misses a direct one.
"""
import collections

import numpy as np
import pytest
import torch

import ember
from ember._core import dispatch
from ember._core.dispatch import CPU_BIT, DispatchKey, _IncludeDispatchKeyGuard
from ember.ops import registry
from ember.utils._python_dispatch import TorchDispatchMode

aten = ember.ops.aten


def _t(*shape, seed=0, dtype=np.float32):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


# (operator name, the ember call a user writes, arguments of the op's binding)
def _direct_cases():
    a, b, m = _t(3, 4), _t(3, 4, seed=1) + 2.0, _t(4, 4, seed=2)
    return [
        ("aten::add.Tensor", lambda: ember.add(a, b, alpha=2), (a, b), {"alpha": 2}),
        ("aten::sub.Tensor", lambda: a - b, (a, b), {}),
        ("aten::mul.Tensor", lambda: a * 3, (a, 3), {}),
        ("aten::div.Tensor", lambda: a / b, (a, b), {}),
        ("aten::neg", lambda: -a, (a,), {}),
        ("aten::exp", lambda: a.exp(), (a,), {}),
        ("aten::relu", lambda: ember.relu(a), (a,), {}),
        ("aten::sum", lambda: a.sum(), (a,), {}),
        ("aten::sum.dim_IntList", lambda: a.sum(1, keepdim=True), (a, 1, True), {}),
        ("aten::mean", lambda: a.mean(), (a,), {}),
        ("aten::matmul", lambda: a @ m, (a, m), {}),
        ("aten::mm", lambda: ember.mm(a, m), (a, m), {}),
    ]


def _same(x, y):
    assert x.dtype == y.dtype and x.shape == y.shape and x.stride() == y.stride()
    np.testing.assert_array_equal(x.numpy(), y.numpy())


# ---------------------------------------------------------------------------------------
# the choice is visible
# ---------------------------------------------------------------------------------------
def test_direct_flag_on_the_table_and_handles():
    ops = registry.direct_ops()
    for name in ("aten::add.Tensor", "aten::add_.Tensor", "aten::add.out", "aten::mul.Tensor", "aten::relu",
                 "aten::sum", "aten::matmul", "aten::neg", "aten::exp"):
        assert name in ops
        assert registry.OPERATORS[name].direct_binding
    assert aten.add.Tensor.direct_binding and registry.ENTRIES["aten::add.Tensor"].direct_binding
    for name in ("aten::sin", "aten::cos", "aten::where.self", "aten::cat"):
        assert name not in ops and not registry.OPERATORS[name].direct_binding
    assert len(ops) < 60  # a handful of rows (with their in-place and out= overloads), not every op


def test_binding_source_shows_the_path():
    direct = registry.binding_source("aten::add.Tensor")
    assert "_table[0](" in direct and "# direct binding" in direct and "_op.call(" in direct
    for name in ("aten::sin", "aten::where.self", "aten::cat", "aten::clamp"):
        src = registry.binding_source(name)
        assert "_table[0]" not in src and "# direct binding" not in src
        assert "_op.call(_ks, " in src
        assert "_table[1](" in src and "# a CUDA-only call: its kernel" in src   # every row: the {CUDA} line
    # a binding generated with the fast path turned off has no kernel call either
    assert "_table" not in registry.binding("aten::add.Tensor", direct=False).__source__
    assert "_table[0](" in registry.binding("aten::sin", direct=True).__source__


# ---------------------------------------------------------------------------------------
# fast path == dispatcher
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(len(_direct_cases())), ids=[c[0] for c in _direct_cases()])
def test_fast_path_and_dispatcher_agree(case):
    name, user_call, args, kwargs = _direct_cases()[case]
    handle = registry.OPERATORS[name]
    via_dispatcher = registry.binding(name, direct=False)
    via_fast_path = registry.binding(name, direct=True)
    _same(user_call(), via_dispatcher(*args, **kwargs))
    _same(via_fast_path(*args, **kwargs), via_dispatcher(*args, **kwargs))
    _same(handle.entry(*args, **kwargs), via_dispatcher(*args, **kwargs))


def test_direct_binding_skips_the_dispatcher_only_for_plain_cpu(monkeypatch):
    calls = []
    handle = aten.add.Tensor

    def spy(keys, *args):
        calls.append(keys)
        return dispatch.OperatorHandle.call(handle, keys, *args)
    monkeypatch.setattr(handle, "call", spy, raising=False)
    a, b = _t(4), _t(4, seed=1)
    ember.add(a, b)
    assert calls == []                               # {CPU}, nothing in TLS: the fast path
    registry.binding("aten::add.Tensor", direct=False)(a, b)
    assert calls == [CPU_BIT]                        # the same call through the dispatcher
    ember.add(a.to("meta"), b.to("meta"))
    assert calls[-1] == 1 << DispatchKey.Meta        # another backend: dispatcher
    ember.add(a.requires_grad_(), b)
    assert calls[-1] & (1 << DispatchKey.Autograd)    # a tensor requiring grad: dispatcher
    with _IncludeDispatchKeyGuard(DispatchKey.Tracer):
        ember.add(_t(4), b)
    assert len(calls) == 4 and calls[-1] == CPU_BIT  # a key included in TLS: dispatcher (op.call
    #                                                  gets the arguments' keys; it adds TLS's)


def test_in_place_direct_binding_bumps_version_and_aliases():
    a, b = _t(4), _t(4, seed=1)
    expect = a.numpy() + b.numpy()
    v = a._version
    out = a.add_(b)
    assert out is a and a._version == v + 1
    np.testing.assert_array_equal(a.numpy(), expect)
    o = ember.empty(4)
    assert ember.add(a, b, out=o) is o


# ---------------------------------------------------------------------------------------
# keys that need to see every op: Python mode, a Profiler fallback, autograd
# ---------------------------------------------------------------------------------------
def _mixed_calls():
    """(expected operator name, call): direct and dispatcher-only ops, interleaved."""
    a, b, m = _t(2, 3), _t(2, 3, seed=1), _t(3, 3, seed=2)
    return [
        ("aten::add.Tensor", lambda: ember.add(a, b)),
        ("aten::sin", lambda: ember.sin(a)),
        ("aten::mul.Tensor", lambda: a * b),
        ("aten::relu", lambda: a.relu()),
        ("aten::cos", lambda: a.cos()),
        ("aten::sum", lambda: a.sum()),
        ("aten::matmul", lambda: a @ m),
        ("aten::exp", lambda: ember.exp(a)),
        ("aten::tanh", lambda: a.tanh()),
        ("aten::neg", lambda: -a),
        ("aten::add_.Tensor", lambda: b.add_(1)),
    ]


class _Log(TorchDispatchMode):
    def __init__(self):
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.seen.append(func.name)
        return func(*args, **(kwargs or {}))


def test_python_mode_sees_every_op_once():
    calls = _mixed_calls()
    with _Log() as log:
        results = [fn() for _, fn in calls]
    assert log.seen == [name for name, _ in calls]
    plain = [fn() for _, fn in _mixed_calls()]
    for r, p in zip(results, plain):  # the mode changes nothing
        _same(r, p)


@pytest.fixture
def profiler_counter():
    """A counting boxed fallback on the Profiler key; the previous one is put back after."""
    previous = dispatch._global_fallbacks.get(DispatchKey.Profiler)
    counts = collections.Counter()

    def count(op, keys, *args):
        counts[op.name] += 1
        return op.redispatch(keys, *args)
    dispatch.register_fallback(DispatchKey.Profiler, count)
    yield counts
    dispatch.register_fallback(DispatchKey.Profiler, previous)


def test_profiler_fallback_sees_every_op_when_its_key_is_included(profiler_counter):
    calls = _mixed_calls()
    with _IncludeDispatchKeyGuard(DispatchKey.Profiler):
        for _ in range(3):
            for _, fn in calls:
                fn()
    for name, _ in calls:
        assert profiler_counter[name] == 3, name


def test_profiler_fallback_unseen_without_its_key(profiler_counter):
    # registered but not included: neither direct nor dispatcher-only ops pass through it
    for _, fn in _mixed_calls():
        fn()
    assert sum(profiler_counter.values()) == 0


def test_python_mode_and_profiler_fallback_together(profiler_counter):
    calls = _mixed_calls()
    with _IncludeDispatchKeyGuard(DispatchKey.Profiler), _Log() as log:
        for _, fn in calls:
            fn()
    assert log.seen == [name for name, _ in calls]
    for name, _ in calls:
        assert profiler_counter[name] == 1, name


def test_autograd_sees_direct_ops():
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s).astype(np.float64) for s in ((3, 4), (4, 4), (3, 4))]

    def f(lib, x, w, c):
        h = lib.matmul(x, w) - c * 2
        h = lib.add(h.relu(), lib.exp(-h) / (c * c + 1), alpha=0.5)
        return lib.mm(h, w).sum() + (h * h).mean() + h.sum(1).sum()

    e_in = [ember.from_numpy(v.copy()).requires_grad_() for v in xs]
    t_in = [torch.from_numpy(v.copy()).requires_grad_() for v in xs]
    e_out, t_out = f(ember, *e_in), f(torch, *t_in)
    assert e_out.grad_fn is not None and type(e_out.grad_fn).__name__ == type(t_out.grad_fn).__name__
    e_out.backward()
    t_out.backward()
    np.testing.assert_allclose(e_out.item(), t_out.item(), rtol=1e-12)
    for e, t in zip(e_in, t_in):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_grad_fn_names_of_direct_ops():
    x = ember.ones(3, requires_grad=True)
    tx = torch.ones(3, requires_grad=True)
    for op in (lambda v: v + 1, lambda v: v * 2, lambda v: v / 2, lambda v: -v, lambda v: v.exp(),
               lambda v: v.relu(), lambda v: v.sum(), lambda v: v.mean()):
        assert type(op(x).grad_fn).__name__ == type(op(tx).grad_fn).__name__


# ---------------------------------------------------------------------------------------
# dispatch.fast_call: the same rule as a function, for Python callers
# ---------------------------------------------------------------------------------------
def test_generated_fast_path_is_the_dispatch_template():
    """The bindings inline ``dispatch.fast_call_source`` word for word (one definition of the rule)."""
    src = registry.binding_source("aten::add.Tensor")
    for line in dispatch.fast_call_source("_ks", "input, other, alpha").splitlines():
        assert line in src


@pytest.mark.parametrize("case", range(len(_direct_cases())))
def test_fast_call_matches_the_dispatcher(case):
    name, _user, args, kwargs = _direct_cases()[case]
    op = registry.OPERATORS[name]
    full = [*args] + [kwargs.get(a.name, a.default) for a in op.schema.arguments[len(args):]]
    keys = 0
    for a in full:
        keys |= getattr(a, "_keys", 0)
    _same(dispatch.fast_call(op, keys, *full), op.call(keys, *full))


def test_fast_call_leaves_the_fast_path_for_any_other_key():
    a = _t(3)
    g = _t(3, seed=1).requires_grad_(True)
    out = dispatch.fast_call(aten.mul.Tensor, g._keys, g, a)
    assert out.grad_fn is not None          # Autograd key: through the dispatcher
    out.sum().backward()
    np.testing.assert_array_equal(g.grad.numpy(), a.numpy())

    seen = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func)
            return func(*args, **(kwargs or {}))

    with Record():                          # a key included in TLS: the mode sees the call
        dispatch.fast_call(aten.mul.Tensor, a._keys, a, a)
    assert seen == [aten.mul.Tensor]
