"""Guards: the conditions under which a compiled frame may be reused (interfaces D2, seed 003).

The translator records guards while it reads values from the frame::

    guards = set()
    install_guard(guards, LocalSource("a"), GuardKind.TENSOR_MATCH, a)    # expectation taken from `a` now
    install_guard(guards, GlobalSource("torch"), GuardKind.FUNCTION_MATCH, torch)
    check = build_check_fn(guards, fn.__code__, fn.__globals__, fn.__closure__, defaults=fn.__defaults__)
    check(a, b)                  # True while the guards hold; one generated Python function
    print(check.source)          # its text (one line per guard in check.code_parts)
    check.failure_reason(a2, b)  # "tensor 'a' size mismatch at index 0. expected 10, actual 11"
    print(format_guards(guards)) # seed 003's GUARDS: block

Each kind is one row of ``GUARD_KINDS``: how to take the expectation from the value, the Python
expression that checks it (`x` stands for the value's expression), and the text PyTorch 2.13 prints
when it fails. Recompile reasons name locals bare (``x == 3``, ``tensor 'a' ...``) and globals as
``G['K']``, as torch 2.13 does.
"""
from __future__ import annotations

import dataclasses
import enum
import math
import types

from .._core.dispatch import AUTOGRAD_BIT, BACKEND_MASK, keys_of, tls
from .._core.dtype import _default as _default_dtype_box, ALL_DTYPES as _ALL_DTYPES
from .._core.dtype import get_default_dtype
from .._core.tensor_spec import spec_of, spec_strides
from .source import (KEYS, ClosureCellSource, GlobalShadowsBuiltinSource, GlobalSource, GlobalStateSource,
                     ModuleGlobalSource, Source, source_sort_key)


class GuardKind(enum.Enum):
    TENSOR_MATCH = "TENSOR_MATCH"
    TYPE_MATCH = "TYPE_MATCH"
    ID_MATCH = "ID_MATCH"
    EQUALS_MATCH = "EQUALS_MATCH"
    CONSTANT_MATCH = "CONSTANT_MATCH"
    FUNCTION_MATCH = "FUNCTION_MATCH"
    LENGTH_CHECK = "LENGTH_CHECK"
    DICT_KEYS = "DICT_KEYS"
    NN_MODULE = "NN_MODULE"
    GRAD_MODE = "GRAD_MODE"
    DISPATCH_TLS = "DISPATCH_TLS"                # the thread's include/exclude key sets (added with tensors)
    OBJECT_ALIASING = "OBJECT_ALIASING"          # expected: another Source holding the same object
    NO_TENSOR_ALIASING = "NO_TENSOR_ALIASING"    # expected: tuple of Sources holding distinct tensors

    def __str__(self):
        return self.value


@dataclasses.dataclass(frozen=True)
class Guard:
    """One condition: `kind` of the value at `source`. `expected` is not part of equality, so a
    set keeps one guard per (source, kind)."""
    source: Source | None
    kind: GuardKind
    expected: object = dataclasses.field(default=None, compare=False)

    def name(self) -> str:
        return self.source.name() if self.source is not None else ""


@dataclasses.dataclass(frozen=True)
class TensorExpectation:
    """What TENSOR_MATCH remembers of a tensor: what it looked like (`spec`, ember._core.tensor_spec's
    record, shared with the jit plan key) and the thread's dispatch state at capture."""
    spec: tuple               # (class, keys, NumPy dtype, shape, byte strides): compared whole
    tls_include: int
    tls_exclude: int
    captured_id: int          # id() of the tensor at capture: aliasing between guarded tensors


# ------------------------------------------------------------------------------------------------
# Capture: the expectation recorded for each kind

def _capture_tensor(value):
    return TensorExpectation(spec_of(value), tls.include, tls.exclude, id(value))


def _capture_training(value):
    # hooks and an instance-level forward change what calling the module runs: pinned too
    return (value, bool(value.training), bool(value._forward_hooks or value._forward_pre_hooks),
            "forward" in value.__dict__)


def install_guard(guards: set, source, kind, value) -> None:
    """Record `kind` on `source`, taking the expectation from `value` now.

        install_guard(gs, LocalSource("x"), GuardKind.CONSTANT_MATCH, 3)     # later: x == 3
        install_guard(gs, LocalSource("a"), "TENSOR_MATCH", a)               # kind by name works too
    For OBJECT_ALIASING pass the other Source as `value`; for GRAD_MODE any value (source None).
    """
    row = guard_kind(kind)
    guards.add(Guard(source, row.kind, row.capture(value)))


# ------------------------------------------------------------------------------------------------
# Check expressions.  `x` is the value's expression; `const(v)` returns a name (or literal) for v.

def _is_literal(v) -> bool:
    if v is None or type(v) in (bool, int, str):
        return True
    if type(v) is tuple:
        return all(_is_literal(i) for i in v)
    return False


def _tensor_expr(x, e: TensorExpectation, const):
    # spec_of(x) == e.spec, field by field: no tuple built per call (the class first, so nothing
    # else is read from a value of another type)
    cls, keys, dtype, shape, strides = e.spec
    return (f"(___t := {x}).__class__ is {const(cls)} and ___t._keys == {keys!r} and "
            f"(___a := ___t._data).shape == {const(shape)} and ___a.strides == {const(strides)} and "
            f"___a.dtype == {const(dtype)}")


def _constant_expr(x, v, const):
    if v is None or type(v) is bool:
        return f"{x} is {v!r}"
    if type(v) is float and math.isnan(v):
        return f"type({x}) is float and {x} != {x}"
    return f"type({x}) is {const(type(v))} and {x} == {const(v)}"


# ------------------------------------------------------------------------------------------------
# Failure texts (PyTorch 2.13's recompile reasons)

_TORCH_DTYPE_NAMES = {d.name: d.c10_name for d in _ALL_DTYPES}


def _dtype_name(dtype) -> str:
    name = getattr(dtype, "name", str(dtype))
    return _TORCH_DTYPE_NAMES.get(name, name)


def tensor_mismatch(name: str, e: TensorExpectation, t) -> str | None:
    """Why tensor `t` fails TENSOR_MATCH against `e`, in torch's words (None: it matches)."""
    from .._core.dtype import _FROM_NP
    from .._core.tensor import Tensor
    cls, keys, np_dtype, shape, byte_strides = e.spec
    if not isinstance(t, Tensor) or type(t) is not cls:
        return f"expected type of '{name}' to be a tensor type, ' but found {type(t)}"
    if t.dtype is not _FROM_NP[np_dtype]:
        return (f"tensor '{name}' dtype mismatch. expected {_dtype_name(_FROM_NP[np_dtype])}, "
                f"actual {_dtype_name(t.dtype)}")
    if (t._keys ^ keys) & BACKEND_MASK:
        expected_device = "cpu" if keys & 1 else ("cuda" if keys & 2 else "meta")
        return f"tensor '{name}' device mismatch. expected {expected_device}, actual {t.device}"
    if (t._keys ^ keys) & AUTOGRAD_BIT:
        return f"tensor '{name}' requires_grad mismatch. expected requires_grad={int(bool(keys & AUTOGRAD_BIT))}"
    if t._keys != keys:
        return (f"tensor '{name}' dispatch key set mismatch. expected {[k.name for k in keys_of(keys)]}, "
                f"actual {[k.name for k in keys_of(t._keys)]}")
    actual = tuple(t._data.shape)
    if len(actual) != len(shape):
        return f"tensor '{name}' rank mismatch. expected {len(shape)}, actual {len(actual)}"
    for i, (want, got) in enumerate(zip(shape, actual)):
        if want != got:
            return f"tensor '{name}' size mismatch at index {i}. expected {want}, actual {got}"
    for i, (want, got) in enumerate(zip(spec_strides(e.spec), t.stride())):
        if want != got:
            return f"tensor '{name}' stride mismatch at index {i}. expected {want}, actual {got}"
    if tuple(t._data.strides) != byte_strides:  # same element strides, different byte layout (empty arrays)
        return f"tensor '{name}' stride mismatch. expected {byte_strides}, actual {tuple(t._data.strides)} (bytes)"
    return None


# ------------------------------------------------------------------------------------------------
# The table of guard kinds: one row per kind. `order` places its conditions in the generated check
# (the thread's global state first, then identity and type checks that make the later ones safe to
# evaluate, tensors, values, and aliasing last); `capture` takes the expectation from the value when
# the guard is installed; `expr(x, expected, const)` is the condition compiled into the check (`x`
# the value's expression, `const(v)` a name or literal for v); `describe(expected, short)` the text
# a failed guard reports.

@dataclasses.dataclass(frozen=True)
class GuardKindRow:
    kind: GuardKind
    order: int
    capture: object
    expr: object
    describe: object
    meaning: str


def _describe_tls(e, short):
    if (tls.exclude ^ e[1]) & AUTOGRAD_BIT:
        return "GLOBAL_STATE changed: grad_mode "
    return (f"GLOBAL_STATE changed: dispatch key set (thread-local include {[k.name for k in keys_of(e[0])]},"
            f" exclude {[k.name for k in keys_of(e[1])]} at capture)")


def _is_expr(x, v, const):
    return f"{x} is {const(v)}"


def _function_expr(x, v, const):
    # the body was inlined: a function given another __code__ after capture is another function
    code = f" and {x}.__code__ is {const(v.__code__)}" if isinstance(v, types.FunctionType) else ""
    return f"{x} is {const(v)}" + code


def _module_expr(x, e, const):
    return (f"{x} is {const(e[0])} and {x}.training is {e[1]}"
            f" and bool({x}._forward_hooks or {x}._forward_pre_hooks) is {e[2]} and ('forward' in {x}.__dict__) is {e[3]}")


def _no_aliasing_expr(x, srcs, const):
    if len(srcs) == 2:
        return f"{srcs[0].expr()} is not {srcs[1].expr()}"
    return f"len({{{', '.join(f'id({s.expr()})' for s in srcs)}}}) == {len(srcs)}"


def _same(v):
    return v


_ROWS = (
    GuardKindRow(GuardKind.DISPATCH_TLS, 0, lambda v: (tls.include, tls.exclude),
                 lambda x, e, const: f"___tls.include == {e[0]} and ___tls.exclude == {e[1]}", _describe_tls,
                 "the thread's dispatch include/exclude key sets are those at capture (added with tensors)"),
    GuardKindRow(GuardKind.GRAD_MODE, 1, lambda v: (tls.exclude & AUTOGRAD_BIT) == 0,
                 lambda x, enabled, const: f"(___tls.exclude & {AUTOGRAD_BIT} == 0) is {enabled}",
                 lambda e, short: "GLOBAL_STATE changed: grad_mode ", "grad mode is as at capture (no source)"),
    GuardKindRow(GuardKind.TYPE_MATCH, 2, type, lambda x, t, const: f"type({x}) is {const(t)}",
                 lambda e, short: f"___check_type_id({short}, {id(e)}), type={e!r}", "the value's exact type"),
    GuardKindRow(GuardKind.ID_MATCH, 3, _same, _is_expr, lambda e, short: f"___check_obj_id({short}, {id(e)})",
                 "the very object seen at capture"),
    GuardKindRow(GuardKind.NN_MODULE, 4, _capture_training, _module_expr,
                 lambda e, short: f"___check_obj_id({short}, {id(e[0])}) and {short}.training == {e[1]}",
                 "the same module object, training flag, hooks present or not, no instance-level forward"),
    GuardKindRow(GuardKind.FUNCTION_MATCH, 5, _same, _function_expr,
                 lambda e, short: f"___check_obj_id({short}, {id(e)})",
                 "the same function object with the same __code__ (its body may have been inlined)"),
    GuardKindRow(GuardKind.LENGTH_CHECK, 6, len, lambda x, n, const: f"len({x}) == {n}",
                 lambda e, short: f"len({short}) == {e}", "a container's length"),
    GuardKindRow(GuardKind.DICT_KEYS, 7, lambda v: tuple(v.keys()),
                 lambda x, keys, const: f"tuple({x}.keys()) == {const(keys)}",
                 lambda e, short: f"list({short}.keys()) == {list(e)!r}", "a dict's keys, in order"),
    GuardKindRow(GuardKind.TENSOR_MATCH, 8, _capture_tensor, _tensor_expr, lambda e, short: f"TENSOR_MATCH {short}",
                 "a tensor's type, dispatch keys, dtype, shape and strides (failures: tensor_mismatch)"),
    GuardKindRow(GuardKind.EQUALS_MATCH, 9, _same, _constant_expr, lambda e, short: f"{short} == {e!r}",
                 "a value of the same type, equal to the one at capture"),
    GuardKindRow(GuardKind.CONSTANT_MATCH, 10, _same, _constant_expr, lambda e, short: f"{short} == {e!r}",
                 "a constant (None, bool, int, float, str) of the same type and value"),
    GuardKindRow(GuardKind.OBJECT_ALIASING, 11, _same, lambda x, other, const: f"{x} is {other.expr()}",
                 lambda e, short: f"{short} is {e.short_name()}", "this source holds the same object as another"),
    GuardKindRow(GuardKind.NO_TENSOR_ALIASING, 12, tuple, _no_aliasing_expr,
                 lambda e, short: f"Duplicate tensors found: {', '.join(s.short_name() for s in e)}",
                 "the guarded tensors are distinct objects"),
)
GUARD_KINDS = {row.kind: row for row in _ROWS}
if set(GUARD_KINDS) != set(GuardKind):   # a kind without a row would have no check: fail at import
    raise RuntimeError(f"guard kinds without a GUARD_KINDS row: {sorted(map(str, set(GuardKind) - set(GUARD_KINDS)))}")


def guard_kind(kind) -> GuardKindRow:
    """The row of `kind` (a GuardKind or its name); an unknown kind is a KeyError naming the known ones."""
    row = GUARD_KINDS.get(kind) if isinstance(kind, GuardKind) else GUARD_KINDS.get(GuardKind.__members__.get(kind))
    if row is None:
        raise KeyError(f"unknown guard kind {kind!r}; GUARD_KINDS (ember/_dynamo/guards.py) has "
                       f"{', '.join(k.value for k in GUARD_KINDS)}")
    return row


# ------------------------------------------------------------------------------------------------
# The generated check function

def _depth(source) -> int:
    depth = 0
    while source is not None and hasattr(source, "base"):
        source, depth = source.base, depth + 1
    return depth


def signature_text(code: types.CodeType, defaults=None, kwdefaults=None, extra_kwonly: str = "") -> tuple[str, str]:
    """(parameter list, call arguments) of `code`, e.g. ("a, b=___d[0], *args, k=___kd['k'], **kw",
    "a, b, *args, k=k, **kw"). Defaults are read from the names `___d` / `___kd`; `extra_kwonly`
    ("___closure=None") is added as one more keyword-only parameter."""
    names = code.co_varnames
    npos, nkw = code.co_argcount, code.co_kwonlyargcount
    params, call = [], []
    first_default = npos - len(defaults or ())
    for i in range(npos):
        name = names[i]
        params.append(f"{name}=___d[{i - first_default}]" if i >= first_default else name)
        call.append(name)
        if code.co_posonlyargcount and i == code.co_posonlyargcount - 1:
            params.append("/")
    if code.co_flags & 0x04:            # CO_VARARGS
        params.append(f"*{names[npos + nkw]}")
        call.append(f"*{names[npos + nkw]}")
    elif nkw or extra_kwonly:
        params.append("*")
    for name in names[npos:npos + nkw]:
        params.append(f"{name}=___kd[{name!r}]" if kwdefaults and name in kwdefaults else name)
        call.append(f"{name}={name}")
    if extra_kwonly:
        params.append(extra_kwonly)
    if code.co_flags & 0x08:            # CO_VARKEYWORDS
        index = npos + nkw + (1 if code.co_flags & 0x04 else 0)
        params.append(f"**{names[index]}")
        call.append(f"**{names[index]}")
    return ", ".join(params), ", ".join(call)


def argnames(code: types.CodeType) -> tuple:
    n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    return code.co_varnames[:n]


class CheckFn:
    """One generated guard function for one cache entry: ``check(*args, **kwargs) -> bool``.

    ``code_parts``: one Python expression per guard (what ``source`` joins with ``and``);
    ``guards``: the Guard rows, in check order; ``source``: the generated function's text;
    ``fn``: the generated function itself (the hot path calls it directly)."""

    def __init__(self, fn, guards, code_parts, source, binder, env, closure):
        self.fn = fn
        self.guards = guards
        self.code_parts = code_parts
        self.source = source
        self._binder = binder
        self._env = env
        self._closure = closure

    def __call__(self, *args, **kwargs) -> bool:
        return self.fn(*args, **kwargs)

    def failure_reason(self, *args, **kwargs) -> str | None:
        """The first failing guard for these arguments, in torch's words; None if all pass.

            check.failure_reason(ember.randn(11), b)  # "tensor 'a' size mismatch at index 0. expected 10, actual 11"
        """
        env = dict(self._env)
        env.update(self._binder(*args, **kwargs))   # the frame's locals, plus ___closure
        if env.get("___closure") is None:
            env["___closure"] = self._closure
        for guard, part in zip(self.guards, self.code_parts):
            try:
                ok = eval(part, env)
            except Exception:   # noqa: BLE001 - a missing key or attribute fails the guard
                ok = False
            if ok:
                continue
            short = guard.source.short_name() if guard.source is not None else ""
            if guard.kind is GuardKind.TENSOR_MATCH:
                try:
                    value = eval(guard.source.expr(), env)
                except Exception:   # noqa: BLE001
                    return f"{short} is missing"
                return tensor_mismatch(short, guard.expected, value) or "GLOBAL_STATE changed: grad_mode "
            if guard.kind is GuardKind.NN_MODULE:   # same module, other training flag: torch's wording
                try:
                    module = eval(guard.source.expr(), env)
                    if module is guard.expected[0] and bool(module.training) != guard.expected[1]:
                        return f"{short}.training == {guard.expected[1]}"
                    if module is guard.expected[0]:
                        return f"{short}: forward hooks or an instance-level forward changed"
                except Exception:   # noqa: BLE001
                    pass
            return GUARD_KINDS[guard.kind].describe(guard.expected, short)
        return None

    def __str__(self):
        return self.source

    def __repr__(self):
        return f"<CheckFn: {len(self.guards)} guards>"


def _compile_fn(src: str, name: str, env: dict):
    namespace = dict(env)
    exec(compile(src, f"<ember guards {name}>", "exec"), namespace)
    return namespace[name]


def build_check_fn(guards, code: types.CodeType, f_globals: dict, closure: tuple | None = None, *,
                   defaults=None, kwdefaults=None) -> CheckFn:
    """Generate ONE Python function checking every guard, with `code`'s own signature.

    `defaults`/`kwdefaults` (an extension of interfaces D2) are the function's __defaults__ /
    __kwdefaults__, so the check binds omitted arguments as the function does. Functions with free
    variables take a keyword ``___closure`` (default: `closure`), so one check serves every function
    object made from `code`.

        check = build_check_fn(gs, f.__code__, f.__globals__, f.__closure__, defaults=f.__defaults__)
        check(a, b) -> True / False
    """
    names = argnames(code)
    rows = sorted(set(guards), key=lambda g: (GUARD_KINDS[g.kind].order, _depth(g.source),
                                              source_sort_key(g.source, names)))
    rows = _add_dispatch_state_and_aliasing(rows)
    import builtins
    import sys
    env = {"G": f_globals, "___sys_modules": sys.modules, "___builtins": builtins, "___tls": tls, "___tensor_spec": spec_of, "___object_getattribute": object.__getattribute__, "___keys": KEYS,
           "___default_dtype": get_default_dtype, "___dtype_box": _default_dtype_box,
           "___grad_enabled": lambda: (tls.exclude & AUTOGRAD_BIT) == 0}
    constants: dict = {}

    def const(value):
        if _is_literal(value) and not (type(value) is str and len(value) > 64):
            return repr(value)
        key = id(value)
        if key not in constants:
            constants[key] = (f"___c{len(constants)}", value)
        return constants[key][0]

    parts = []
    for guard in rows:
        x = guard.source.expr() if guard.source is not None else ""
        parts.append(GUARD_KINDS[guard.kind].expr(x, guard.expected, const))
    for cname, value in constants.values():
        env[cname] = value
    for guard in rows:   # globals of other modules (functions inlined from there) read as ___G<id>
        others = guard.expected if guard.kind is GuardKind.NO_TENSOR_ALIASING else (
            (guard.expected,) if guard.kind is GuardKind.OBJECT_ALIASING else ())
        for source in (guard.source, *others):
            root = source.root() if source is not None else None
            if hasattr(root, "env_name"):
                env[root.env_name()] = root.f_globals
    has_closure = bool(code.co_freevars)
    params, _ = signature_text(code, defaults, kwdefaults, "___closure=___default_closure" if has_closure else "")
    body = "\n            and ".join(f"({p})" for p in parts) or "True"
    body = f"(\n            {body}\n        )"
    src = (f"def ___check({params}):\n"
           f"    try:\n"
           f"        return {body}\n"
           f"    except Exception:\n"
           f"        return False\n")
    if any(g.kind is GuardKind.NN_MODULE for g in rows):
        src = _two_tier_source(rows, params, body, const, env)
        for cname, value in constants.values():
            env[cname] = value
    env.update({"___d": tuple(defaults or ()), "___kd": dict(kwdefaults or {}),
                "___default_closure": closure})
    fn = _compile_fn(src, "___check", env)
    bind_params, _ = signature_text(code, defaults, kwdefaults, "___closure=None" if has_closure else "")
    local_names = names + (("___closure",) if has_closure else ())
    binder = _compile_fn(f"def ___bind({bind_params}):\n"
                         f"    return {{{', '.join(f'{n!r}: {n}' for n in local_names)}}}\n", "___bind", env)
    return CheckFn(fn, rows, parts, src, binder, env, closure)


def _two_tier_source(rows, params, body, const, env) -> str:
    """The check of an entry that reads nn.Modules: a fast tier while no module state was written
    since the last full pass, else every guard (module_guards.py explains the split)."""
    from .module_guards import ModuleTreePlan, env_entries
    plan = ModuleTreePlan(rows, const, GUARD_KINDS, GuardKind)
    if not plan.covered_sources:
        return (f"def ___check({params}):\n    try:\n        return {body}\n"
                f"    except Exception:\n        return False\n")
    env.update(env_entries())
    env["___stamp"] = [-1]            # the STATE_VERSION of the last full pass (none yet)
    env["___live"] = [None]
    names, exprs = plan.live_assignments()
    fast = plan.fast_parts + plan.batch_parts()
    fast_body = "\n                and ".join(f"({p})" for p in fast) or "True"
    conditions = " and ".join(f"({c})" for c in plan.stamp_conditions()) or "True"
    return (f"def ___check({params}):\n"
            f"    try:\n"
            f"        if ___version[0] == ___stamp[0]:\n"
            f"            {', '.join(names)}, = ___live[0]\n"
            f"            if not (\n                {fast_body}\n            ):\n"
            f"                return False\n"
            f"            if {plan.same_arrays_part()}:\n"
            f"                return True\n"
            f"        ___v = ___version[0]\n"
            f"        if not {body}:\n"
            f"            return False\n"
            f"        if {conditions}:\n"
            f"            ___live[0] = ({', '.join(exprs)},)\n"
            f"            ___stamp[0] = ___v\n"
            f"        return True\n"
            f"    except Exception:\n"
            f"        return False\n")


def _add_dispatch_state_and_aliasing(rows: list) -> list:
    """TENSOR_MATCH also covers the thread's dispatch include/exclude sets (grad mode among them) and
    which guarded tensors were the same object: add those checks once per entry."""
    tensor_rows = [g for g in rows if g.kind is GuardKind.TENSOR_MATCH]
    if not tensor_rows:
        return rows
    extra = []
    e = tensor_rows[0].expected
    extra.append(Guard(None, GuardKind.DISPATCH_TLS, (e.tls_include, e.tls_exclude)))
    # grad mode is a bit of the exclude set the DISPATCH_TLS row compares whole: drop its own row
    rows = [g for g in rows if not (isinstance(g.source, GlobalStateSource) and g.source.what == "grad_enabled")]
    by_id: dict = {}
    for g in tensor_rows:
        by_id.setdefault(g.expected.captured_id, []).append(g.source)
    tail = []
    for sources in by_id.values():   # the same tensor read through two sources must stay the same
        for other in sources[1:]:
            tail.append(Guard(other, GuardKind.OBJECT_ALIASING, sources[0]))
    distinct = tuple(sources[0] for sources in by_id.values())
    if len(distinct) > 1 and not any(g.kind is GuardKind.NO_TENSOR_ALIASING and g.source is None for g in rows):
        tail.append(Guard(None, GuardKind.NO_TENSOR_ALIASING, distinct))
    return extra + rows + tail


# ------------------------------------------------------------------------------------------------
# Printing

def format_guards(guards) -> str:
    """Seed 003's block::

        GUARDS:
         - local 'a' TENSOR_MATCH
         - local 'b' TENSOR_MATCH
         - global 'torch' FUNCTION_MATCH
    """
    # (not one of torch's guards: hidden from its listing)
    rows = [g for g in guards if g.source is not None
            and not isinstance(g.source, (GlobalShadowsBuiltinSource, GlobalStateSource))]
    rows.sort(key=lambda g: (source_sort_key(g.source), GUARD_KINDS[g.kind].order))
    lines = ["GUARDS:"]
    for g in rows:
        scope = "global" if isinstance(g.source.root(), (GlobalSource, ModuleGlobalSource)) else "local"
        name = g.source.short_name()
        if scope == "global" and name.startswith("G["):
            end = name.index("]")
            name = eval(name[2:end]) + name[end + 1:]   # G['torch'].nn -> torch.nn
        lines.append(f" - {scope} '{name}' {g.kind}")
    return "\n".join(lines)


__all__ = ["GuardKind", "GUARD_KINDS", "guard_kind", "Guard", "TensorExpectation", "install_guard", "CheckFn", "build_check_fn",
           "format_guards", "tensor_mismatch", "ClosureCellSource"]
