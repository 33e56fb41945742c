"""Scripted programs using Python builtins and less common statements: iteration over a tensor,
filtered comprehensions, no_grad blocks, jit.annotate, list builtins (sum/max/sorted/any/all,
reverse), returned dicts, tuple slicing, keyword-only arguments, calls to already-scripted
functions, str()/format of ints and floats -- each checked by script_harness against ember eager,
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


def iterate_tensor_rows(x):
    acc = lib.zeros(x.size(1))
    for row in x:
        acc = acc + row * row
    return acc


def filtered_comprehension(n: int) -> List[int]:
    return [i * i for i in range(n) if i % 2 == 0]


def no_grad_block(x, w):
    with lib.no_grad():
        scale = (w * 2).sum()
    return x * w + scale


def annotate_empty_list(x) -> List[int]:
    sizes = lib.jit.annotate(List[int], [])
    for d in range(x.dim()):
        sizes.append(x.size(d) * 2)
    return sizes


def list_builtins(vals: List[int]) -> Tuple[int, int, bool, bool]:
    return sum(vals), max(vals), any([v > 3 for v in vals]), all([v > -9 for v in vals])


def list_sorted(vals: List[int]) -> List[int]:
    return sorted(vals)


def list_reverse(vals: List[int]) -> List[int]:
    out = vals[:]
    out.reverse()
    out.append(len(vals))
    return out


def returns_dict(x) -> Dict[str, Tensor]:
    return {"double": x * 2, "neg": -x}


def tuple_slicing(x) -> Tuple[Tensor, Tensor]:
    t = (x, x + 1, x + 2, x + 3)
    u = t[1:3]
    return u[0], t[-1]


def keyword_only(x, *, k: int = 2, bias: float = 0.5):
    return x * k + bias


def str_of_numbers(n: int, f: float) -> str:
    # (no str(float): torch's interpreter prints 0.0 as "0.")
    return str(n) + "/" + str(n * 2) + " {} {}".format(n, n > 2)


def tolist_sum(x) -> float:
    vals: List[float] = x.tolist()
    total = 0.0
    for v in vals:
        total += v
    return total


def scripted_helper(x, n: int):
    for _ in range(n):
        x = x.cos()
    return x


def calls_scripted_helper(x):
    return _SCRIPTED_HELPER(x, 2) + 1


_SCRIPTED_HELPER = lib.jit.script(scripted_helper)


@lib.jit.ignore
def python_only(x) -> float:
    return float(np.abs(x.detach().numpy()).max())


def calls_ignored_function(x):
    m = python_only(x)
    return x / m


def printing(x):
    print("script program printing:", x.sum(), 3)
    return x + 1


def optional_local(xs: List[Tensor]):
    best: Optional[Tensor] = None
    for t in xs:
        if best is None or t.sum() > best.sum():
            best = t
    if best is None:
        return lib.zeros(2)
    return best


def tuple_loop_target(x):
    acc = x
    for a, b in [(1, 2), (3, 4)]:
        acc = acc * a + b
    return acc


def str_methods(s: str) -> Tuple[bool, bool, str]:
    return s.startswith("ab"), "b" in s, s.upper()


def list_index_assign_slice(n: int) -> List[int]:
    v = [0, 1, 2, 3, 4]
    v[n] = 10
    return v[1:-1]


def bitwise_int(a: int, b: int) -> Tuple[int, int, int, int]:
    return a & b, a | b, a ^ b, a << 2


class ZipModuleLists(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
        self.dec = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
        self.scales = (2.0, 0.5)

    def forward(self, x):
        for e, d in zip(self.enc, self.dec):
            x = d(e(x).relu())
        for s in self.scales:
            x = x * s
        return x


PROGRAMS = [
    P(iterate_tensor_rows, tensors((4, 3))),
    P(filtered_comprehension, lambda rng, c: (c + 3,), torch="torch.jit.script: comprehension ifs are not supported"),
    P(no_grad_block, tensors((3,), (3,)), grad=True),
    P(annotate_empty_list, lambda rng, c: (arr(rng, *((2,), (2, 3), (1, 2, 3), (4, 1))[c]),)),
    P(list_builtins, lambda rng, c: ([int(v) for v in rng.integers(-5, 6, c + 1)],)),
    P(list_sorted, lambda rng, c: ([int(v) for v in rng.integers(-5, 6, c + 1)],)),
    P(list_reverse, lambda rng, c: ([int(v) for v in rng.integers(-5, 6, c + 1)],)),
    P(returns_dict, tensors((3,))),
    P(tuple_slicing, tensors((2,))),
    P(keyword_only, tensors((3,)), kwargs=lambda rng, c: {} if c % 2 else {"k": c, "bias": -1.0},
      torch="torch.jit.script: no keyword-only arguments with defaults"),
    P(str_of_numbers, lambda rng, c: (c, 0.25 * c)),
    P(tolist_sum, tensors((5,))),
    P(calls_scripted_helper, tensors((3,))),
    P(printing, tensors((2,))),
    P(calls_ignored_function, tensors((4,)), saveable="it calls an @jit.ignore'd Python function"),
    P(optional_local, lambda rng, c: ([arr(rng, 2) for _ in range(c)],)),
    P(tuple_loop_target, tensors((2,))),
    P(str_methods, lambda rng, c: (("abc", "xbz", "ab", "")[c],)),
    P(list_index_assign_slice, lambda rng, c: (c - 1,)),
    P(bitwise_int, lambda rng, c: (int(rng.integers(0, 64)), int(rng.integers(0, 64)))),
    P(ZipModuleLists, tensors((3, 2)), grad=True),
]


@pytest.mark.parametrize("prog", PROGRAMS, ids=program_ids(PROGRAMS))
def test_program(prog):
    check(prog, globals())
