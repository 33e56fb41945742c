"""The optimised plans' specialisation: which profiled types the input signature guarantees
(and so stay on the optimised graph), and the direct operator calls the plans make where the
types prove them exact (checked against eager for each kind of call)."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import ember
from ember.jit import ir
from ember.jit.executor import GraphExecutor
from ember.jit.ir import prim
from ember.jit.ir.evaluate import evaluate
from ember.jit.ir.types import BoolType, IntType, TensorType, TupleType

from test_executor import _same, _t, nested_graph

T = TensorType()


# ---- specialised types are only kept where the input signature guarantees them ----------------
def test_shape_from_int_input_is_not_baked_in():
    """y = x.repeat(n); return y.size(0): n is not part of the signature, so y stays unshaped."""
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    n = g.placeholder("n", type_expr=IntType())
    y = ir.call(g, "repeat", (x, n), type_=T)
    s = ir.call(g, "size", (y, 0), type_=IntType())
    g.output(ir.call(g, prim.TupleConstruct, (s, ir.call(g, "dim", (x,), type_=IntType())),
                     type_=TupleType((IntType(), IntType()))))
    ex = GraphExecutor(g)
    x_ = ember.ones(3)
    assert ex.run(x_, 2) == (6, 1) and ex.run(x_, 2) == (6, 1)
    assert ex.run(x_, 5) == (15, 1)
    assert ex.stats["optimized_runs"] == 2
    opt = ex.graph_for(x_, 5)
    assert [n for n in opt.nodes if n.op == "call_method" and n.target == "repeat"][0].type == TensorType()


def test_shape_after_data_dependent_branch_is_not_baked_in():
    """if x.sum() > 0: y = x[:2] else: y = x; return y.size(0) * 1 + (x * 2).size(0) * 10"""
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    cond = ir.call(g, bool, (ir.call(g, operator.gt, (ir.call(g, "sum", (x,), type_=T), 0), type_=T),),
                   type_=BoolType())
    node, (y,) = ir.add_if(g, cond, [T])
    tb, eb = node.blocks
    ir.set_block_returns(tb, [ir.call(tb, operator.getitem, (x, slice(None, 2, None)), type_=T)])
    ir.set_block_returns(eb, [x])
    a = ir.call(g, "size", (y, 0), type_=IntType())
    b = ir.call(g, "size", (ir.call(g, operator.mul, (x, 2), type_=T), 0), type_=IntType())
    g.output(ir.call(g, operator.add, (a, ir.call(g, operator.mul, (b, 10), type_=IntType())), type_=IntType()))
    ex = GraphExecutor(g)
    pos, neg = ember.ones(4), -ember.ones(4)
    assert ex.run(pos) == 42 and ex.run(pos) == 42
    assert ex.run(neg) == 44 and ex.run(pos) == 42
    opt = ex.graph_for(pos)
    mul = [n for n in opt.nodes if n.target is operator.mul and isinstance(n.type, TensorType)]
    assert not mul or mul[0].type == TensorType(ember.float32, (4,), False)  # guaranteed: kept (or folded)


def test_inplace_reshape_disables_intermediate_specialisation():
    from ember.jit.passes.profiling import keep_guaranteed_types
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    y = ir.call(g, operator.mul, (x, 2), type_=T)
    g.output(y)
    x_ = ember.ones(3)
    seen = TensorType(ember.float32, (3,), False)
    x.type = y.type = seen
    keep_guaranteed_types(g, [x_])
    assert x.type == seen and y.type == seen
    ir.call(g, "resize_", (y, [1, 3]), type_=T)     # (ember has no shape-changing in-place ops yet)
    keep_guaranteed_types(g, [x_])
    assert y.type == TensorType()


def test_loop_carried_type_kept_when_every_trip_preserves_it():
    g = nested_graph()
    ex = GraphExecutor(g)
    rng = np.random.default_rng(0)
    args = (_t(rng, 2, 3), _t(rng, 3, 3), _t(rng, 3), 4)
    _same(ex.run(*args), evaluate(g, list(args)))
    opt = ex.graph_for(*args)
    loops = [n for n in ir.walk(opt) if n.target is prim.Loop]
    want = TensorType(ember.float32, (2, 3), False)
    assert loops and all(ir.block_params(lp.blocks[0])[1].type == want for lp in loops)
    _same(ex.run(*args), evaluate(g, list(args)))
    _same(ex.run(*args[:3], 0), evaluate(g, list(args[:3]) + [0]))


# ---- direct operator calls in optimised plans ------------------------------------------------
_DIRECT_CASES = [
    ("method", "sum", ()), ("method", "mean", ()), ("method", "sigmoid", ()), ("method", "exp", ()),
    ("method", "abs", ()), ("method", "neg", ()), ("method", "add", (2,)), ("method", "mul", (0.5,)),
    ("method", "sub", ("y",)), ("method", "div", ("y",)), ("method", "tanh", ()),
    ("fn", ember.relu, ()), ("fn", ember.add, ("y",)), ("fn", ember.mul, (3,)), ("fn", ember.div, (2,)),
    ("fn", ember.tanh, ()), ("fn", ember.matmul, ("yt",)),
    ("fn", operator.add, (1,)), ("fn", operator.sub, ("y",)), ("fn", operator.mul, (2.5,)),
    ("fn", operator.truediv, ("y",)), ("fn", operator.truediv, (2,)), ("fn", operator.neg, ()),
    ("fn", operator.matmul, ("yt",)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("kind,target,extra", _DIRECT_CASES)
def test_optimised_direct_calls_match_eager(kind, target, extra, dtype):
    """Each call the optimised plan may turn into a direct operator call gives eager's result
    (dtype promotion with Python numbers and integer tensors included), with and without autograd."""
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    y = g.placeholder("y", type_expr=T)
    yt = ir.call(g, "t", (y,), type_=T)
    args = (x,) + tuple({"y": y, "yt": yt}.get(a, a) if isinstance(a, str) else a for a in extra)
    g.output(ir.call(g, target, args, type_=T))
    rng = np.random.default_rng(0)
    xn = (rng.standard_normal((3, 3)) * 3).astype(dtype)
    yn = (rng.standard_normal((3, 3)) * 3 + 10).astype(dtype)
    grads = [False, True] if dtype == np.float32 else [False]
    for rg in grads:
        ex = GraphExecutor(g)
        for _ in range(2):
            xe, ye = ember.from_numpy(xn.copy()), ember.from_numpy(yn.copy())
            if rg:
                xe.requires_grad_()
            try:
                want = evaluate(g, [xe, ye])
            except Exception as e:  # noqa: BLE001 - eager refuses (mean of int64): so must the plan
                with pytest.raises(type(e)):
                    ex.run(xe, ye)
                continue
            got = ex.run(xe, ye)
            assert got.dtype == want.dtype and got.requires_grad == want.requires_grad
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        plans = list(ex.debug_state()["plans"].values())
        if not plans:
            continue
        src = plans[0].source
        assert "TLS.include" in src   # the call did become a direct operator call
