"""GraphModule: an ember.nn.Module whose forward is Python generated from a Graph.

    gm = GraphModule(root_module, graph)
    print(gm.code)          # def forward(self, x): ...
    gm(ember.randn(3))      # runs the generated forward
    gm.print_readable()     # the same code as a class, with "f32[4, 4]" annotations from node.meta

It owns what the graph reads: every get_attr/call_module target is copied from `root` (a Module or
a dict name -> value), creating empty intermediate Modules for dotted paths (`layers.0.weight`).
"""
from __future__ import annotations

import copy
import importlib
import itertools
from typing import Any

from ..nn.modules.module import Module
from ..nn.parameter import Parameter
from .._core.tensor import Tensor
from .graph import Graph
from .node import _get_qualified_name, _is_operator_handle, map_arg

_eval_counter = itertools.count()


def _exec_forward(src: str, globals_: dict):
    """exec the generated source under a fake file name that linecache knows (readable tracebacks)."""
    from ._codegen import PythonCode, load_function
    return load_function(PythonCode(src, globals_), f"<eval_with_key>.{next(_eval_counter)}")


def _forward_generated_on_first_call(self, *args, **kwargs):
    """A lazily recompiled GraphModule's forward until its code exists (also reached later through
    a bound method taken before the first call)."""
    if "_code" not in self.__dict__:
        self.recompile()
    return type(self).forward(self, *args, **kwargs)


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Copy `target` (a dotted path) from one module to another, creating empty Modules between."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:  # this whole subtree was copied already
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    _assign_field(getattr(from_module, field), to_module, field)


def _assign_attr(value: Any, to_module: Module, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    _assign_field(value, to_module, field)


def _assign_field(value: Any, to_module: Module, field: str) -> None:
    # plain tensors become buffers so .to()/state_dict see them, like torch
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        to_module.register_buffer(field, value)
    else:
        setattr(to_module, field, value)


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    # blank lines stay empty (torch's nn.Module _addindent)
    return lines[0] + "\n" + "\n".join(" " * num_spaces + line if line.strip() else "" for line in lines[1:])


class GraphModule(Module):
    """A Module running the code generated from `graph`; `root` supplies its attributes.

        gm = GraphModule(model, graph); gm(x)
    """

    def __new__(cls, *args, **kwargs):
        # Each instance gets its own class so recompile() can set `forward` on the class
        # (Module.__call__ looks it up there) without touching other GraphModules.
        if cls.__dict__.get("_is_graph_module_impl"):
            cls = cls.__bases__[0]
        impl = type(cls.__name__, (cls,), {"_is_graph_module_impl": True, "__module__": cls.__module__})
        return super().__new__(impl)

    def __init__(self, root: Module | dict, graph: Graph, class_name: str = "GraphModule", *,
                 lazy_recompile: bool = False):
        super().__init__()
        # lazy_recompile: forward's code is generated on first use (a call, .code, recompile()), as
        # PyTorch's _LazyGraphModule: the compiler's graphs that a warm start never runs (dynamo's
        # capture when the AOT cache has its traced graphs; those when the graph cache has their
        # wrappers) cost no code generation
        self.__dict__["_lazy_recompile"] = lazy_recompile
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        self.__dict__["_class_name"] = class_name
        self.__dict__["meta"] = {}
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if not isinstance(node.target, str):
                        raise TypeError(f"GraphModule: node {node.name} target must be a str")
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node.name} referenced target {node.target} but that "
                                           "target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError(f"GraphModule: unsupported type {type(root).__name__} for root "
                               "(expected an ember.nn.Module or a dict)")
        self.graph = graph

    # -- graph / code ------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The Graph this module runs; assigning a new one regenerates `forward`."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph: expected an ember.fx.Graph, got {type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        if self.__dict__.get("_lazy_recompile"):
            self.__dict__.pop("_code", None)
            type(self).forward = _forward_generated_on_first_call
        else:
            self.recompile()

    @property
    def code(self) -> str:
        """The Python source of `forward`, generated from the graph.

            print(gm.code)
        """
        if "_code" not in self.__dict__:
            if not self.__dict__.get("_lazy_recompile"):
                raise RuntimeError("GraphModule.code: no code yet; call recompile()")
            self.recompile()
        return self.__dict__["_code"]

    def recompile(self):
        """Regenerate `forward` from `self.graph` (call after editing the graph); returns PythonCode.

            gm.graph.eliminate_dead_code(); gm.recompile()
        """
        python_code = self.graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        self.__dict__["_lineno_map"] = python_code._lineno_map
        type(self).forward = _exec_forward(python_code.src, python_code.globals)
        return python_code

    def _get_name(self) -> str:
        return self.__dict__.get("_class_name", type(self).__name__)

    # -- printing ----------------------------------------------------------------------------
    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The module as a class with annotated, commented code (torch 2.13's layout).

            gm.print_readable()
            # class GraphModule(ember.nn.Module):
            #     def forward(self, x: "f32[3]"):
            #         ...
        """
        if include_stride or include_device or colored:
            raise NotImplementedError("GraphModule.print_readable: include_stride/include_device/colored")
        text = _print_readable(self, self._get_name())
        if print_output:
            print(text)
        return text

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self.code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    # -- copying -----------------------------------------------------------------------------
    def __deepcopy__(self, memo):
        res = type(self).__bases__[0].__new__(type(self).__bases__[0])
        memo[id(self)] = res
        fake = Module()
        skip = {"_graph", "_code", "_lineno_map"}
        fake.__dict__.update(copy.deepcopy({k: v for k, v in self.__dict__.items() if k not in skip}, memo))
        GraphModule.__init__(res, fake, copy.deepcopy(self.graph, memo), self._get_name())
        for k, v in fake.__dict__.items():
            if k not in res.__dict__:
                res.__dict__[k] = v
        res.__dict__["meta"] = copy.deepcopy(self.__dict__.get("meta", {}), memo)
        return res

    def __copy__(self):
        res = GraphModule(self, self.graph, self._get_name())
        res.__dict__["meta"] = dict(self.meta)
        return res

    def __reduce__(self):
        # The per-instance class and the compiled forward are not picklable; the graph is stored as
        # portable node records and forward is regenerated from it on load.
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code", "_lineno_map")}
        return (_rebuild_graph_module, (state, _graph_to_records(self.graph), self._get_name()))


def _print_readable(module: GraphModule, name: str) -> str:
    src = module.graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
    code = _addindent(f"class {name}(ember.nn.Module):\n" + src, 4)
    parts = [""]
    for child_name, child in module.named_children():
        if isinstance(child, GraphModule):
            parts.append(_print_readable(child, child_name))
    return code + _addindent("\n".join(parts), 4)


# ---------------------------------------------------------------------------------------------
# pickling: a graph as records of plain data
# ---------------------------------------------------------------------------------------------
_OP_TAG, _FN_TAG = "__fx_op__", "__fx_fn__"


def _portable_target(target: Any):
    """An OperatorHandle or an importable function as a (tag, dotted name) pair; strings stay."""
    if isinstance(target, str):
        return target
    if _is_operator_handle(target):
        return (_OP_TAG, target.name)
    name = _get_qualified_name(target)
    try:
        if _resolve_name(name) is target:
            return (_FN_TAG, name)
    except (ImportError, AttributeError):
        pass
    return target  # not reachable by name: left to pickle itself (fails loudly if it cannot)


def _resolve_name(name: str):
    import builtins
    if "." not in name:
        return getattr(builtins, name)
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(f"cannot import {name}")


def _resolve_target(t: Any):
    if isinstance(t, tuple) and len(t) == 2 and t[0] == _OP_TAG:
        ns, rest = t[1].split("::", 1)
        op, _, overload = rest.partition(".")
        import ember
        return getattr(getattr(getattr(ember.ops, ns), op), overload or "default")
    if isinstance(t, tuple) and len(t) == 2 and t[0] == _FN_TAG:
        return _resolve_name(t[1])
    return t


def _portable_value(v: Any):
    if _is_operator_handle(v) or (callable(v) and not isinstance(v, (type, Tensor)) and hasattr(v, "__name__")):
        return ("__fx_target__", _portable_target(v))
    return v


def _graph_to_records(graph: Graph) -> list:
    import pickle
    records = []
    for n in graph.nodes:
        conv = lambda a: map_arg(a, lambda x: ("__fx_node__", x.name))  # noqa: E731
        from .node import map_aggregate
        args = map_aggregate(conv(n.args), _portable_value)
        kwargs = map_aggregate(conv(n.kwargs), _portable_value)
        meta = {}
        for k, v in n.meta.items():  # keep what pickles (stack traces, shapes); drop the rest
            try:
                pickle.dumps(v)
                meta[k] = v
            except Exception:
                pass
        records.append((n.op, n.name, _portable_target(n.target), args, kwargs, n.type, meta))
    return records


def _records_to_graph(records: list) -> Graph:
    from .node import map_aggregate
    g = Graph()
    env: dict = {}

    def load(v):
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "__fx_node__":
            return env[v[1]]
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "__fx_target__":
            return _resolve_target(v[1])
        return v

    def walk(a):
        if isinstance(a, tuple) and len(a) == 2 and a[0] in ("__fx_node__", "__fx_target__"):
            return load(a)
        if isinstance(a, (tuple, list)) and not hasattr(a, "_fields"):
            return type(a)(walk(e) for e in a)
        if isinstance(a, dict):
            return {k: walk(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(walk(a.start), walk(a.stop), walk(a.step))
        return map_aggregate(a, lambda x: x)

    for op, name, target, args, kwargs, type_expr, meta in records:
        node = g.create_node(op, _resolve_target(target), walk(args), walk(kwargs), name, type_expr)
        node.meta = meta
        env[name] = node
    return g


def _rebuild_graph_module(state: dict, records: list, class_name: str) -> GraphModule:
    fake = Module()
    fake.__dict__.update(state)
    gm = GraphModule(fake, _records_to_graph(records), class_name)
    for k, v in state.items():
        if k not in gm.__dict__:
            gm.__dict__[k] = v
    return gm
