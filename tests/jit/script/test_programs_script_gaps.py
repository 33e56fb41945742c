"""Scripted programs for features added after the first acceptance round: grad-mode ``with``
blocks (no_grad / enable_grad / set_grad_enabled, with early return, break and raise inside),
ModuleList / Sequential / ModuleDict length, iteration, negative indices, enumerate and zip,
and dict / filtered / nested comprehensions -- each checked by script_harness against ember
eager, torch.jit.script of the same source (or its rejection), and a fresh process after
save/load.

Written once against ``lib`` (ember when pytest imports this file, torch in the harness's copy).
PYTEST_DONT_REWRITE: the programs' own asserts must keep plain Python semantics (eager is the oracle).
"""
from typing import Dict, List

import numpy as np
import pytest

from script_harness import P, arr, bind_lib, check, program_ids, signed, tensors

lib = bind_lib(globals())
nn = lib.nn
Tensor = lib.Tensor


# ---------------------------------------------------------------- grad modes
def no_grad_early_return(x, w):
    with lib.no_grad():
        s = (w * 3).sum()
        if bool(s > 0):
            return x * s
    return x * w + s


def enable_grad_inside_no_grad(x, w):
    with lib.no_grad():
        a = w * 2
        with lib.enable_grad():
            b = w * 3
        c = a * b
    return x * a + b + c


def set_grad_enabled_flag(x, w, flag: bool):
    with lib.set_grad_enabled(flag):
        y = w * x
    return y + x


def no_grad_in_loop(x, n: int):
    acc = x * 1
    for i in range(n):
        with lib.no_grad():
            if i == 3:
                break
            acc = acc + x * i
    return acc + x


def no_grad_loop_body(x, n: int):
    acc = x * 1
    for i in range(n):
        with lib.no_grad():
            acc = acc + x * i
        acc = acc * x
    return acc


def no_grad_raises(x):
    with lib.no_grad():
        if bool(x.sum() > 1.0):
            raise ValueError("too big")
        y = x * 2
    return y + x


def two_grad_items(x, w):
    with lib.no_grad(), lib.enable_grad():
        y = x * w
    z = x * w
    return y + z


def same_op_across_no_grad(x):
    a = x * 2
    with lib.no_grad():
        b = x * 2
    c = x * 2
    return a + b + c, b.requires_grad, c.requires_grad


class NoGradModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("running", lib.zeros(3))

    def forward(self, x):
        with lib.no_grad():
            self.running.mul_(0.5).add_(x.mean(0))
            shift = self.lin(x).mean()
        return self.lin(x) - shift + self.running


# ---------------------------------------------------------------- module containers
class ContainerLoops(nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 3))
        self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])
        self.gates = nn.ModuleList([nn.Sigmoid(), nn.Tanh(), nn.ReLU()])
        self.named = nn.ModuleDict({"a": nn.Linear(3, 3), "b": nn.Tanh()})

    def forward(self, x):
        for m in self.seq:
            x = m(x)
        x = self.layers[-1](x) + self.layers[0](x) * len(self.seq)
        for i, layer in enumerate(self.layers):
            x = layer(x) * (i + 1) / len(self.layers)
        for layer, gate in zip(self.layers, self.gates):
            x = gate(layer(x))
        return x * len(self.named) + self.seq[-1](self.seq[0](x))


class ModuleListLenLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2)])

    def forward(self, x):
        n = len(self.blocks)
        for i in range(n):
            x = x + float(i) / n
        for b in self.blocks:
            x = b(x)
        return x


# ---------------------------------------------------------------- comprehensions
def dict_comprehension(d: Dict[str, int]) -> Dict[str, int]:
    return {k: v * 2 for k, v in d.items()}


def dict_comprehension_tensors(x) -> Dict[int, Tensor]:
    rows = [x[0], x[1], x[2]]
    return {i: r.sum() for i, r in enumerate(rows)}


def dict_comprehension_filtered(n: int) -> Dict[int, int]:
    return {i: i * i for i in range(n) if i % 3 != 0}


def nested_comprehension(n: int) -> List[int]:
    return [i * j for i in range(n) for j in range(i) if (i + j) % 2 == 0]


def comprehension_of_comprehensions(n: int) -> List[List[int]]:
    return [[i + j for j in range(i)] for i in range(n)]


def comprehension_scope(x: List[int]) -> int:
    v = 10
    squares = [v * v for v in x]
    return v + sum(squares)


def dict_inputs(rng, call):
    return ({k: int(v) for k, v in zip("abcd"[:call + 1], rng.integers(-5, 6, call + 1))},)


NO_ENABLE_GRAD = "torch.jit.script: enable_grad is not a scriptable context manager (aten::enable_grad unknown)"
NO_SET_GRAD = "torch.jit.script: set_grad_enabled(flag) is not a scriptable context manager"
TORCH_BREAK_IN_WITH = "torch.jit.script: break inside a with block hits an internal assert (torch bug)"
NO_COMP_IFS = "torch.jit.script: comprehension ifs are not supported"
ONE_GENERATOR = "torch.jit.script: only a single generator is supported in comprehensions"

PROGRAMS = [
    P(no_grad_early_return, signed((3,), (3,)), grad=True),
    P(enable_grad_inside_no_grad, tensors((3,), (3,)), grad=True, torch=NO_ENABLE_GRAD),
    P(set_grad_enabled_flag, lambda rng, c: (arr(rng, 3), arr(rng, 3), c % 2 == 0), grad=True, torch=NO_SET_GRAD),
    P(no_grad_in_loop, lambda rng, c: (arr(rng, 3), 2 * c), grad=True, torch=TORCH_BREAK_IN_WITH),
    P(no_grad_loop_body, lambda rng, c: (arr(rng, 3), c), grad=True),
    P(no_grad_raises, lambda rng, c: (arr(rng, 3) + np.float32(2 * (c % 2)),), grad=True),
    P(two_grad_items, tensors((3,), (3,)), grad=True, torch=NO_ENABLE_GRAD),
    P(same_op_across_no_grad, tensors((3,)), grad=True),
    P(NoGradModule, tensors((2, 3)), grad=True),
    P(ContainerLoops, tensors((2, 3)), grad=True),
    P(ModuleListLenLoop, tensors((2, 2))),
    P(dict_comprehension, dict_inputs),
    P(dict_comprehension_tensors, tensors((3, 2))),
    P(dict_comprehension_filtered, lambda rng, c: (c + 4,), torch=NO_COMP_IFS),
    P(nested_comprehension, lambda rng, c: (c + 3,), torch=ONE_GENERATOR),
    P(comprehension_of_comprehensions, lambda rng, c: (c + 1,)),
    P(comprehension_scope, lambda rng, c: ([int(v) for v in rng.integers(-5, 6, c + 1)],)),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=program_ids(PROGRAMS))
def test_program(prog):
    check(prog, globals())
