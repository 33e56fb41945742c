"""Scripted programs with control flow: value-dependent if/elif, loops with carried values,
break/continue/early return, Optional refinement, assert/raise -- each checked by script_harness
against ember eager, torch.jit.script of the same source, and a fresh process after save/load.

Written once against ``lib`` (ember when pytest imports this file, torch in the harness's copy).
PYTEST_DONT_REWRITE: the programs' own asserts must keep plain Python semantics (eager is the oracle).
"""
from typing import List, Optional, Tuple

import numpy as np
import pytest

from script_harness import P, arr, bind_lib, check, program_ids, signed, tensors

lib = bind_lib(globals())
F = lib.nn.functional
Tensor = lib.Tensor


def levels(shape, shifts):
    """inputs(): one array, shifted by shifts[call % len(shifts)] (to reach each elif arm)."""
    def make(rng, call):
        return (arr(rng, *shape, low=-0.5, high=0.5) + np.float32(shifts[call % len(shifts)]),)
    return make


# ---------------------------------------------------------------- if / elif / else
def if_sum_positive(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = -x
    return y + 1


def elif_chain(x):
    s = x.mean()
    if s > 1.0:
        out = x - 1
    elif s > 0.0:
        out = x * 3
    elif s > -1.0:
        out = lib.tanh(x)
    else:
        out = x.abs()
    return out


def nested_if(x, y):
    if x.sum() > 0:
        if y.sum() > 0:
            z = x + y
        else:
            z = x - y
    else:
        z = x * y
    return z


def if_one_branch_reassigns(x):
    y = x + 1
    if x.max() > 2.5:
        y = y * 10
    return y


def if_on_int_arg(x, n: int):
    if n > 2:
        return x * n
    return x - n


def bool_ops_condition(x, y):
    a = x.sum() > 0
    b = y.sum() < 0
    if a and b:
        return x + y
    elif a or b:
        return x - y
    elif not a:
        return x * y
    return x


def conditional_expression(x):
    y = x * 2 if x.max() > 1.5 else x - 1
    return y


def if_tuple_swap(x, y):
    if x.sum() > y.sum():
        a, b = x, y
    else:
        a, b = y, x
    return a - b


# ---------------------------------------------------------------- loops with carried values
def for_range_carried(x, n: int):
    for i in range(n):
        x = x * 0.5 + i
    return x


def for_range_start_stop_step(x):
    acc = lib.zeros_like(x)
    for i in range(1, 8, 2):
        acc = acc + x * i
    return acc


def for_range_negative_step(x):
    acc = x
    for i in range(5, 0, -2):
        acc = acc * i - x
    return acc


def while_halving(x) -> Tuple[Tensor, int]:
    count = 0
    while x.abs().max() > 1:
        x = x / 2
        count += 1
    return x, count


def while_int_counter(n: int) -> int:
    total = 0
    i = 0
    while i < n:
        total += i * i
        i += 1
    return total


def nested_loops(x):
    for i in range(3):
        for j in range(2):
            x = x + i * j + 1
    return x


def loop_over_int_list(x):
    for k in [1, 2, 3]:
        x = x * k
    return x


def loop_over_tuple(x, y):
    acc = lib.zeros_like(x)
    for t in (x, y, x * y):
        acc = acc + t
    return acc


def count_positive_rows(x) -> int:
    n = 0
    for i in range(x.size(0)):
        if x[i].sum() > 0:
            n += 1
    return n


def fibonacci_tensors(x, n: int):
    a = x
    b = x + 1
    for _ in range(n):
        a, b = b, a + b
    return a


# ---------------------------------------------------------------- break / continue / early return
def for_break(x) -> Tuple[Tensor, int]:
    steps = 0
    for i in range(10):
        if x.sum() > 3:
            break
        x = x + 1
        steps += 1
    return x, steps


def for_continue(x):
    for i in range(6):
        if i % 2 == 0:
            continue
        x = x + i
    return x


def while_true_break(x):
    while True:
        x = x * 2
        if x.abs().sum() > 50:
            break
    return x


def while_continue(x):
    i = 0
    while i < 10:
        i += 1
        if i % 3 == 0:
            continue
        x = x + i
    return x


def nested_break_inner(x):
    acc = lib.zeros_like(x)
    for i in range(4):
        for j in range(5):
            if j > i:
                break
            acc = acc + x * j
    return acc


def early_return_if(x):
    if x.sum() < 0:
        return -x
    return x * 3


def early_return_in_loop(x):
    for i in range(8):
        x = x + 1
        if x.sum() > 10:
            return x * i
    return x


def early_return_nested_loops(x):
    for i in range(3):
        for j in range(3):
            if (x * (i + j)).sum() > 4:
                return x + i * 10 + j
    return x


def break_on_tensor_in_while(x) -> Tuple[Tensor, int]:
    n = 0
    while n < 100:
        x = lib.sin(x) + 0.5
        n += 1
        if x.min() > 0.9:
            break
    return x, n


# ---------------------------------------------------------------- Optional refinement
def optional_tensor_arg(x, y: Optional[Tensor] = None):
    if y is not None:
        return x + y
    return x


def optional_is_none_else(x, y: Optional[Tensor]):
    if y is None:
        out = x * 2
    else:
        out = x * y
    return out


def optional_int_default(x, n: Optional[int] = None):
    if n is None:
        n = 2
    return x * n


def optional_in_loop(xs: List[Tensor], init: Optional[Tensor]):
    acc = init
    for t in xs:
        if acc is None:
            acc = t
        else:
            acc = acc + t
    if acc is None:
        return lib.zeros(1)
    return acc


def optional_inputs(rng, call):
    return (arr(rng, 3, 4), None if call % 2 else arr(rng, 3, 4))


# ---------------------------------------------------------------- assert / raise
def assert_min(x):
    assert x.min() > -2.5, "input too small"
    return x.exp()


def raise_on_dims(x):
    if x.dim() != 2:
        raise ValueError("expected 2 dims, got {}".format(x.dim()))
    return x.t()


def raise_in_loop(x):
    for i in range(x.size(0)):
        if x[i].sum() > 5:
            raise RuntimeError("row {} is too large".format(i))
        x = x + 0.1
    return x


def raise_fstring(x, limit: int):
    if x.size(0) > limit:
        raise ValueError(f"size {x.size(0)} exceeds {limit}")
    return x.sum(0)


def assert_no_message(x, y):
    assert x.shape == y.shape
    return x * y


def dims_inputs(rng, call):
    return (arr(rng, *((3, 4), (3,), (2, 3, 4))[call % 3]),)


def rows_inputs(rng, call):
    return (arr(rng, 4, 3, low=-1.0, high=1.0) + np.float32(1.5 if call % 2 else 0.0),)


def shape_pair_inputs(rng, call):
    return (arr(rng, 3, 4), arr(rng, 3, 4) if call % 2 == 0 else arr(rng, 4, 3))


PROGRAMS = [
    P(if_sum_positive, signed((3, 4)), grad=True),
    P(elif_chain, levels((3, 4), (2.0, 0.5, -0.5, -2.0))),
    P(nested_if, lambda rng, c: (arr(rng, 4) + np.float32(3 if c % 2 else -3), arr(rng, 4) + np.float32(3 if c // 2 else -3))),
    P(if_one_branch_reassigns, lambda rng, c: (arr(rng, 5) + np.float32(c),)),
    P(if_on_int_arg, lambda rng, c: (arr(rng, 3), c + 1)),
    P(bool_ops_condition, lambda rng, c: (arr(rng, 4) + np.float32(3 if c % 2 else -3), arr(rng, 4) + np.float32(3 if c // 2 else -3))),
    P(conditional_expression, tensors((6,))),
    P(if_tuple_swap, tensors((3,), (3,))),
    P(for_range_carried, lambda rng, c: (arr(rng, 2, 3), c * 2), grad=True),
    P(for_range_start_stop_step, tensors((4,))),
    P(for_range_negative_step, tensors((4,))),
    P(while_halving, lambda rng, c: (arr(rng, 5, low=-9.0, high=9.0),)),
    P(while_int_counter, lambda rng, c: (c * 3,)),
    P(nested_loops, tensors((2, 2))),
    P(loop_over_int_list, tensors((3,))),
    P(loop_over_tuple, tensors((2, 3), (2, 3))),
    P(count_positive_rows, tensors((6, 3))),
    P(fibonacci_tensors, lambda rng, c: (arr(rng, 3), c + 2)),
    P(for_break, lambda rng, c: (arr(rng, 3, low=-3.0, high=1.0),)),
    P(for_continue, tensors((3,))),
    P(while_true_break, lambda rng, c: (arr(rng, 4, low=0.5, high=2.0),)),
    P(while_continue, tensors((2,))),
    P(nested_break_inner, tensors((3,))),
    P(early_return_if, signed((4,))),
    P(early_return_in_loop, tensors((4,)), grad=True),
    P(early_return_nested_loops, tensors((3,))),
    P(break_on_tensor_in_while, tensors((4,))),
    P(optional_tensor_arg, optional_inputs, grad=True),
    P(optional_is_none_else, optional_inputs),
    P(optional_int_default, lambda rng, c: (arr(rng, 3),) if c % 2 else (arr(rng, 3), c + 3)),
    P(optional_in_loop, lambda rng, c: ([arr(rng, 2) for _ in range(c)], None if c % 2 else arr(rng, 2))),
    P(assert_min, lambda rng, c: (arr(rng, 5, low=-3.0, high=2.0),)),
    P(raise_on_dims, dims_inputs),
    P(raise_in_loop, rows_inputs),
    P(raise_fstring, lambda rng, c: (arr(rng, c + 1, 2), 2)),
    P(assert_no_message, shape_pair_inputs),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=program_ids(PROGRAMS))
def test_program(prog):
    check(prog, globals())
