"""Constructs where scripted code would silently differ from eager ember, so script refuses them
with a clear error instead: changing a list/dict's size while a ``for`` iterates over it, an
``and``/``or`` used as a value with non-bool operands, and re-setting a scripted module's
constant, None-typed attribute or submodule to something its compiled code did not assume. Also
unused values whose builtin raises in eager (``l[i]``, ``a // b``) still raise in script."""
from __future__ import annotations

import copy
from typing import Dict, Optional

import pytest

import ember
import ember.jit
from ember.jit.frontend import FrontendError

nn = ember.nn


def append_while_iterating(n: int):
    a = [1, 2, 3]
    s = 0
    for v in a:
        s += v
        if len(a) < 6:
            a.append(n)
    return s


def pop_while_enumerating(n: int):
    a = [1, 2, 3, 4]
    s = 0
    for i, v in enumerate(a):
        s += v
        a.pop()
    return s


def dict_pop_while_iterating(n: int):
    d: Dict[int, int] = {1: 2, 3: 4}
    for k in d.keys():
        d.pop(k)
    return len(d)


def setitem_while_iterating(n: int):
    a = [1, 2, 3]
    s = 0
    for v in a:
        a[0] = n
        s += v
    return s


def str_rebound_while_iterating(s: str):
    n = 0
    for c in s:
        s += "x"
        n += 1
    return n


@pytest.mark.parametrize("fn", [append_while_iterating, pop_while_enumerating, dict_pop_while_iterating])
def test_size_change_while_iterating_is_refused(fn):
    with pytest.raises(FrontendError, match="changing the size of '(a|d)' while iterating over it"):
        ember.jit.script(fn)


@pytest.mark.parametrize("fn, arg", [(setitem_while_iterating, 7), (str_rebound_while_iterating, "ab")])
def test_loops_that_keep_the_size_still_compile(fn, arg):
    assert ember.jit.script(fn)(arg) == fn(arg)


def int_and_value(a: int):
    return a and 5


def int_or_value(a: int):
    return a or 7


def tensor_and_value(x):
    return (x > 0) and (x < 1)


def bool_and_or_values(a: int, b: int, x: Optional[int]):
    c = a > 0 and (b < 0 or not a) and x is not None and x > 2
    return c


def non_bool_conditions(a: int, s: str):
    r = 0
    if a and s:
        r = 1
    y = 3 if (a or s) else 4
    while a and r < 5:
        r += 1
    return r, y


@pytest.mark.parametrize("fn", [int_and_value, int_or_value, tensor_and_value])
def test_and_or_value_needs_bool_operands(fn):
    # Python returns an operand (5, 0, a Tensor); script's and/or return a bool
    with pytest.raises(FrontendError, match="'and'/'or' used as a value needs bool operands"):
        ember.jit.script(fn)


def test_bool_and_or_values_and_conditions_still_compile():
    s = ember.jit.script(bool_and_or_values)
    for args in [(1, -1, 3), (0, 1, None), (1, -1, None)]:
        assert s(*args) == bool_and_or_values(*args)
    c = ember.jit.script(non_bool_conditions)
    for args in [(0, ""), (1, "a"), (2, "")]:
        assert c(*args) == non_bool_conditions(*args)


class _Child(nn.Module):
    def __init__(self, bias: bool):
        super().__init__()
        self.w = nn.Parameter(ember.ones(2))
        self.b = nn.Parameter(ember.ones(2)) if bias else None

    def forward(self, x):
        if self.b is not None:
            return x * self.w + self.b
        return x * self.w


class _Parent(nn.Module):
    __constants__ = ["k"]

    def __init__(self):
        super().__init__()
        self.k = 3
        self.n = 2
        self.opt: Optional[ember.Tensor] = None
        self.c = _Child(False)

    def forward(self, x):
        y = self.c(x) * self.k * self.n
        if self.opt is not None:
            y = y + self.opt
        return y


def _pair():
    m = _Parent()
    return m, ember.jit.script(copy.deepcopy(m))


def _same(a, b):
    assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    assert (a - b).abs().max().item() == 0.0


def test_setting_folded_attributes_is_refused():
    _, sm = _pair()
    x = ember.tensor([1.0, 2.0])
    sm(x)
    with pytest.raises(AttributeError, match="cannot set constant 'k'"):
        sm.k = 5
    sm.k = 3  # the same value is fine
    with pytest.raises(TypeError, match="cannot set attribute 'opt'"):
        sm.opt = ember.ones(2)
    with pytest.raises(TypeError, match="cannot replace submodule 'c'.*a different class"):
        sm.c = nn.Identity()
    with pytest.raises(TypeError, match="cannot replace submodule 'c'.*'b' differs"):
        sm.c = _Child(True)


def test_allowed_attribute_changes_match_eager():
    m, sm = _pair()
    x = ember.tensor([1.0, 2.0])
    _same(sm(x), m(x))
    m.n, sm.n = 5, 5
    _same(sm(x), m(x))
    child = _Child(False)
    with ember.no_grad():
        child.w.fill_(4.0)
    m.c, sm.c = child, copy.deepcopy(child)
    _same(sm(x), m(x))


# ---------------------------------------------------------------- unused values that raise
def unused_int_division(x, n: int):
    y = 10 // n  # noqa: F841 (unused on purpose)
    return x


def unused_list_index(x, n: int):
    items = [1, 2]
    z = items[n]  # noqa: F841
    return x


def unused_dict_key_in_loop(x, n: int):
    d: Dict[str, int] = {"1": 1}
    for i in range(n):
        z = d[str(i)] if i > 0 else 0  # noqa: F841
    return x


def unused_tensor_index_in_branch(x, n: int):
    if n > 0:
        z = x[n]  # noqa: F841
    return x


def unused_int_of_str(x, n: int):
    z = int("1x") if n > 1 else 0  # noqa: F841
    return x


def _outcome(fn, x, n):
    try:
        return "ok", fn(x, n).tolist()
    except Exception as exc:  # compared with eager's
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("fn", [unused_int_division, unused_list_index, unused_dict_key_in_loop,
                                unused_tensor_index_in_branch, unused_int_of_str])
def test_unused_values_still_raise_like_eager(fn):
    # dead-code elimination must not drop a builtin that raises in eager (IndexError, KeyError,
    # ZeroDivisionError, ValueError): the call would silently succeed
    scripted = ember.jit.script(fn)
    for rep in range(2):   # the profiled, optimised plan too
        for n in (0, 1, 2, 5):
            x = ember.tensor([1.0, 2.0])
            assert _outcome(scripted, x, n) == _outcome(fn, x, n), (rep, n)


class _TupleAttr(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = (1, 2)

    def forward(self, x):
        for v in self.t:   # unrolled to the tuple's length when compiled
            x = x - v
        return x


def test_tuple_attribute_keeps_its_length():
    m = _TupleAttr()
    sm = ember.jit.script(copy.deepcopy(m))
    x = ember.tensor([1.0, 2.0])
    _same(sm(x), m(x))
    m.t, sm.t = (5, 6), (5, 6)   # same length: fine
    _same(sm(x), m(x))
    with pytest.raises(TypeError, match="compiled code assumes a tuple of 2 elements"):
        sm.t = (5, 6, 7)
