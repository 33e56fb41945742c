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
    """What TENSOR_MATCH remembers of a tensor (and of the thread's dispatch state at capture)."""
    cls: type
    keys: int                 # t._keys: backend bit, Autograd bit (= requires_grad)
    np_dtype: object          # t._data.dtype
    dtype: object             # the ember dtype (for messages)
    shape: tuple
    strides: tuple            # t._data.strides: bytes (same dtype => same element strides)
    elem_strides: tuple
    tls_include: int
    tls_exclude: int
    captured_id: int          # id() of the tensor at capture: aliasing between guarded tensors


# ------------------------------------------------------------------------------------------------
# Capture: the expectation recorded for each kind

def _capture_tensor(value):
    data = value._data
    return TensorExpectation(type(value), value._keys, data.dtype, value.dtype, tuple(data.shape),
                             tuple(data.strides), tuple(value.stride()), tls.include, tls.exclude, id(value))


def _capture_training(value):
    # hooks and an instance-level forward change what calling the module runs: pinned too
    return (value, bool(value.training), bool(value._forward_hooks or value._forward_pre_hooks),
            "forward" in value.__dict__)


_CAPTURE = {
    GuardKind.TENSOR_MATCH: _capture_tensor,
    GuardKind.TYPE_MATCH: type,
    GuardKind.ID_MATCH: lambda v: v,
    GuardKind.FUNCTION_MATCH: lambda v: v,
    GuardKind.EQUALS_MATCH: lambda v: v,
    GuardKind.CONSTANT_MATCH: lambda v: v,
    GuardKind.LENGTH_CHECK: len,
    GuardKind.DICT_KEYS: lambda v: tuple(v.keys()),
    GuardKind.NN_MODULE: _capture_training,
    GuardKind.GRAD_MODE: lambda v: (tls.exclude & AUTOGRAD_BIT) == 0,
    GuardKind.DISPATCH_TLS: lambda v: (tls.include, tls.exclude),
    GuardKind.OBJECT_ALIASING: lambda v: v,
    GuardKind.NO_TENSOR_ALIASING: lambda v: tuple(v),
}


def install_guard(guards: set, source, kind, value) -> None:
    """Record `kind` on `source`, taking the expectation from `value` now.

        install_guard(gs, LocalSource("x"), GuardKind.CONSTANT_MATCH, 3)     # later: x == 3
        install_guard(gs, LocalSource("a"), "TENSOR_MATCH", a)               # kind by name works too
    For OBJECT_ALIASING pass the other Source as `value`; for GRAD_MODE any value (source None).
    """
    if isinstance(kind, str):
        kind = GuardKind[kind]
    guards.add(Guard(source, kind, _CAPTURE[kind](value)))


# ------------------------------------------------------------------------------------------------
# Check expressions.  `x` is the value's expression; `const(v)` returns a name (or literal) for v.

def _is_literal(v) -> bool:
    if v is None or type(v) in (bool, int, str):
        return True
    if type(v) is tuple:
        return all(_is_literal(i) for i in v)
    return False


def _tensor_expr(x, e: TensorExpectation, const):
    return (f"type({x}) is {const(e.cls)} and {x}._keys == {e.keys} and {x}._data.dtype == {const(e.np_dtype)}"
            f" and {x}._data.shape == {e.shape!r} and {x}._data.strides == {e.strides!r}")


def _constant_expr(x, v, const):
    if v is None or type(v) is bool:
        return f"{x} is {v!r}"
    if type(v) is float and math.isnan(v):
        return f"type({x}) is float and {x} != {x}"
    return f"type({x}) is {const(type(v))} and {x} == {const(v)}"


_EXPR = {
    GuardKind.TENSOR_MATCH: _tensor_expr,
    GuardKind.TYPE_MATCH: lambda x, t, const: f"type({x}) is {const(t)}",
    GuardKind.ID_MATCH: lambda x, v, const: f"{x} is {const(v)}",
    GuardKind.FUNCTION_MATCH: lambda x, v, const: f"{x} is {const(v)}" + (
        # the body was inlined: a function given another __code__ after capture is another function
        f" and {x}.__code__ is {const(v.__code__)}" if isinstance(v, types.FunctionType) else ""),
    GuardKind.EQUALS_MATCH: _constant_expr,
    GuardKind.CONSTANT_MATCH: _constant_expr,
    GuardKind.LENGTH_CHECK: lambda x, n, const: f"len({x}) == {n}",
    GuardKind.DICT_KEYS: lambda x, keys, const: f"tuple({x}.keys()) == {const(keys)}",
    GuardKind.NN_MODULE: lambda x, e, const: (
        f"{x} is {const(e[0])} and {x}.training is {e[1]}"
        f" and bool({x}._forward_hooks or {x}._forward_pre_hooks) is {e[2]} and ('forward' in {x}.__dict__) is {e[3]}"),
    GuardKind.GRAD_MODE: lambda x, enabled, const: f"(___tls.exclude & {AUTOGRAD_BIT} == 0) is {enabled}",
    GuardKind.DISPATCH_TLS: lambda x, e, const: f"___tls.include == {e[0]} and ___tls.exclude == {e[1]}",
    GuardKind.OBJECT_ALIASING: lambda x, other, const: f"{x} is {other.expr()}",
    GuardKind.NO_TENSOR_ALIASING: lambda x, srcs, const: (
        f"{srcs[0].expr()} is not {srcs[1].expr()}" if len(srcs) == 2 else
        f"len({{{', '.join(f'id({s.expr()})' for s in srcs)}}}) == {len(srcs)}"),
}


# ------------------------------------------------------------------------------------------------
# Failure texts (PyTorch 2.13's recompile reasons)

_TORCH_DTYPE_NAMES = {d.name: d.c10_name for d in _ALL_DTYPES}


def _dtype_name(dtype) -> str:
    name = getattr(dtype, "name", str(dtype))
    return _TORCH_DTYPE_NAMES.get(name, name)


def tensor_mismatch(name: str, e: TensorExpectation, t) -> str | None:
    """Why tensor `t` fails TENSOR_MATCH against `e`, in torch's words (None: it matches)."""
    from .._core.tensor import Tensor
    if not isinstance(t, Tensor):
        return f"expected type of '{name}' to be a tensor type, ' but found {type(t)}"
    if type(t) is not e.cls:
        return f"expected type of '{name}' to be a tensor type, ' but found {type(t)}"
    if t.dtype is not e.dtype:
        return f"tensor '{name}' dtype mismatch. expected {_dtype_name(e.dtype)}, actual {_dtype_name(t.dtype)}"
    if (t._keys ^ e.keys) & BACKEND_MASK:
        expected_device = "cpu" if e.keys & 1 else ("cuda" if e.keys & 2 else "meta")
        return f"tensor '{name}' device mismatch. expected {expected_device}, actual {t.device}"
    if (t._keys ^ e.keys) & AUTOGRAD_BIT:
        return f"tensor '{name}' requires_grad mismatch. expected requires_grad={int(bool(e.keys & AUTOGRAD_BIT))}"
    if t._keys != e.keys:
        return (f"tensor '{name}' dispatch key set mismatch. expected {[k.name for k in keys_of(e.keys)]}, "
                f"actual {[k.name for k in keys_of(t._keys)]}")
    shape = tuple(t._data.shape)
    if len(shape) != len(e.shape):
        return f"tensor '{name}' rank mismatch. expected {len(e.shape)}, actual {len(shape)}"
    for i, (want, got) in enumerate(zip(e.shape, shape)):
        if want != got:
            return f"tensor '{name}' size mismatch at index {i}. expected {want}, actual {got}"
    strides = tuple(t.stride())
    for i, (want, got) in enumerate(zip(e.elem_strides, strides)):
        if want != got:
            return f"tensor '{name}' stride mismatch at index {i}. expected {want}, actual {got}"
    if tuple(t._data.strides) != e.strides:  # same element strides, different byte layout (empty arrays)
        return f"tensor '{name}' stride mismatch. expected {e.strides}, actual {tuple(t._data.strides)} (bytes)"
    return None


def _describe(guard: Guard, short: str) -> str:
    """The printed form of a guard (what a failed guard reports), with the value's short name."""
    kind, e = guard.kind, guard.expected
    if kind is GuardKind.TYPE_MATCH:
        return f"___check_type_id({short}, {id(e)}), type={e!r}"
    if kind in (GuardKind.ID_MATCH, GuardKind.FUNCTION_MATCH):
        return f"___check_obj_id({short}, {id(e)})"
    if kind in (GuardKind.EQUALS_MATCH, GuardKind.CONSTANT_MATCH):
        return f"{short} == {e!r}"
    if kind is GuardKind.LENGTH_CHECK:
        return f"len({short}) == {e}"
    if kind is GuardKind.DICT_KEYS:
        return f"list({short}.keys()) == {list(e)!r}"
    if kind is GuardKind.NN_MODULE:
        return f"___check_obj_id({short}, {id(e[0])}) and {short}.training == {e[1]}"
    if kind is GuardKind.GRAD_MODE:
        return "GLOBAL_STATE changed: grad_mode "
    if kind is GuardKind.DISPATCH_TLS:
        if (tls.exclude ^ e[1]) & AUTOGRAD_BIT:
            return "GLOBAL_STATE changed: grad_mode "
        return (f"GLOBAL_STATE changed: dispatch key set (thread-local include {[k.name for k in keys_of(e[0])]},"
                f" exclude {[k.name for k in keys_of(e[1])]} at capture)")
    if kind is GuardKind.OBJECT_ALIASING:
        return f"{short} is {e.short_name()}"
    if kind is GuardKind.NO_TENSOR_ALIASING:
        return f"Duplicate tensors found: {', '.join(s.short_name() for s in e)}"
    return f"{kind} {short}"


# ------------------------------------------------------------------------------------------------
# The generated check function

_KIND_ORDER = {k: i for i, k in enumerate((GuardKind.DISPATCH_TLS, GuardKind.GRAD_MODE, GuardKind.TYPE_MATCH, GuardKind.ID_MATCH,
                                           GuardKind.NN_MODULE, GuardKind.FUNCTION_MATCH, GuardKind.LENGTH_CHECK,
                                           GuardKind.DICT_KEYS, GuardKind.TENSOR_MATCH, GuardKind.EQUALS_MATCH,
                                           GuardKind.CONSTANT_MATCH, GuardKind.OBJECT_ALIASING,
                                           GuardKind.NO_TENSOR_ALIASING))}


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
            return _describe(guard, short)
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
    rows = sorted(set(guards), key=lambda g: (_KIND_ORDER.get(g.kind, 99), _depth(g.source),
                                              source_sort_key(g.source, names)))
    rows = _add_dispatch_state_and_aliasing(rows)
    env = {"G": f_globals, "___tls": tls, "___object_getattribute": object.__getattribute__, "___keys": KEYS,
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
        parts.append(_EXPR[guard.kind](x, guard.expected, const))
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
    env.update({"___d": tuple(defaults or ()), "___kd": dict(kwdefaults or {}),
                "___default_closure": closure})
    fn = _compile_fn(src, "___check", env)
    bind_params, _ = signature_text(code, defaults, kwdefaults, "___closure=None" if has_closure else "")
    local_names = names + (("___closure",) if has_closure else ())
    binder = _compile_fn(f"def ___bind({bind_params}):\n"
                         f"    return {{{', '.join(f'{n!r}: {n}' for n in local_names)}}}\n", "___bind", env)
    return CheckFn(fn, rows, parts, src, binder, env, closure)


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
    rows.sort(key=lambda g: (source_sort_key(g.source), _KIND_ORDER.get(g.kind, 99)))
    lines = ["GUARDS:"]
    for g in rows:
        scope = "global" if isinstance(g.source.root(), (GlobalSource, ModuleGlobalSource)) else "local"
        name = g.source.short_name()
        if scope == "global" and name.startswith("G["):
            end = name.index("]")
            name = eval(name[2:end]) + name[end + 1:]   # G['torch'].nn -> torch.nn
        lines.append(f" - {scope} '{name}' {g.kind}")
    return "\n".join(lines)


__all__ = ["GuardKind", "Guard", "TensorExpectation", "install_guard", "CheckFn", "build_check_fn",
           "format_guards", "tensor_mismatch", "ClosureCellSource"]
