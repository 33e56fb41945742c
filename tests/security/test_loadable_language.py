"""The closed language of saved programs (ember.jit.ir.allowlist): what it admits, what it leaves
out, that no value a program can build has a dangerous method under an admitted name, and that
jit.save refuses (naming what) exactly what jit.load would refuse.
"""
import io
import types

import pytest

import ember
from ember.jit import _payload_check
from ember.jit.ir import allowlist, prim


def test_functions_are_the_op_table_prims_and_pure_helpers():
    assert allowlist.function_by_name("aten::add.Tensor") is ember.ops.aten.add.Tensor
    assert allowlist.function_by_name("ember.tanh") is ember.tanh
    assert allowlist.function_by_name("ember.nn.functional.relu") is ember.nn.functional.relu
    assert allowlist.function_by_name("prim::If") is prim.If
    assert allowlist.function_by_name("operator.add") is __import__("operator").add
    assert allowlist.function_by_name("math.sqrt") is __import__("math").sqrt
    assert allowlist.function_by_name("builtins.len") is len
    for name in ["builtins.eval", "builtins.exec", "builtins.open", "builtins.__import__", "builtins.compile",
                 "builtins.globals", "builtins.setattr", "builtins.delattr", "builtins.vars", "builtins.type",
                 "builtins.object", "operator.attrgetter", "operator.methodcaller", "operator.itemgetter",
                 "math.__loader__", "math.__spec__", "os.system", "importlib.import_module", "ember.load",
                 "ember.save", "ember.from_numpy", "ember.manual_seed", "ember.seed", "ember.set_rng_state",
                 "ember.get_rng_state", "ember.set_default_dtype", "ember.set_printoptions", "ember.jit.load",
                 "ember.compile", "ember.Tensor", "ember.nn.Module", "prim::CallMethod", "prim::CallFunction",
                 "prim::FusionGroup", "prim::TypeCheck", "prim::profile", "aten::nonexistent", "", None, 3]:
        assert allowlist.function_by_name(name) is None, name


def test_every_admitted_ember_function_is_table_api_or_a_query():
    from ember.ops import registry
    table = {id(fn) for fns in registry.FUNCTIONS.values() for fn in fns.values()}
    for name, fn in allowlist._ember_functions().items():
        assert (id(fn) in table and allowlist._is_table_api(fn)) or name in allowlist._QUERY_FUNCTIONS, name
        assert not isinstance(fn, (type, types.ModuleType)), name


def test_method_names():
    for name in ["add", "add_", "sum", "size", "view", "tolist", "append", "keys", "format", "startswith"]:
        assert allowlist.is_method_name(name), name
    for name in ["numpy", "tofile", "dump", "ctypes", "register_hook", "backward", "data_ptr", "storage",
                 "untyped_storage", "apply_", "map_", "__class__", "__reduce_ex__", "_version", "encode",
                 "format_map", "system", "write", "\uff4e\uff55\uff4d\uff50\uff59", "", None]:
        assert not allowlist.is_method_name(name), name


# The types of every value a loaded program can build (numbers, strings, containers, dtypes,
# devices, sizes, the named tuples ops return) and their attributes under admitted method names that
# are not builtin methods: all plain data or pure queries.
_REVIEWED = {("Size", "numel"), ("dtype", "is_complex"), ("dtype", "is_floating_point"), ("dtype", "is_signed"),
             ("device", "index"), ("device", "type"), ("max", "values")}


def test_admitted_method_names_are_harmless_on_every_value_type():
    x = ember.ones(2, 2)
    values = [1, 1.5, True, "s", [1], (1,), {1: 2}, None, 1j, slice(1), range(2), ..., {1: 2}.keys(),
              {1: 2}.values(), {1: 2}.items(), ember.Size([1]), ember.float32, ember.device("cpu"), x.max(0)]
    builtin_kinds = (types.MethodDescriptorType, types.BuiltinFunctionType, types.WrapperDescriptorType,
                     types.ClassMethodDescriptorType)
    for value in values:
        for name in allowlist.method_names():
            attr = getattr(type(value), name, None)
            if attr is None or isinstance(attr, builtin_kinds):
                continue
            assert (type(value).__name__, name) in _REVIEWED, (type(value), name)


def test_no_value_a_program_can_read_is_callable():
    """What getattr can read off a tensor, and the dtypes/devices/sizes constants and ops give, are
    data: so ``sorted(key=...)``, ``max(key=...)`` and ``list.sort(key=...)`` have nothing to call."""
    x = ember.randn(2, 2, requires_grad=True)
    (x * 2).sum().backward()
    for t in (x, ember.randn(2, 2, dtype=ember.complex64)):
        for name in dir(t):
            if allowlist.is_getattr_name(name) and (name != "imag" or t.is_complex()):
                assert not callable(getattr(t, name)), name
    for value in (ember.float32, ember.device("cpu"), ember.Size([1]), x.max(0), x.tolist(), x.size()):
        assert not callable(value)


def test_getattr_names_are_tensor_attributes_only():
    for name in ["dtype", "device", "requires_grad", "T", "grad", "data", "is_leaf", "ndim"]:
        assert allowlist.is_getattr_name(name), name
    for name in ["grad_fn", "numpy", "_version", "__class__", "__dict__", "storage", "_base", "__array__"]:
        assert not allowlist.is_getattr_name(name), name


@pytest.mark.parametrize("text", ["", "{}", "{} and {}", "{0}{1}", "{name}", "{:>8}", "{0:{1}}", "{!r}", "%d"])
def test_plain_format_strings_are_admitted(text):
    assert allowlist.format_string_problem(text) is None


@pytest.mark.parametrize("text", ["{0.__class__}", "{0[0]}", "{x.y}", "{:{0.__class__}}", "{0.real}", "{",
                                  "{\uff58}", 3, None])
def test_format_strings_reading_attributes_are_refused(text):
    assert allowlist.format_string_problem(text) is not None


# ---------------------------------------------------------------------------------------------
# jit.save refuses what load refuses
# ---------------------------------------------------------------------------------------------
def _roundtrip(fn):
    buf = io.BytesIO()
    ember.jit.save(fn, buf)
    buf.seek(0)
    return ember.jit.load(buf)


def test_save_refuses_functions_outside_the_language():
    def reseeds(x):
        ember.manual_seed(0)
        return x + 1

    def reads_pointer(x):
        return x.data_ptr()

    for fn, what in ((reseeds, "ember.manual_seed"), (reads_pointer, "data_ptr")):
        scripted = ember.jit.script(fn)
        with pytest.raises(RuntimeError, match=f"ember.jit.save: .*{what}"):
            ember.jit.save(scripted, io.BytesIO())


def test_save_refuses_format_strings_built_at_run_time():
    def dynamic(x, s: str):
        return (s + "{}").format(x.dim())

    scripted = ember.jit.script(dynamic)
    with pytest.raises(RuntimeError, match="ember.jit.save: .*str.format"):
        ember.jit.save(scripted, io.BytesIO())


def test_format_with_a_literal_roundtrips():
    def fmt(x, n: int):
        return "{} of {}".format(n, x.dim())

    loaded = _roundtrip(ember.jit.script(fmt))
    assert loaded(ember.ones(2, 2), 3) == "3 of 2"


_OTHER = ["SystemExit", "KeyboardInterrupt", "GeneratorExit", "StopIteration", "OSError", "Custom"]


@pytest.fixture(scope="module")
def raisers(tmp_path_factory):
    """A module (script needs source in a file) with ``raise_<Name>(x)`` raising <Name>("boom")."""
    import importlib.util
    path = tmp_path_factory.mktemp("raisers") / "raisers.py"
    lines = ["class Custom(Exception):", "    pass", ""]
    for name in sorted(prim.RAISABLE) + _OTHER:
        lines += [f"def raise_{name}(x):", "    if bool(x.sum() > 0):", f"        raise {name}('boom')", "    return x", ""]
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("raisers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", sorted(prim.RAISABLE))
def test_raisable_exceptions_keep_their_class(raisers, name):
    scripted = ember.jit.script(getattr(raisers, f"raise_{name}"))
    for fn in (scripted, _roundtrip(scripted)):
        with pytest.raises(prim.RAISABLE[name], match="boom") as info:
            fn(ember.ones(2))
        assert type(info.value) is prim.RAISABLE[name]


@pytest.mark.parametrize("name", _OTHER)
def test_other_exceptions_become_runtime_errors(raisers, name):
    """Process/loop control and classes a graph cannot hold raise RuntimeError with the message,
    scripted or loaded: a program never ends the process or a caller's loop."""
    scripted = ember.jit.script(getattr(raisers, f"raise_{name}"))
    for fn in (scripted, _roundtrip(scripted)):
        with pytest.raises(RuntimeError, match="boom") as info:
            fn(ember.ones(2))
        assert type(info.value) is RuntimeError


def test_check_payload_accepts_what_save_writes_and_names_the_first_problem():
    buf = io.BytesIO()
    ember.jit.save(ember.jit.script(ember.nn.Linear(2, 2)), buf)
    import hostile_archives as H
    payload = H.read_archive(buf.getvalue())
    _payload_check.check_payload(payload)
    payload["module"]["methods"]["forward"]["graph"]["nodes"][-2]["target"] = "os.system"
    with pytest.raises(_payload_check.Refused, match="method 'forward' of module '<top>': node %.*'os.system'"):
        _payload_check.check_payload(payload)


# ---------------------------------------------------------------------------------------------
# what a loaded program can do with the language is contained
# ---------------------------------------------------------------------------------------------
def _edited(tmp_path, build):
    import hostile_archives as H
    paths = H.save_legit(str(tmp_path))
    payload = H.read_archive(paths["module"])
    e = H.Edit(payload)
    build(e)
    path = str(tmp_path / "edited.pt")
    H.write_archive(path, payload)
    return ember.jit.load(path)


def test_loaded_program_cannot_leave_grad_mode_changed(tmp_path):
    loaded = _edited(tmp_path, lambda e: e.returns(e.call("prim::SetGradEnabled", False)))
    for _ in range(3):
        assert ember.is_grad_enabled()
        loaded(ember.randn(2, 3))
        assert ember.is_grad_enabled()
    with ember.no_grad():
        loaded(ember.randn(2, 3))
        assert not ember.is_grad_enabled()


def test_out_of_bounds_views_raise(tmp_path):
    """as_strided is in the language: a view past its storage raises, it never reads memory."""
    loaded = _edited(tmp_path, lambda e: e.returns(e.call("ember.as_strided", e.x, [1 << 20], [1])))
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        loaded(ember.randn(2, 3))


class WritesAttribute(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.last = 0.0

    def forward(self, x):
        self.last = float(x.sum())    # written, never read: still a member the saved module declares
        return x * 2


def test_attributes_a_program_only_writes_are_declared():
    eager = WritesAttribute()
    loaded = _roundtrip(ember.jit.script(WritesAttribute()))
    x = ember.randn(3)
    loaded(x)
    eager(x)
    assert loaded.last == eager.last != 0.0
