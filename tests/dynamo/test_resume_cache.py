"""Resume functions shared per (code, offset), and graph breaks inside functions made in the frame.

Programs run under torch.compile and ember.compile (dynamo_harness): values against eager, frame
and op counts against torch 2.13. The closure programs guard against stale results: the function
made in the frame is a new object with new cells on every call, while the compiled entries are
shared per code object."""
import types

import numpy as np
import pytest

import ember
from ember._dynamo.bytecode_transformation import cleaned_instructions
from ember._dynamo.resume_execution import ResumeCodeCache

from dynamo_harness import check_program, rand, tensors


def _looped(x):
    while x.sum() < 20:
        x = x * 2
    return x


def _offsets(code, opname):
    return [i.offset for i in cleaned_instructions(code) if i.opname == opname]


def test_resume_code_is_shared_per_code_offset_and_layout():
    offset = _offsets(_looped.__code__, "LOAD_FAST")[-1]
    first = ResumeCodeCache.lookup(_looped.__code__, offset, 0, ("x",))
    assert ResumeCodeCache.lookup(_looped.__code__, offset, 0, ("x",)) is first
    assert ResumeCodeCache.lookup(_looped.__code__, offset, 0, ()) is not first
    assert ResumeCodeCache.original(first) is _looped.__code__
    assert types.FunctionType(first, {})(ember.ones(2)).tolist() == [1.0, 1.0]


def test_resume_inside_a_resume_function_maps_back_to_the_original_code():
    loads = _offsets(_looped.__code__, "LOAD_FAST")
    body, ret = loads[0], loads[-1]
    outer = ResumeCodeCache.lookup(_looped.__code__, body, 0, ("x",))
    # the same instruction inside `outer` has another offset; asking there gives the original's code
    inner_ret = [i.offset for i in cleaned_instructions(outer) if i.opname == "LOAD_FAST"][-1]
    assert ResumeCodeCache.lookup(outer, inner_ret, 0, ("x",)) is \
        ResumeCodeCache.lookup(_looped.__code__, ret, 0, ("x",))


def closure_break(lib, a, w):
    def level1(t):
        y = t * w
        print("level1")
        return y + w
    return level1(a)


def helper_in_closure(lib, a, w):
    def h(t):
        if t.sum() > 0:
            return t * w
        return t - w

    def level1(t):
        return h(t + 1) * 2
    return level1(a) + w


def nested_with_default(lib, a, b):
    c = b * 2

    def inner(t, k=c):
        u = t + k
        print("inner")
        return u * 2
    return inner(a) - 1


def nested_called_twice(lib, a, b):
    def inner(t):
        print("inner")
        return t * 2
    x = inner(a)
    return inner(x) + b


def pending_call_at_branch(lib, a, b):
    return lib.relu(a if a.sum() > 0 else -b) + 1


def lambda_break(lib, a, b):
    f = lambda t: print("lambda") or t * 3  # noqa: E731
    return f(a) + b


def closure_over_graph_tensor(lib, a, b):
    w = a.cos() + b

    def inner(t):
        print("inner")
        return t * w
    return inner(a) + w


def nonlocal_write_in_callee(lib, a, b):
    n = a + b

    def inner():
        nonlocal n
        n = n * 2
        print("inner")
        return n
    return inner() + n


PROGRAMS = [
    pytest.param(closure_break, {}, id="closure_break"),
    pytest.param(helper_in_closure, {}, id="helper_in_closure"),
    pytest.param(nested_with_default, {}, id="nested_with_default"),
    pytest.param(nested_called_twice, {}, id="nested_called_twice"),
    pytest.param(pending_call_at_branch, {}, id="pending_call_at_branch"),
    pytest.param(lambda_break, {}, id="lambda_break"),
    pytest.param(closure_over_graph_tensor, {}, id="closure_over_graph_tensor"),
    # torch also captures the callee's `n = n * 2` (a nonlocal write in a compiled frame); ember runs
    # that callee eagerly, so only values are compared
    pytest.param(nonlocal_write_in_callee, {"counts": False}, id="nonlocal_write_in_callee"),
]


@pytest.mark.parametrize("prog,options", PROGRAMS)
def test_break_inside_function_made_in_frame(prog, options):
    check_program(prog, tensors((3,), (3,)), calls=4, **options)


def _make_scaler(w):
    def scale(t):
        print("scale")
        return t * w
    return scale


def _make_scaler_with_default(w):
    def scale(t, k=2.0):
        print("scale")
        return t * w * k
    return scale


@pytest.mark.parametrize("factory", [_make_scaler, _make_scaler_with_default])
def test_function_argument_of_same_code_other_closure_is_not_stale(factory):
    """A nested function passed in is guarded on its code (torch's CLOSURE_MATCH), not its identity:
    other function objects of that code reuse the entries, reading their own cells."""
    def prog(a, fn):
        return fn(a) + 1
    rng = np.random.default_rng(0)
    compiled = ember.compile(prog, backend="eager")
    for _ in range(3):
        a, w = rand(ember, rng, 3), rand(ember, rng, 3)
        fn = factory(w)
        np.testing.assert_allclose(compiled(a, fn).numpy(), prog(a, fn).numpy(), rtol=1e-6)


def _make_doubler():
    def double(t):
        return t * 2
    return double


def _make_user(helper):
    def user(a, other):
        return helper(a) + (1 if helper is other else 0)
    return user


def test_closure_function_guarded_on_code_until_its_identity_is_used():
    """`helper` (read from a closure cell) is guarded on its code; `helper is other` makes the
    guard exact, so another closure holding another function of that code recompiles."""
    h1, h2 = _make_doubler(), _make_doubler()
    u1 = ember.compile(_make_user(h1), backend="eager")
    u2 = ember.compile(_make_user(h2), backend="eager")
    a = rand(ember, np.random.default_rng(0), 3)
    for compiled, plain, other in ((u1, _make_user(h1), h1), (u2, _make_user(h2), h1), (u2, _make_user(h2), h2)):
        np.testing.assert_allclose(compiled(a, other).numpy(), plain(a, other).numpy())
