"""The compiled wrapper's extern calls: eager's binding bound to the graph backend's kernel
(registry.bound_binding, wrapper.bound_extern), skipping the dispatcher and autocast. Checked against
eager's own binding: values, dtypes and strides; the exception type and message of bad input; the
dispatcher still taken wherever eager would do more than run the kernel (autograd recording, meta
tensors, a Python mode, the profiler, a kernel registered later); and compiled graphs whose externs
run through them, against eager."""
import numpy as np
import pytest

import ember
from ember._core.dispatch import DispatchKey
from ember._functorch import make_fx
from ember._inductor.compile_fx import compile_fx
from ember._inductor.wrapper import bound_extern
from ember.ops import registry

AUTOCAST = 1 << DispatchKey.Autocast
aten = ember.ops.aten
pytestmark = pytest.mark.usefixtures("strict_fuser")


def bound(op):
    return registry.bound_binding(op.name, DispatchKey.CPU, AUTOCAST)


def rand(*shape, seed=0, dtype=np.float32):
    return ember.from_numpy(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def same(got, want):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
        return
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


CASES = [   # (op, args, kwargs): non-canonical scalars (NumPy ints, a float dim) go through the conversions
    (aten.matmul.default, lambda: (rand(3, 4, 5), rand(5, 2, seed=1)), {}),
    (aten.embedding.default, lambda: (rand(10, 3), ember.tensor([[1, 9], [0, 0]])), {"padding_idx": np.int64(0)}),
    (aten.cumsum.default, lambda: (rand(4, 6), np.int32(1)), {"dtype": ember.float64}),
    (aten.topk.default, lambda: (rand(5, 7), 3), {"dim": 0, "largest": False}),
    (aten.sort.default, lambda: (rand(6, 2),), {"descending": True}),
    (aten.index_select.default, lambda: (rand(5, 4), 0, ember.tensor([4, 0, 4])), {}),
    (aten.addmm.default, lambda: (rand(2, 3), rand(2, 4, seed=1), rand(4, 3, seed=2)), {"beta": 0.5, "alpha": 2}),
]


@pytest.mark.parametrize("op, make, kwargs", CASES, ids=[c[0].name for c in CASES])
def test_bound_binding_matches_eager(op, make, kwargs):
    args = make()
    same(bound(op)(*args, **kwargs), op(*args, **kwargs))


BAD = [   # eager's exception for each: shapes, dtypes, argument types, out-of-range indices
    (aten.matmul.default, lambda: (rand(3, 4), rand(5, 2)), {}),
    (aten.matmul.default, lambda: (rand(3, 4), "x"), {}),
    (aten.embedding.default, lambda: (rand(10, 3), ember.tensor([1.0, 2.0])), {}),
    (aten.embedding.default, lambda: (rand(10, 3), ember.tensor([10])), {}),
    (aten.cumsum.default, lambda: (rand(4, 6), 2), {}),
    (aten.cumsum.default, lambda: (rand(4, 6), "dim"), {}),
    (aten.topk.default, lambda: (rand(5, 7), 9), {}),
    (aten.index_select.default, lambda: (rand(5, 4), 0, ember.tensor([5])), {}),
]


@pytest.mark.parametrize("op, make, kwargs", BAD, ids=[f"{c[0].name}-{i}" for i, c in enumerate(BAD)])
def test_bound_binding_raises_what_eager_raises(op, make, kwargs):
    args = make()
    with pytest.raises(Exception) as want:
        op(*args, **kwargs)
    with pytest.raises(type(want.value)) as got:
        bound(op)(*args, **kwargs)
    assert str(got.value) == str(want.value)


def test_bound_binding_ignores_autocast_only():
    """Under autocast the bound binding computes in the traced dtypes (the graph's casts are nodes),
    while eager's binding casts; a tensor that records autograd still goes through the dispatcher."""
    a, b = rand(4, 5), rand(5, 3, seed=1)
    mm = bound(aten.matmul.default)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        assert aten.matmul.default(a, b).dtype == ember.bfloat16
        got = mm(a, b)
    same(got, aten.matmul.default(a, b))
    w = rand(5, 3, seed=1).requires_grad_()
    out = mm(a, w)
    assert out.grad_fn is not None
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.broadcast_to(a.numpy().sum(0)[:, None], (5, 3)), rtol=1e-6)
    with ember.no_grad():
        assert mm(a, w).grad_fn is None


def test_bound_binding_takes_the_dispatcher_for_meta_modes_and_new_kernels():
    from ember.utils._python_dispatch import TorchDispatchMode
    mm = bound(aten.matmul.default)
    m = mm(ember.empty(4, 5, device="meta"), ember.empty(5, 3, device="meta"))
    assert m.device.type == "meta" and tuple(m.shape) == (4, 3)
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.name)
            return func(*args, **(kwargs or {}))
    with Log():
        mm(rand(2, 2), rand(2, 2))
    assert seen == ["aten::matmul"]
    with ember.autograd.profiler.profile() as prof:
        mm(rand(2, 2), rand(2, 2))
    assert any("matmul" in e.name for e in prof.function_events)

    lib = ember.library.Library("bound_test", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    op = ember.ops.bound_test.twice.default
    twice = bound_extern(op, "cpu")
    same(twice(rand(3)), rand(3) * 2)
    op.register(DispatchKey.CPU, lambda x: x * 3)      # a kernel registered later is the one that runs
    same(twice(rand(3)), rand(3) * 3)


def compiled(fn, *inputs):
    c = compile_fx(make_fx(fn)(*inputs), list(inputs))
    assert c.current is not None
    return c


def test_compiled_graph_calls_its_externs_through_bound_bindings():
    def fn(x, idx, w):
        e = ember.ops.aten.index_add.default(w, 0, idx, x[:2]) * 2     # extern, then a fused kernel
        v, i = ember.topk(e.sum(-1), 2, dim=0)                         # a tuple-returning extern
        return ember.cumsum(x, 0) + 1, v, i
    inputs = (rand(5, 4), ember.tensor([3, 0]), rand(6, 4, seed=1))
    c = compiled(fn, *inputs)
    targets = [n.target for n in c.current.graph.nodes if n.op == "call_function"]
    names = {t.__ember_op__.name for t in targets if hasattr(t, "__ember_op__")}
    assert {"aten::index_add", "aten::topk", "aten::cumsum"} <= names
    assert not any(isinstance(t, ember._core.dispatch.OperatorHandle) for t in targets)
    assert "aten_index_add__default_on_cpu" in c.current.code
    same(list(c(*inputs)), list(fn(*inputs)))


def test_compiled_graph_under_autocast_keeps_its_traced_dtypes():
    """A graph traced in float32 and run under autocast computes what it was traced as (its fused
    kernels cannot cast): the extern matmul too, where eager's binding would cast it to bfloat16
    (and the wrapper's dtype check would then refuse the result)."""
    def fn(a, b):
        return ember.matmul(a, b).relu() + 1
    a, b = rand(3, 4, 5), rand(5, 6, seed=1)
    c = compiled(fn, a, b)
    want = fn(a, b)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        got = c(a, b)
    same(got, want)


def test_compiled_extern_error_is_eagers():
    """Bad input reaching an extern inside a compiled graph raises eager's exception."""
    def fn(w, target):
        return ember.nn.functional.cross_entropy(w, target) + 1
    w, target = rand(4, 5), ember.tensor([0, 3, 4, 1])
    c = compiled(fn, w, target)
    assert "aten_cross_entropy_loss__default_on_cpu" in c.current.code
    bad = ember.tensor([0, 7, 1, 1])
    with pytest.raises(Exception) as want:
        fn(w, bad)
    with pytest.raises(type(want.value)) as got:
        c(w, bad)
    assert str(got.value) == str(want.value)
