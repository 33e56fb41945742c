"""Script-IR graphs built by hand with the ir builder helpers, as the frontend would emit them.

Each builder returns (graph, schema, eager) where `eager` is the same program in plain Python,
so tests can check printing, code, evaluate and save/load without the frontend. Used by
test_printer.py, test_save_load.py and test_ir.py.
"""
import math
import operator

import ember
import ember.nn.functional as F
from ember.jit import ir
from ember.jit.ir import prim
from ember.jit.ir.types import (Argument, BoolType, DictType, DTypeType, FloatType, IntType, ListType, ModuleType,
                                NoneType, Signature, StrType, TensorType, TupleType)

T = TensorType()
FILE = "prog.py"


def _named(node, name):
    node.meta["jit_name"] = name
    return node


def _input(g, name, typ):
    return _named(g.placeholder(name, type_expr=typ), name)


def seed():
    """Seed 001's example: c = a + b; d = c * c; e = tanh(d * c); return d + (e + e)."""
    g = ir.new_graph()
    a, b = _input(g, "a", T), _input(g, "b", T)
    c = _named(ir.call(g, operator.add, (a, b), type_=T, loc=(FILE, 5, 8)), "c")
    d = _named(ir.call(g, operator.mul, (c, c), type_=T, loc=(FILE, 6, 8)), "d")
    t = ir.call(g, operator.mul, (d, c), type_=T, loc=(FILE, 7, 19))
    e = _named(ir.call(g, ember.tanh, (t,), type_=T, loc=(FILE, 7, 8)), "e")
    ee = ir.call(g, operator.add, (e, e), type_=T, loc=(FILE, 8, 16))
    g.output(ir.call(g, operator.add, (d, ee), type_=T, loc=(FILE, 8, 11)))

    def eager(a, b):
        c = a + b
        d = c * c
        e = ember.tanh(d * c)
        return d + (e + e)
    return g, Signature("seed", (Argument("a", T), Argument("b", T)), T), eager


def if_loop():
    """if bool(x.sum() > 0): y = relu(x) else: y = x * 2.0; for i in range(n): y = y + i;
    j = 0; while j < 3: j += 1; y = y - 1; return y, j   (TorchScript's IR for it)."""
    g = ir.new_graph()
    x, n = _input(g, "x", T), _input(g, "n", IntType())
    true = ir.constant(g, True)
    zero = ir.constant(g, 0)
    s = ir.call(g, "sum", (x,), type_=T, loc=(FILE, 12, 12))
    gt = ir.call(g, operator.gt, (s, zero), type_=T, loc=(FILE, 12, 12))
    cond = ir.call(g, bool, (gt,), type_=BoolType(), loc=(FILE, 12, 7))
    if_node, (y0,) = ir.add_if(g, cond, [T], loc=(FILE, 12, 4))
    _named(y0, "y")
    then_b, else_b = if_node.blocks
    r = _named(ir.call(then_b, ember.relu, (x,), type_=T, loc=(FILE, 13, 12)), "y")
    ir.set_block_returns(then_b, [r])
    two = ir.constant(else_b, 2.0)
    m = _named(ir.call(else_b, operator.mul, (x, two), type_=T, loc=(FILE, 15, 12)), "y")
    ir.set_block_returns(else_b, [m])
    loop, (y1,) = ir.add_loop(g, n, true, [y0], [T], loc=(FILE, 16, 4))
    _named(y1, "y")
    body = loop.blocks[0]
    i, yc = ir.block_params(body)
    _named(i, "i"), _named(yc, "y")
    y2 = _named(ir.call(body, operator.add, (yc, i), type_=T, loc=(FILE, 17, 12)), "y")
    ir.set_block_returns(body, [true, y2])
    huge = ir.constant(g, 2 ** 63 - 1)
    three, one = ir.constant(g, 3), ir.constant(g, 1)
    wloop, (y3, j3) = ir.add_loop(g, huge, true, [y1, zero], [T, IntType()], loc=(FILE, 19, 4))
    _named(y3, "y"), _named(j3, "j")
    wbody = wloop.blocks[0]
    _, yw, jw = ir.block_params(wbody)
    _named(yw, "y"), _named(jw, "j")
    j4 = _named(ir.call(wbody, operator.add, (jw, one), type_=IntType(), loc=(FILE, 20, 8)), "j")
    y4 = _named(ir.call(wbody, operator.sub, (yw, one), type_=T, loc=(FILE, 21, 12)), "y")
    c4 = ir.call(wbody, operator.lt, (j4, three), type_=BoolType(), loc=(FILE, 19, 10))
    ir.set_block_returns(wbody, [c4, y4, j4])
    tup = ir.call(g, prim.TupleConstruct, (y3, j3), type_=TupleType((T, IntType())))
    g.output(tup)

    def eager(x, n):
        if bool(x.sum() > 0):
            y = ember.relu(x)
        else:
            y = x * 2.0
        for i in range(n):
            y = y + i
        j = 0
        while j < 3:
            j += 1
            y = y - 1
        return y, j
    return g, Signature("if_loop", (Argument("x", T), Argument("n", IntType(), 2)),
                        TupleType((T, IntType()))), eager


def misc():
    """Lists, dicts, builtins, math, getattr(x, 'dtype'), methods with literal args, slices."""
    g = ir.new_graph()
    x, k = _input(g, "x", T), _input(g, "k", IntType())
    two = ir.constant(g, 2)
    xs = _named(ir.call(g, prim.ListConstruct, (k, two), type_=ListType(IntType())), "xs")
    ir.call(g, "append", (xs, 3), type_=NoneType())
    n = _named(ir.call(g, len, (xs,), type_=IntType()), "n")
    m = _named(ir.call(g, max, (n, k), type_=IntType()), "m")
    s = ir.call(g, math.sqrt, (ir.call(g, float, (m,), type_=FloatType()),), type_=FloatType())
    dt = ir.call(g, getattr, (x, "dtype"), type_=DTypeType())
    z = ir.call(g, "to", (x, dt), type_=T)
    sh = ir.call(g, "size", (x,), type_=ListType(IntType()))
    first = ir.call(g, operator.getitem, (sh, 0), type_=IntType())
    v = ir.call(g, "view", (z, -1), type_=T)
    sl = ir.call(g, operator.getitem, (v, slice(0, 2, None)), type_=T)
    out = ir.call(g, F.relu, (ir.call(g, operator.mul, (sl, s), type_=T),), type_=T)
    key = ir.constant(g, "a")
    d = ir.call(g, prim.DictConstruct, (key, out, ir.constant(g, "b"), v), type_=DictType(StrType(), T))
    item = ir.call(g, operator.getitem, (d, key), type_=T)
    g.output(ir.call(g, prim.TupleConstruct, (item, first, m), type_=TupleType((T, IntType(), IntType()))))

    def eager(x, k):
        xs = [k, 2]
        xs.append(3)
        m = max(len(xs), k)
        d = {"a": F.relu(x.to(x.dtype).view(-1)[0:2] * math.sqrt(float(m))), "b": x.view(-1)}
        return d["a"], x.size()[0], m
    return g, Signature("misc", (Argument("x", T), Argument("k", IntType())),
                        TupleType((T, IntType(), IntType()))), eager


def raises():
    """if k > 0: return x * 2 else: raise ValueError("k must be positive")."""
    g = ir.new_graph()
    x, k = _input(g, "x", T), _input(g, "k", IntType())
    cond = ir.call(g, operator.gt, (k, ir.constant(g, 0)), type_=BoolType())
    if_node, (out,) = ir.add_if(g, cond, [T])
    then_b, else_b = if_node.blocks
    ir.set_block_returns(then_b, [ir.call(then_b, operator.mul, (x, 2), type_=T)])
    ir.call(else_b, prim.RaiseException, ("k must be positive", "ValueError"), type_=NoneType())
    ir.set_block_returns(else_b, [ir.call(else_b, prim.Uninitialized, (), type_=T)])
    g.output(out)

    def eager(x, k):
        if k > 0:
            return x * 2
        raise ValueError("k must be positive")
    return g, Signature("raises", (Argument("x", T), Argument("k", IntType())), T), eager


class Cell(ember.nn.Module):
    """h' = tanh(lin(x) + h * scale) + bias; the graph below is what scripting forward gives."""

    def __init__(self):
        super().__init__()
        self.lin = ember.nn.Linear(3, 3)
        self.bias = ember.nn.Parameter(ember.randn(3))
        self.register_buffer("steps", ember.zeros(()))
        self.scale = 0.5

    def forward(self, x, h):
        return ember.tanh(self.lin(x) + h * self.scale) + self.bias


def cell_graph():
    """Cell.forward's graph with the submodule call inlined (GetAttr chains from self)."""
    g = ir.new_graph()
    self_ = g.placeholder("self", type_expr=ModuleType("ir_programs.Cell"))
    x, h = _input(g, "x", T), _input(g, "h", T)
    lin = _named(ir.call(g, prim.GetAttr, (self_, "lin"), type_=ModuleType("ember.nn.modules.linear.Linear")), "lin")
    w = _named(ir.call(g, prim.GetAttr, (lin, "weight"), type_=T), "weight")
    b = _named(ir.call(g, prim.GetAttr, (lin, "bias"), type_=T), "bias")
    y = ir.call(g, F.linear, (x, w, b), type_=T)
    scale = _named(ir.call(g, prim.GetAttr, (self_, "scale"), type_=FloatType()), "scale")
    hs = ir.call(g, operator.mul, (h, scale), type_=T)
    t = ir.call(g, ember.tanh, (ir.call(g, operator.add, (y, hs), type_=T),), type_=T)
    bias = ir.call(g, prim.GetAttr, (self_, "bias"), type_=T)
    g.output(ir.call(g, operator.add, (t, bias), type_=T))
    schema = Signature("forward", (Argument("self", self_.type), Argument("x", T), Argument("h", T)), T)
    return g, schema


class FakeMethod:
    """Stands in for a ScriptMethod (``._graph`` + ``.schema``) until the frontend scripts it."""

    def __init__(self, graph, schema):
        self._graph, self.schema, self.name = graph, schema, schema.name


class FakeFunction(FakeMethod):
    """Stands in for a ScriptFunction."""
