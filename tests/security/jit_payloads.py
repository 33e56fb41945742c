"""Hostile jit archives whose program tries to run code: one row per route.

Each row is ``Payload(name, base, build, live)``: `build(e, marker)` edits a legitimate archive's
program (`e` is a hostile_archives.Edit of its forward) so that running it would create the file
`marker` (or end the process, or reach something outside the language); `base` is the kind of
legitimate archive edited. ``live=True`` rows are checked to really create the marker / raise the
process-ending exception when the load-time checks are switched off (_payload_runner's permissive
mode): the payloads are real attacks, and the checks are what stops them. ``live=False`` rows are
refused by something the permissive mode keeps (e.g. serialize's dunder check) or do no visible harm
(state changes, reads).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import ember


@dataclass(frozen=True)
class Payload:
    name: str
    base: str                     # "module" or "function"
    build: Callable               # (Edit, marker path) -> None
    live: bool = True             # the marker appears (or the process-ending exception is raised) unchecked
    ends_process: bool = False    # what it does when live: raise SystemExit & co, not create the marker


def _shell(marker: str) -> str:
    return f"touch {marker}"


def _pickle_bomb(marker: str) -> str:
    return f"cos\nsystem\n(S'{_shell(marker)}'\ntR."    # protocol 0: os.system(...) when unpickled


def _tofile_effect(e, marker):
    return e.method("tofile", e.method("numpy", e.x), marker)


def _tofile(e, marker):
    e.returns(_tofile_effect(e, marker))


def _ctypes_system(e, marker):
    arr = e.method("numpy", e.x)
    lib = e.method("CDLL", e.call("builtins.getattr", e.call("builtins.getattr", arr, "ctypes"), "_ctypes"), None)
    e.returns(e.method("system", lib, e.method("encode", _shell(marker))))


def _import(e, module: str):
    return e.call("importlib.import_module", module)


def _nested(depth: int):
    """The payload inside an If inside a Loop inside an If ... (`depth` blocks)."""
    def build(e, marker):
        def level(i):
            if i == depth:
                return lambda ed: _tofile_effect(ed, marker)
            inner = level(i + 1)
            return (lambda ed: ed.in_if(inner)) if i % 2 == 0 else (lambda ed: ed.in_loop(inner))
        e.returns(level(0)(e))
    return build


def _in_block(kind: str):
    def build(e, marker):
        e.returns((e.in_if if kind == "if" else e.in_loop)(lambda ed: _tofile_effect(ed, marker)))
    return build


def _raise(name: str):
    def build(e, marker):
        e.returns(e.call("prim::RaiseException", "bye", name))
    return build


def _call(target: str, *args):
    """A row calling `target(*args)`; "{m}" in a string argument becomes the marker path."""
    def fill(a, marker):
        if isinstance(a, list):
            return [fill(x, marker) for x in a]
        return a.format(m=marker) if isinstance(a, str) else a

    def build(e, marker):
        e.returns(e.call(target, *[fill(a, marker) for a in args]))
    return build


def _declare_attribute(e, name: str, value="x"):
    e.payload["module"]["attributes"][name] = {"type": "str", "value": value}


def _getattr_on_tensor(e, marker):
    # "numpy" is made a declared name of the module, then read off a tensor: a bound method
    _declare_attribute(e, "numpy")
    e.returns(e.call("builtins.sorted", [e.x], key=e.call("prim::GetAttr", e.x, "numpy")))


def _module_escape(kind: str):
    def build(e, marker):
        if kind == "list":
            mod = e.call("operator.getitem", e.call("prim::ListConstruct", e.self), 0)
            e.returns(e.method("float", mod))
        elif kind == "return":
            e.returns(e.self)
        elif kind == "print":
            e.returns(e.call("builtins.print", e.self))
        else:   # the module as a getattr receiver: builtins.getattr(self, "data") then .to(...)
            e.returns(e.call("builtins.getattr", e.self, "data"))
    return build


def _format_leak(e, marker):
    fmt = e.const("{0.__class__.__init__.__globals__[os].environ}")
    e.returns(e.method("format", fmt, e.x))


def _format_dynamic(e, marker):
    fmt = e.call("operator.add", "{0.__cl", "ass__}")
    e.returns(e.method("format", fmt, e.x))


def _sorted_methodcaller(e, marker):
    caller = e.call("operator.methodcaller", "tofile", marker)
    e.returns(e.call("builtins.sorted", [e.method("numpy", e.x)], key=caller))


def _sorted_methodcaller_os(e, marker):
    caller = e.call("operator.methodcaller", "system", _shell(marker))
    e.returns(e.call("builtins.sorted", [_import(e, "os")], key=caller))


def _import_system(target: str, module: str):
    def build(e, marker):
        e.returns(e.method("system", e.call(target, module), _shell(marker)))
    return build


def _open_write(target: str):
    def build(e, marker):
        handle = e.call(target, marker, "w")
        e.returns(e.method("close", handle))
    return build


def _pickle_loads(e, marker):
    e.returns(e.call("pickle.loads", e.method("encode", _pickle_bomb(marker), "latin-1")))


def _pathlib(e, marker):
    e.returns(e.method("write_text", e.call("pathlib.Path", marker), "x"))


def _popen(e, marker):
    e.returns(e.method("wait", e.call("subprocess.Popen", ["touch", marker])))


def _fullwidth(e, marker):
    # NFKC turns "ｎｕｍｐｙ" into "numpy" where generated Python source spells the call
    arr = e.method("\uff4e\uff55\uff4d\uff50\uff59", e.x)
    e.returns(e.method("\uff54\uff4f\uff46\uff49\uff4c\uff45", arr, marker))


def _getattr_dunder(e, marker):
    init = e.call("builtins.getattr", e.call("builtins.getattr", e.x, "__class__"), "__init__")
    env = e.call("builtins.getattr", init, "__globals__")
    e.returns(e.method("system", e.call("operator.getitem", env, "os"), _shell(marker)))


def _module_member(name: str, op: str = "prim::GetAttr"):
    def build(e, marker):
        if op == "prim::GetAttr":
            e.returns(e.call(op, e.self, name))
        else:
            e.returns(e.call(op, e.self, name, e.x))
    return build


def _swap_submodule(e, marker):
    # replace the submodule by a tensor, then read a "member" of it through the submodule's names
    e.call("prim::SetAttr", e.self, "inner", e.x)
    e.returns(e.call("prim::GetAttr", e.call("prim::GetAttr", e.self, "inner"), "lin"))


def _prim(target: str, *args):
    def build(e, marker):
        e.returns(e.call(target, *args))
    return build


def _node_kind(op: str, target: str):
    def build(e, marker):
        e.returns(e.add(target, _shell(marker), op=op))
    return build


PAYLOADS = [
    # call_method / getattr chains from a tensor
    Payload("numpy_tofile", "module", _tofile),
    Payload("numpy_ctypes_cdll_system", "module", _ctypes_system),
    Payload("numpy_dump_pickle", "module", lambda e, m: e.returns(e.method("dump", e.method("numpy", e.x), m))),
    Payload("numpy_tofile_function_archive", "function", _tofile),
    Payload("numpy_tofile_in_if_block", "module", _in_block("if")),
    Payload("numpy_tofile_in_loop_body", "function", _in_block("loop")),
    Payload("numpy_tofile_nested_blocks", "module", _nested(3)),
    Payload("fullwidth_method_names_nfkc", "module", _fullwidth),
    Payload("getattr_dunder_globals_os", "module", _getattr_dunder, live=False),
    Payload("getattr_declared_names_on_tensor", "module", _getattr_on_tensor, live=False),
    Payload("sorted_key_methodcaller_tofile", "module", _sorted_methodcaller),
    Payload("sorted_key_methodcaller_os_system", "function", _sorted_methodcaller_os),
    Payload("format_string_reads_globals", "module", _format_leak, live=False),
    Payload("format_string_built_at_run_time", "module", _format_dynamic, live=False),
    # crafted call_function targets
    Payload("builtins_eval", "module", _call("builtins.eval", "open({m!r}, 'w').close()")),
    Payload("builtins_exec", "function", _call("builtins.exec", "open({m!r}, 'w').close()")),
    Payload("builtins_compile_then_exec", "module",
            lambda e, m: e.returns(e.call("builtins.exec", e.call("builtins.compile", f"open({m!r},'w').close()",
                                                                  "p", "exec")))),
    Payload("builtins_open_write", "module", _open_write("builtins.open")),
    Payload("builtins_dunder_import_os", "module", _import_system("builtins.__import__", "os")),
    Payload("importlib_import_module_os", "function", _import_system("importlib.import_module", "os")),
    Payload("importlib_import_module_posix", "module", _import_system("importlib.import_module", "posix")),
    Payload("os_system", "module", _call("os.system", "touch {m}")),
    Payload("posix_system", "function", _call("posix.system", "touch {m}")),
    Payload("subprocess_run", "module", _call("subprocess.run", ["touch", "{m}"])),
    Payload("subprocess_popen", "module", _popen),
    Payload("pickle_loads", "module", _pickle_loads),
    Payload("codecs_open", "module", _open_write("codecs.open")),
    Payload("io_open", "function", _open_write("io.open")),
    Payload("pathlib_write_text", "module", _pathlib),
    Payload("shutil_copyfile", "module", _call("shutil.copyfile", "/dev/null", "{m}")),
    Payload("numpy_savetxt", "module", lambda e, m: e.returns(e.call("numpy.savetxt", m, e.method("numpy", e.x)))),
    Payload("ember_save_writes_file", "module", lambda e, m: e.returns(e.call("ember.save", e.x, m))),
    Payload("ember_load_reads_file", "module", _call("ember.load", "/dev/null"), live=False),
    Payload("ember_jit_load_recursion", "module", _call("ember.jit.load", "/dev/null"), live=False),
    Payload("ember_set_default_dtype", "function", lambda e, m: e.returns(e.call("ember.set_default_dtype",
                                                                                 ember.float64)), live=False),
    Payload("ember_manual_seed", "function", _call("ember.manual_seed", 0), live=False),
    Payload("ember_from_numpy", "module", lambda e, m: e.returns(e.call("ember.from_numpy", e.method("numpy", e.x))),
            live=False),
    Payload("functools_partial", "module", _call("functools.partial", "os.system"), live=False),
    Payload("operator_attrgetter", "module", _call("operator.attrgetter", "numpy"), live=False),
    Payload("math_dunder_loader", "module", _call("math.__loader__.load_module", "os"), live=False),
    Payload("ember_namespace_dunder_builtins", "module", _call("ember.__builtins__.eval", "1"), live=False),
    Payload("unknown_aten_operator", "function", _call("aten::system", "touch {m}"), live=False),
    # process exit
    Payload("raise_system_exit", "module", _raise("SystemExit"), ends_process=True),
    Payload("raise_keyboard_interrupt", "function", _raise("KeyboardInterrupt"), ends_process=True),
    Payload("raise_generator_exit", "module", _raise("GeneratorExit"), ends_process=True),
    Payload("raise_stop_iteration", "module", _raise("StopIteration"), ends_process=True),
    Payload("raise_dotted_name", "module", _raise("os.system"), live=False),
    Payload("sys_exit", "module", _call("sys.exit", 3), ends_process=True),
    Payload("builtins_exit", "function", _call("builtins.exit", 3), ends_process=True),
    # prim ops abused, module members outside the tree
    Payload("getattr_self_dunder_dict", "module", _module_member("__dict__"), live=False),
    Payload("getattr_self_methods_table", "module", _module_member("_methods"), live=False),
    Payload("getattr_self_apply", "module", _module_member("apply"), live=False),
    Payload("getattr_self_forward", "module", _module_member("forward"), live=False),
    Payload("setattr_self_forward", "module", _module_member("forward", "prim::SetAttr"), live=False),
    Payload("setattr_self_training", "module", _module_member("training", "prim::SetAttr"), live=False),
    Payload("setattr_swaps_submodule_for_tensor", "module", _swap_submodule, live=False),
    Payload("getattr_on_function_input", "function", lambda e, m: e.returns(e.call("prim::GetAttr", e.x, "T")),
            live=False),
    Payload("module_escapes_into_list", "module", _module_escape("list"), live=False),
    Payload("module_returned", "module", _module_escape("return"), live=False),
    Payload("module_passed_to_print", "module", _module_escape("print"), live=False),
    Payload("module_as_getattr_receiver", "module", _module_escape("getattr"), live=False),
    Payload("prim_call_method", "module", lambda e, m: e.returns(e.call("prim::CallMethod", e.self, "forward", e.x)),
            live=False),
    Payload("prim_call_function", "function", _prim("prim::CallFunction", 1), live=False),
    Payload("prim_fusion_group", "function", _prim("prim::FusionGroup", 1), live=False),
    Payload("prim_type_check", "function", _prim("prim::TypeCheck", 1), live=False),
    Payload("prim_profile", "function", _prim("prim::profile", 1), live=False),
    Payload("node_kind_get_attr", "module", _node_kind("get_attr", "os.system"), live=False),
    Payload("node_kind_call_module", "module", _node_kind("call_module", "os"), live=False),
]
