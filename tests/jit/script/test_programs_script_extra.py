"""More scripted programs: scalar/str/dict/list edge cases, functions returning Optional, tensor
ops with tuple results (max/topk/split), attention, a small CNN, BatchNorm buffers updated in
training mode, the training flag, ModuleList indexing, ModuleDict, @jit.unused, constants and
str attributes, and a greedy decoder loop -- each checked by script_harness against ember eager,
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


# ---------------------------------------------------------------- scalars, str, containers
def chained_comparison(n: int) -> Tuple[bool, bool]:
    return 0 < n < 3, n > 1 > 0


def int_conditional_expression(x, n: int):
    k = 1 if n > 2 else 2
    return x * k + n


def list_contains(n: int) -> Tuple[bool, bool]:
    return n in [1, 3, 5], n not in [0, 1]


def list_extend_len(xs: List[Tensor]) -> Tuple[int, Tensor]:
    ys = [xs[0] * 2]
    ys.extend(xs)
    return len(ys), lib.stack(ys).sum(0)


def range_len_loop(xs: List[Tensor]):
    acc = lib.zeros_like(xs[0])
    for i in range(len(xs)):
        acc = acc + xs[i] * i
    return acc


def return_from_list_loop(xs: List[Tensor], limit: float):
    for t in xs:
        if t.sum() > limit:
            return t
    return xs[0] * 0


def string_building(s: str, n: int) -> Tuple[str, bool, int]:
    t = s + "_" + str(n)
    return t, t == "ab_2", len(t)


def dict_iteration(x, n: int) -> Tuple[int, List[str], Tensor]:
    d: Dict[str, int] = {"a": 1, "b": n}
    d["c"] = n * 2
    total = 0
    for k in d.keys():
        total += d[k]
    return total, list(d.keys()), x * d["c"]


def pass_and_multi_assign(x):
    a = b = x * 2
    if a.sum() > 0:
        pass
    else:
        b = b - 1
    return a + b


def while_no_iterations(x, n: int):
    i = n
    while i < 3:
        x = x + i
        i += 1
    return x


def tuple_carried_in_loop(x, n: int):
    state = (x, x + 1)
    for _ in range(n):
        state = (state[1], state[0] + state[1])
    return state[0]


def list_carried_with_break(x, limit: float) -> List[Tensor]:
    out: List[Tensor] = [x]
    while len(out) < 10:
        nxt = out[-1] * 1.5
        if nxt.abs().sum() > limit:
            break
        out.append(nxt)
    return out


# ---------------------------------------------------------------- helpers returning Optional / comprehensions
def maybe_half(x) -> Optional[Tensor]:
    if x.sum() > 0:
        return x / 2
    return None


def optional_from_helper(x):
    y = maybe_half(x)
    if y is None:
        return -x
    return y


def scale_one(t, k: float):
    return t * k + 1


def comprehension_with_helper(xs: List[Tensor]):
    ys = [scale_one(t, 2.0) for t in xs]
    return lib.cat(ys)


# ---------------------------------------------------------------- tensor ops
def bool_tensor_ops(x) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    mask = (x > 0) & (x < 1)
    return mask, ~mask, mask.any(), (x > -5).all()


def int_tensor_ops(x) -> Tuple[Tensor, Tensor, Tensor]:
    return x // 2, x % 3, x * 2 + 1


def max_dim_unpack(x) -> Tuple[Tensor, Tensor]:
    v, i = lib.max(x, 1)
    return v, i


def masked_fill_topk(x) -> Tuple[Tensor, Tensor, Tensor]:
    y = x.masked_fill(x < 0, 0.0)
    vals, idx = x.topk(2, dim=1)  # on x: random floats have no ties, so the indices are defined
    return y, vals, idx


def split_unbind(x) -> Tuple[Tensor, Tensor, int]:
    parts = x.split(2, 0)
    rows = x.unbind(1)
    return lib.cat([parts[-1], parts[0]]), lib.stack(rows, 0), len(parts)


def cumsum_gather(x, idx):
    return x.cumsum(1).gather(1, idx)


def einsum_bmm(a, b):
    return lib.einsum("bij,bjk->bik", a, b) + lib.bmm(a, b)


def size_list(x) -> Tuple[int, Tensor]:
    s = x.size()
    return s[0] * s[1], lib.ones(s)


def attention(q, k, v, mask: Optional[Tensor] = None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, -1e9)
    return F.softmax(scores, dim=-1) @ v


def functional_misc(x):
    y = F.pad(x, [1, 1])
    return F.normalize(y, dim=1), F.leaky_relu(y, 0.2), F.silu(y)


def attention_inputs(rng, call):
    q, k, v = arr(rng, 2, 3, 4), arr(rng, 2, 5, 4), arr(rng, 2, 5, 4)
    return (q, k, v) if call % 2 else (q, k, v, rng.random((2, 3, 5)) > 0.7)


# ---------------------------------------------------------------- modules
class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.fc = nn.Linear(4 * 3 * 3, 2)

    def forward(self, x):
        y = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(y.flatten(1))


class BatchNormTrain(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.lin(x))


class BatchNormEval(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(3)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(x))


class TrainingFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        if self.training:
            return self.lin(x) * 2
        return self.lin(x)


class ModuleListIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)])

    def forward(self, x):
        return self.layers[0](x) + self.layers[2](x)


class ModuleDictHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(3, 2), "b": nn.Linear(3, 2)})

    def forward(self, x):
        acc = self.heads["a"](x)
        for name, head in self.heads.items():
            acc = acc + head(x)
        return acc


class UnusedMethod(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    @lib.jit.unused
    def debug(self, x):
        return x.numpy()

    def forward(self, x, verbose: bool = False):
        if verbose:
            return self.debug(x)
        return self.lin(x)


class ConstantsAndStrAttr(nn.Module):
    __constants__ = ["repeats"]

    def __init__(self):
        super().__init__()
        self.repeats = 3
        self.mode = "mean"

    def forward(self, x):
        for _ in range(self.repeats):
            x = x + 1
        if self.mode == "sum":
            return x.sum(0)
        elif self.mode == "mean":
            return x.mean(0)
        return x


def module_helper(h, scale: float):
    return lib.tanh(h) * scale


class CallsFreeFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return module_helper(self.lin(x), 0.5) + module_helper(x, 2.0)


class GreedyDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6, 4)
        self.cell = nn.Linear(8, 4)
        self.out = nn.Linear(4, 6)

    def forward(self, h, start: int, max_len: int) -> Tuple[List[int], Tensor]:
        tokens: List[int] = []
        tok = start
        for _ in range(max_len):
            x = self.emb(lib.tensor([tok]))
            h = lib.tanh(self.cell(lib.cat([x, h], 1)))
            tok = int(self.out(h).argmax(1)[0])
            if tok == 0:
                break
            tokens.append(tok)
        return tokens, h


class SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask: Optional[Tensor] = None):
        b, t, d = x.size(0), x.size(1), x.size(2)
        q, k, v = self.qkv(x).chunk(3, -1)
        hd = d // self.heads
        q = q.view(b, t, self.heads, hd).transpose(1, 2)
        k = k.view(b, t, self.heads, hd).transpose(1, 2)
        v = v.view(b, t, self.heads, hd).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        out = F.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, d))


class TransformerBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(8)
        self.attn = SelfAttention(8, 2)
        self.ln2 = nn.LayerNorm(8)
        self.mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))

    def forward(self, x, causal: bool = False):
        mask: Optional[Tensor] = None
        if causal:
            t = x.size(1)
            mask = lib.ones(t, t).triu(1) > 0
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


PROGRAMS = [
    P(chained_comparison, lambda rng, c: (c,)),
    P(int_conditional_expression, lambda rng, c: (arr(rng, 2), c + 1)),
    P(list_contains, lambda rng, c: (c + 1,)),
    P(list_extend_len, lambda rng, c: ([arr(rng, 2) for _ in range(c + 1)],)),
    P(range_len_loop, lambda rng, c: ([arr(rng, 3) for _ in range(c + 1)],)),
    P(return_from_list_loop, lambda rng, c: ([arr(rng, 3) for _ in range(3)], 1.0)),
    P(string_building, lambda rng, c: (("ab", "cd")[c % 2], c)),
    P(dict_iteration, lambda rng, c: (arr(rng, 2), c)),
    P(pass_and_multi_assign, signed((3,))),
    P(while_no_iterations, lambda rng, c: (arr(rng, 2), c + 1)),
    P(tuple_carried_in_loop, lambda rng, c: (arr(rng, 2), c)),
    P(list_carried_with_break, lambda rng, c: (arr(rng, 3), 5.0 + 10 * c)),
    P(optional_from_helper, signed((4,))),
    P(comprehension_with_helper, lambda rng, c: ([arr(rng, 2) for _ in range(c + 1)],)),
    P(bool_tensor_ops, tensors((6,))),
    P(int_tensor_ops, tensors((5,), dtype="int64")),
    P(max_dim_unpack, tensors((3, 4))),
    P(masked_fill_topk, tensors((3, 5))),
    P(split_unbind, tensors((5, 3))),
    P(cumsum_gather, lambda rng, c: (arr(rng, 3, 4), arr(rng, 3, 2, dtype="int64", low=0, high=3))),
    P(einsum_bmm, tensors((2, 3, 4), (2, 4, 2)), grad=True),
    P(size_list, tensors((2, 3))),
    P(attention, attention_inputs, grad=True),
    P(functional_misc, tensors((2, 3))),
    P(SmallCNN, tensors((2, 1, 8, 8)), grad=True),
    P(BatchNormTrain, tensors((5, 3)), grad=True),
    P(BatchNormEval, tensors((4, 3)), eval=True),
    P(TrainingFlag, tensors((2, 2))),
    P(ModuleListIndex, tensors((2, 3))),
    P(ModuleDictHeads, tensors((2, 3))),
    P(UnusedMethod, tensors((2, 3))),
    P(ConstantsAndStrAttr, tensors((3, 2))),
    P(CallsFreeFunction, tensors((2, 4)), grad=True),
    P(GreedyDecoder, lambda rng, c: (arr(rng, 1, 4), c + 1, 6)),
    P(TransformerBlock, lambda rng, c: (arr(rng, 2, 3 + c, 8), c % 2 == 1), grad=True),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=program_ids(PROGRAMS))
def test_program(prog):
    check(prog, globals())
