"""ember.jit.script frontend, part 3: containers, constants, Scalars, raise inside loops, and
functions that need no tensor library compared directly with torch.jit.script (result and the
schema's types)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest
import torch

import ember
from ember.jit.frontend import FrontendError
from ember.jit.ir import prim, walk
from ember.jit.ir.types import NumberType, OptionalType, TensorType

RNG = np.random.default_rng(1)
SCALE = 3


def rand(*shape):
    return ember.tensor(RNG.standard_normal(shape).astype(np.float32))


def close(a, b):
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)


def count(sf, target):
    return sum(1 for n in walk(sf._graph_uninlined) if n.target is target)


# --- pure-Python-number functions: the same source runs under torch.jit.script ------------------
def py_loops(n: int, xs: List[int]) -> int:
    acc = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        acc += i
        if acc > 40:
            break
    j = 0
    while j < len(xs):
        acc = acc * 2 - xs[j]
        j += 1
    return acc


def py_pairs(pairs: List[Tuple[int, int]], scale: float):
    s = 0.0
    for a, b in pairs:
        s += a * b * scale
    return s, len(pairs)


def py_dict(d: Dict[str, int]):
    total = 0
    for k, v in d.items():
        total += v * len(k)
    keys = list(d.keys())
    return total, keys, "a" in d


def py_optional(a: Optional[int], b: int = 2):
    if a is None:
        return b
    return a * b


def py_strings(name: str, n: int):
    parts = [name + str(i) for i in range(n)]
    return parts, name.upper(), f"{name}-{n}"


def py_early(n: int):
    for i in range(n):
        if i * i > n:
            return i
    return -1


def py_comprehension(xs: List[int]):
    ys = [x * 2 for x in xs]
    zs = [float(x) / 2 for x in ys]
    return ys, zs, sum(ys), max(xs), min(xs)


CASES = [
    (py_loops, [(10, [1, 2, 3]), (0, []), (30, [5])]),
    (py_pairs, [([(1, 2), (3, 4)], 0.5), ([], 2.0)]),
    (py_dict, [({"ab": 1, "c": 2},), ({},)]),
    (py_optional, [(None,), (3,), (3, 5)]),
    (py_strings, [("x", 3), ("", 0)]),
    (py_early, [(0,), (5,), (50,)]),
    (py_comprehension, [([1, 2, 3],), ([0, 5],)]),
]


@pytest.mark.parametrize("fn,inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_number_programs_match_torch_jit_script(fn, inputs):
    ours = ember.jit.script(fn)
    theirs = torch.jit.script(fn)
    for args in inputs:
        assert ours(*args) == theirs(*args) == fn(*args)
    # the return types agree with TorchScript's schema
    assert str(theirs.schema).split("->")[1].strip().replace("number", "Scalar") == \
        _torch_style(ours.schema.return_type)


def _torch_style(t) -> str:
    text = str(t)
    return f"({text})" if text.startswith("(") else text   # torch prints a tuple return as ((a, b))


# --- tensors ------------------------------------------------------------------------------
def constants_and_dtypes(x):
    y = ember.zeros(3, dtype=ember.float32)
    if x.dtype == ember.float32:
        y = y + 1
    return x * SCALE + y, x.ndim


def test_globals_dtypes_and_attributes():
    sf = ember.jit.script(constants_and_dtypes)
    x = rand(3)
    a, b = sf(x)
    ea, eb = constants_and_dtypes(x)
    close(a, ea) and None
    assert b == eb
    consts = [n.args[0] for n in walk(sf._graph_uninlined) if n.target is prim.Constant]
    assert SCALE in consts and ember.float32 in consts


def item_scalar(x):
    v = x.sum().item()
    if v > 0.0:
        return v * 2
    return -1.0


def test_item_is_a_scalar():
    sf = ember.jit.script(item_scalar)
    assert sf.schema.return_type == NumberType()
    for s in (1.0, -1.0):
        x = ember.ones(2) * s
        assert sf(x) == pytest.approx(item_scalar(x))


def raise_in_loop(xs: List[ember.Tensor], limit: float):
    for i in range(len(xs)):
        if xs[i].abs().max() > limit:
            raise ValueError("element too large")
    return ember.cat(xs, 0)


def test_raise_inside_loop():
    sf = ember.jit.script(raise_in_loop)
    xs = [rand(2), rand(2)]
    close(sf(xs, 100.0), raise_in_loop(xs, 100.0))
    with pytest.raises(ValueError, match="element too large"):
        sf(xs, 0.0)
    assert count(sf, prim.RaiseException) == 1 and count(sf, prim.Loop) == 1


def while_return(x, n: int):
    i = 0
    while True:
        i += 1
        if i > n:
            return x * i
    return x


def test_return_from_while_true():
    sf = ember.jit.script(while_return)
    for n in (0, 4):
        close(sf(ember.ones(2), n), while_return(ember.ones(2), n))


def rnn_like(x, h: Optional[ember.Tensor] = None, steps: int = 3):
    if h is None:
        h = ember.zeros_like(x)
    for _ in range(steps):
        h = ember.tanh(x + h * 0.5)
    return h


def test_optional_state_initialised_then_looped():
    sf = ember.jit.script(rnn_like)
    x, h = rand(4), rand(4)
    close(sf(x), rnn_like(x))
    close(sf(x, h, 5), rnn_like(x, h, 5))
    assert sf.schema.arguments[1].type == OptionalType(TensorType())


def factorial(n: int) -> int:
    r = 1
    for i in range(1, n + 1):
        r *= i
    return r


def scaled_by_factorial(x, n: int):
    return x * factorial(n)


def test_helper_with_return_annotation():
    sf = ember.jit.script(scaled_by_factorial)
    close(sf(ember.ones(2), 4), scaled_by_factorial(ember.ones(2), 4))
    assert ember.jit.script(factorial).schema.return_type == ember.jit.ir.types.IntType()


def print_and_misc(x):
    print("sum is", x.sum())
    y = x
    del y
    return isinstance(x, ember.Tensor), x.shape[0], x.ndim, x.requires_grad


def test_print_del_isinstance_and_tensor_attributes(capsys):
    sf = ember.jit.script(print_and_misc)
    assert sf(ember.ones(2)) == print_and_misc(ember.ones(2))
    assert "sum is" in capsys.readouterr().out
    assert count(sf, prim.Print) == 1


def recursive(n: int) -> int:
    if n <= 1:
        return 1
    return n * recursive(n - 1)


def test_recursion_is_a_compile_error():
    with pytest.raises(FrontendError, match="recursive"):
        ember.jit.script(recursive)


def loop_local(x, n: int):
    for i in range(n):
        z = x * i
    return z  # noqa: F821


def test_loop_local_variable_used_after_loop():
    with pytest.raises(FrontendError, match="defined only inside the loop body"):
        ember.jit.script(loop_local)


def list_ops(x):
    a = [1, 2, 3]
    b = a + [4]
    c = a[1:]
    t = (1, 2.0, "s")
    return b, c, t[1:], t[-1], a.pop(), len(t), x


def test_list_and_tuple_ops():
    sf = ember.jit.script(list_ops)
    x = ember.ones(1)
    ours, eager = sf(x), list_ops(x)
    assert ours[:-1] == eager[:-1]


def always_raises(x) -> ember.Tensor:
    raise RuntimeError("not implemented for " + str(x.dim()))


def test_function_that_always_raises():
    sf = ember.jit.script(always_raises)
    assert sf.schema.return_type == TensorType()
    with pytest.raises(RuntimeError, match="not implemented for 1"):
        sf(ember.ones(2))


def tolist_and_sorted(x, vals: List[int]):
    xs: List[float] = x.tolist()
    total = 0.0
    for v in xs:
        total += v
    return total, sorted(vals)


def test_tolist_with_annotation_and_sorted():
    sf = ember.jit.script(tolist_and_sorted)
    x = rand(4)
    t, s = sf(x, [3, 1, 2])
    et, es = tolist_and_sorted(x, [3, 1, 2])
    assert t == pytest.approx(et, rel=1e-5) and s == es


def aliased_refinement(x, y: Optional[ember.Tensor]):
    z = y
    if z is not None:
        return x + z
    return x


def test_refinement_applies_to_the_tested_name():
    sf = ember.jit.script(aliased_refinement)
    close(sf(ember.ones(2), ember.ones(2)), ember.ones(2) * 2)
    close(sf(ember.ones(2), None), ember.ones(2))


def named_tuple_fields(x):
    top = x.max(dim=1)
    s = ember.sort(x, 1)
    return top.values + s.values[:, 0], top.indices


def test_values_and_indices_of_reductions():
    sf = ember.jit.script(named_tuple_fields)
    x = rand(3, 4)
    a, b = sf(x)
    ea, eb = named_tuple_fields(x)
    close(a, ea)
    assert b.tolist() == eb.tolist()


def test_every_graph_here_is_well_formed_and_typed():
    import inspect
    import sys
    from ember.jit.frontend.builtins import BottomType
    module = sys.modules[__name__]
    checked = 0
    for name, fn in vars(module).items():
        if not inspect.isfunction(fn) or fn.__module__ != __name__ or name.startswith(("test_", "_")) \
                or name in ("rand", "close", "count", "recursive", "loop_local"):
            continue
        sf = ember.jit.script(fn)
        sf._graph_uninlined.lint()
        for node in walk(sf._graph_uninlined):
            if node.op != "output":
                assert node.type is not None and not isinstance(node.type, BottomType), (name, node)
        checked += 1
    assert checked >= 15
