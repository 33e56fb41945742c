"""Adversarial scripted programs: in-place ops on inputs and aliases, list mutation inside loops
and branches (the passes fold len/getitem), CSE around mutation, unrolled loops with
break/continue/early return, negative and run-time zero range steps, while loops with several
exits, Optional refinement through reassignment, int/float // and % with negatives, scalar dtype
promotion and multi-element tensor conditions -- each checked by script_harness against ember
eager, torch.jit.script of the same source, and a fresh process after save/load.

Written once against ``lib`` (ember when pytest imports this file, torch in the harness's copy).
"""
from typing import List, Optional

import pytest

from script_harness import P, arr, bind_lib, check, program_ids, tensors

lib = bind_lib(globals())
Tensor = lib.Tensor


# ---------------------------------------------------------------- in-place ops, aliases, CSE
def inplace_add_in_loop(x):
    for i in range(3):
        x.add_(1)
    return x * 2


def alias_augassign(x):
    y = x
    y += 1
    return x + 0, y


def view_inplace(x):
    v = x[0]
    v.mul_(3)
    return x.sum()


def cse_around_inplace(x):
    a = x + 1
    x.add_(5)
    b = x + 1
    s1 = x.sum()
    x.zero_()
    s2 = x.sum()
    return a, b, s1, s2


def mutation_in_loop_carried(x):
    out: List[Tensor] = []
    for i in range(3):
        out.append(x.sum())
        x.mul_(2)
    return out


def appended_then_mutated(x):
    items = [x]
    x.add_(1)
    return items[0] * 1


# ---------------------------------------------------------------- lists mutated in loops/branches
def list_append_pop_in_branches(n: int):
    items: List[int] = []
    for i in range(n):
        if i % 2 == 0:
            items.append(i)
        elif len(items) > 0:
            items.pop()
    last = items[-1] if len(items) > 0 else -1
    return items, len(items), last


def list_pop_while(n: int):
    items = [1, 2, 3, 4, 5]
    total = 0
    while len(items) > n:
        total += items.pop()
    return total, len(items)


def list_alias_append(n: int):
    a = [1, 2, 3]
    b = a
    b.append(n)
    return len(a), a[3], a


def list_setitem_in_loop(n: int):
    a = [0, 0, 0]
    for i in range(3):
        a[i] = a[i - 1] + n
    return a


def list_mutated_in_branch(n: int):
    a = [1, 2]
    if n > 0:
        a.append(3)
    else:
        a.pop()
    return len(a), a[-1], a


# ---------------------------------------------------------------- loops
def unrolled_break_continue(n: int):
    s = 0
    for i in range(6):
        if i == n + 3:
            break
        if i % 2 == n % 2:
            continue
        s += i * 10
    return s


def early_return_in_loop(n: int):
    for i in range(4):
        if i == n:
            return i * 100
    return -1


def negative_steps(n: int):
    a: List[int] = []
    for i in range(n, 0, -2):
        a.append(i)
    b: List[int] = []
    for i in range(5, -3, -3):
        b.append(i)
    return a, b


def range_runtime_step(x, step: int):
    # step 0 at run time: Python's ValueError (not the trip count's ZeroDivisionError)
    s = x
    for i in range(0, 5, step):
        s = s + i
    return s


def iterate_rows(x):
    # a 0-d tensor: eager's TypeError("iteration over a 0-d tensor")
    total = x.sum() * 0
    for row in x:
        total = total + row.sum()
    return total


def while_complex_exits(n: int):
    i = 0
    s = 0
    while i < 10 and s < n:
        i += 1
        if i % 3 == 0:
            continue
        s += i
        if s > 12:
            break
    return i, s


# ---------------------------------------------------------------- Optional refinement
def optional_reassigned(x, y: Optional[int]):
    if y is None:
        y = 3
    return x * y


def optional_set_in_branch(n: int):
    y: Optional[int] = None
    if n > 1:
        y = n
    if y is not None:
        return y + 1
    return 0


# ---------------------------------------------------------------- numbers
def int_floor_mod(a: int, b: int):
    return a // b, a % b, a / b, -a // b


def float_floor_mod(a: float, b: float):
    return a // b, a % b


def multi_element_condition(x):
    if x > 0:
        return x + 1
    return x - 1


def scalar_promotion(x):
    return x + 1.5, x * 2, x / 2, x // 2, (x > 1) * 2.5, x.sum() / 2


def promotion_inputs(rng, call):
    dtype = ("float32", "int32", "int64", "float64")[call % 4]
    return (arr(rng, 4, dtype=dtype, low=-5, high=5),)


PROGRAMS = [
    P(inplace_add_in_loop, tensors((3,))),
    P(alias_augassign, tensors((3,))),
    P(view_inplace, tensors((2, 3))),
    P(cse_around_inplace, tensors((3,))),
    P(mutation_in_loop_carried, tensors((3,))),
    P(appended_then_mutated, tensors((3,))),
    P(list_append_pop_in_branches, lambda rng, c: (c * 2 + 1,)),
    P(list_pop_while, lambda rng, c: (c * 2,)),
    P(list_alias_append, lambda rng, c: (c + 5,)),
    P(list_setitem_in_loop, lambda rng, c: (c - 1,)),
    P(list_mutated_in_branch, lambda rng, c: (c % 2,)),
    P(unrolled_break_continue, lambda rng, c: (c,)),
    P(early_return_in_loop, lambda rng, c: (c * 2 - 1,)),
    P(negative_steps, lambda rng, c: (c * 3 - 2,)),
    P(range_runtime_step, lambda rng, c: (arr(rng, 2), (1, 0, -1, 2)[c]), torch_builtin_errors=True),
    P(iterate_rows, lambda rng, c: (arr(rng, *((), (3,), (2, 3), ())[c]),), torch_builtin_errors=True),
    P(while_complex_exits, lambda rng, c: ((5, 100, 0, 9)[c],)),
    P(optional_reassigned, lambda rng, c: (arr(rng, 3), None if c % 2 else c)),
    P(optional_set_in_branch, lambda rng, c: (c,)),
    P(int_floor_mod, lambda rng, c: ((7, -7, 7, -7)[c], (2, 2, -2, -3)[c])),
    P(float_floor_mod, lambda rng, c: ((7.5, -7.5, 7.5, -0.0)[c], (2.0, 2.0, -2.0, 3.0)[c])),
    P(multi_element_condition, lambda rng, c: (arr(rng, 1 if c % 2 else 3),), torch_builtin_errors=True),
    P(scalar_promotion, promotion_inputs),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=program_ids(PROGRAMS))
def test_program(prog):
    check(prog, globals())
