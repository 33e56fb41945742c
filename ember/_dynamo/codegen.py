"""PyCodegen: emits the bytecode that rebuilds trackers after the compiled graph has run.

    cg = PyCodegen(tx, graph_outputs={node: index}, output_name="__graph_out")
    cg.reconstruct(tensor_var)     # LOAD_FAST __graph_out; LOAD_CONST i; BINARY_SUBSCR
    cg.reconstruct(list_var)       # each item, then BUILD_LIST n
    cg.instructions                # the emitted Instruction list

Values that live in the frame are loaded from their source (L['a'] -> LOAD_FAST a, G['torch'] ->
LOAD_GLOBAL torch, ...); Python objects without a source are placed in the frame's globals under a
fresh name (new_globals) and loaded from there.
"""
from __future__ import annotations

from .bytecode_transformation import (create_call_function, create_instruction, create_load_const,
                                      create_load_global, unique_id)
from .exc import unimplemented


class PyCodegen:
    def __init__(self, tx, graph_outputs=None, output_name=None):
        self.tx = tx
        self.graph_outputs = graph_outputs or {}     # fx Node -> index in the compiled function's result
        self.output_name = output_name
        self.instructions: list = []
        self.tempvars: dict = {}     # id(tracker) -> local holding the object it rebuilt (keeps aliasing)

    # -------------------------------------------------------------- raw emission (also used by Source.reconstruct)
    def append_output(self, inst):
        self.instructions.append(inst)

    def extend_output(self, insts):
        self.instructions.extend(insts)

    def create_load(self, name):
        return create_instruction("LOAD_FAST", argval=name)

    def load_const(self, value):
        self.append_output(create_load_const(value))

    def load_fast(self, name):
        """LOAD_FAST, or LOAD_DEREF for a local that is a cell (captured by an inner function)."""
        self.append_output(load_local(self.tx.output.code, name))

    def store_fast(self, name):
        cell = name in self.tx.output.code.co_cellvars
        self.append_output(create_instruction("STORE_DEREF" if cell else "STORE_FAST", argval=name))

    def load_global(self, name, push_null=False):
        self.append_output(create_load_global(name, push_null))

    def store_global(self, name):
        self.append_output(create_instruction("STORE_GLOBAL", argval=name))

    def load_attr(self, name):
        self.append_output(create_instruction("LOAD_ATTR", argval=name))

    def store_attr(self, name):
        self.append_output(create_instruction("STORE_ATTR", argval=name))

    def load_deref(self, name):
        self.append_output(create_instruction("LOAD_DEREF", argval=name))

    def subscr(self):
        self.append_output(create_instruction("BINARY_SUBSCR"))

    def push_null(self):
        self.append_output(create_instruction("PUSH_NULL"))

    def dup_top(self):
        self.append_output(create_instruction("COPY", arg=1))

    def new_temp(self, prefix: str) -> str:
        """A fresh local name for a value the emitted code needs again later."""
        return unique_id(prefix)

    def pop_top(self):
        self.append_output(create_instruction("POP_TOP"))

    def build(self, opname, n):
        self.append_output(create_instruction(opname, arg=n))

    def call(self, nargs, push_null=True):
        """Call the callable below nargs arguments (push_null: it was loaded without its NULL)."""
        self.extend_output(create_call_function(nargs, push_null))

    def load_python_value(self, value, push_null=False):
        """Load an object that has no source: it goes into the frame's globals under a fresh name.

        Only objects that are the same on every call may be baked in like this; a bound method of
        a per-call object (``obj.apply``) would serve the first call's object to later calls."""
        if not _safe_to_bake(value):
            if self._rebind_method(value, push_null):
                return
            unimplemented(f"cannot rebuild a {type(value).__name__} that has no source after a graph break")
        name = self.tx.output.global_name_for(value)
        self.load_global(name, push_null)

    def _rebind_method(self, method, push_null) -> bool:
        """Rebuild a bound method of a per-call object from the object's source, at run time:
        ``types.MethodType(func, <load source of __self__>)``. The function part is baked (it is the
        class's function, or the compile-entry wrapper of it, the same for every call the guards admit);
        the object is read afresh on every call, so no call ever sees an earlier call's object.
        Returns False when ``__self__`` was neither read from the frame (no source to load it from) nor
        made during capture (a NewUserObjectVariable, rebuilt from its tracker)."""
        import types
        if not isinstance(method, types.MethodType) or not _safe_to_bake(method.__func__):
            return False
        cached = self.tx.output.variable_cache.get(id(method.__self__))
        if cached is None or cached[0] is not method.__self__:
            return False
        owner = cached[1]
        # an object made during capture has no source but rebuilds itself (once, aliasing kept)
        if owner.source is None and not getattr(owner, "rebuilds_itself", False):
            return False
        if push_null:   # the caller's NULL goes under the rebuilt method
            self.push_null()
        self.load_global(self.tx.output.global_name_for(types.MethodType), push_null=True)
        self.load_global(self.tx.output.global_name_for(method.__func__))
        if owner.source is not None:
            self.load_source(owner.source)
        else:
            self.reconstruct(owner)
        self.call(2, push_null=False)
        return True

    # -------------------------------------------------------------- sources and trackers
    def load_source(self, source):
        """Emit bytecode that loads the value at ``source`` (a source.py Source)."""
        kind = type(source).__name__
        if kind == "LocalSource":
            return self.load_fast(source.local_name)
        if kind == "GlobalSource":
            return self.load_global(source.global_name)
        if kind == "AttrSource":
            self.load_source(source.base)
            return self.load_attr(source.member)
        if kind == "GetItemSource":
            self.load_source(source.base)
            self.load_const(source.index)
            return self.subscr()
        if kind == "ClosureCellSource":
            return self.load_deref(source.name if hasattr(source, "name") and isinstance(source.name, str)
                                   else source.cell_name)
        reconstruct = getattr(source, "reconstruct", None)
        if reconstruct is None:
            unimplemented(f"cannot load {source!r} in bytecode")
        reconstruct(self)

    def reconstruct(self, vt):
        from .variables import TensorVariable
        if isinstance(vt, TensorVariable):
            if vt.source is not None:
                return self.load_source(vt.source)
            index = self.graph_outputs.get(vt.proxy)
            if index is None:
                unimplemented(f"tensor {vt.proxy} is not an output of the graph")
            self.load_fast(self.output_name)
            self.load_const(index)
            return self.subscr()
        if vt.source is None and _is_new_container(vt):
            # a list/dict/set/iterator made in the frame and held twice (b = a; a callee's argument
            # and a local) must be rebuilt once
            cached = self.tempvars.get(id(vt))
            if cached == "":
                unimplemented("rebuilding a container that contains itself")
            if cached:
                return self.load_fast(cached)
            self.tempvars[id(vt)] = ""
            vt.reconstruct(self)
            name = self.new_temp("___new_container")
            self.dup_top()
            self.store_fast(name)
            self.tempvars[id(vt)] = name
            return
        vt.reconstruct(self)


def _is_new_container(vt) -> bool:
    from .variables.dicts import ConstDictVariable
    from .variables.iterators import IteratorVariable
    from .variables.lists import ListVariable
    from .variables.sets import SetVariable
    return isinstance(vt, (ListVariable, ConstDictVariable, IteratorVariable)) or (
        isinstance(vt, SetVariable) and not vt.frozen)


def load_local(code, name):
    """The instruction that reads local ``name`` of ``code`` (cells after MAKE_CELL need LOAD_DEREF)."""
    return create_instruction("LOAD_DEREF" if name in code.co_cellvars else "LOAD_FAST", argval=name)


def fresh_global_name(prefix: str) -> str:
    return unique_id(prefix)


def _safe_to_bake(value) -> bool:
    """True for values that stay valid for every call the guards admit: immutable constants,
    functions, classes, modules and builtins; not bound methods of ordinary objects."""
    import types
    if isinstance(value, types.MethodType):
        return isinstance(value.__self__, (type, types.ModuleType))
    if isinstance(value, (tuple, frozenset)):
        return all(_safe_to_bake(v) for v in value)
    return True
