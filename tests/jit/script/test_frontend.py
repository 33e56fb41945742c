"""ember.jit.script frontend: functions scripted and compared with eager ember on fresh random
inputs; each test also checks the structure of the IR (control-flow nodes, types of values)."""
from __future__ import annotations

import math
import operator
from typing import Dict, List

import ember
import ember.nn.functional as F
from ember.jit.ir import prim, walk
from ember.jit.ir.types import (BoolType, FloatType, IntType, ListType, OptionalType, TensorType,
                                TupleType)

from _helpers import check, count, out_type, rand, same, targets


# ---------------------------------------------------------------------------------------------
# straight-line code
# ---------------------------------------------------------------------------------------------
def seed_example(a, b):
    c = a + b
    d = c * c
    e = ember.tanh(d * c)
    return d + (e + e)


def test_straight_line_seed_example():
    sf = check(seed_example, rand(4), rand(4))
    assert count(sf, prim.If) == 0 and count(sf, prim.Loop) == 0
    assert count(sf, ember.tanh) == 1
    names = [n.meta.get("jit_name") for n in sf._graph_uninlined.nodes]
    assert "c" in names and "d" in names and "e" in names
    for n in sf._graph_uninlined.nodes:
        if n.op != "output":
            assert n.type is not None and "loc" in n.meta


def methods_and_functional(x, w):
    y = x.view(-1).relu()
    z = F.linear(x, w)
    return y.sum() + z.mean() * 2.0 - ember.sigmoid(z).max()


def test_tensor_methods_and_functional():
    sf = check(methods_and_functional, rand(2, 3), rand(4, 3))
    assert "view" in targets(sf) and "relu" in targets(sf)
    assert any(n.target is F.linear for n in walk(sf._graph_uninlined))


def ints_and_floats(x, n: int, s: float):
    a = n * 2 + 1
    b = a / 2
    c = a // 2
    d = s * n
    return x * b + c - d, a, b


def test_number_arithmetic_types():
    sf = check(ints_and_floats, rand(3), 5, 1.5)
    assert out_type(sf) == TupleType((TensorType(), IntType(), FloatType()))


def shape_queries(x):
    n = x.dim()
    s = x.size()
    t = x.shape
    k = x.size(1)
    return x.numel() + n + s[0] + t[1] + k + len(s)


def test_shape_queries_are_ints():
    sf = check(shape_queries, rand(2, 5))
    assert out_type(sf) == IntType()
    sizes = [n for n in walk(sf._graph_uninlined) if n.target == "size"]
    assert sizes and sizes[0].type == ListType(IntType())


def default_and_kwargs(x, alpha: float = 2.0, n: int = 3):
    return x * alpha + n


def call_with_kwargs(x):
    return default_and_kwargs(x, n=1) + default_and_kwargs(x)


def test_defaults_and_keyword_calls():
    sf = check(default_and_kwargs, rand(3))
    same(default_and_kwargs(rand(1) * 0 + 1, 3.0), sf(rand(1) * 0 + 1, 3.0))
    same(sf(ember.ones(2), n=5), default_and_kwargs(ember.ones(2), n=5))
    sf2 = check(call_with_kwargs, rand(3))
    assert count(sf2, prim.CallFunction) == 2
    assert sf.schema.arguments[1].default == 2.0


def tuple_unpack(x):
    a, b = x.max(0)
    c, d = (a + 1, b)
    lst = [a, c]
    e, f = lst
    return e + f, d


def test_tuple_and_list_unpacking():
    sf = check(tuple_unpack, rand(3, 4))
    assert count(sf, prim.TupleUnpack) >= 1 and count(sf, prim.ListUnpack) == 1


def slicing(x):
    a = x[0]
    b = x[:, 1:3]
    c = x[..., ::2]
    d = x[1, -1]
    e = x[None, 0]
    return a.sum() + b.sum() + c.sum() + d + e.sum()


def test_subscripts_and_slices():
    import builtins
    sf = check(slicing, rand(3, 4))
    assert count(sf, builtins.slice) >= 3
    assert count(sf, operator.getitem) >= 5


def setitem_fn(x):
    y = x.clone()
    y[0] = 0.0
    lst = [1, 2, 3]
    lst[1] = 5
    return y, lst


def test_setitem_on_tensor_and_list():
    sf = check(setitem_fn, rand(3))
    assert count(sf, operator.setitem) == 2


def augassign(x, n: int):
    y = x.clone()
    y += 1
    y *= x
    n += 2
    n *= 3
    return y, n


def test_augmented_assignment():
    sf = check(augassign, rand(3), 4)
    t = targets(sf)
    assert "add_" in t and "mul_" in t  # tensors update in place, as in eager
    assert out_type(sf) == TupleType((TensorType(), IntType()))


def math_fn(x, a: float):
    return x * math.sqrt(a) + math.floor(a) + math.pi


def test_math_functions():
    sf = check(math_fn, rand(3), 2.5)
    assert count(sf, math.sqrt) == 1
    fl = [n for n in walk(sf._graph_uninlined) if n.target is math.floor][0]
    assert fl.type == IntType()


def builtins_fn(xs: List[int], f: float):
    return len(xs) + int(f) + max(xs) + min(3, 4) + abs(-2), float(len(xs)), bool(f), str(len(xs))


def test_builtins():
    sf = check(builtins_fn, [3, 1, 2], 2.5)
    assert out_type(sf) == TupleType((IntType(), FloatType(), BoolType(), ember.jit.ir.types.StrType()))


def fstring(x, n: int):
    s = f"n={n} and {n + 1}"
    return s, "a" + "b"


def test_fstring_and_str_ops():
    check(fstring, rand(1), 3)


def containers(x):
    d: Dict[str, ember.Tensor] = {}
    d["a"] = x
    d["b"] = x * 2
    ks = d.keys()
    total = x * 0
    for k in ks:
        total = total + d[k]
    lst: List[int] = []
    lst.append(3)
    lst.append(4)
    return total, lst, "a" in d, len(d)


def test_dicts_and_typed_empty_lists():
    sf = check(containers, rand(3))
    assert count(sf, prim.DictConstruct) == 1 and count(sf, prim.Loop) == 1


# ---------------------------------------------------------------------------------------------
# if / elif / else
# ---------------------------------------------------------------------------------------------
def tensor_cond(x):
    if x.sum() > 0:
        y = ember.relu(x)
    else:
        y = -x
    return y


def test_if_on_tensor_condition():
    sf = ember.jit.script(tensor_cond)
    for _ in range(4):
        x = rand(5)
        same(tensor_cond(x), sf(x))
    same(tensor_cond(ember.ones(2)), sf(ember.ones(2)))
    same(tensor_cond(-ember.ones(2)), sf(-ember.ones(2)))
    ifs = [n for n in walk(sf._graph_uninlined) if n.target is prim.If]
    assert len(ifs) == 1 and ifs[0].args[0].target is bool   # aten::Bool of the tensor
    assert len(ifs[0].blocks) == 2


def elif_chain(x, n: int):
    if n == 0:
        r = x
    elif n == 1:
        r = x * 2
    elif n < 5:
        r = x * 3
    else:
        r = x * 4
    return r


def test_elif_chain():
    sf = ember.jit.script(elif_chain)
    x = rand(3)
    for n in range(7):
        same(elif_chain(x, n), sf(x, n))
    assert count(sf, prim.If) == 3


def if_without_else(x, flag: bool):
    y = x
    if flag:
        y = y + 1
    return y


def test_if_without_else_and_bool_input():
    sf = ember.jit.script(if_without_else)
    x = rand(2)
    same(if_without_else(x, True), sf(x, True))
    same(if_without_else(x, False), sf(x, False))
    ifn = [n for n in walk(sf._graph_uninlined) if n.target is prim.If][0]
    assert ifn.type == TupleType((TensorType(),))


def and_or_not(x, a: int, b: int):
    if a > 0 and b > 0:
        x = x + 1
    if a > 0 or not b > 0:
        x = x * 2
    return x


def test_boolean_short_circuit():
    sf = ember.jit.script(and_or_not)
    x = rand(2)
    for a in (-1, 1):
        for b in (-1, 1):
            same(and_or_not(x, a, b), sf(x, a, b))
    assert count(sf, prim.If) >= 4   # and/or lower to prim::If as in TorchScript


def ifexp(x, n: int):
    y = x * 2 if n > 1 else x - 1
    return y + (1 if n > 3 else 2)


def test_conditional_expression():
    sf = ember.jit.script(ifexp)
    for n in range(5):
        same(ifexp(ember.ones(2), n), sf(ember.ones(2), n))


def return_type_unify(x, n: int):
    if n > 0:
        return None
    return x


def test_return_none_and_tensor_is_optional():
    sf = ember.jit.script(return_type_unify)
    assert out_type(sf) == OptionalType(TensorType())
    assert sf(rand(2), 1) is None
    same(sf(ember.ones(2), 0), ember.ones(2))


def chained_compare(a: int, b: int, c: int):
    return a < b < c


def test_chained_comparison():
    sf = ember.jit.script(chained_compare)
    for args in [(1, 2, 3), (1, 3, 2), (3, 2, 1)]:
        assert sf(*args) == chained_compare(*args)


def mask_value(x):
    m = x > 0
    return ember.where(m, x, x * 0), m


def test_tensor_comparison_as_value_is_a_mask():
    sf = check(mask_value, rand(5))
    assert out_type(sf) == TupleType((TensorType(), TensorType()))
