"""Proxy: the stand-in value that flows through a program while ``symbolic_trace`` records it.

A ``Proxy`` wraps one ``Node`` of the graph being built. Everything a program does to it is
recorded instead of computed:

    tensor methods      x.relu()            call_method   target "relu"
    attributes          x.shape             call_function target builtins.getattr
    operators           x + 1, 2 * x, -x    call_function target operator.add / operator.mul / ...
    in-place operators  x += 1, x[0] = 2    call_function target operator.iadd / operator.setitem
    ember functions     ember.sigmoid(x)    call_function target ember.sigmoid (see _symbolic_trace)

What cannot be recorded is a Python construct that needs a concrete value now: ``if x.sum() > 0``
(``__bool__``), ``for row in x`` (``__iter__``), ``len(x)``, ``range(x.size(0))`` (``__index__``),
``float(x)``, ``y in x``, ``f(**x)``. These raise ``TraceError`` naming the construct and the
user's file, line and source text.

    >>> from ember.fx import symbolic_trace
    >>> def f(x):
    ...     if x.sum() > 0:
    ...         return x
    >>> symbolic_trace(f)   # TraceError: ... line 2 ... `if x.sum() > 0:` ...
"""
from __future__ import annotations

import builtins
import copy
import dis
import linecache
import operator
import os
import sys

from .._core.dispatch import DispatchKey

__all__ = ["Proxy", "Attribute", "ParameterProxy", "TraceError", "GraphAppendingTracer", "user_frame",
           "format_frames"]

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class TraceError(ValueError):
    """A traced program needed a concrete value (control flow, iteration, len, ...) of a Proxy."""


# -- where in the user's program are we? -------------------------------------------------------
def user_frame(frame=None):
    """The innermost frame (starting at `frame`, default the caller) whose code is not ember's own.

    >>> user_frame().f_code.co_filename   # the file that called it
    """
    f = frame if frame is not None else sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_EMBER_DIR):
        f = f.f_back
    return f


def _frame_line(f) -> tuple[str, int, str, str]:
    filename, lineno, name = f.f_code.co_filename, f.f_lineno, f.f_code.co_name
    return filename, lineno, name, linecache.getline(filename, lineno).strip()


def format_frames(frames) -> str:
    """PyTorch's stack-trace text for `frames` (outermost first):

    '  File "/path/x.py", line 9, in fn\\n    return a + b\\n'
    """
    parts = []
    for f in frames:
        filename, lineno, name, src = _frame_line(f)
        parts.append(f'  File "{filename}", line {lineno}, in {name}\n')
        if src:
            parts.append(f"    {src}\n")
    return "".join(parts)


# Which Python construct needed a concrete value, by the Proxy hook Python called.
_CONSTRUCTS = {
    "__bool__": "control flow on a traced value: an `if`/`while`/`assert` condition, `and`/`or`/`not`, "
                "or bool() needs a concrete Python bool",
    "__iter__": "iterating a traced value: a `for` loop, `*x` unpacking or list(x) needs its concrete "
                "length (unpacking into a fixed number of names, `a, b = x`, is supported)",
    "__len__": "len() of a traced value needs a concrete length (call ember.fx.wrap('len') at module "
               "scope to record len calls instead)",
    "__index__": "using a traced value as a Python int (range(), a list index, a size argument of a "
                 "non-ember function) needs a concrete value",
    "__int__": "int() of a traced value needs a concrete value",
    "__float__": "float() of a traced value needs a concrete value",
    "__complex__": "complex() of a traced value needs a concrete value",
    "__contains__": "the `in` operator on a traced value needs a concrete value",
    "keys": "`**` unpacking of a traced value needs its concrete keys",
}


def _trace_error(proxy, hook: str) -> TraceError:
    where = ""
    f = user_frame(sys._getframe(2))
    if f is not None:
        filename, lineno, name, src = _frame_line(f)
        where = f'\n  File "{filename}", line {lineno}, in {name}\n    {src}'
    return TraceError(f"symbolic_trace: {_CONSTRUCTS[hook]}; it got {proxy!r}, which only exists "
                      f"symbolically.{where}\nMake the value a concrete_args entry, move the code into "
                      f"a function registered with ember.fx.wrap, or rewrite it without Python control "
                      f"flow (e.g. ember.where).")


def _unpack_count(frame) -> int | None:
    """If `frame` is executing UNPACK_SEQUENCE (``a, b = proxy``), how many names it unpacks into."""
    code, lasti = frame.f_code, frame.f_lasti
    for inst in dis.get_instructions(code):   # f_lasti is the byte offset of the running instruction
        if inst.offset == lasti:
            return inst.argval if inst.opname == "UNPACK_SEQUENCE" else None
    return None


class Proxy:
    """Stands for the value of `node` while `tracer` records the program (see module docstring).

    >>> g = ember.fx.Graph(); p = Proxy(g.placeholder("x"))
    >>> (p + 1).node.target        # operator.add
    """

    def __init__(self, node, tracer=None):
        if tracer is None:          # a Proxy around a raw Node appends to that node's graph
            tracer = GraphAppendingTracer(node.graph)
        self.tracer = tracer
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    __hash__ = object.__hash__      # `==` is recorded (operator.eq), identity is the hash

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            # protocol probes (numpy's __array__, copy's __reduce_ex__ ...) must not become nodes
            raise AttributeError(name)
        return Attribute(self, name)

    # An ember operator reached without the trace's patched names (a reference taken before tracing,
    # `mm = ember.mm`; or a Proxy built by hand, outside symbolic_trace) reads its arguments' dispatch
    # keys: a Proxy answers the Python key, whose fallback (ember/utils/_python_dispatch.py) hands the
    # call to `__ember_dispatch__`, which records it as call_function of the aten operator, as
    # torch.fx records torch functions through Proxy.__torch_function__.
    _keys = 1 << DispatchKey.Python

    @staticmethod
    def __ember_dispatch__(op, args, kwargs):
        from ._symbolic_trace import _find_proxy
        return _find_proxy(args, kwargs).tracer.create_proxy("call_function", op, args, kwargs)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    # -- constructs that need a concrete value ---------------------------------------------------
    def __iter__(self):
        n = _unpack_count(sys._getframe(1))
        if n is not None:                      # `a, b = proxy`: the count is in the bytecode
            return iter([self[i] for i in range(n)])
        raise _trace_error(self, "__iter__")

    def __bool__(self):
        raise _trace_error(self, "__bool__")

    def __len__(self):
        raise _trace_error(self, "__len__")

    def __index__(self):
        raise _trace_error(self, "__index__")

    def __int__(self):
        raise _trace_error(self, "__int__")

    def __float__(self):
        raise _trace_error(self, "__float__")

    def __complex__(self):
        raise _trace_error(self, "__complex__")

    def __contains__(self, item):
        raise _trace_error(self, "__contains__")

    def keys(self):
        raise _trace_error(self, "keys")

    # -- copying and pickling: plain attribute dicts (and no __getattr__ detours) ---------------
    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, state):
        self.__dict__ = state

    def __deepcopy__(self, memo):
        new = object.__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            try:
                new.__dict__[k] = copy.deepcopy(v, memo)
            except Exception:       # e.g. a tracer holding unpicklable state: share it
                new.__dict__[k] = v
        return new


class Attribute(Proxy):
    """``proxy.name``: a method call when called (call_method), else a getattr node made on first use."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", builtins.getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)

    def __repr__(self):
        return f"Attribute({self.root!r}.{self.attr})"


class ParameterProxy(Proxy):
    """A get_attr Proxy of a Parameter whose shape questions (shape, size(), dim(), ndim, numel())
    are answered from the real parameter, so ``if self.weight.dim() == 2:`` traces
    (``Tracer(param_shapes_constant=True)``)."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    @property
    def ndim(self):
        return self.param.ndim

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


# -- operators --------------------------------------------------------------------------------
# Python operator -> the `operator` function recorded; reflected forms swap the operands, in-place
# forms record operator.i* (ember tensors mutate in place, as in eager; torch.fx records x = x + 1).
_BINARY = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_", "or_",
           "xor", "matmul")
_COMPARE = ("eq", "ne", "lt", "gt", "le", "ge", "getitem")
_UNARY = ("neg", "pos", "invert", "abs")
_INPLACE = ("iadd", "isub", "imul", "ifloordiv", "itruediv", "imod", "ipow", "ilshift", "irshift", "iand",
            "ior", "ixor", "imatmul")


def _dunder(name: str) -> str:
    return f"__{name.strip('_')}__"


def _install_operators():
    def forward(target):
        def impl(self, *args):
            return self.tracer.create_proxy("call_function", target, (self,) + args, {})
        return impl

    def reflected(target):
        def impl(self, other):
            return self.tracer.create_proxy("call_function", target, (other, self), {})
        return impl

    for name in _BINARY + _COMPARE + _UNARY + _INPLACE:
        impl = forward(getattr(operator, name))
        impl.__name__ = impl.__qualname__ = _dunder(name)
        setattr(Proxy, impl.__name__, impl)
    for name in _BINARY:
        impl = reflected(getattr(operator, name))
        impl.__name__ = impl.__qualname__ = f"__r{name.strip('_')}__"
        setattr(Proxy, impl.__name__, impl)

    def setitem(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})
    Proxy.__setitem__ = setitem
    Proxy.__div__ = Proxy.__truediv__
    Proxy.__rdiv__ = Proxy.__rtruediv__


_install_operators()


class GraphAppendingTracer:
    """The minimal tracer a Proxy made around a raw Node uses: appends nodes to `graph`.

    >>> g = Graph(); x = Proxy(g.placeholder("x")); g.output((x * 2).node)
    """

    def __init__(self, graph):
        self.graph = graph
        self.root = None
        self.scope = None

    def create_node(self, op, target, args, kwargs, name=None, type_expr=None):
        return self.graph.create_node(op, target, args, kwargs, name, type_expr)

    def create_arg(self, a):
        from .node import map_aggregate   # Proxies inside nested args become their nodes
        return map_aggregate(a, lambda v: v.node if isinstance(v, Proxy) else v)

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, op, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        node = self.create_node(op, target, self.create_arg(args), self.create_arg(kwargs), name, type_expr)
        return proxy_factory_fn(node) if proxy_factory_fn is not None else self.proxy(node)
