"""Check one decomposition against its operator run eagerly (the oracle).

    check_sample(op, make)     # make() -> (args, kwargs): fresh inputs, the same on every call

The decomposition is run twice: called directly (its ember ops run eagerly, autograd on) and
traced by make_fx with the full table (the graph must hold only core and kept-whole ops and
replay to the same values). Both must match the operator's eager result: shape, dtype, values
(float32 1e-5 relative, float64 1e-10), strides where `strides=True`, and every tensor argument
afterwards (running statistics, in-place targets). If eager raises, the decomposition must raise
the same exception type. `check_grads` compares float64 gradients through the decomposition with
the operator's own derivative formula.
"""
from __future__ import annotations

import numpy as np

import ember
from ember._functorch import make_fx
from ember._functorch.core_ops import CORE, KEPT_WHOLE, overload_name
from ember._functorch.decompositions import core_decompositions

TABLE = core_decompositions()
TOL = {"float32": (2e-5, 2e-6), "float64": (1e-10, 1e-12)}
LAYOUTS = ("contiguous", "transposed", "broadcast", "0-d", "empty")


def op_of(name: str):
    return ember.ops.registry.OPERATORS["aten::" + name]


def tensor(shape=(3, 4), dtype="float64", seed=0, layout="contiguous", low=-2.0, high=2.0):
    """A deterministic input: contiguous, a transposed view, an expanded (broadcast) view, 0-d or empty."""
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    if layout == "0-d":
        shape = ()
    elif layout == "empty":
        shape = (0,) + shape[1:]
    elif layout == "transposed" and len(shape) >= 2:
        shape = shape[:-2] + (shape[-1], shape[-2])
    elif layout == "broadcast" and shape:
        shape = (1,) + shape[1:]
    if dtype == "bool":
        data = rng.random(shape) > 0.5
    elif dtype.startswith(("int", "uint")):
        data = rng.integers(0 if dtype == "uint8" else -5, 6, size=shape).astype(dtype)
    else:
        data = rng.uniform(low, high, size=shape).astype(dtype)
    t = ember.tensor(data)
    if layout == "transposed" and t.dim() >= 2:
        t = t.transpose(-1, -2)
    elif layout == "broadcast" and t.dim():
        full = list(t.shape)
        full[0] = 3
        t = t.expand(*full)
    return t


def special(dtype="float64", plus_inf=True):
    """nan, the infinities, signed zeros, tiny and large values."""
    values = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 30.0, -30.0, 0.5, -2.5]
    return ember.tensor(np.array([v for v in values if plus_inf or v != np.inf], dtype=dtype))


def _tensors(value):
    if isinstance(value, ember.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def assert_same(expected, actual, where, strides=False, values=True):
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), where
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{where}[{i}]", strides, values)
        return
    if not isinstance(expected, ember.Tensor):
        assert expected == actual, where
        return
    assert isinstance(actual, ember.Tensor), f"{where}: {type(actual)}"
    assert tuple(actual.shape) == tuple(expected.shape), f"{where}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != {expected.dtype}"
    e, a = expected.detach().numpy(), actual.detach().numpy()
    if not values:          # uninitialised memory (empty_like ...): the metadata only
        pass
    elif expected.dtype.is_floating_point or expected.dtype.is_complex:
        rtol, atol = TOL.get(expected.dtype.name, (1e-5, 1e-6))
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(a, e, err_msg=where)
    if strides:
        significant = [i for i, n in enumerate(expected.shape) if n > 1]
        assert [actual.stride()[i] for i in significant] == [expected.stride()[i] for i in significant], \
            f"{where}: strides {actual.stride()} != {expected.stride()}"


def _run(fn, make, seed):
    args, kwargs = make()
    ember.manual_seed(seed)
    try:
        return None, fn(*args, **kwargs), args
    except Exception as e:          # the oracle's exception type is what is compared
        return e, None, args


def graph_ops(gm) -> set:
    return {overload_name(n.target) for n in gm.graph.nodes
            if n.op == "call_function" and hasattr(n.target, "schema")}


def check_sample(name, make, strides=False, trace=True, seed=0, values=True):
    """Eager op vs its decomposition (called, and traced) on the inputs make() builds."""
    op = op_of(name)
    decomposition = TABLE[op]
    error, expected, expected_args = _run(op, make, seed)
    got_error, got, got_args = _run(decomposition, make, seed)
    if error is not None:
        assert got_error is not None, f"{name}: eager raised {error!r}, the decomposition did not"
        assert type(got_error) is type(error), f"{name}: eager raised {error!r}, the decomposition {got_error!r}"
        return "raises"
    if got_error is not None:
        raise AssertionError(f"{name}: the decomposition raised {got_error!r}, eager did not") from got_error
    assert_same(expected, got, name, strides, values)
    assert_same(_tensors(expected_args), _tensors(got_args), f"{name} (arguments afterwards)", values=values)
    if trace:
        check_traced(name, op, make, expected, seed, values)
    return "compared"


def check_traced(name, op, make, expected, seed, values=True):
    args, kwargs = make()
    positions = [i for i, a in enumerate(args) if isinstance(a, ember.Tensor)]

    def program(*tensors):
        call = list(args)
        for i, t in zip(positions, tensors):
            call[i] = t
        return op(*call, **kwargs)
    inputs = [args[i] for i in positions]
    ember.manual_seed(seed)
    gm = make_fx(program, decomposition_table=TABLE)(*inputs)
    outside = graph_ops(gm) - CORE - set(KEPT_WHOLE)
    assert not outside, f"{name}: its decomposition traced non-core ops {sorted(outside)}"
    fresh, _ = make()
    fresh_inputs = [fresh[i] for i in positions]
    ember.manual_seed(seed)
    replayed = gm(*fresh_inputs)
    assert_same(expected, replayed, f"{name} (traced graph)", values=values)


def check_grads(name, make, seed=0, frozen=()):
    """float64 gradients of sum(out * cotangent) w.r.t. the float tensor arguments: through the
    decomposition vs the operator's derivative. Returns False when eager has no gradient here."""
    op = op_of(name)

    def grads(fn):
        args, kwargs = make()
        args = [a.detach().clone().requires_grad_(True)
                if isinstance(a, ember.Tensor) and a.dtype.is_floating_point and i not in frozen else a
                for i, a in enumerate(args)]
        leaves = [a for a in args if isinstance(a, ember.Tensor) and a.requires_grad]
        ember.manual_seed(seed)
        out = fn(*args, **kwargs)
        outs = [o for o in _tensors(out) if o.dtype.is_floating_point and o.requires_grad]
        if not outs or not leaves:
            return None
        total = sum((o * tensor(o.shape, "float64", seed=7 + i)).sum() for i, o in enumerate(outs))
        return ember.autograd.grad(total, leaves, allow_unused=True)
    try:
        expected = grads(op)
    except (NotImplementedError, RuntimeError):
        return False
    if expected is None:
        return False
    got = grads(TABLE[op])
    if got is None:         # no float output requires grad decomposed: eager's gradient must be zero
        assert not any(e is not None and e.numpy().any() for e in expected), f"{name}: no gradient decomposed"
        return True
    for i, (e, g) in enumerate(zip(expected, got)):
        if e is None or (g is None and not e.numpy().any()):
            continue        # a zero gradient (copysign's sign argument) may come back as None
        assert g is not None, f"{name}: no gradient for argument {i} through the decomposition"
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-8, atol=1e-10, equal_nan=True,
                                   err_msg=f"{name}: gradient of argument {i}")
    return True
