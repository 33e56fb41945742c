"""Scripted programs for tensor indexing (None/Ellipsis, integer and boolean index tensors,
setitem), creation from lists and with a tensor's dtype/device, numeric builtins and math
constants, None-returning functions, lists of tuples and nested lists, and modules that
inherit and override methods, call submodules with keyword arguments, update attributes and
buffers in forward, and return dicts -- each checked by script_harness against ember eager,
torch.jit.script of the same source, and a fresh process after save/load.

Written once against ``lib`` (ember when pytest imports this file, torch in the harness's copy).
PYTEST_DONT_REWRITE: the programs' own asserts must keep plain Python semantics (eager is the oracle).
"""
import math
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest

from script_harness import P, arr, bind_lib, check, program_ids, signed, tensors

lib = bind_lib(globals())
nn = lib.nn
F = lib.nn.functional
Tensor = lib.Tensor


# ---------------------------------------------------------------- indexing
def index_none_ellipsis(x) -> Tuple[Tensor, Tensor, Tensor]:
    return x[None], x[..., 0], x[:, None, 1:]


def index_with_tensors(x, idx, mask) -> Tuple[Tensor, Tensor]:
    return x[idx], x[mask]


def tensor_setitem(x, y):
    z = x.clone()
    z[0] = 5.0
    z[:, 1] = y
    z[z < -1] = 0.0
    return z


# ---------------------------------------------------------------- creation, dtype / device
def tensor_from_list(x, n: int) -> Tuple[Tensor, Tensor, Tensor]:
    a = lib.tensor([1.0, 2.0, 3.0])
    b = lib.tensor([n, n + 1])
    return a * x, b, lib.tensor(n * 2)


def like_dtype_device(x, y) -> Tuple[Tensor, Tensor, Tensor]:
    z = lib.zeros(2, 3, dtype=x.dtype, device=x.device)
    w = x.new_zeros(3) + 1
    return z, w, y.to(x.dtype) + x.type_as(y).to(x.dtype)


# ---------------------------------------------------------------- numbers
def numeric_builtins(a: float, n: int) -> Tuple[int, int, float, int, float]:
    return round(a), int(a), float(n), n ** 2, 2.0 ** -n


def math_constants(x):
    return x * math.pi + math.e - math.inf * 0.0 if x.sum() > 1e9 else x * math.pi + math.e


def returns_none(x) -> None:
    x.fill_(1.5)


def returns_optional(x) -> Optional[Tensor]:
    if x.sum() > 0:
        return x * 2
    return None


# ---------------------------------------------------------------- containers
def list_of_tuples(pairs: List[Tuple[Tensor, int]]):
    acc = lib.zeros_like(pairs[0][0])
    for t, k in pairs:
        acc = acc + t * k
    return acc


def nested_lists(n: int) -> Tuple[List[List[int]], int]:
    grid: List[List[int]] = []
    for i in range(n):
        grid.append([i * j for j in range(3)])
    total = 0
    for row in grid:
        for v in row:
            total += v
    return grid, total


def optional_list_elements(xs: List[Optional[Tensor]]):
    acc = lib.zeros(2)
    for t in xs:
        if t is not None:
            acc = acc + t
    return acc


# ---------------------------------------------------------------- modules
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def act(self, x):
        return x.relu()

    def forward(self, x):
        return self.act(self.lin(x)) * 2


class Derived(Base):
    def act(self, x):
        return x.tanh()


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, h: Optional[Tensor] = None, scale: float = 1.0):
        y = self.lin(x) * scale
        if h is not None:
            y = y + h
        return y


class SubmoduleKeywordCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = Gate()

    def forward(self, x):
        return self.gate(x, scale=0.5) + self.gate(x, h=x)


class CountingModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.register_buffer("total", lib.zeros(3))

    def forward(self, x) -> Tuple[Tensor, int]:
        self.calls += 1
        self.total = self.total + x.sum(0)
        return x * self.calls + self.total, self.calls


class DictOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(4, 2)

    def forward(self, x) -> Dict[str, Tensor]:
        h = self.enc(x)
        return {"hidden": h, "score": h.sum(1)}


class AttributeContainers(nn.Module):
    def __init__(self):
        super().__init__()
        self.dims = (1, 0)
        self.table: Dict[str, int] = {"a": 2, "b": 3}

    def forward(self, x):
        y = x.permute(self.dims[0], self.dims[1])
        return y * self.table["a"] + self.table["b"]


class ModuleListLen(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])

    def forward(self, x):
        return self.layers[1](x) * len(self.layers)


class TiedWeights(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = self.a
        self.frozen = nn.Parameter(lib.ones(3), requires_grad=False)

    def forward(self, x):
        return self.b(self.a(x)) * self.frozen


class ActivationZoo(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 4), nn.GELU(), nn.Linear(4, 4), nn.Sigmoid(), nn.Identity(),
                                 nn.Linear(4, 2), nn.Tanh())

    def forward(self, x):
        return self.net(x)


def index_inputs(rng, call):
    x = arr(rng, 5, 3)
    return x, rng.integers(0, 5, size=(4,)).astype("int64"), rng.random(5) > 0.5


PROGRAMS = [
    P(index_none_ellipsis, tensors((3, 4))),
    P(index_with_tensors, index_inputs),
    P(tensor_setitem, tensors((3, 4), (3,))),
    P(tensor_from_list, lambda rng, c: (arr(rng, 3), c)),
    P(like_dtype_device, lambda rng, c: (arr(rng, 3, dtype=("float32", "float64")[c % 2]), arr(rng, 3, dtype="int64"))),
    P(numeric_builtins, lambda rng, c: (float(rng.uniform(-5, 5)), c + 1),
      torch="torch.jit.script types round(float) and int ** int as float (Python: int)"),
    P(math_constants, tensors((3,))),
    P(returns_none, tensors((3,))),
    P(returns_optional, signed((3,))),
    P(list_of_tuples, lambda rng, c: ([(arr(rng, 2), int(k)) for k in range(c + 1)],)),
    P(nested_lists, lambda rng, c: (c + 1,)),
    P(optional_list_elements, lambda rng, c: ([None if (i + c) % 2 else arr(rng, 2) for i in range(3)],)),
    P(Derived, tensors((2, 3))),
    P(SubmoduleKeywordCall, tensors((2, 3))),
    P(CountingModule, tensors((2, 3))),
    P(DictOutput, tensors((2, 4))),
    P(AttributeContainers, tensors((3, 2))),
    P(ModuleListLen, tensors((2, 3))),
    P(TiedWeights, tensors((2, 3)), grad=True),
    P(ActivationZoo, tensors((2, 3)), grad=True),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=program_ids(PROGRAMS))
def test_program(prog):
    check(prog, globals())
