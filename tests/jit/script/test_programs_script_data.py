"""Scripted programs over data: lists (append, comprehension, len, indexing, stack/cat), tuples
returned and unpacked, int/float/bool arithmetic, default and keyword arguments, nested calls
to helper functions (scripted recursively), ember.nn.functional, in-place ops, enumerate/zip,
str formatting, dtype/shape queries -- each checked by script_harness against ember eager,
torch.jit.script of the same source, and a fresh process after save/load.

Written once against ``lib`` (ember when pytest imports this file, torch in the harness's copy).
PYTEST_DONT_REWRITE: the programs' own asserts must keep plain Python semantics (eager is the oracle).
"""
import math
from typing import Dict, List, Optional, Tuple

import pytest

from script_harness import P, arr, bind_lib, check, program_ids, tensors

lib = bind_lib(globals())
F = lib.nn.functional
Tensor = lib.Tensor

SCALE = 1.5
OFFSET = 2


# ---------------------------------------------------------------- helpers (scripted recursively)
def helper_inner(x, k: float):
    return x * k + 1


def helper_scale(x, k: float):
    if k > 1.0:
        return helper_inner(x, k) - helper_inner(x, 1.0)
    return helper_inner(x, k)


def helper_pair(x) -> Tuple[Tensor, Tensor]:
    return x.relu(), x.neg().relu()


def helper_clip(x, lo: float = -1.0, hi: float = 1.0):
    return x.clamp(lo, hi)


# ---------------------------------------------------------------- lists
def list_append_stack(x, n: int):
    out: List[Tensor] = []
    for i in range(n):
        out.append(x * i)
    return lib.stack(out)


def list_comprehension_cat(x):
    ys = [x * i for i in range(4)]
    return lib.cat(ys, 0)


def list_len_and_index(x) -> Tuple[Tensor, int]:
    parts = [x, x + 1, x * 2]
    return parts[len(parts) - 1] - parts[0], len(parts)


def list_setitem_negative_index(x):
    parts = [x, x + 1, x + 2]
    parts[1] = parts[0] * 3
    parts[-1] = parts[1] - parts[2]
    return lib.stack(parts, 1)


def list_of_ints(n: int) -> Tuple[List[int], int]:
    vals: List[int] = []
    for i in range(n):
        vals.append(i * i)
    s = 0
    for v in vals:
        s += v
    return vals, s


def list_pop_insert(x) -> Tuple[Tensor, int]:
    parts = [x, x * 2, x * 3]
    last = parts.pop()
    parts.insert(0, last)
    return lib.cat(parts), len(parts)


def list_input_sum(xs: List[Tensor]):
    total = xs[0]
    for t in xs[1:]:
        total = total + t
    return total


def chunk_and_stack(x):
    parts = x.chunk(3, 0)
    doubled = [p * 2 for p in parts]
    return lib.stack(doubled, 0).sum(0)


# ---------------------------------------------------------------- tuples
def tuple_return_unpack(x) -> Tuple[Tensor, Tensor]:
    a, b = helper_pair(x)
    return b, a


def tuple_index(x):
    t = (x, x * 2, 3)
    return t[1] + t[2]


def tuple_input(pair: Tuple[Tensor, Tensor], k: int):
    a, b = pair
    return a * k - b


def nested_tuple_return(x) -> Tuple[Tensor, Tuple[Tensor, int]]:
    return x + 1, (x * 2, x.dim())


# ---------------------------------------------------------------- scalar arithmetic
def int_arith(a: int, b: int) -> Tuple[int, int, int, int, int]:
    return a + b, a * b, a // b, a % b, a - b * 2


def float_arith(a: float, b: float) -> float:
    return a / b + a ** 2 - b * 0.5


def mixed_int_float(x, a: int, b: float) -> Tuple[Tensor, float, float]:
    return x * a + b, a / 2, a * b


def bool_logic(a: bool, b: bool) -> Tuple[bool, bool, bool]:
    return (a and not b) or (b and not a), a or b, not (a and b)


def math_funcs(a: float) -> Tuple[float, int, float]:
    return math.sqrt(abs(a)) + math.exp(-a * a), math.floor(a), math.log(abs(a) + 1.0)


def min_max_abs(a: int, b: int) -> Tuple[int, int, int]:
    return min(a, b), max(a, b), abs(a - b)


def int_comparisons(a: int, b: int) -> Tuple[bool, bool, bool, bool]:
    return a < b, a >= b, a == b, a != b


def augmented_assignment(x, n: int) -> Tuple[Tensor, int]:
    x += 1
    x *= 2
    x -= 0.5
    n -= 3
    n *= 2
    return x, n


def tensor_to_scalars(x) -> Tuple[float, int, bool]:
    return float(x.sum()), int(x.argmax()), bool(x.max() > 1)


# ---------------------------------------------------------------- arguments and calls
def default_args(x, scale: float = 2.0, shift: int = 1):
    return x * scale + shift


def keyword_args(x, scale: float = 2.0, shift: int = 1):
    return x * scale - shift


def keyword_calls(x):
    a = helper_clip(x, hi=0.5)
    b = helper_clip(x, lo=-0.25)
    return lib.sum(a * b, dim=1, keepdim=True) + x.mean(dim=0)


def nested_calls(x):
    return helper_scale(x, 2.0) + helper_scale(x, 0.5)


def helper_in_loop(x):
    for i in range(3):
        x = helper_scale(x, float(i))
    return x


def global_constants(x):
    return x * SCALE + OFFSET


# ---------------------------------------------------------------- functional, in-place, tensor ops
def functional_ops(x, w, b):
    y = F.linear(x, w, b)
    y = F.relu(y) + F.gelu(y) + F.sigmoid(y)
    return F.softmax(y, dim=-1), F.log_softmax(y, dim=1)


def functional_layer_norm_dropout(x):
    y = F.layer_norm(x, [x.size(-1)])
    return F.dropout(y, p=0.5, training=False)


def inplace_on_clone(x):
    y = x.clone()
    y.add_(1)
    y.mul_(2)
    y.clamp_(min=-1.0, max=3.0)
    return y


def inplace_on_input(x):
    x.add_(1.0)
    x.mul_(x)
    return x * 2


def where_and_clamp(x):
    return lib.where(x > 0, x, x * 0.1).clamp(-1.0, 1.0)


def matmul_chain(a, b, c):
    return (a @ b).relu() @ c


def slicing(x) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return x[1:, :2], x[:, -1], x[0], x[::2]


def creation_ops(x) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    z = lib.zeros(x.size(0), 4)
    o = lib.ones_like(x)
    r = lib.arange(5)
    f = lib.full([2, 2], 3.5)
    return z + 1, o * x, r * 2, f


def reductions(x) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return x.sum(), x.mean(1), x.max(), x.argmin(dim=0)


def view_reshape_permute(x):
    y = x.view(x.size(0), -1)
    z = y.reshape(-1, 2)
    return z.t().contiguous(), x.permute(2, 0, 1).flatten(1), x.unsqueeze(0).squeeze(0)


# ---------------------------------------------------------------- enumerate / zip
def enumerate_list_input(xs: List[Tensor]):
    acc = lib.zeros_like(xs[0])
    for i, t in enumerate(xs):
        acc = acc + t * i
    return acc


def zip_lists(xs: List[Tensor], ws: List[float]):
    acc = lib.zeros_like(xs[0])
    for t, w in zip(xs, ws):
        acc = acc + t * w
    return acc


def enumerate_chunks(x) -> List[Tensor]:
    out: List[Tensor] = []
    for i, p in enumerate(x.chunk(2, 1)):
        out.append(p.sum(1) * (i + 1))
    return out


# ---------------------------------------------------------------- str formatting, dtype / shape queries
def format_shape(x) -> str:
    return "shape {} x {}".format(x.size(0), x.size(1))


def raise_with_format(x, expected: int):
    if x.size(1) != expected:
        raise ValueError("expected {} columns but got {} (dim {})".format(expected, x.size(1), x.dim()))
    return x.sum(1)


def shape_queries(x) -> Tuple[int, int, int, int, int]:
    return x.dim(), x.size(0), x.shape[1], x.numel(), len(x.shape)


def dtype_branch(x):
    if x.dtype == lib.float32:
        return x * 2
    return x.float() + 1


def dtype_conversions(x) -> Tuple[Tensor, Tensor, Tensor]:
    y = x.to(lib.float64)
    z = x.int()
    return y.sum(), z * 2, (x > 0).long()


def rank_dispatch(x):
    if x.dim() == 1:
        return x.unsqueeze(0)
    elif x.dim() == 2:
        return x
    return x.flatten(0, -2)


def dict_of_tensors(x, y):
    d: Dict[str, Tensor] = {"a": x, "b": y}
    d["c"] = d["a"] * d["b"]
    return d["c"] + d["a"]


def kwargs_ab(rng, call):
    return {} if call % 2 else {"shift": call, "scale": 0.5}


def dtypes_alternating(rng, call):
    return (arr(rng, 3, dtype="int64" if call % 2 else "float32"),)


PROGRAMS = [
    P(list_append_stack, lambda rng, c: (arr(rng, 2, 3), c + 1), grad=True),
    P(list_comprehension_cat, tensors((2, 3))),
    P(list_len_and_index, tensors((4,))),
    P(list_setitem_negative_index, tensors((3,))),
    P(list_of_ints, lambda rng, c: (c + 2,)),
    P(list_pop_insert, tensors((2,))),
    P(list_input_sum, lambda rng, c: ([arr(rng, 3) for _ in range(c + 1)],)),
    P(chunk_and_stack, tensors((6, 2))),
    P(tuple_return_unpack, tensors((5,)), grad=True),
    P(tuple_index, tensors((3,))),
    P(tuple_input, lambda rng, c: ((arr(rng, 3), arr(rng, 3)), c)),
    P(nested_tuple_return, tensors((2, 2))),
    P(int_arith, lambda rng, c: (int(rng.integers(-20, 20)), int(rng.integers(1, 7)) * (1 if c % 2 else -1))),
    P(float_arith, lambda rng, c: (float(rng.uniform(-3, 3)), float(rng.uniform(0.5, 2)))),
    P(mixed_int_float, lambda rng, c: (arr(rng, 3), c + 1, float(rng.uniform(-1, 1)))),
    P(bool_logic, lambda rng, c: (bool(c % 2), bool(c // 2))),
    P(math_funcs, lambda rng, c: (float(rng.uniform(-3, 3)),)),
    P(min_max_abs, lambda rng, c: (int(rng.integers(-9, 9)), int(rng.integers(-9, 9)))),
    P(int_comparisons, lambda rng, c: (c, 2)),
    P(augmented_assignment, lambda rng, c: (arr(rng, 3), c)),
    P(tensor_to_scalars, tensors((5,))),
    P(default_args, tensors((3,))),
    P(keyword_args, tensors((3,)), kwargs=kwargs_ab),
    P(keyword_calls, tensors((3, 4))),
    P(nested_calls, tensors((4,)), grad=True),
    P(helper_in_loop, tensors((4,))),
    P(global_constants, tensors((3,)), torch="torch.jit.script refuses global float values"),
    P(functional_ops, tensors((2, 4), (3, 4), (3,)), grad=True),
    P(functional_layer_norm_dropout, tensors((2, 5))),
    P(inplace_on_clone, tensors((6,))),
    P(inplace_on_input, tensors((4,))),
    P(where_and_clamp, tensors((8,))),
    P(matmul_chain, tensors((2, 3), (3, 4), (4, 2)), grad=True),
    P(slicing, tensors((4, 3))),
    P(creation_ops, tensors((3, 4))),
    P(reductions, tensors((3, 4))),
    P(view_reshape_permute, tensors((2, 3, 4))),
    P(enumerate_list_input, lambda rng, c: ([arr(rng, 2) for _ in range(c + 1)],)),
    P(zip_lists, lambda rng, c: ([arr(rng, 2) for _ in range(3)], [float(v) for v in rng.uniform(-1, 1, c + 1)])),
    P(enumerate_chunks, tensors((3, 4))),
    P(format_shape, tensors((2, 5))),
    P(raise_with_format, lambda rng, c: (arr(rng, 2, 3 + c % 2), 3)),
    P(shape_queries, tensors((2, 3, 4))),
    P(dtype_branch, dtypes_alternating),
    P(dtype_conversions, tensors((4,))),
    P(rank_dispatch, lambda rng, c: (arr(rng, *((3,), (2, 3), (2, 2, 3))[c % 3]),)),
    P(dict_of_tensors, tensors((3,), (3,))),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=program_ids(PROGRAMS))
def test_program(prog):
    check(prog, globals())
