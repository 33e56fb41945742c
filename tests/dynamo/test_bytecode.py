"""The dynamo bytecode layer: read/assemble round trips, edits, liveness, resume functions.

Oracle: CPython itself. A transformed function must return what the original returns; an
identity transform must reproduce CPython's own bytes; a resume function entered with the
stack and locals the original frame had at an offset must finish with the original's result.
"""
import dis
import sys
import types

import pytest

from ember._dynamo.bytecode_analysis import livevars_analysis, stack_depths, stacksize_analysis
from ember._dynamo.bytecode_transformation import (
    PY311, Instruction, cleaned_instructions, create_call_function, create_dup_top, create_instruction,
    create_jump_absolute, create_load_const, create_load_global, create_rot_n, create_swap, transform_code_object,
    unique_id)
from ember._dynamo.resume_execution import format_bytecode, make_resume_code

# ------------------------------------------------------------------------------------------
# functions under test (module level: their globals are this module's)
# ------------------------------------------------------------------------------------------
GLOBAL_SCALE = 3


def f_arith(a, b):
    x = a / (abs(a) + 1)
    if b < 0:
        b = b * -1
    return x * b


def f_loops(n):
    total = 0
    for i in range(n):
        for j in range(i):
            if j == 2:
                continue
            if i * j > 12:
                break
            total += i * j
    k = 0
    while k < n:
        k += 2
        if k == 7:
            break
    else:
        total += 100
    return total, k


def f_try(x):
    log = []
    try:
        log.append("try")
        if x > 2:
            raise ValueError(x)
        log.append("no-raise")
    except ValueError as e:
        log.append(("caught", e.args))
    except (KeyError, TypeError):
        log.append("other")
    else:
        log.append("else")
    finally:
        log.append("finally")
    try:
        try:
            1 / (x - 3)
        finally:
            log.append("inner-finally")
    except ZeroDivisionError:
        log.append("zero")
    return log


class Recorder:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def __enter__(self):
        self.log.append(("enter", self.name))
        return self

    def __exit__(self, *exc):
        self.log.append(("exit", self.name, exc[0].__name__ if exc[0] else None))
        return self.name == "swallow"


def f_with(x):
    log = []
    with Recorder(log, "a") as r:
        log.append(r.name)
        with Recorder(log, "swallow"):
            if x > 1:
                raise KeyError(x)
            log.append("inside")
    log.append("after")
    return log


def f_comprehensions(n):
    squares = [i * i for i in range(n) if i % 2]
    table = {i: str(i) for i in range(n)}
    unique = {i % 3 for i in range(n)}
    gen_sum = sum(i for i in range(n))
    nested = [[j for j in range(i)] for i in range(4)]
    return squares, table, unique, gen_sum, nested


def f_closure(a):
    count = 0
    scale = GLOBAL_SCALE

    def bump(k):
        nonlocal count
        count += k
        return count * scale

    first = bump(a)
    second = bump(2)
    return first, second, count, (lambda: count + a)()


def make_adder(base):
    offset = base * 2

    def adder(x, y=1, *rest, scale=1, **extra):
        total = (x + y + offset + base + sum(rest)) * scale
        for key in sorted(extra):
            total += extra[key]
        return total
    return adder


def f_generator(n):
    for i in range(n):
        if i % 2:
            yield i
    yield from range(3)
    got = yield "last"
    yield got


def f_strings(name, value):
    return f"{name!r}:{value:>8.3f}|{value!s}|{name.upper():^10}|{{x}}"


def kw_target(a, b=2, *args, c=3, **kwargs):
    return a, b, args, c, sorted(kwargs.items())


def f_calls(x):
    r1 = kw_target(x, c=5)
    r2 = kw_target(x, 1, 2, 3, d=4, e=5)
    args, kwargs = (x, x + 1), {"c": 9, "z": 0}
    r3 = kw_target(*args, **kwargs)
    r4 = dict(a=1, **{"b": x}).items()
    s = "a,b".split(",", maxsplit=1)
    return r1, r2, r3, sorted(r4), s, max(x, 3, key=lambda v: -v)


def f_misc(data):
    a, *rest = data
    b = a if a > 1 else -a
    c = (a and b) or rest
    d = not (a < b <= 5)
    del b
    items = data[1:3] + data[::-1]
    try:
        b
    except UnboundLocalError:
        items.append("unbound")
    assert a is not None, "never"
    x = {**{"k": a}, "j": 2}
    t = (*rest, *items)
    return c, d, items, x, t, a is None, a in rest, a not in rest


def f_match(value):
    match value:
        case [x, y]:
            return ("pair", x, y)
        case {"k": v}:
            return ("dict", v)
        case int() if value > 10:
            return "big"
        case _:
            return "other"


class Base:
    def who(self, x):
        return ("base", x)


class Child(Base):
    factor = 4

    def who(self, x):
        parent = super().who(x)
        return ("child", parent, self.factor * x)


def f_methods(x):
    c = Child()
    return c.who(x), Base.who(c, x), [1, 2, 3].index(2), "abc".upper()


def make_big_function(n_consts=300, n_body=120):
    """Source for a function with > 256 constants/names (EXTENDED_ARG) and long jumps."""
    lines = ["def big(x):", "    total = 0"]
    for i in range(n_consts):
        lines.append(f"    v{i} = {i + 1000} + x")
    lines.append("    if x > 0:")
    for i in range(n_body):
        lines.append(f"        total += v{i} * {i + 5000}")
    lines.append("    for j in range(3):")
    for i in range(n_body):
        lines.append(f"        total -= v{i % 50} + j + {i + 9000}")
    lines.append("    return total, v0, v%d" % (n_consts - 1))
    namespace = {}
    exec(compile("\n".join(lines), "<big>", "exec"), namespace)
    return namespace["big"]


BIG = make_big_function()

CASES = [  # (function, list of argument tuples)
    (f_arith, [(2.0, 3.0), (-1.5, -4.0)]),
    (f_loops, [(0,), (6,), (9,)]),
    (f_try, [(1,), (3,), (5,)]),
    (f_with, [(0,), (2,)]),
    (f_comprehensions, [(6,)]),
    (f_closure, [(3,)]),
    (make_adder(5), [(1,), (1, 2, 3, 4), (2, 2)]),
    (f_strings, [("ab", 3.14159)]),
    (f_calls, [(4,)]),
    (f_misc, [([3, 1, 2],), ([1, 5],)]),
    (f_match, [([1, 2],), ({"k": 4},), (20,), ("s",)]),
    (f_methods, [(3,)]),
    (BIG, [(1,), (-1,)]),
]


def _call(fn, args):
    try:
        result = fn(*args)
        if isinstance(result, types.GeneratorType):
            result = list(result)
        return ("ok", result)
    except Exception as e:          # compare raised exceptions too
        return ("raised", type(e), e.args)


def _rebuild(fn, code, f_globals=None):
    new = types.FunctionType(code, f_globals or fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    return new


def _transform_recursively(code, transform, safe=True):
    """Apply `transform` to `code` and to every code object among its constants."""
    def with_nested(instructions, options):
        for inst in instructions:
            if inst.opname == "LOAD_CONST" and isinstance(inst.argval, types.CodeType):
                inst.argval = _transform_recursively(inst.argval, transform, safe)
        options["co_consts"] = tuple(_transform_recursively(c, transform, safe) if isinstance(c, types.CodeType)
                                     else c for c in options["co_consts"])
        transform(instructions, options)
    return transform_code_object(code, with_nested, safe=safe)


def _identity(instructions, options):
    pass


# ------------------------------------------------------------------------------------------
# round trips
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,arg_sets", CASES + [(f_generator, [(5,)])], ids=lambda v: getattr(v, "__name__", ""))
def test_identity_round_trip_reproduces_cpython_bytes(fn, arg_sets):
    original = fn.__code__
    new = transform_code_object(original, _identity, safe=True)
    assert new.co_code == original.co_code
    assert new.co_exceptiontable == original.co_exceptiontable
    assert list(new.co_positions()) == list(original.co_positions())
    assert new.co_linetable == original.co_linetable
    assert new.co_stacksize == original.co_stacksize
    rebuilt = _rebuild(fn, new)
    for args in arg_sets:
        assert _call(rebuilt, args) == _call(fn, args)


def _insert_nops(instructions, options):
    """A NOP before every instruction: every offset and jump moves; handlers and lines must follow."""
    out, prologue = [], _after_prologue(instructions)
    for index, inst in enumerate(instructions):
        if index >= prologue and not (inst.opname == "CALL" and out[-1].opname == "PRECALL"):
            nop = create_instruction("NOP")   # (3.11's PRECALL must be followed by its CALL)
            nop.exn_tab_entry = inst.exn_tab_entry
            out.append(nop)
        out.append(inst)
    # jumps that landed on `inst` now land after its NOP: same behaviour
    instructions[:] = out


@pytest.mark.parametrize("fn,arg_sets", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_nop_padding_keeps_behaviour_including_nested_code(fn, arg_sets):
    rebuilt = _rebuild(fn, _transform_recursively(fn.__code__, _insert_nops))
    for args in arg_sets:
        assert _call(rebuilt, args) == _call(fn, args)


def test_generator_round_trip_with_send():
    new = _rebuild(f_generator, _transform_recursively(f_generator.__code__, _insert_nops))
    for fn in (f_generator, new):
        g = fn(4)
        seen = [next(g) for _ in range(6)]
        seen.append(g.send("sent"))
        assert seen == [1, 3, 0, 1, 2, "last", "sent"]


def test_traceback_line_numbers_survive_transform():
    def fails(x):
        y = x + 1
        return y / 0
    new = _rebuild(fails, transform_code_object(fails.__code__, _insert_nops))
    for fn in (fails, new):
        with pytest.raises(ZeroDivisionError) as info:
            fn(1)
        assert info.tb.tb_next.tb_lineno == fails.__code__.co_firstlineno + 2


def test_extended_arg_long_backward_jump():
    def loop(n):
        total = 0
        for i in range(n):
            total += i
        return total

    def pad_loop_body(instructions, options):
        store = [i for i in instructions if i.opname == "STORE_FAST" and i.argval == "total"][-1]
        at = instructions.index(store)
        instructions[at:at] = [create_instruction("NOP") for _ in range(700)]
    new_code = transform_code_object(loop.__code__, pad_loop_body, safe=True)
    raw = list(dis.get_instructions(new_code))
    assert any(i.opname == "EXTENDED_ARG" for i in raw)
    assert _rebuild(loop, new_code)(50) == loop(50)


def test_big_function_needs_extended_args():
    assert any(i.opname == "EXTENDED_ARG" for i in dis.get_instructions(BIG.__code__))
    assert len(BIG.__code__.co_consts) > 256
    insts = cleaned_instructions(BIG.__code__)
    assert all(i.opname not in ("EXTENDED_ARG", "CACHE") for i in insts)


# ------------------------------------------------------------------------------------------
# edits
# ------------------------------------------------------------------------------------------
CALLS = []


def record_call(*args):
    CALLS.append(args)


def _after_prologue(instructions):
    return next(i for i, inst in enumerate(instructions) if inst.opname == "RESUME") + 1


@pytest.mark.parametrize("fn,arg_sets", CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_insert_call_at_top(fn, arg_sets):
    def add_call(instructions, options):
        at = _after_prologue(instructions)
        instructions[at:at] = [create_load_global("record_call", push_null=True), create_load_const("top"),
                               create_load_const(fn.__name__), *create_call_function(2, push_null=False),
                               create_instruction("POP_TOP")]
    code = transform_code_object(fn.__code__, add_call, safe=True)
    new = _rebuild(fn, code, globals())
    for args in arg_sets:
        CALLS.clear()
        assert _call(new, args) == _call(fn, args)
        assert CALLS[0] == ("top", fn.__name__)


def test_call_function_pushing_null_after_the_callable():
    # callable and args already on the stack, NULL inserted beneath them afterwards
    def shell():
        return None

    def body(instructions, options):
        at = _after_prologue(instructions)
        instructions[at:] = [create_load_global("kw_target", push_null=False), create_load_const(1),
                             create_load_const(2), *create_call_function(2, push_null=True),
                             create_instruction("RETURN_VALUE")]
    code = transform_code_object(shell.__code__, body, safe=True)
    assert types.FunctionType(code, globals())() == kw_target(1, 2)


def test_stack_helpers_rot_swap_dup():
    def shell():
        return None

    def body(instructions, options):
        at = _after_prologue(instructions)
        instructions[at:] = [create_load_const(c) for c in "abcd"] + create_rot_n(3) + create_swap(4) + [
            create_dup_top(), create_instruction("BUILD_TUPLE", arg=5), create_instruction("RETURN_VALUE")]
    code = transform_code_object(shell.__code__, body)
    # a b c d -> rot3: a d b c -> swap4: c d b a -> dup: c d b a a
    assert types.FunctionType(code, {})() == ("c", "d", "b", "a", "a")


def test_hand_built_loop_with_backward_conditional_jump():
    """POP_JUMP_IF_TRUE backwards: a real opcode on 3.11, rewritten as forward + JUMP_BACKWARD on 3.12."""
    def shell(n):
        return n

    def body(instructions, options):
        at = _after_prologue(instructions)
        head = create_instruction("LOAD_FAST", argval="total")
        instructions[at:] = [
            create_load_const(0), create_instruction("STORE_FAST", argval="total"),
            head, create_instruction("LOAD_FAST", argval="n"), create_instruction("BINARY_OP", arg=0),
            create_instruction("STORE_FAST", argval="total"),
            create_instruction("LOAD_FAST", argval="n"), create_load_const(1), create_instruction("BINARY_OP", arg=10),
            create_instruction("STORE_FAST", argval="n"),
            create_instruction("LOAD_FAST", argval="n"), create_instruction("POP_JUMP_IF_TRUE", target=head),
            create_instruction("LOAD_FAST", argval="total"), create_instruction("RETURN_VALUE")]
    code = transform_code_object(shell.__code__, body, safe=True)
    assert "total" in code.co_varnames and code.co_nlocals == 2
    assert types.FunctionType(code, {})(4) == 4 + 3 + 2 + 1


def test_compare_op_from_argval():
    def shell(a, b):
        return a

    for symbol, expected in (("<", 1 < 2), (">=", 1 >= 2), ("==", False), ("!=", True)):
        def body(instructions, options, symbol=symbol):
            at = _after_prologue(instructions)
            instructions[at:] = [create_instruction("LOAD_FAST", argval="a"), create_instruction("LOAD_FAST", argval="b"),
                                 create_instruction("COMPARE_OP", argval=symbol), create_instruction("RETURN_VALUE")]
        fn = types.FunctionType(transform_code_object(shell.__code__, body), {})
        for _ in range(20):       # past the specialising interpreter's warm-up
            assert fn(1, 2) == expected
            assert fn(1.0, 2.0) == expected


def test_constants_are_told_apart_by_type():
    def shell():
        return None

    def body(instructions, options):
        at = _after_prologue(instructions)
        instructions[at:] = [create_load_const(c) for c in (1, 1.0, True, -0.0, 0.0)] + [
            create_instruction("BUILD_TUPLE", arg=5), create_instruction("RETURN_VALUE")]
    out = types.FunctionType(transform_code_object(shell.__code__, body), {})()
    assert [type(v) for v in out] == [int, float, bool, float, float]
    assert str(out[3]) == "-0.0" and str(out[4]) == "0.0"


def test_create_instruction_errors():
    with pytest.raises(ValueError, match="needs argval"):
        create_instruction("LOAD_FAST")
    with pytest.raises(ValueError, match="needs target"):
        create_instruction("JUMP_FORWARD")
    with pytest.raises(ValueError, match="does not exist"):
        create_instruction("NOT_AN_OPCODE")


def test_unique_id_shares_one_counter():
    a, b = unique_id("__compiled_fn"), unique_id("__resume_at_30")
    assert int(b.rsplit("_", 1)[1]) == int(a.rsplit("_", 1)[1]) + 1


def test_cleaned_instructions_resolve_jumps_and_exception_entries():
    insts = cleaned_instructions(f_try.__code__)
    jumps = [i for i in insts if i.target is not None]
    assert jumps and all(j.target in insts and j.target.is_jump_target for j in jumps)
    covered = [i for i in insts if i.exn_tab_entry is not None]
    assert covered and all(i.exn_tab_entry.target in insts for i in covered)
    assert all(isinstance(i, Instruction) for i in insts)
    assert stacksize_analysis(insts) == f_try.__code__.co_stacksize


# ------------------------------------------------------------------------------------------
# liveness
# ------------------------------------------------------------------------------------------
def _live_at(fn, predicate, **kw):
    insts = cleaned_instructions(fn.__code__)
    inst = next(i for i in insts if predicate(i))
    return livevars_analysis(insts, inst, **kw)


def test_livevars_straight_line_and_branches():
    def f(a, b, c):
        d = a + 1
        if c:
            b = 2
        return b + d
    assert _live_at(f, lambda i: i.opname == "RESUME") == {"a", "b", "c"}
    # after `d = a + 1`: a is dead, b is live (only overwritten on one branch)
    assert _live_at(f, lambda i: i.opname == "LOAD_FAST" and i.argval == "c") == {"b", "c", "d"}
    # inside the `b = 2` branch: b is overwritten before any read
    assert _live_at(f, lambda i: i.opname == "LOAD_CONST" and i.argval == 2) == {"d"}


def test_livevars_loops_handlers_and_cells():
    def loop(xs):
        acc = 0
        for x in xs:
            acc = acc + x
        return acc
    assert _live_at(loop, lambda i: i.opname == "FOR_ITER") == {"acc"}

    def handler(a):
        y = 1
        try:
            y = a()
        except Exception:
            return y
        return 0
    assert _live_at(handler, lambda i: i.opname == "LOAD_FAST" and i.argval == "a") == {"a", "y"}

    def cells(a):
        k = a * 2

        def inner():
            return k + a
        return inner()
    # k and a are cells (read by inner's closure at MAKE_FUNCTION time)
    live = _live_at(cells, lambda i: i.opname == "LOAD_CLOSURE")
    assert live == {"k", "a"}
    # free variables are never reported when named
    inner_code = next(c for c in cells.__code__.co_consts if isinstance(c, types.CodeType))
    insts = cleaned_instructions(inner_code)
    assert livevars_analysis(insts, insts[0], freevars=inner_code.co_freevars) == set()


# ------------------------------------------------------------------------------------------
# resume functions
# ------------------------------------------------------------------------------------------
def _capture_at(fn, offset, nstack):
    """A copy of `fn` that, on reaching `offset`, returns the stack values and locals: stack values go to
    fresh locals (a NULL leaves its local unbound, so locals() tells us where the NULLs were)."""
    marker = "__captured__"

    def instrument(instructions, options):
        target = next(i for i in instructions if i.offset == offset)
        grab = [create_instruction("STORE_FAST", argval=f"__cap{k}") for k in reversed(range(nstack))]
        cells = [create_instruction("LOAD_CLOSURE", argval=c) for c in fn.__code__.co_cellvars]
        grab += [create_load_const(marker), create_load_global("locals", push_null=True),
                 *create_call_function(0, push_null=False), *cells, create_instruction("BUILD_TUPLE", arg=len(cells)),
                 create_instruction("BUILD_TUPLE", arg=3), create_instruction("RETURN_VALUE")]
        for inst in instructions:
            if inst.target is target:
                inst.target = grab[0]
        at = instructions.index(target)
        instructions[at:at] = grab
    return _rebuild(fn, transform_code_object(fn.__code__, instrument))


def _kw_pending(insts, index):
    """True between KW_NAMES and its CALL (3.11/3.12 keep kw names outside the value stack)."""
    for inst in reversed(insts[:index]):
        if inst.opname == "KW_NAMES":
            return True
        if inst.opname == "CALL":
            return False
    return False


def _check_resume_everywhere(fn, args):
    insts = cleaned_instructions(fn.__code__)
    depths = stack_depths(insts)
    expected = _call(fn, args)
    checked = handler_offsets = 0
    first_body = next(i for i, inst in enumerate(insts) if inst.opname == "RESUME") + 1
    for index in range(first_body, len(insts)):
        inst, nstack = insts[index], depths[index]
        # the capture code cannot sit between PRECALL and CALL (3.11) nor before END_FOR (3.12: FOR_ITER skips it)
        if nstack is None or _kw_pending(insts, index) or insts[index - 1].opname == "PRECALL" \
                or inst.opname == "END_FOR":
            continue
        try:                                # handler offsets first: capturing inside one would leak its exc state
            make_resume_code(fn.__code__, inst.offset, nstack, (), "probe")
        except NotImplementedError:
            handler_offsets += 1
            continue
        captured = _call(_capture_at(fn, inst.offset, nstack), args)
        if captured[0] != "ok" or not (isinstance(captured[1], tuple) and captured[1][:1] == ("__captured__",)):
            continue                        # this offset is not reached with these arguments
        frame_locals, frame_cells = captured[1][1], captured[1][2]
        stack = [frame_locals.get(f"__cap{k}") for k in range(nstack)]
        nulls = tuple(k for k in range(nstack) if f"__cap{k}" not in frame_locals)
        if any(isinstance(v, types.CellType) or (isinstance(v, tuple) and any(isinstance(c, types.CellType) for c in v))
               for v in stack):
            continue                        # mid-closure-building (LOAD_CLOSURE): cells are shared by identity
        # cells travel by reference through the closure, so closures made before the offset keep sharing them
        from_closure = fn.__code__.co_freevars + fn.__code__.co_cellvars
        live = sorted(n for n in livevars_analysis(insts, inst, freevars=from_closure) if n in frame_locals)
        name = f"__resume_at_{inst.offset}"
        code = make_resume_code(fn.__code__, inst.offset, nstack, tuple(live), name, null_positions=nulls,
                                cells_as_freevars=True)
        closure = (fn.__closure__ or ()) + frame_cells
        resumed = types.FunctionType(code, fn.__globals__, name, None, closure or None)
        got = _call(resumed, (*stack, *[frame_locals[n] for n in live]))
        assert got == expected, f"{fn.__name__}{args} resumed at {inst.offset} ({inst.opname}, stack {nstack})"
        assert code.co_name == name and code.co_argcount == nstack + len(live)
        checked += 1
    return checked, handler_offsets


def pending_call(x, a):
    return x * (a + helper_value(a)) + kw_target(x, helper_value(x))[1]


def helper_value(v):
    return v + 10


def for_with_values(xs, k):
    out = []
    for i, x in enumerate(xs):
        if x > k:
            out.append(x * (i + helper_value(x)))
        else:
            continue
    return out


RESUME_CASES = [
    (f_arith, (2.0, -3.0)), (f_arith, (2.0, 3.0)), (pending_call, (2, 3)), (for_with_values, ([1, 5, 2, 7], 2)),
    (f_loops, (7,)), (f_try, (1,)), (f_try, (4,)), (f_with, (0,)), (f_with, (3,)), (f_closure, (2,)),
    (make_adder(2), (1, 2, 3, 4)), (f_calls, (3,)), (f_misc, ([3, 1, 2],)), (f_match, ([1, 2],)),
    (f_methods, (2,)), (f_comprehensions, (5,)), (f_strings, ("q", 2.5)),
]


@pytest.mark.parametrize("fn,args", RESUME_CASES, ids=lambda v: getattr(v, "__name__", "args"))
def test_resume_at_every_reached_offset(fn, args):
    checked, _ = _check_resume_everywhere(fn, args)
    assert checked >= 5


def test_resume_passes_cells_by_value_by_default():
    # before `bump` closes over `count`, passing count's value is enough
    insts = cleaned_instructions(f_closure.__code__)
    at = next(i for i in insts if i.opname == "LOAD_GLOBAL" and i.argval == "GLOBAL_SCALE")
    assert livevars_analysis(insts, at) == {"a", "count"}
    code = make_resume_code(f_closure.__code__, at.offset, 0, ("a", "count"), "__resume_cells")
    assert code.co_cellvars == f_closure.__code__.co_cellvars and code.co_freevars == ()
    assert types.FunctionType(code, globals())(3, 0) == f_closure(3)


def test_resume_with_values_on_the_stack():
    # inside `x * (a + helper_value(a))`: after the call the stack holds x, a and the call's result
    insts = cleaned_instructions(pending_call.__code__)
    depths = stack_depths(insts)
    after_call = [insts[i + 1] for i, inst in enumerate(insts) if inst.opname == "CALL"]
    first = after_call[0]
    assert depths[insts.index(first)] == 3
    code = make_resume_code(pending_call.__code__, first.offset, 3, ("x",), "__resume_stack")
    resumed = types.FunctionType(code, globals())
    assert resumed(2, 3, 100, 2) == 2 * (3 + 100) + kw_target(2, helper_value(2))[1]


def test_resume_pushes_null_for_a_pending_call():
    # kw_target(x, helper_value(x)): after helper_value returns, NULL and kw_target wait below
    insts = cleaned_instructions(pending_call.__code__)
    depths = stack_depths(insts)
    calls = [i for i, inst in enumerate(insts) if inst.opname == "CALL"]
    resume_index = calls[1] + 1
    nstack = depths[resume_index]
    # 3.11/3.12: [partial sum, NULL, kw_target, x, helper(x)]; 3.13: the NULL comes after the callable
    assert nstack == 5
    null_at = 2 if sys.version_info >= (3, 13) else 1
    values = [1, kw_target, 5, 7]
    values.insert(null_at, None)
    code = make_resume_code(pending_call.__code__, insts[resume_index].offset, nstack, (), "__resume_null",
                            null_positions=(null_at,))
    assert types.FunctionType(code, globals())(*values) == 1 + kw_target(5, 7)[1]


def test_resume_for_loop_with_iterator_on_stack():
    insts = cleaned_instructions(for_with_values.__code__)
    for_iter = next(i for i in insts if i.opname == "FOR_ITER")
    code = make_resume_code(for_with_values.__code__, for_iter.offset, 1, ("k", "out"), "__resume_loop")
    it = enumerate([9, 1, 4])
    next(it)                                 # the first element was already handled
    out = types.FunctionType(code, globals())(it, 2, ["seen"])
    assert out == ["seen", 4 * (2 + helper_value(4))]


def test_resume_inside_exception_handler_is_not_supported():
    insts = cleaned_instructions(f_try.__code__)
    handler = next(i for i in insts if i.opname == "PUSH_EXC_INFO")
    depth = stack_depths(insts)[insts.index(handler)]
    with pytest.raises(NotImplementedError, match="exception handler"):
        make_resume_code(f_try.__code__, handler.offset, depth, (), "__resume_bad")


def test_resume_argument_errors():
    with pytest.raises(ValueError, match="not an instruction"):
        make_resume_code(f_arith.__code__, 1, 0, (), "r")
    with pytest.raises(ValueError, match="values on the stack"):
        make_resume_code(f_arith.__code__, cleaned_instructions(f_arith.__code__)[-1].offset, 0, (), "r")
    closure_fn = make_adder(1)
    with pytest.raises(ValueError, match="free variables"):
        make_resume_code(closure_fn.__code__, 0, 0, ("offset",), "r")


def test_resume_generator_continues_as_a_generator():
    insts = cleaned_instructions(f_generator.__code__)
    yield_from = [i for i in insts if i.opname == "LOAD_GLOBAL" and i.argval == "range"][-1]
    code = make_resume_code(f_generator.__code__, yield_from.offset, 0, (), "__resume_gen")
    gen = types.FunctionType(code, globals())()
    assert [next(gen) for _ in range(4)] == [0, 1, 2, "last"]


def test_format_bytecode_headers():
    text = format_bytecode("ORIGINAL BYTECODE", f_arith.__code__)
    first, rest = text.split("\n", 1)
    assert first == f"ORIGINAL BYTECODE f_arith {f_arith.__code__.co_filename} line {f_arith.__code__.co_firstlineno} "
    assert rest == dis.Bytecode(f_arith.__code__).dis() + "\n"
    offset = next(i.offset for i in cleaned_instructions(f_arith.__code__) if i.opname == "STORE_FAST")
    resumed = make_resume_code(f_arith.__code__, offset, 1, ("b",), "__resume_at_x_1")
    modified = format_bytecode("MODIFIED BYTECODE", resumed)
    assert modified.startswith("MODIFIED BYTECODE __resume_at_x_1 ")
    assert "JUMP_FORWARD" in modified
