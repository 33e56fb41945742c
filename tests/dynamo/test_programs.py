"""ember.compile vs eager, through the public API only: the index of the program suite and its
smallest programs (the first that must work, in landing order).

The suite, by topic (each program compiled vs eager on fresh random inputs, graph and frame
counts compared with torch 2.13 running the same program -- see dynamo_harness.py):

    test_programs_tensors.py       ops, methods, constants, Tensor attributes, builtins, operator, math
    test_programs_containers.py    tuples, lists, dicts, slices, ranges, enumerate/zip, itertools,
                                   comprehensions, generators, *args/**kwargs, keyword/default args
    test_programs_functions.py     inlined user functions, closures, functools.partial, user classes,
                                   exceptions caught inside
    test_programs_modules.py       nn.Modules in compiled functions, compiled Modules
    test_programs_breaks.py        graph breaks and resume functions (branches, print, .item(), loops,
                                   nested calls)
    test_programs_side_effects.py  in-place ops on inputs, list/dict/attribute/global mutation, order
    test_recompile.py              guards, recompilation, cache_size_limit, fullgraph, explain
    test_seed003.py                seed 003's toy_example: graphs, guards, resume functions, logs

Run with DYNAMO_TESTS_TORCH_ONLY=1 to check a new program against torch alone.
"""
import numpy as np

import ember
from dynamo_harness import assert_close, check_program, rand, tensors


def straight_line(lib, a, b):
    return (a + b) * 2


def one_break(lib, a, b):
    x = a / (lib.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def test_straight_line_function():
    check_program(straight_line, tensors((10,), (10,)))


def test_one_graph_break_both_branches():
    check_program(one_break, tensors((10,), (10,)), calls=6)


def test_compile_as_decorator_with_and_without_arguments():
    @ember.compile
    def plain(a):
        return a.sin() + 1

    @ember.compile(backend="eager", fullgraph=True)
    def with_args(a):
        return a.cos() * 2

    a = rand(ember, np.random.default_rng(0), 4)
    assert_close(plain(a), a.sin() + 1)
    assert_close(with_args(a), a.cos() * 2)


def test_optimize_with_callable_backend_receives_graph_and_example_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, list(example_inputs)))
        return gm.forward

    fn = ember._dynamo.optimize(backend)(lambda a, b: a * b + a)
    a, b = rand(ember, np.random.default_rng(0), 3), rand(ember, np.random.default_rng(1), 3)
    assert_close(fn(a, b), a * b + a)
    assert len(seen) == 1
    gm, example_inputs = seen[0]
    assert [tuple(x.shape) for x in example_inputs] == [(3,), (3,)]
    assert [n.op for n in gm.graph.nodes].count("placeholder") == 2


def test_reset_clears_the_cache():
    counter = ember._dynamo.testing.CompileCounter()
    fn = ember.compile(lambda a: a + 1, backend=counter)
    a = rand(ember, np.random.default_rng(0), 3)
    fn(a)
    fn(a)
    assert counter.frame_count == 1
    ember._dynamo.reset()
    fn(a)
    assert counter.frame_count == 2


def test_disable_runs_eagerly():
    counter = ember._dynamo.testing.CompileCounter()

    @ember.compiler.disable
    def not_compiled(a):
        return a * 3

    fn = ember.compile(lambda a: not_compiled(a), backend=counter)
    a = rand(ember, np.random.default_rng(0), 3)
    assert_close(fn(a), a * 3)
    assert counter.op_count == 0
