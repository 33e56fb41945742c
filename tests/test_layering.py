"""A lower layer never imports a higher one (STYLE.md): _core never imports autograd or the profiler,
autograd never imports the profiler (the profiler appends to the engine's hook list), and dynamo's
translator never imports the compile entry (it reads the leaf `markers` module).

Two checks per rule: every import statement in the lower layer's files, including the deferred ones
inside functions, read from the source; and a fresh interpreter that imports the lower module alone
(the `ember` package stubbed, so ember/__init__.py does not load everything) and lists what came in.
"""
import ast
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(REPO, "ember")

# (files of the lower layer, relative to ember/; module prefixes it must never import)
RULES = [
    ("_core", ("ember.autograd", "ember.profiler", "ember.ops", "ember.nn", "ember.fx", "ember.jit",
               "ember._dynamo")),
    ("autograd", ("ember.profiler", "ember.nn", "ember.fx", "ember.jit", "ember._dynamo", "ember.optim")),
    ("profiler", ("ember.nn", "ember.fx", "ember.jit", "ember._dynamo")),
    ("nn", ("ember.fx", "ember.jit", "ember._dynamo")),
    ("fx", ("ember.jit", "ember._dynamo", "ember.profiler")),           # the frontends are built on fx
    ("_dynamo/symbolic_convert.py", ("ember._dynamo.eval_frame",)),      # the translator, not the entry
    ("_dynamo/variables", ("ember._dynamo.eval_frame",)),
    ("_dynamo/guards.py", ("ember._dynamo.eval_frame", "ember._dynamo.symbolic_convert")),
]


def _files(rel):
    path = os.path.join(PKG, rel)
    if os.path.isfile(path):
        return [path]
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(".py"))


def _module_name(path):
    rel = os.path.relpath(path, REPO)[:-3].split(os.sep)
    return ".".join(rel[:-1] if rel[-1] == "__init__" else rel)


def imported_modules(path):
    """Every module an import statement in `path` names (at any depth), with `from X import a`
    giving both X and X.a (a may be a submodule)."""
    name = _module_name(path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[:len(parts) - node.level + 1])
                base = parent + ("." + base if base else "")
            out.append((base, node.lineno))
            out += [(base + "." + a.name, node.lineno) for a in node.names]
    return out


def _hits(modules, forbidden):
    return [m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden)]


@pytest.mark.parametrize("lower,forbidden", RULES, ids=[r[0] for r in RULES])
def test_no_import_statement_reaches_a_higher_layer(lower, forbidden):
    bad = []
    for path in _files(lower):
        for module, line in imported_modules(path):
            if _hits([module], forbidden):
                bad.append(f"{os.path.relpath(path, REPO)}:{line} imports {module}")
    assert not bad, "a lower layer imports a higher one:\n" + "\n".join(bad)


def test_the_scanner_sees_deferred_and_relative_imports(tmp_path):
    # the check above must be able to fail: a deferred relative import inside a function is found
    src = "def f():\n    from ..autograd import engine\n    import ember.profiler\n"
    pkg = os.path.join(PKG, "_core")
    fake = os.path.join(pkg, "_layering_probe_tmp.py")
    try:
        with open(fake, "w") as f:
            f.write(src)
        mods = [m for m, _ in imported_modules(fake)]
    finally:
        os.remove(fake)
    assert "ember.autograd.engine" in mods and "ember.profiler" in mods


_ISOLATED = """
import importlib, sys, types
if sys.argv[3] == "alone":
    root = types.ModuleType("ember")
    root.__path__ = [sys.argv[1]]
    sys.modules["ember"] = root
else:
    import ember
importlib.import_module(sys.argv[2])
print("\\n".join(sorted(sys.modules)))
"""


def modules_loaded_by(module, mode="alone"):
    """The modules a fresh interpreter holds after importing `module`: alone (the `ember` package
    stubbed), or after a plain `import ember` (for dynamo, whose trackers need ember.nn, which needs
    the op table registered by ember/__init__; `import ember` loads no part of _dynamo)."""
    out = subprocess.run([sys.executable, "-c", _ISOLATED, PKG, module, mode], capture_output=True, text=True,
                         cwd=REPO, env={**os.environ, "PYTHONPATH": REPO}, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.parametrize("module,mode,forbidden", [
    ("ember._core.tensor", "alone", ("ember.autograd", "ember.profiler", "ember.ops", "ember.nn")),
    ("ember._core.dispatch", "alone", ("ember.autograd", "ember.profiler")),
    ("ember.autograd.engine", "alone", ("ember.profiler",)),
    ("ember._dynamo.symbolic_convert", "after ember", ("ember._dynamo.eval_frame",)),
    ("ember._dynamo.guards", "after ember", ("ember._dynamo.eval_frame", "ember._dynamo.symbolic_convert")),
])
def test_importing_a_lower_module_alone_loads_no_higher_one(module, mode, forbidden):
    loaded = modules_loaded_by(module, mode)
    assert module in loaded
    assert not _hits(loaded, forbidden)


def test_the_isolated_import_sees_what_a_module_pulls_in():
    # the subprocess check can fail: a higher layer's import does load the lower one it uses
    loaded = modules_loaded_by("ember.profiler")
    assert "ember.profiler" in loaded and "ember.autograd.engine" in loaded


# -- no tolerance for breakage: what used to be skipped is an error naming what to fix --------------------
def test_a_derivative_formula_for_no_operator_is_a_key_error():
    from ember.autograd import kernel
    from ember.ops.registry import OPERATORS
    add = OPERATORS["aten::add.Tensor"]
    before = dict(add.kernels)
    with pytest.raises(KeyError, match="no_such_op.Tensor"):
        kernel.install(OPERATORS, {"add.Tensor": lambda grad: (grad, grad), "no_such_op.Tensor": lambda grad: grad},
                       ())
    with pytest.raises(KeyError, match="nondiff_typo"):
        kernel.install(OPERATORS, {}, {"nondiff_typo"})
    assert add.kernels == before    # nothing was registered before the error


def test_a_missing_derivative_family_is_an_error(monkeypatch):
    from ember.ops import derivatives
    monkeypatch.setattr(derivatives, "FAMILIES", derivatives.FAMILIES + ("no_such_family",))
    with pytest.raises(ModuleNotFoundError, match="no_such_family"):
        derivatives.collect()


def test_a_table_family_that_fails_to_import_is_an_error(monkeypatch):
    from ember.ops import table
    monkeypatch.setattr(table, "FAMILIES", ("no_such_family",))
    with pytest.raises(ModuleNotFoundError, match="no_such_family"):
        table.register_all()


# -- guard kinds are rows of one table; an unknown kind is a KeyError, never silently ID_MATCH -------------
def test_every_guard_kind_has_one_row_and_a_distinct_order():
    from ember._dynamo.guards import GUARD_KINDS, GuardKind
    assert set(GUARD_KINDS) == set(GuardKind)
    assert len({row.order for row in GUARD_KINDS.values()}) == len(GUARD_KINDS)
    assert all(row.kind is kind and row.meaning for kind, row in GUARD_KINDS.items())


@pytest.mark.parametrize("kind", ["NOT_A_GUARD", "id_match", "", 3, None])
def test_an_unknown_guard_kind_is_a_key_error(kind):
    from ember._dynamo import guards
    from ember._dynamo.source import LocalSource
    gs = set()
    with pytest.raises(KeyError, match="unknown guard kind"):
        guards.install_guard(gs, LocalSource("x"), kind, 3)
    with pytest.raises(KeyError, match="unknown guard kind"):
        guards.guard_kind(kind)
    assert gs == set()


def test_the_translator_does_not_turn_an_unknown_kind_into_id_match():
    from ember._dynamo.output_graph import OutputGraph
    from ember._dynamo.source import LocalSource
    out = OutputGraph.__new__(OutputGraph)
    out.guards = set()
    with pytest.raises(KeyError, match="SHAPE_ENV"):
        out.guard(LocalSource("x"), "SHAPE_ENV", object())
    assert out.guards == set()


def test_a_guard_row_compiles_to_its_check_and_reports_its_description():
    # the row's expression is what the generated check evaluates; its description is the failure text
    from ember._dynamo import guards
    from ember._dynamo.source import LocalSource

    def f(x, n):
        return x

    gs = set()
    guards.install_guard(gs, LocalSource("x"), "LENGTH_CHECK", [1, 2])
    guards.install_guard(gs, LocalSource("n"), guards.GuardKind.CONSTANT_MATCH, 3)
    check = guards.build_check_fn(gs, f.__code__, f.__globals__)
    assert check([5, 6], 3) and not check([5], 3) and not check([5, 6], 4) and not check([5, 6], 3.0)
    assert "len(x) == 2" in check.source
    assert check.failure_reason([5], 3) == "len(x) == 2"
    assert check.failure_reason([5, 6], 4) == "n == 3"


def test_after_import_ember_the_check_still_sees_dynamo_modules_come_in():
    loaded = modules_loaded_by("ember._dynamo.eval_frame", "after ember")
    assert "ember._dynamo.eval_frame" in loaded and "ember._dynamo.guards" in loaded


# -- dynamo's trackers: the builder picks them from a table the tracker modules fill ---------------------
def test_the_builder_imports_no_container_tracker_module():
    path = os.path.join(PKG, "_dynamo", "variables", "builder.py")
    mods = {m for m, _ in imported_modules(path)}
    assert not mods & {"ember._dynamo.variables.lists", "ember._dynamo.variables.dicts",
                       "ember._dynamo.variables.sets", "ember._dynamo.variables.nn_module"}


def test_a_second_tracker_for_a_type_is_a_key_error():
    from ember._dynamo.variables import builder
    before = dict(builder.FROM_FRAME)
    with pytest.raises(KeyError, match="list already has a tracker"):
        builder.tracks(list)(lambda tx, value, source, guard: None)
    assert builder.FROM_FRAME == before


def test_tracker_lookup_runs_no_code_of_a_user_metaclass():
    # the table is keyed by id() and walks the MRO read from type's own slot: looking a class up
    # hashes or compares nothing of the user's
    from ember._dynamo.variables import builder
    calls = []

    class Meta(type):
        def __hash__(cls):
            calls.append("__hash__")
            return 0

        def __eq__(cls, other):
            calls.append("__eq__")
            return cls is other

        @property
        def __mro__(cls):
            calls.append("__mro__")
            return (dict,)

    class Box(dict, metaclass=Meta):   # a dict subclass the dict tracker declines (a user object)
        pass

    class Other(metaclass=Meta):
        pass

    assert builder._from_table(builder.FROM_FRAME, Box(), None, Box(), None, False) is None
    assert builder._from_table(builder.MADE_IN_CAPTURE, Other(), None, Other()) is None
    assert calls == []
