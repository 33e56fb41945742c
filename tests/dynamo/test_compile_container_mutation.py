"""ember.compile and containers changed while they are used: lists grown or shrunk while iterated,
aliases mutated in place (``ys = xs; ys += [...]``), dicts and sets changed while iterated (Python's
RuntimeError), live dict views, and set iteration order. Every program is compared with eager
ember call by call (eager_equivalence.check_like_eager): the compiler may break, never approximate.
Each program starts with a tensor op (``x = x + 1``): a frame without one is not captured at all.
"""
from __future__ import annotations

import pytest

from eager_equivalence import EVENTS, check_like_eager, tensor


def x_arg(call):
    return (tensor(1.0, 2.0 + call),)


# ------------------------------------------------------------------------------------------------
# lists grown, shrunk or replaced while iterated

def grow_local_while_iterating(x):
    x = x + 1
    xs = [1, 2]
    for v in xs:
        if len(xs) < 6:
            xs.append(v + 10)
    return x * len(xs), xs


def grow_argument_while_iterating(x, xs):
    x = x + 1
    for v in xs:
        if v < 5:
            xs.append(v + 3)
    return x + len(xs)


def shrink_while_iterating(x):
    x = x + 1
    xs = [1, 2, 3, 4, 5, 6]
    seen = []
    for v in xs:
        seen.append(v)
        if v % 2:
            xs.remove(v)
    return x * len(xs), seen, xs


def insert_front_while_enumerating(x):
    x = x + 1
    xs = [10, 20, 30]
    out = []
    for i, v in enumerate(xs):
        out.append((i, v))
        if i < 2:
            xs.insert(0, v + 1)
    return x, out


def setitem_while_reversed(x):
    x = x + 1
    xs = [1, 2, 3, 4]
    out = []
    for v in reversed(xs):
        out.append(v)
        xs[0] = 100 + v
    return x * out[-1], out


def zip_with_growing_list(x):
    x = x + 1
    xs, ys = [1, 2], [5, 6, 7, 8]
    out = []
    for a, b in zip(xs, ys):
        out.append(a + b)
        xs.append(a * 10)
    return x + sum(out), out


def exhausted_iterator_stays_exhausted(x):
    x = x + 1
    xs = [1, 2]
    it = iter(xs)
    first = list(it)
    xs.append(3)
    return x * len(first), list(it), first


def rebound_while_iterating(x):
    x = x + 1
    xs = [1, 2, 3]
    out = []
    for v in xs:
        out.append(v)
        xs = xs + [v]     # a new list: the loop keeps iterating the old one
    return x * len(out), xs


def tensors_appended_while_iterating(x):
    x = x + 1
    ts = [x]
    for t in ts:
        if len(ts) < 4:
            ts.append(t * 2)
    return ts


LIST_PROGRAMS = {f.__name__: f for f in (grow_local_while_iterating, shrink_while_iterating,
                                         insert_front_while_enumerating, setitem_while_reversed,
                                         zip_with_growing_list, exhausted_iterator_stays_exhausted,
                                         rebound_while_iterating, tensors_appended_while_iterating)}


@pytest.mark.parametrize("name", sorted(LIST_PROGRAMS))
def test_list_changed_while_iterated(name):
    check_like_eager(LIST_PROGRAMS[name], x_arg)


def test_argument_list_grown_while_iterated():
    check_like_eager(grow_argument_while_iterating, lambda call: (tensor(1.0), [1, 2 + call]))


# ------------------------------------------------------------------------------------------------
# aliases mutated in place

def iadd_through_alias(x, xs):
    x = x + 1
    ys = xs
    ys += [3, 4]
    return x * len(xs), xs is ys


def iadd_tuple_and_range_through_alias(x, xs):
    x = x + 1
    ys = xs
    ys += (7,)
    ys += range(2)
    return x + len(xs)


def imul_through_alias(x, xs):
    x = x + 1
    ys = xs
    ys *= 3
    return x * len(xs)


def local_alias_iadd(x):
    x = x + 1
    xs = [1]
    ys = xs
    ys += [2]
    ys += ys
    return x * len(xs), xs


def nested_alias_after_repeat(x):
    x = x + 1
    grid = [[0]] * 3
    grid[0].append(1)
    row = [x]
    pair = [row, row]
    pair[1].append(x * 2)
    return len(grid[2]), grid, len(pair[0]), pair[0][1]


def dict_ior_through_alias(x, d):
    x = x + 1
    e = d
    e |= {"b": 2}
    merged = d | {"c": 3}
    return x * len(d), merged, d is e


def set_ops_in_place_on_alias(x):
    x = x + 1
    s = {1, 2, 3}
    t = s
    t |= {4}
    t -= {1}
    t &= {2, 3, 4, 5}
    t ^= {9, 2}
    return x * len(s), sorted(s)


def concat_list_and_tuple_raises(x):
    x = x + 1
    return [x] + (x,)


@pytest.mark.parametrize("fn, make", [
    (iadd_through_alias, lambda call: (tensor(1.0), [call])),
    (iadd_tuple_and_range_through_alias, lambda call: (tensor(1.0), [call])),
    (imul_through_alias, lambda call: (tensor(1.0), [call, 1])),
    (dict_ior_through_alias, lambda call: (tensor(1.0), {"a": call})),
], ids=lambda v: getattr(v, "__name__", ""))
def test_argument_mutated_through_an_alias(fn, make):
    check_like_eager(fn, make)


@pytest.mark.parametrize("fn", [local_alias_iadd, nested_alias_after_repeat, set_ops_in_place_on_alias,
                                concat_list_and_tuple_raises], ids=lambda f: f.__name__)
def test_local_aliases(fn):
    check_like_eager(fn, x_arg)


# ------------------------------------------------------------------------------------------------
# dicts and sets changed while iterated: Python raises RuntimeError

def dict_key_added_while_iterating(x):
    x = x + 1
    d = {"a": 1, "b": 2}
    for k in d:
        d[k + "x"] = 1
    return x


def dict_key_deleted_while_iterating(x, d):
    x = x + 1
    for k in d:
        del d[k]
    return x


def dict_items_changed_size(x):
    x = x + 1
    d = {"a": 1}
    for k, v in d.items():
        d.setdefault("z", v)
    return x


def dict_values_changed_size(x):
    x = x + 1
    d = {"a": 1, "b": 2}
    for v in d.values():
        d.pop("b", None)
    return x


def dict_key_readded_while_iterating(x):
    x = x + 1
    d = {"a": 1, "b": 2, "c": 3}
    seen = []
    for k in d:
        seen.append(k)
        if len(seen) > 10:
            break
        v = d.pop(k)
        d[k] = v
    return x, seen


def dict_values_updated_while_iterating(x):
    x = x + 1
    d = {"a": x, "b": x * 2, "c": x * 3}
    out = []
    for k, v in d.items():
        out.append(v)
        d["c"] = v * 10        # the value of a later key: seen when the loop gets there
    return out


def dict_mutated_then_loop_left(x):
    x = x + 1
    d = {"a": 1, "b": 2}
    for k in d:
        d["new"] = 0
        break
    return x * len(d)


def dict_view_is_live(x):
    x = x + 1
    d = {"a": 1}
    keys, values, items = d.keys(), d.values(), d.items()
    d["b"] = 2
    return x * len(keys), "b" in keys, list(values), list(items), type(keys).__name__


def set_added_while_iterating(x):
    x = x + 1
    s = {1, 2, 3}
    for v in s:
        s.add(v + 10)
    return x


def set_discarded_while_iterating(x):
    x = x + 1
    s = {"a", "b"}
    for v in s:
        s.discard(v)
    return x


def dict_iterated_after_exhaustion_grows(x):
    x = x + 1
    d = {"a": 1}
    it = iter(d)
    first = list(it)
    d["b"] = 2
    return x, first, list(it)


DICT_SET_PROGRAMS = {f.__name__: f for f in (
    dict_key_added_while_iterating, dict_items_changed_size, dict_values_changed_size,
    dict_key_readded_while_iterating, dict_values_updated_while_iterating, dict_mutated_then_loop_left,
    dict_view_is_live, set_added_while_iterating, set_discarded_while_iterating,
    dict_iterated_after_exhaustion_grows)}


@pytest.mark.parametrize("name", sorted(DICT_SET_PROGRAMS))
def test_dict_or_set_changed_while_iterated(name):
    check_like_eager(DICT_SET_PROGRAMS[name], x_arg)


def test_argument_dict_emptied_while_iterated_raises_after_the_first_delete():
    runs = check_like_eager(dict_key_deleted_while_iterating, lambda call: (tensor(1.0), {"a": 1, "b": call}))
    outcome, _, args_after, _ = runs[0]
    assert outcome[:2] == ("raised", RuntimeError) and args_after[1] == {"b": 0}


# ------------------------------------------------------------------------------------------------
# sets iterate in the real set's order

def set_order_of_strings(x):
    x = x + 1
    s = {"pear", "apple", "fig", "kiwi", "plum", "lime"}
    s.discard("fig")
    s.add("date")
    EVENTS.extend(s)
    return x


def set_order_with_colliding_ints(x):
    x = x + 1
    s = set()
    for v in (1, 9, 17, 33, 2, 10):
        s.add(v)
    s.remove(1)
    s.add(1)
    s.update([65, 25])
    EVENTS.extend(s)
    popped = [s.pop(), s.pop()]
    return x, popped, list(s)


def set_algebra_order(x):
    x = x + 1
    a = {5, 13, 21, 3, "x"}
    b = {21, 29, "y", 3.0}
    EVENTS.extend(a | b)
    EVENTS.extend(a & b)
    EVENTS.extend(b - a)
    EVENTS.extend(a ^ b)
    EVENTS.extend(set(a))
    EVENTS.extend(frozenset(b))
    return x


def int_float_keys_keep_the_right_member(x):
    x = x + 1
    a = {1, 2}
    b = {1.0, 3}
    both = a & b
    other = b & a
    return x, [type(v).__name__ for v in both], [type(v).__name__ for v in other], sorted(a | b)


def set_of_tensors_iterated(x):
    x = x + 1
    ts = {x, x * 2}
    total = x * 0
    for t in ts:
        total = total * 2 + t
    return total


def set_built_then_returned(x):
    x = x + 1
    s = {"a", "b", "c"}
    s.add("d")
    return x, s


def set_with_removals_returned(x):
    x = x + 1
    s = {1, 9, 17, 25}
    s.discard(9)
    s.add(33)
    return x, s


SET_PROGRAMS = {f.__name__: f for f in (set_order_of_strings, set_order_with_colliding_ints, set_algebra_order,
                                        int_float_keys_keep_the_right_member, set_of_tensors_iterated)}


@pytest.mark.parametrize("name", sorted(SET_PROGRAMS))
def test_set_iteration_order_is_the_real_sets(name):
    check_like_eager(SET_PROGRAMS[name], x_arg)


@pytest.mark.parametrize("fn", [set_built_then_returned, set_with_removals_returned], ids=lambda f: f.__name__)
def test_returned_set_iterates_like_eager_afterwards(fn):
    runs = check_like_eager(fn, x_arg)
    for outcome, _, _, _ in runs:
        s, eager = outcome[1][1], fn(tensor(1.0))[1]
        assert list(s) == list(eager)
        for extra in range(41, 50):     # the same table: later additions (and resizes) order alike
            s.add(extra)
            eager.add(extra)
            assert list(s) == list(eager)
