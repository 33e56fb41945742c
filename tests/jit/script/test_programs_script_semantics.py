"""Scripted programs aimed at what optimisation passes and the executor could get wrong: reads
around in-place mutation (CSE, DCE), mutated lists (len/getitem folding), aliasing through views
and augmented assignment, random ops (no CSE/folding of draws), small constant-trip loops with
exits (unrolling), zero-trip loops, deep nesting, Python exceptions raised by builtins
(ZeroDivisionError, IndexError, KeyError), errors raised inside helpers, and loops over
zip/enumerate/lists with break -- each checked by script_harness against ember eager,
torch.jit.script of the same source, and a fresh process after save/load.

Written once against ``lib`` (ember when pytest imports this file, torch in the harness's copy).
PYTEST_DONT_REWRITE: the programs' own asserts must keep plain Python semantics (eager is the oracle).
"""
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest

from script_harness import P, arr, bind_lib, check, program_ids, signed, tensors

lib = bind_lib(globals())
nn = lib.nn
F = lib.nn.functional
Tensor = lib.Tensor


# ---------------------------------------------------------------- mutation vs CSE / DCE / folding
def reads_around_inplace(x) -> Tuple[Tensor, Tensor]:
    a = x.sum()
    x.add_(1)
    b = x.sum()
    return a, b


def inplace_in_branches(x):
    y = x.clone()
    for i in range(4):
        if i % 2 == 1:
            y.add_(1)
        else:
            y.mul_(2)
    return y


def inplace_through_view(x):
    v = x[0]
    v.add_(10)
    return x * 1


def inplace_result_unused(x):
    y = x.clone()
    if y.sum() > 0:
        y.relu_()
    else:
        y.neg_()
    return y


def augmented_alias(x):
    y = x
    y += 1
    return x * 2


def mutated_list_len(n: int) -> Tuple[int, int]:
    vals = [1, 2]
    vals.append(n)
    k = len(vals)
    vals.append(n + 1)
    return k, len(vals)


def mutated_list_getitem(x):
    parts = [x, x]
    parts[0] = x * 2
    return parts[0] + parts[1]


def list_alias(x) -> Tuple[int, Tensor]:
    a = [x]
    b = a
    b.append(x * 3)
    return len(a), a[-1]


def cse_across_branches(x):
    a = x.sin()
    if x.sum() > 0:
        b = x.sin() * 2
    else:
        b = x.sin() - 1
    return a + b


def random_draws(x) -> Tuple[Tensor, Tensor]:
    a = lib.rand_like(x)
    b = lib.rand_like(x)
    return x + a - b, lib.randn(2, 3)


def dropout_training(x):
    return F.dropout(x, p=0.5, training=True)


# ---------------------------------------------------------------- loops: unrolling, exits, zero trips
def small_loop_with_break(x) -> Tuple[Tensor, int]:
    k = 0
    for i in range(4):
        if x.sum() > i:
            break
        x = x * 2
        k += 1
    return x, k


def zero_trip_loops(x, n: int):
    for i in range(0):
        x = x + 100
    for j in range(n):
        x = x - 1
    while n > 5:
        x = x * 0
        n -= 1
    return x


def deep_nesting(x, n: int):
    if n > 0:
        for i in range(n):
            while x.sum() < 5:
                if x.max() > 3:
                    return x
                x = x + 1
            x = x - i
    return x * 2


def break_in_list_loop(xs: List[Tensor]) -> Tuple[Tensor, int]:
    acc = lib.zeros_like(xs[0])
    used = 0
    for t in xs:
        if t.sum() < 0:
            break
        acc = acc + t
        used += 1
    return acc, used


def continue_in_zip(xs: List[Tensor], ks: List[int]):
    acc = lib.zeros_like(xs[0])
    for t, k in zip(xs, ks):
        if k == 0:
            continue
        acc = acc + t * k
    return acc


def return_in_enumerate(xs: List[Tensor]) -> int:
    for i, t in enumerate(xs):
        if t.max() > 1.5:
            return i
    return -1


def outer_break_inner_continue(x):
    for i in range(5):
        if i == 3:
            break
        for j in range(4):
            if j == i:
                continue
            x = x + i * j
    return x


def loop_min_with_inf(xs: List[Tensor]) -> float:
    best = float("inf")
    for t in xs:
        v = float(t.sum())
        if v < best:
            best = v
    return best


# ---------------------------------------------------------------- exceptions from builtins and helpers
def int_division(a: int, b: int) -> Tuple[int, float]:
    return a // b, a / b


def list_index(xs: List[int], i: int) -> int:
    return xs[i]


def dict_lookup(key: str) -> int:
    d: Dict[str, int] = {"a": 1, "b": 2}
    return d[key]


def check_positive(x):
    if x.min() <= 0:
        raise ValueError("got a non-positive value")
    return x.log()


def error_from_helper(x):
    y = x.abs() + 0.5
    if x.sum() > 0:
        y = check_positive(x)
    return y


class RaisingSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        assert x.size(0) <= 2, "batch too large"
        return self.lin(x)


class CallsRaisingSubmodule(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = RaisingSubmodule()

    def forward(self, x):
        return self.inner(x).relu()


class ReturnInsideModuleList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])

    def forward(self, x) -> Tuple[Tensor, int]:
        depth = 0
        for layer in self.layers:
            x = layer(x)
            depth += 1
            if x.sum() > 0:
                return x, depth
        return x, depth


class DropoutTrainModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        return self.drop(self.lin(x))


PROGRAMS = [
    P(reads_around_inplace, tensors((4,))),
    P(inplace_in_branches, tensors((3,))),
    P(inplace_through_view, tensors((2, 3))),
    P(inplace_result_unused, signed((4,))),
    P(augmented_alias, tensors((3,))),
    P(mutated_list_len, lambda rng, c: (c,)),
    P(mutated_list_getitem, tensors((3,))),
    P(list_alias, tensors((2,))),
    P(cse_across_branches, signed((4,))),
    P(random_draws, tensors((3,)), rng=True),
    P(dropout_training, tensors((4, 4)), rng=True),
    P(small_loop_with_break, lambda rng, c: (arr(rng, 3) + np.float32(c - 1),)),
    P(zero_trip_loops, lambda rng, c: (arr(rng, 2), (0, 2, -1, 7)[c])),
    P(deep_nesting, lambda rng, c: (arr(rng, 3), c)),
    P(break_in_list_loop, lambda rng, c: ([arr(rng, 2) for _ in range(4)],)),
    P(continue_in_zip, lambda rng, c: ([arr(rng, 2) for _ in range(4)], [int(k) for k in rng.integers(0, 3, 3)])),
    P(return_in_enumerate, lambda rng, c: ([arr(rng, 2) for _ in range(3)],)),
    P(outer_break_inner_continue, tensors((2,))),
    P(loop_min_with_inf, lambda rng, c: ([arr(rng, 2) for _ in range(c)],)),
    P(int_division, lambda rng, c: (7 - c * 3, c % 3 - 1), torch_builtin_errors=True),
    P(list_index, lambda rng, c: ([1, 2, 3], c * 2 - 3), torch_builtin_errors=True),
    P(dict_lookup, lambda rng, c: ("abc"[c % 3],), torch_builtin_errors=True),
    P(error_from_helper, lambda rng, c: (arr(rng, 3) + np.float32((2.5, -3.0, 1.0, -3.0)[c]),)),
    P(CallsRaisingSubmodule, lambda rng, c: (arr(rng, c + 1, 3),)),
    P(ReturnInsideModuleList, tensors((2, 3))),
    P(DropoutTrainModule, tensors((2, 4)), rng=True),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=program_ids(PROGRAMS))
def test_program(prog):
    check(prog, globals())
