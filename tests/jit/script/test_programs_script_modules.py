"""Scripted nn.Modules: parameters, buffers and typed attributes, methods calling methods,
submodules nested several levels, ModuleList iteration, Sequential, value-dependent control
flow in forward, Optional arguments, a small RNN cell unrolled over a sequence and an LSTM-like
module carrying an (h, c) tuple -- each checked by script_harness against ember eager,
torch.jit.script of the same source, and a fresh process after save/load.

Written once against ``lib`` (ember when pytest imports this file, torch in the harness's copy).
PYTEST_DONT_REWRITE: the programs' own asserts must keep plain Python semantics (eager is the oracle).
"""
from typing import List, Optional, Tuple

import numpy as np
import pytest

from script_harness import P, arr, bind_lib, check, program_ids, signed, tensors

lib = bind_lib(globals())
nn = lib.nn
F = lib.nn.functional
Tensor = lib.Tensor


class LinearRelu(nn.Module):
    def __init__(self, n_in: int = 4, n_out: int = 3):
        super().__init__()
        self.lin = nn.Linear(n_in, n_out)

    def forward(self, x):
        return F.relu(self.lin(x))


class TwoLayerMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(lib.tanh(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.inner = LinearRelu(n, n)
        self.norm = nn.LayerNorm(n)

    def forward(self, x):
        return self.norm(x + self.inner(x))


class NestedModules(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Block(4)
        self.second = Block(4)
        self.head = LinearRelu(4, 2)

    def forward(self, x):
        return self.head(self.second(self.first(x)))


class ModuleListLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).relu()
        return x


class ModuleListEnumerate(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([LinearRelu(3, 3) for _ in range(3)])

    def forward(self, x) -> List[Tensor]:
        outs: List[Tensor] = []
        for i, layer in enumerate(self.layers):
            x = layer(x) + i
            outs.append(x)
        return outs


class SequentialModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3), nn.Tanh())

    def forward(self, x):
        return self.net(x)


class TypedAttributes(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = 0.5
        self.steps = 3
        self.use_shift = True
        self.sizes: List[int] = [2, 3]

    def forward(self, x):
        for _ in range(self.steps):
            x = x * self.scale + 1
        if self.use_shift:
            x = x - self.sizes[0]
        return x.view(self.sizes[0], self.sizes[1])


class MethodCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def helper(self, x, k: int):
        return self.lin(x) * k

    def other(self, x):
        return self.helper(x, 2) + self.helper(x, 3)

    def forward(self, x):
        return self.other(x) - x


class BufferAndParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(lib.ones(4))
        self.register_buffer("mean", lib.zeros(4))

    def forward(self, x):
        return (x - self.mean) * self.weight


class ValueBranchModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Linear(3, 3)
        self.neg = nn.Linear(3, 3)

    def forward(self, x):
        if x.sum() > 0:
            return self.pos(x)
        else:
            return self.neg(x).abs()


class OptionalMaskModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, mask: Optional[Tensor] = None):
        y = self.proj(x)
        if mask is not None:
            y = y * mask
        return y


class NoneAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.extra = None

    def forward(self, x):
        y = self.lin(x)
        if self.extra is not None:
            y = y + 1
        return y


class ResidualStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(4), Block(4)])
        self.out = nn.Linear(4, 1)

    def forward(self, x) -> Tuple[Tensor, List[Tensor]]:
        hidden: List[Tensor] = []
        for block in self.blocks:
            x = block(x)
            hidden.append(x)
        return self.out(x), hidden


class RNNCell(nn.Module):
    def __init__(self, n_in: int, n_hidden: int):
        super().__init__()
        self.ih = nn.Linear(n_in, n_hidden)
        self.hh = nn.Linear(n_hidden, n_hidden)

    def forward(self, x, h):
        return lib.tanh(self.ih(x) + self.hh(h))


class UnrolledRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = 5
        self.cell = RNNCell(3, 5)

    def forward(self, xs) -> Tuple[Tensor, Tensor]:
        h = lib.zeros(xs.size(1), self.hidden)
        outs: List[Tensor] = []
        for t in range(xs.size(0)):
            h = self.cell(xs[t], h)
            outs.append(h)
        return lib.stack(outs), h


class RNNEarlyStop(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = RNNCell(2, 4)

    def forward(self, xs, h, threshold: float) -> Tuple[Tensor, int]:
        steps = 0
        for t in range(xs.size(0)):
            h = self.cell(xs[t], h)
            steps += 1
            if h.abs().mean() > threshold:
                break
        return h, steps


class LSTMCellLike(nn.Module):
    def __init__(self, n_in: int, n_hidden: int):
        super().__init__()
        self.ih = nn.Linear(n_in, 4 * n_hidden)
        self.hh = nn.Linear(n_hidden, 4 * n_hidden)

    def forward(self, x, state: Tuple[Tensor, Tensor]) -> Tuple[Tensor, Tensor]:
        h, c = state
        gates = self.ih(x) + self.hh(h)
        i, f, g, o = gates.chunk(4, 1)
        i = lib.sigmoid(i)
        f = lib.sigmoid(f)
        g = lib.tanh(g)
        o = lib.sigmoid(o)
        c2 = f * c + i * g
        h2 = o * lib.tanh(c2)
        return h2, c2


class LSTMLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = 4
        self.cell = LSTMCellLike(3, 4)

    def forward(self, xs, state: Optional[Tuple[Tensor, Tensor]] = None) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        if state is None:
            h = lib.zeros(xs.size(1), self.hidden)
            c = lib.zeros(xs.size(1), self.hidden)
        else:
            h, c = state
        outs: List[Tensor] = []
        for t in range(xs.size(0)):
            h, c = self.cell(xs[t], (h, c))
            outs.append(h)
        return lib.stack(outs), (h, c)


class StackedLSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.cells = nn.ModuleList([LSTMCellLike(3, 3), LSTMCellLike(3, 3)])

    def forward(self, xs):
        states: List[Tuple[Tensor, Tensor]] = []
        for _ in range(2):
            states.append((lib.zeros(xs.size(1), 3), lib.zeros(xs.size(1), 3)))
        x = xs[0]
        for t in range(xs.size(0)):
            x = xs[t]
            for j, cell in enumerate(self.cells):
                h, c = cell(x, states[j])
                states[j] = (h, c)
                x = h
        return x


class GRULike(nn.Module):
    def __init__(self):
        super().__init__()
        self.ih = nn.Linear(2, 9)
        self.hh = nn.Linear(3, 9)

    def forward(self, xs, h):
        for t in range(xs.size(0)):
            gi = self.ih(xs[t]).chunk(3, 1)
            gh = self.hh(h).chunk(3, 1)
            r = lib.sigmoid(gi[0] + gh[0])
            z = lib.sigmoid(gi[1] + gh[1])
            n = lib.tanh(gi[2] + r * gh[2])
            h = (1 - z) * n + z * h
        return h


class AssertingModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x):
        if x.dim() != 2:
            raise ValueError("expected a batch of vectors, got {} dims".format(x.dim()))
        assert x.size(1) == 4, "expected 4 features"
        return self.lin(x)


class EmbeddingBag(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 3)

    def forward(self, idx):
        return self.emb(idx).sum(1)


def asserting_inputs(rng, call):
    return (arr(rng, *((2, 4), (4,), (2, 3), (3, 4))[call % 4]),)


PROGRAMS = [
    P(LinearRelu, tensors((2, 4))),
    P(TwoLayerMLP, tensors((3, 4)), grad=True),
    P(NestedModules, tensors((2, 4)), grad=True),
    P(ModuleListLoop, tensors((2, 4)), grad=True),
    P(ModuleListEnumerate, tensors((2, 3))),
    P(SequentialModel, tensors((5, 4)), grad=True),
    P(TypedAttributes, tensors((6,))),
    P(MethodCalls, tensors((2, 3))),
    P(BufferAndParameter, tensors((3, 4))),
    P(ValueBranchModule, signed((2, 3))),
    P(OptionalMaskModule, lambda rng, c: (arr(rng, 2, 4),) if c % 2 else (arr(rng, 2, 4), arr(rng, 2, 4))),
    P(NoneAttribute, tensors((2, 3))),
    P(ResidualStack, tensors((3, 4))),
    P(UnrolledRNN, lambda rng, c: (arr(rng, 3 + c, 2, 3),), grad=True),
    P(RNNEarlyStop, lambda rng, c: (arr(rng, 6, 1, 2), arr(rng, 1, 4), 0.2 + 0.15 * c)),
    P(LSTMLike, lambda rng, c: (arr(rng, 4 + c, 2, 3),) if c % 2 else (arr(rng, 4, 2, 3), (arr(rng, 2, 4), arr(rng, 2, 4))), grad=True),
    P(StackedLSTM, lambda rng, c: (arr(rng, 2 + c, 2, 3),)),
    P(GRULike, lambda rng, c: (arr(rng, 5, 2, 2), arr(rng, 2, 3)), grad=True),
    P(AssertingModule, asserting_inputs),
    P(EmbeddingBag, lambda rng, c: (arr(rng, 2, 3, dtype="int64", low=0, high=9),)),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=program_ids(PROGRAMS))
def test_program(prog):
    check(prog, globals())
