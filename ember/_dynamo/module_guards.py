"""Module-tree guards checked once per call: what a guard set reads through nn.Module state is re-read
only when some module's state was written since the last full check.

Every write to a module's state bumps one process-wide counter, ``STATE_VERSION`` (ember/nn/modules/
_common.py: Module.__setattr__/__delattr__ and the tracked instance ``__dict__``, ``_parameters``,
``_buffers``, ``_modules`` and forward-hook dicts). A guard whose value is read from a pinned module
through that state alone -- ``self.h[3].attn.c_attn`` (NN_MODULE), ``self.n_head`` (CONSTANT_MATCH),
``self.h._modules`` (DICT_KEYS) -- cannot change while the counter stands still, so the generated check
runs in two tiers (build_check_fn in guards.py)::

    if ___version[0] == ___stamp[0]:          # no module state written since the last full pass
        ___l0, ___l1, ___lt = ___live          # objects the module tree held then
        return <fast parts>                   # the root module's identity, tensor specs of the
                                              # parameters read (.data = ... changes them in place),
                                              # class attributes, guards on everything else
    <every guard, as before>; on success re-read ___live, and stamp the version when the
    assumptions below still hold

A step is "covered" when the value comes from the module instance itself: an attribute found in
its ``__dict__`` or state dicts with nothing on its class taking precedence, its ``__class__``, an
item of a tracked state dict, or an index of a built-in container (ModuleList, Sequential,
ModuleDict). These assumptions are re-checked before each stamp; a module whose class overrides
``__setattr__``/``__delattr__`` or holds untracked dicts is never covered, so its guards stay in the
fast tier.
"""
from __future__ import annotations

import dataclasses
import weakref

from ..nn.modules._common import STATE_VERSION, is_tracked
from ..nn.modules.module import Module
from .source import AttrSource, GetItemSource, Source, attr_expr

_STATE_DICTS = ("_parameters", "_buffers", "_modules", "_forward_hooks", "_forward_pre_hooks")
_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes)


def _is_container(value) -> bool:
    """An instance of exactly ModuleList, Sequential or ModuleDict (compared by identity)."""
    from ..nn.modules.container import ModuleDict, ModuleList, Sequential
    cls = type(value)
    return cls is ModuleList or cls is Sequential or cls is ModuleDict


def tracked_module(m) -> bool:
    """Every write to `m`'s state bumps STATE_VERSION."""
    cls = type(m)
    if cls.__setattr__ is not Module.__setattr__ or cls.__delattr__ is not Module.__delattr__:
        return False
    d = object.__getattribute__(m, "__dict__")
    return is_tracked(d) and all(is_tracked(d.get(name)) for name in _STATE_DICTS)


def _class_attr(cls, name):
    for klass in cls.__mro__:
        if name in vars(klass):
            return True, vars(klass)[name]
    return False, None


def owned_value(m, name):
    """(True, value) when ``m.<name>`` is read from m's own (tracked) state, else (False, None)."""
    if not tracked_module(m):
        return False, None
    if name == "__class__":
        return True, type(m)
    d = object.__getattribute__(m, "__dict__")
    on_class, attr = _class_attr(type(m), name)
    if name in d:   # a data descriptor on the class would win over the instance dict
        if on_class and (hasattr(type(attr), "__set__") or hasattr(type(attr), "__delete__")):
            return False, None
        return True, d[name]
    if on_class:    # a class attribute answers before Module.__getattr__ reads the state dicts
        return False, None
    for table in ("_parameters", "_buffers", "_modules"):
        if name in d[table]:
            return True, d[table][name]
    return False, None


def container_item(c, key):
    """(True, child) for ``c[key]`` of a built-in module container, read from its tracked _modules."""
    if not _is_container(c) or not tracked_module(c):
        return False, None
    modules = object.__getattribute__(c, "__dict__")["_modules"]
    if type(key) is int and type(c).__name__ != "ModuleDict":
        values = list(modules.values())
        if -len(values) <= key < len(values):
            return True, values[key]
        return False, None
    if type(key) is str and key in modules:
        return True, modules[key]
    return False, None


def item_of(d, key):
    if is_tracked(d) and key in d:
        return True, d[key]
    return False, None


def _immutable(v) -> bool:
    if type(v) in _IMMUTABLE:
        return True
    return type(v) is tuple and all(_immutable(i) for i in v)


@dataclasses.dataclass(frozen=True)
class LiveSource(Source):
    """A name bound at the top of the fast tier to an object read through the module tree."""
    live_name: str

    def expr(self) -> str:
        return self.live_name


class ModuleTree:
    """Which sources are read from modules pinned by NN_MODULE guards through tracked state alone."""

    def __init__(self, rows, kinds):
        self.roots = {g.source: g.expected[0] for g in rows if g.kind is kinds.NN_MODULE and g.source is not None}
        self._resolved: dict = {}

    # -- which sources are covered ------------------------------------------------------------
    def resolve(self, source):
        """("root" | "covered" | None, value): root = a module pinned by its own NN_MODULE guard."""
        if source in self._resolved:
            return self._resolved[source]
        result = (None, None)
        base = getattr(source, "base", None)
        base_kind, base_value = self.resolve(base) if isinstance(source, (AttrSource, GetItemSource)) else (None, None)
        if base_kind is not None:
            if isinstance(source, AttrSource) and isinstance(base_value, Module):
                ok, value = owned_value(base_value, source.member)
                if ok:
                    result = ("covered", value)
            elif isinstance(source, GetItemSource):
                if isinstance(base_value, Module):
                    ok, value = container_item(base_value, source.index)
                else:
                    ok, value = item_of(base_value, source.index) if base_kind == "covered" else (False, None)
                if ok:
                    result = ("covered", value)
        if result[0] is None and source in self.roots:
            result = ("root", self.roots[source])
        if result[0] == "covered" and source in self.roots and self.roots[source] is not result[1]:
            result = ("root", self.roots[source])   # defensive: trust the guard's own object
        self._resolved[source] = result
        return result

    def covered(self, source) -> bool:
        return source is not None and self.resolve(source)[0] == "covered"

    def ownership_condition(self, s, spell=lambda source: source.expr()) -> str:
        """An expression re-checking, on live values, that covered step `s` is still read from
        tracked module state (`spell(source)` writes a source as an expression)."""
        base = s.base
        if isinstance(s, AttrSource):
            return f"___owned({spell(base)}, {s.member!r})[0]"
        if self.resolve(base)[0] and isinstance(self.resolve(base)[1], Module):
            return f"___container_item({spell(base)}, {s.index!r})[0]"
        return f"___is_tracked({spell(base)})"


class ModuleTreePlan(ModuleTree):
    """The split of one entry's guard rows into a fast tier (see the module docstring)."""

    def __init__(self, rows, const, guard_kinds, kinds):
        super().__init__(rows, kinds)
        self.const = const
        self.kinds = kinds
        self.live: dict = {}           # covered source -> live name
        self.conditions: list = []     # re-checked before each stamp (slow tier only)
        self.fast_parts: list = []
        tensor_sources, seen, self.members, self.aliasing_covered = [], set(), [], []
        for g in rows:
            part = self._fast_part(g, guard_kinds, tensor_sources)
            if part is not None and part not in seen:
                seen.add(part)
                self.fast_parts.append(part)
        self.tensor_sources = tensor_sources
        self.covered_sources = [s for s, r in self._resolved.items() if r[0] == "covered"]

    def fast_source(self, source):
        """`source` with its longest covered ancestor replaced by a live name."""
        if source is None:
            return None
        if self.covered(source):
            if source not in self.live:
                self.live[source] = f"___l{len(self.live)}"
            return LiveSource(self.live[source])
        base = getattr(source, "base", None)
        if isinstance(base, Source):
            return source.replace(base=self.fast_source(base))
        return source

    # -- the fast tier ------------------------------------------------------------------------
    def _droppable(self, g) -> bool:
        k, kinds = g.kind, self.kinds
        value = self.resolve(g.source)[1]
        if k in (kinds.NN_MODULE, kinds.ID_MATCH, kinds.CONSTANT_MATCH):
            return True
        if k is kinds.TYPE_MATCH:
            return isinstance(value, Module) or _immutable(value)
        if k is kinds.EQUALS_MATCH:
            return _immutable(g.expected)
        if k in (kinds.DICT_KEYS, kinds.LENGTH_CHECK):
            return is_tracked(value) or (_is_container(value) and tracked_module(value))
        return False

    def _fast_part(self, g, guard_kinds, tensor_sources):
        kinds = self.kinds
        if self.covered(g.source):
            if g.kind is kinds.TENSOR_MATCH:   # same object; its metadata may change in place
                tensor_sources.append((g.source, g.expected.spec))
                return None
            if self._droppable(g):
                return None
        if g.kind is kinds.ID_MATCH and isinstance(g.source, AttrSource) and self.covered(g.source.base):
            self.members.append((g.source.base, g.source.member, g.expected))   # checked in one batch
            return None
        if g.kind is kinds.OBJECT_ALIASING:
            if self.covered(g.source) and self.covered(g.expected):
                return None
            return f"{self.fast_source(g.source).expr()} is {self.fast_source(g.expected).expr()}"
        if g.kind is kinds.NO_TENSOR_ALIASING:
            loose = [s for s in g.expected if not self.covered(s)]
            if not loose:
                return None   # distinct while the tree stands still
            if len(loose) == len(g.expected):
                return guard_kinds[g.kind].expr("", g.expected, self.const)
            # each row keeps the ids of ITS covered sources: one set shared by several rows made
            # every row but the last fail its fast tier (a recompile whose reason reads "None")
            self.aliasing_covered.append([s for s in g.expected if self.covered(s)])
            ids = ", ".join(f"id({s.expr()})" for s in loose)
            return f"len(___lids{len(self.aliasing_covered) - 1}.union(({ids},))) == {len(g.expected)}"
        source = self.fast_source(g.source)
        x = source.expr() if source is not None else ""
        return guard_kinds[g.kind].expr(x, g.expected, self.const)

    # -- the slow tier's extra statements -----------------------------------------------------
    def stamp_conditions(self) -> list:
        """Expressions re-checking, on live values, that each covered step is still read from tracked
        module state (evaluated after every guard passed, before stamping)."""
        return [self.ownership_condition(s) for s in self.covered_sources]

    def live_assignments(self) -> tuple:
        """(names, expressions) re-read on the slow tier: the live names, the covered tensors,
        the ids of covered tensors (for aliasing against loose ones)."""
        lids = [f"___lids{k}" for k in range(len(self.aliasing_covered))]
        names = list(self.live.values()) + ["___lt", "___ltmeta", "___ltdata", *lids, "___lm"]
        exprs = [s.expr() for s in self.live]
        tensors = "(" + "".join(f"{s.expr()}, " for s, _ in self.tensor_sources) + ")"
        exprs += [tensors, f"tuple(map(___meta_of, {tensors}))", f"tuple(map(___data_of, {tensors}))"]
        for covered in self.aliasing_covered:
            exprs.append("frozenset(map(id, (" + "".join(f"{s.expr()}, " for s in covered) + ")))")
        members = ", ".join(f"({b.expr()}, {m!r}, {self.const(e)})" for b, m, e in self.members)
        exprs.append(f"___distinct_members(({members}{',' if self.members else ''}))")
        return names, exprs

    def same_arrays_part(self) -> str:
        """Covered tensors still hold the arrays the last full pass saw: an in-place metadata change
        (``.data = ``, a resize, an in-place view op) swaps the array. Failing it is not a guard
        failure (the new array may have the same spec): the full pass decides."""
        return "all(map(___is, map(___data_of, ___lt), ___ltdata))" if self.tensor_sources else "True"

    def batch_parts(self) -> list:
        """The fast tier's batched checks, each as final as the guards it stands for: covered tensors
        keep the dispatch keys and class the last full pass saw (``requires_grad_`` changes the keys),
        and attributes read off covered objects (class members) stay the same objects."""
        parts = []
        if self.tensor_sources:
            parts.append("tuple(map(___meta_of, ___lt)) == ___ltmeta")
        if self.members:
            parts.append("all(map(___is, map(getattr, ___lm[0], ___lm[1]), ___lm[2]))")
        return parts


def graph_call_through_cache(compiled, sources, guard_rows, kinds):
    """(caller, argument sources) calling `compiled` with the graph inputs at `sources`, or None.

    The transformed code would read every parameter again through ``self.h[3].attn.c_attn.weight``
    (a Python ``__getattr__`` per step: ~600 us a call for a 12-layer GPT). The graph inputs read
    from pinned modules through tracked state (``ModuleTree.covered``) cannot change while
    STATE_VERSION stands still, so the caller keeps them in a tuple, re-read when the version moved
    or a root module is another object; it takes the root modules and the other inputs as
    arguments. A tuple is kept only when its steps are still read from tracked state (the
    conditions the guards' stamp re-checks)."""
    tree = ModuleTree(guard_rows, kinds)
    if not tree.roots or not any(tree.covered(s) for s in sources):
        return None
    roots, loose, spelled = [], [], {}

    def spell(source):
        """`source` as an expression over the caller's parameters (___r<i>: a root module)."""
        if source not in spelled:
            if tree.resolve(source)[0] == "root":
                roots.append(source)
                spelled[source] = f"___r{len(roots) - 1}"
            else:
                spelled[source] = (attr_expr(spell(source.base), source.member) if isinstance(source, AttrSource)
                                   else f"{spell(source.base)}[{source.index!r}]")
        return spelled[source]
    covered_exprs, args, steps = [], [], []
    for s in sources:
        if tree.covered(s) and _literal_steps(s, tree):
            covered_exprs.append(spell(s))
            args.append(f"___c[ROOTS + {len(covered_exprs) - 1}]")
            step = s
            while tree.covered(step) and step not in steps:
                steps.append(step)
                step = step.base
        else:
            loose.append(s)
            args.append(f"___f{len(loose) - 1}")
    n = len(roots)
    args = [a.replace("ROOTS", str(n)) for a in args]
    conditions = " and ".join(dict.fromkeys(tree.ownership_condition(s, spell) for s in steps))
    params = [f"___r{i}" for i in range(n)] + [f"___f{i}" for i in range(len(loose))]
    stale = " or ".join([f"___r{i} is not ___c[{i}]" for i in range(n)])
    src = (f"def ___call_graph({', '.join(params)}):\n"
           f"    ___c = ___cache.inputs\n"
           f"    if ___version[0] != ___cache.stamp or {stale}:\n"
           f"        ___v = ___version[0]\n"
           f"        ___c = ({''.join(p + ', ' for p in params[:n])}{''.join(e + ', ' for e in covered_exprs)})\n"
           f"        if {conditions}:\n"
           f"            ___cache.inputs, ___cache.stamp = ___c, ___v\n"
           f"    return ___compiled({', '.join(args)})\n")
    cache = _InputCache(n)
    _INPUT_CACHES.add(cache)
    from .guards import _compile_fn   # the one compiler of dynamo's generated checks
    return _compile_fn(src, "___call_graph", dict(env_entries(), ___compiled=compiled, ___cache=cache)), roots + loose


class _InputCache:
    """A caller's kept inputs (root modules first) and the STATE_VERSION they were read at."""
    __slots__ = ("inputs", "stamp", "roots", "__weakref__")

    def __init__(self, roots: int):
        self.roots = roots
        self.forget()

    def forget(self) -> None:
        self.inputs, self.stamp = (None,) * self.roots, -1


_INPUT_CACHES = weakref.WeakSet()


def forget_cached_inputs() -> None:
    """Drop every caller's kept modules and tensors (ember._dynamo.reset): the callers stay in the
    functions' globals after their entries are gone, and must not keep a model alive."""
    for cache in list(_INPUT_CACHES):
        cache.forget()


def _literal_steps(source, tree) -> bool:
    """Every item step of the covered chain up to its root is an int or str key."""
    while tree.covered(source):
        if isinstance(source, GetItemSource) and type(source.index) not in (int, str):
            return False
        source = source.base
    return True


def _distinct_members(triples) -> tuple:
    """(objects, names, expected) with one row per (object, name): the fast tier checks each once."""
    seen = {}
    for obj, name, expected in triples:
        seen.setdefault((id(obj), name), (obj, name, expected))
    rows = list(seen.values())
    return tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(r[2] for r in rows)


def env_entries() -> dict:
    import operator
    return {"___is": operator.is_, "___data_of": operator.attrgetter("_data"),
            "___meta_of": operator.attrgetter("_keys", "__class__"), "___distinct_members": _distinct_members,
            "___version": STATE_VERSION, "___owned": owned_value, "___container_item": container_item,
            "___is_tracked": is_tracked}
