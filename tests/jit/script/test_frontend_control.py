"""ember.jit.script frontend, part 2: loops, early exits, Optional refinement, raise/assert, calls
and the ScriptFunction object; compared with eager ember on fresh inputs, IR structure checked."""
from __future__ import annotations

import operator
from typing import List, Optional, Tuple

import numpy as np
import pytest

import ember
from ember.jit.ir import prim, walk
from ember.jit.ir.types import IntType, TensorType

from _helpers import check, count, out_type, rand, same


# ---------------------------------------------------------------------------------------------
# loops
# ---------------------------------------------------------------------------------------------
def for_range(x, n: int):
    for i in range(n):
        x = x * 0.5 + i
    return x


def test_for_range_carries_tensor():
    sf = ember.jit.script(for_range)
    for n in (0, 1, 4):
        same(for_range(rand(3), n) * 0, sf(rand(3), n) * 0)
        x = rand(3)
        same(for_range(x, n), sf(x, n))
    loop = [n for n in walk(sf._graph_uninlined) if n.target is prim.Loop][0]
    body = loop.blocks[0]
    params = [p for p in body.nodes if p.op == "placeholder"]
    assert params[0].type == IntType() and params[1].type == TensorType()


def range_forms(n: int):
    acc = 0
    for i in range(2, n):
        acc += i
    for j in range(n, 0, -2):
        acc = acc * 2 + j
    for k in range(1, n, 3):
        acc -= k
    return acc


def test_range_start_stop_step():
    sf = ember.jit.script(range_forms)
    for n in (0, 1, 5, 10):
        assert sf(n) == range_forms(n)
    assert count(sf, prim.Loop) == 3


def for_list(xs: List[ember.Tensor]):
    total = xs[0] * 0
    for t in xs:
        total = total + t
    return total


def test_for_over_list():
    sf = check(for_list, [rand(2), rand(2), rand(2)])
    assert count(sf, prim.Loop) == 1


def for_tuple(x):
    acc = x
    for v in (1, 2.5, x):
        acc = acc + v
    return acc


def test_for_over_tuple_unrolls():
    sf = check(for_tuple, rand(3))
    assert count(sf, prim.Loop) == 0 and count(sf, operator.add) == 3


def zip_enumerate(xs: List[int], ys: List[float]):
    out = 0.0
    for i, (a, b) in enumerate(zip(xs, ys)):
        out = out + i * a * b
    for j, v in enumerate(xs, 1):
        out = out + j * v
    return out


def test_zip_and_enumerate():
    sf = ember.jit.script(zip_enumerate)
    assert sf([1, 2, 3], [0.5, 1.5]) == zip_enumerate([1, 2, 3], [0.5, 1.5])
    assert count(sf, prim.Loop) == 2


def iterate_tensor(x):
    acc = x[0] * 0
    for row in x:
        acc = acc + row
    return acc


def test_for_over_tensor_rows():
    check(iterate_tensor, rand(4, 3))


def while_loop(x, n: int):
    i = 0
    while i < n:
        x = x + i
        i += 1
    return x, i


def test_while_loop():
    sf = ember.jit.script(while_loop)
    x = rand(2)
    for n in (0, 3):
        same(while_loop(x, n), sf(x, n))
    loop = [n for n in walk(sf._graph_uninlined) if n.target is prim.Loop][0]
    assert loop.args[0].args[0] == 2 ** 63 - 1   # while: huge trip count, condition carried


def break_continue(x, n: int):
    acc = x * 0
    for i in range(n):
        if i == 2:
            continue
        if i > 5:
            break
        acc = acc + x * i
    return acc


def test_break_and_continue():
    sf = ember.jit.script(break_continue)
    x = rand(3)
    for n in (0, 2, 3, 8, 12):
        same(break_continue(x, n), sf(x, n))
    assert count(sf, prim.Loop) == 1


def while_break(x):
    i = 0
    while True:
        x = x * 2
        i += 1
        if x.abs().sum() > 100:
            break
    return x, i


def test_while_true_with_break():
    sf = ember.jit.script(while_break)
    x = rand(3) + 0.5
    same(while_break(x), sf(x))


def early_return(x):
    if x.sum() > 0:
        return x * 2
    y = x - 1
    return y


def test_early_return_restructures_into_if():
    sf = ember.jit.script(early_return)
    for s in (1.0, -1.0):
        x = ember.ones(3) * s
        same(early_return(x), sf(x))
    assert count(sf, prim.If) == 1 and out_type(sf) == TensorType()


def return_in_loop(x, n: int):
    for i in range(n):
        x = x + 1
        if x.sum() > 10:
            return x * 100
    return x


def test_return_inside_loop():
    sf = ember.jit.script(return_in_loop)
    for n in (0, 3, 20):
        x = ember.ones(2)
        same(return_in_loop(x, n), sf(x, n))
    assert count(sf, prim.Loop) == 1


def nested_loops(x, n: int):
    for i in range(n):
        for j in range(i):
            if j == 2:
                break
            x = x + j
        x = x * 0.5
    return x


def test_nested_loops_inner_break():
    sf = ember.jit.script(nested_loops)
    x = rand(2)
    for n in (0, 3, 6):
        same(nested_loops(x, n), sf(x, n))
    assert count(sf, prim.Loop) == 2


def list_comprehension(x, n: int):
    sq = [i * i for i in range(n)]
    ts = [x * i for i in range(n) if i % 2 == 0]
    return sq, ts


def test_list_comprehension():
    sf = ember.jit.script(list_comprehension)
    x = rand(2)
    same(list_comprehension(x, 5), sf(x, 5))
    lists = [n for n in walk(sf._graph_uninlined) if n.target is prim.ListConstruct]
    assert {str(n.type) for n in lists} == {"int[]", "Tensor[]"}
    assert [n.target for n in walk(sf._graph_uninlined)].count("append") == 2


def comprehension_scope(i: int):
    xs = [i * 2 for i in range(3)]
    return i, xs


def test_list_comprehension_variable_does_not_leak():
    sf = ember.jit.script(comprehension_scope)
    assert sf(7) == comprehension_scope(7)


def loop_list_append(x, n: int):
    outs: List[ember.Tensor] = []
    for i in range(n):
        outs.append(x * i)
    return ember.stack(outs, 0) if n > 0 else x


def test_loop_appends_to_list():
    sf = ember.jit.script(loop_list_append)
    x = rand(2)
    for n in (0, 3):
        same(loop_list_append(x, n), sf(x, n))


# ---------------------------------------------------------------------------------------------
# Optional refinement, raise, assert
# ---------------------------------------------------------------------------------------------
def opt_refine(x, bias: Optional[ember.Tensor] = None, scale: Optional[float] = None):
    if bias is not None:
        x = x + bias
    if scale is not None and scale > 1.0:
        x = x * scale
    return x


def test_optional_refinement():
    sf = ember.jit.script(opt_refine)
    x, b = rand(3), rand(3)
    same(opt_refine(x), sf(x))
    same(opt_refine(x, b), sf(x, b))
    same(opt_refine(x, b, 3.0), sf(x, b, 3.0))
    same(opt_refine(x, None, 0.5), sf(x, None, 0.5))
    casts = [n for n in walk(sf._graph_uninlined) if n.target is prim.unchecked_cast]
    assert {str(n.type) for n in casts} == {"Tensor", "float"}


def opt_raise(x: Optional[ember.Tensor]):
    if x is None:
        raise ValueError("x must be given")
    return x + 1


def test_raise_refines_the_rest():
    sf = ember.jit.script(opt_raise)
    same(sf(ember.ones(2)), opt_raise(ember.ones(2)))
    with pytest.raises(ValueError, match="x must be given"):
        sf(None)
    assert count(sf, prim.RaiseException) == 1 and out_type(sf) == TensorType()


def assert_fn(x, n: int):
    assert n > 0, "n must be positive"
    return x * n


def test_assert():
    sf = ember.jit.script(assert_fn)
    same(sf(ember.ones(2), 2), assert_fn(ember.ones(2), 2))
    with pytest.raises(AssertionError, match="n must be positive"):
        sf(ember.ones(2), 0)
    r = [n for n in walk(sf._graph_uninlined) if n.target is prim.RaiseException][0]
    assert r.args[1] == "AssertionError"


def assert_refine(x: Optional[ember.Tensor]):
    assert x is not None
    return x * 2


def test_assert_is_not_none_refines():
    sf = ember.jit.script(assert_refine)
    same(sf(ember.ones(2)), ember.ones(2) * 2)
    with pytest.raises(AssertionError):
        sf(None)


def is_none_folding(x, y: Optional[int] = None):
    if x is None:     # a Tensor is never None: folded away
        return x
    if ember.jit.is_scripting():
        z = x + 1
    else:
        z = x - 1
    return z


def test_constant_conditions_fold():
    sf = ember.jit.script(is_none_folding)
    same(sf(ember.ones(2)), ember.ones(2) + 1)
    assert is_none_folding(ember.ones(2)).sum().item() == 0  # eager: not scripting
    assert count(sf, prim.If) == 0


# ---------------------------------------------------------------------------------------------
# calls: scripted helpers, ignore, unused, script_if_tracing
# ---------------------------------------------------------------------------------------------
def helper(a, b: int = 1):
    return a * b + 1


def helper2(a):
    return helper(a, 2) - helper(a)


def caller(x):
    return helper2(x) + helper(x, b=3)


def test_nested_script_calls():
    sf = check(caller, rand(3))
    calls = [n for n in walk(sf._graph_uninlined) if n.target is prim.CallFunction]
    assert len(calls) == 2 and calls[0].meta["callee"].name == "helper2"
    assert isinstance(calls[0].meta["callee"], ember.jit.ScriptFunction)


@ember.jit.ignore
def python_only(x) -> ember.Tensor:
    return ember.tensor(np.asarray(x.numpy()) + 1.0)


def uses_ignored(x):
    return python_only(x) * 2


def test_ignore_calls_python():
    sf = check(uses_ignored, rand(3))
    node = [n for n in walk(sf._graph_uninlined) if n.target is python_only][0]
    assert node.meta["ignored"] is True and node.type == TensorType()


@ember.jit.unused
def never_called(x):
    return x.numpy()


def uses_unused(x, flag: bool):
    if flag:
        return never_called(x)
    return x


def test_unused_raises_when_called():
    sf = ember.jit.script(uses_unused)
    same(sf(ember.ones(2), False), ember.ones(2))
    with pytest.raises(RuntimeError, match="unused"):
        sf(ember.ones(2), True)


def lazily(x):
    return x * 2


def test_script_if_tracing_is_plain_eagerly():
    wrapped = ember.jit.script_if_tracing(lazily)
    same(wrapped(ember.ones(2)), ember.ones(2) * 2)
    traced = ember.jit.trace(lambda t: wrapped(t) + 1, (ember.ones(2),))
    same(traced(ember.ones(2) * 3), ember.ones(2) * 7)


def test_script_is_idempotent_and_cached():
    a = ember.jit.script(helper)
    assert ember.jit.script(helper) is a and ember.jit.script(a) is a


# ---------------------------------------------------------------------------------------------
# ScriptFunction object
# ---------------------------------------------------------------------------------------------
def typed_fn(x, n: int, xs: List[int], t: Tuple[int, float]):
    return x * n + xs[0] + t[1]


def test_call_checks_argument_types():
    sf = ember.jit.script(typed_fn)
    x = rand(2)
    same(sf(x, 2, [1], (1, 2.0)), typed_fn(x, 2, [1], (1, 2.0)))
    with pytest.raises(RuntimeError, match="Expected a value of type 'int' for argument 'n' but instead found "
                                           "type 'float'"):
        sf(x, 2.5, [1], (1, 2.0))
    with pytest.raises(RuntimeError, match="Expected a value of type 'Tensor' for argument 'x'"):
        sf(1, 2, [1], (1, 2.0))
    with pytest.raises(RuntimeError, match="missing value for argument 'xs'"):
        sf(x, 2)
    with pytest.raises(RuntimeError, match="expected at most 4 argument"):
        sf(x, 2, [1], (1, 2.0), 5)


def cond_fn(x):
    if x.sum() > 0:
        return x + 1
    return x


def test_graph_code_schema_and_graph_for():
    sf = ember.jit.script(cond_fn)
    text = str(sf.graph)
    assert "prim::If" in text and "graph(" in text
    assert isinstance(sf.code, str) and sf.code
    assert str(sf.schema).startswith("cond_fn(x: Tensor)")
    x = rand(3)
    sf(x)
    assert "graph(" in str(sf.graph_for(x))


def test_eager_helpers():
    assert ember.jit.is_scripting() is False
    assert ember.jit.annotate(List[int], []) == []



def unrolled_exits(x):
    for v in (1, 2, 3):
        if x.sum() > 5:
            return x * v
        x = x + v
    for w in (1.0, 2.0, 3.0):
        if w > 1.5:
            break
        x = x + w
    return -x


def test_break_and_return_in_unrolled_tuple_loops():
    sf = ember.jit.script(unrolled_exits)
    for s in (1.0, 10.0):
        x = ember.ones(2) * s
        same(unrolled_exits(x), sf(x))
    assert count(sf, prim.Loop) == 0 and count(sf, prim.If) >= 3


def range_runtime_step(a: int, b: int, s: int):
    out: List[int] = []
    for i in range(a, b, s):
        out.append(i)
    return out


def test_range_with_runtime_step():
    sf = ember.jit.script(range_runtime_step)
    for args in [(0, 10, 3), (10, 0, -3), (5, 5, 1), (0, 7, 7), (7, 0, -1), (3, 10, -2)]:
        assert sf(*args) == range_runtime_step(*args)
