"""Guards: sources print as torch prints them, the generated check accepts exactly what it should,
and the recompile reasons read as torch 2.13's (torch._dynamo.utils.guard_failures is the oracle)."""
import numpy as np
import pytest
import torch
import torch._dynamo.testing  # noqa: F401 (not imported by torch itself)
from torch._dynamo.utils import guard_failures as torch_guard_failures

import ember
from ember._dynamo import eval_frame
from ember._dynamo.guards import GuardKind, build_check_fn, format_guards, install_guard
from ember._dynamo.source import AttrSource, ClosureCellSource, GetItemSource, GlobalSource, LocalSource
from ember._dynamo.testing import CompileCounter


def test_source_names_match_torch_guard_printout():
    assert LocalSource("a").name() == "L['a']"
    assert GlobalSource("torch").name() == "G['torch']"
    assert AttrSource(LocalSource("self"), "training").name() == "L['self'].training"
    assert GetItemSource(LocalSource("xs"), 0).name() == "L['xs'][0]"
    assert GetItemSource(LocalSource("d"), "k").name() == "L['d']['k']"
    assert ClosureCellSource("k", 0).name() == "L['k']"
    # recompile reasons use torch 2.13's short names: locals bare, globals as G[...]
    assert AttrSource(LocalSource("m"), "training").short_name() == "m.training"
    assert GetItemSource(GlobalSource("cfg"), "k").short_name() == "G['cfg']['k']"


def _check_for(fn, guards):
    return build_check_fn(guards, fn.__code__, fn.__globals__, fn.__closure__,
                          defaults=fn.__defaults__, kwdefaults=fn.__kwdefaults__)


def _toy(a, b):
    return a / (ember.abs(a) + 1) * b


def test_tensor_match_accepts_same_metadata_rejects_each_change():
    a, b = ember.randn(10), ember.randn(10)
    gs = set()
    install_guard(gs, LocalSource("a"), GuardKind.TENSOR_MATCH, a)
    install_guard(gs, LocalSource("b"), "TENSOR_MATCH", b)
    check = _check_for(_toy, gs)
    assert check(ember.randn(10), ember.randn(10))            # new values, same metadata
    assert check.failure_reason(ember.randn(10), ember.randn(10)) is None
    changed = {
        "size": ember.randn(11), "dtype": ember.randn(10, dtype=ember.float64), "rank": ember.randn(1, 10),
        "requires_grad": ember.randn(10).requires_grad_(), "stride": ember.randn(20)[::2],
        "device": ember.empty(10, device="meta"), "class": ember.nn.Parameter(ember.randn(10)),
        "not a tensor": np.zeros(10, dtype=np.float32),
    }
    for what, value in changed.items():
        assert not check(value, b), what
        assert check.failure_reason(value, b) is not None, what
    with ember.no_grad():
        assert not check(a, b)
        assert check.failure_reason(a, b) == "GLOBAL_STATE changed: grad_mode "
    assert not check(a, a)            # captured as two tensors: aliasing them is another program
    assert "Duplicate tensors" in check.failure_reason(a, a)


def test_check_function_is_one_printable_function_with_the_signature():
    def f(a, n=2, *rest, k=1, **kw):
        return a * n
    a = ember.randn(3)
    gs = set()
    install_guard(gs, LocalSource("a"), GuardKind.TENSOR_MATCH, a)
    install_guard(gs, LocalSource("n"), GuardKind.CONSTANT_MATCH, 2)
    install_guard(gs, LocalSource("k"), GuardKind.CONSTANT_MATCH, 1)
    install_guard(gs, GlobalSource("ember"), GuardKind.FUNCTION_MATCH, ember)
    check = _check_for(f, gs)
    assert check.source.startswith("def ___check(a, n=___d[0], *rest, k=___kd['k'], **kw):")
    assert len(check.code_parts) == len(check.guards) == 5     # + the dispatch-state check
    assert check(a) and check(a, 2, 7, 8, k=1, z=3)
    assert not check(a, 3) and check.failure_reason(a, 3) == "n == 2"
    assert not check(a, 2.0)                     # 2.0 == 2 but is another constant
    assert not check(a, k=True)                  # True == 1 too
    assert check.failure_reason(a, k=5) == "k == 1"


def test_containers_identity_and_module_guards():
    def f(xs, d, fn, m):
        return xs
    m = ember.nn.Linear(2, 2)
    gs = set()
    install_guard(gs, LocalSource("xs"), GuardKind.TYPE_MATCH, [1, 2])
    install_guard(gs, LocalSource("xs"), GuardKind.LENGTH_CHECK, [1, 2])
    install_guard(gs, LocalSource("d"), GuardKind.DICT_KEYS, {"k": 1})
    install_guard(gs, LocalSource("fn"), GuardKind.ID_MATCH, ember.sin)
    install_guard(gs, LocalSource("m"), GuardKind.NN_MODULE, m)
    check = _check_for(f, gs)
    assert check([3, 4], {"k": 9}, ember.sin, m)
    assert check.failure_reason([3, 4, 5], {"k": 9}, ember.sin, m) == "len(xs) == 2"
    assert check.failure_reason((3, 4), {"k": 9}, ember.sin, m).startswith("___check_type_id(xs, ")
    assert check.failure_reason([3, 4], {"k": 9, "j": 1}, ember.sin, m) == "list(d.keys()) == ['k']"
    assert check.failure_reason([3, 4], {"k": 9}, ember.cos, m).startswith("___check_obj_id(fn, ")
    assert check.failure_reason([3, 4], {"k": 9}, ember.sin, ember.nn.Linear(2, 2)).startswith("___check_obj_id(m, ")
    m.eval()
    assert check.failure_reason([3, 4], {"k": 9}, ember.sin, m) == "m.training == True"


def test_closure_cells_are_read_from_the_calling_function():
    def make(k):
        def inner(a):
            return a + k
        return inner
    f3, f4 = make(3), make(4)
    gs = set()
    install_guard(gs, ClosureCellSource("k", 0), GuardKind.CONSTANT_MATCH, 3)
    check = _check_for(f3, gs)
    assert check(1) and not check(1, ___closure=f4.__closure__)
    assert check.failure_reason(1, ___closure=f4.__closure__) == "k == 3"


def test_format_guards_is_seed_003_block():
    a, b = ember.randn(10), ember.randn(10)
    gs = set()
    install_guard(gs, GlobalSource("torch"), GuardKind.FUNCTION_MATCH, ember)
    install_guard(gs, LocalSource("b"), GuardKind.TENSOR_MATCH, b)
    install_guard(gs, LocalSource("a"), GuardKind.TENSOR_MATCH, a)
    assert format_guards(gs) == ("GUARDS:\n - local 'a' TENSOR_MATCH\n - local 'b' TENSOR_MATCH\n"
                                 " - global 'torch' FUNCTION_MATCH")


# ------------------------------------------------------------------------------------------------
# recompile reasons: the same program, compiled by both, changed in one way

K = 3


def prog_scalar(lib, a, x):
    return a + x + K


def prog_list(lib, a, xs):
    return a + xs[0] + len(xs)


def prog_module(lib, m, a):
    return a + m.weight.sum() * m.training


def _first_reason(lib, prog, first_args, second_args, before_second=None):
    counter = lib._dynamo.testing.CompileCounter()
    failures = torch_guard_failures if lib is torch else eval_frame.guard_failures
    failures.clear()
    kwargs = {"dynamic": False} if lib is torch else {}
    compiled = lib.compile(prog, backend=counter, **kwargs)
    compiled(lib, *first_args(lib))
    args = second_args(lib)
    if before_second:
        before_second(lib, args)
    compiled(lib, *args)
    assert counter.frame_count == 2, "the change must recompile"
    reasons = failures[prog.__code__]
    return reasons[0].split("  #")[0].rstrip()


def _t(lib, *shape, dtype="float32", grad=False):
    return lib.from_numpy(np.ones(shape, dtype=dtype)).requires_grad_(grad)


CASES = {
    "size": (prog_scalar, lambda lib: (_t(lib, 10), 3), lambda lib: (_t(lib, 11), 3)),
    "dtype": (prog_scalar, lambda lib: (_t(lib, 10), 3), lambda lib: (_t(lib, 10, dtype="float64"), 3)),
    "rank": (prog_scalar, lambda lib: (_t(lib, 10), 3), lambda lib: (_t(lib, 1, 10), 3)),
    "requires_grad": (prog_scalar, lambda lib: (_t(lib, 10), 3), lambda lib: (_t(lib, 10, grad=True), 3)),
    "stride": (prog_scalar, lambda lib: (_t(lib, 4, 4), 3), lambda lib: (_t(lib, 4, 4).t(), 3)),
    "int": (prog_scalar, lambda lib: (_t(lib, 10), 3), lambda lib: (_t(lib, 10), 4)),
    "length": (prog_list, lambda lib: (_t(lib, 3), [_t(lib, 3), 1]), lambda lib: (_t(lib, 3), [_t(lib, 3), 1, 2])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_recompile_reason_matches_torch(case):
    prog, first, second = CASES[case]
    expected = _first_reason(torch, prog, first, second)
    got = _first_reason(ember, prog, first, second)
    assert got == f"0/0: {expected.split(': ', 1)[1]}" or got.split(": ", 1)[1] == expected.split(": ", 1)[1]


def test_recompile_reason_global_matches_torch():
    def change(lib, args):
        globals()["K"] = 5
    try:
        reasons = []
        for lib in (torch, ember):
            globals()["K"] = 3
            reasons.append(_first_reason(lib, prog_scalar, lambda l: (_t(l, 10), 3), lambda l: (_t(l, 10), 3),
                                         before_second=change).split(": ", 1)[1])
        assert reasons[1] == reasons[0] == "G['K'] == 3"
    finally:
        globals()["K"] = 3


def test_recompile_reason_module_training_matches_torch():
    reasons = []
    for lib in (torch, ember):
        m = lib.nn.Linear(2, 2)
        reasons.append(_first_reason(lib, prog_module, lambda l: (m, _t(l, 2)), lambda l: (m, _t(l, 2)),
                                     before_second=lambda l, args: args[0].eval()).split(": ", 1)[1])
    assert reasons[1] == reasons[0]


def test_recompile_reason_grad_mode_matches_torch():
    reasons = []
    for lib in (torch, ember):
        counter = lib._dynamo.testing.CompileCounter()
        failures = torch_guard_failures if lib is torch else eval_frame.guard_failures
        failures.clear()
        compiled = lib.compile(prog_scalar, backend=counter)
        compiled(lib, _t(lib, 3), 1)
        with lib.no_grad():
            compiled(lib, _t(lib, 3), 1)
        assert counter.frame_count == 2
        reasons.append(failures[prog_scalar.__code__][0].split(": ", 1)[1])
    assert reasons[1] == reasons[0]


def test_nothing_stale_is_served_after_in_place_metadata_change():
    cnt = CompileCounter()
    f = ember.compile(lambda a: a * 2, backend=cnt)
    a = ember.randn(4)
    f(a)
    a.requires_grad_()
    out = f(a)
    assert out.requires_grad and cnt.frame_count == 2
