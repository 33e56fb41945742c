"""Random nested script programs (If on ints and tensor data, counted and conditional loops,
0-2 carried values, nesting): the reference interpreter, the generated code and the
GraphExecutor's optimised plans all agree with ember.jit.ir.evaluate."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import ember
from ember.jit import ir
from ember.jit.ir import prim
from ember.jit.ir.types import BoolType, IntType, TensorType, TupleType

from test_executor import _all_ways, _t

T = TensorType()


def _random_program(rng, depth: int = 3):
    """A random graph over two tensors and an int: pointwise ops, Ifs (on ints and on tensor
    data), counted and conditional loops carrying 0-2 tensors, nested up to `depth`."""
    g = ir.new_graph()
    x = g.placeholder("x", type_expr=T)
    y = g.placeholder("y", type_expr=T)
    n = g.placeholder("n", type_expr=IntType())

    def emit(block, tensors, ints, level, count):
        for _ in range(count):
            kind = rng.integers(0, 6 if level < depth else 3)
            a, b = tensors[rng.integers(len(tensors))], tensors[rng.integers(len(tensors))]
            if kind == 0:
                fn = [operator.add, operator.sub, operator.mul][rng.integers(3)]
                tensors.append(ir.call(block, fn, (a, b), type_=T))
            elif kind == 1:
                tensors.append(ir.call(block, ember.tanh, (ir.call(block, operator.mul, (a, 0.5), type_=T),), type_=T))
            elif kind == 2:
                i = ints[rng.integers(len(ints))]
                ints.append(ir.call(block, operator.add, (i, int(rng.integers(1, 3))), type_=IntType()))
            elif kind == 3:   # If: on an int parity or on tensor data
                if rng.integers(2):
                    i = ints[rng.integers(len(ints))]
                    cond = ir.call(block, operator.eq, (ir.call(block, operator.mod, (i, 2), type_=IntType()), 0),
                                   type_=BoolType())
                else:
                    cond = ir.call(block, bool, (ir.call(block, operator.gt, (ir.call(block, "sum", (a,), type_=T),
                                                                              0), type_=T),), type_=BoolType())
                k = int(rng.integers(0, 3))
                node, outs = ir.add_if(block, cond, [T] * k)
                for br in node.blocks:
                    inner = list(tensors)
                    emit(br, inner, list(ints), level + 1, int(rng.integers(0, 3)))
                    ir.set_block_returns(br, [inner[-1 - j % len(inner)] for j in range(k)])
                tensors.extend(outs)
            else:             # Loop: counted (trip count n or constant) or while-like on a counter
                k = int(rng.integers(0, 3))
                carried = [tensors[rng.integers(len(tensors))] for _ in range(k)]
                trips = n if rng.integers(2) else ir.constant(block, int(rng.integers(0, 4)))
                conditional = kind == 5
                start = ir.constant(block, True)
                types = [T] * k + ([IntType()] if conditional else [])
                init = carried + ([ir.constant(block, 0)] if conditional else [])
                loop, outs = ir.add_loop(block, trips, start, init, types)
                body = loop.blocks[0]
                params = ir.block_params(body)
                inner = [p for p in params[1:1 + k]] or list(tensors)
                inner_ints = list(ints) + [params[0]]
                emit(body, inner, inner_ints, level + 1, int(rng.integers(1, 3)))
                rets = [inner[-1 - j % len(inner)] for j in range(k)]
                if conditional:
                    counter = ir.call(body, operator.add, (params[-1], 1), type_=IntType())
                    cond = ir.call(body, operator.lt, (counter, 2), type_=BoolType())
                    ir.set_block_returns(body, [cond, *rets, counter])
                    ints.append(outs[-1])
                else:
                    ir.set_block_returns(body, [start, *rets])
                tensors.extend(outs[:k])
        return tensors

    tensors = emit(g, [x, y], [n], 0, 4)
    g.output(ir.call(g, prim.TupleConstruct, (tensors[-1], tensors[len(tensors) // 2]), type_=TupleType((T, T))))
    return g


@pytest.mark.parametrize("seed", range(25))
def test_random_programs_all_ways(seed):
    rng = np.random.default_rng(seed)
    g = _random_program(rng)
    for n in (0, 1, 3):
        xs = (_t(rng, 2, 3), _t(rng, 2, 3), n)
        _all_ways(g, xs)
