"""ember.compile and lazy iteration: generator bodies, map/filter functions and zip/enumerate sources
run one step per ``next``, so their side effects (logged events, in-place tensor ops) interleave with
the consuming loop exactly as in eager Python; a generator never consumed never runs, one left early
stops where it was. Compared with eager ember call by call (eager_equivalence.check_like_eager).
Each program starts with a tensor op (``x = x + 1``): a frame without one is not captured at all.
"""
from __future__ import annotations

import functools
import itertools

import pytest

from eager_equivalence import EVENTS, check_like_eager, tensor


def x_arg(call):
    return (tensor(1.0, 2.0 + call),)


def counting_gen(n):
    for i in range(n):
        EVENTS.append(f"gen {i}")
        yield i
    EVENTS.append("gen done")


def loop_interleaves_with_generator(x):
    x = x + 1
    for v in counting_gen(3):
        EVENTS.append(f"body {v}")
        x = x * 2
    return x


def generator_left_early(x):
    x = x + 1
    for v in counting_gen(5):
        if v == 1:
            break
        EVENTS.append(f"body {v}")
    return x


def generator_never_consumed(x):
    x = x + 1
    g = counting_gen(4)
    EVENTS.append("made")
    return x * 3, g is not None


def generator_next_by_hand(x):
    x = x + 1
    g = counting_gen(3)
    a = next(g)
    EVENTS.append("between")
    b = next(g)
    return x + a + b


def generator_exhausted_by_next_default(x):
    x = x + 1
    g = counting_gen(1)
    return x, next(g, "none"), next(g, "none"), next(g, "none")


def inplace_tensor_ops_in_generator(x):
    acc = x.clone()

    def bump(n):
        for _ in range(n):
            acc.add_(1)
            yield acc

    total = x * 0
    for t in bump(3):           # each item is read right after its add_
        total = total + t
    return total, sum(bump(2))


def generator_expression_with_side_effects(x):
    x = x + 1
    squares = (EVENTS.append(i) or i * i for i in range(4))
    EVENTS.append("before")
    first = next(squares)
    EVENTS.append("after first")
    return x * (first + sum(squares))


def nested_generators(x):
    x = x + 1

    def outer():
        for v in counting_gen(2):
            EVENTS.append(f"outer {v}")
            yield v * 10

    return x + sum(outer())


def any_all_short_circuit(x):
    x = x + 1
    found = any(v >= 1 for v in counting_gen(5))
    every = all(v < 1 for v in counting_gen(5))
    return x, found, every


def map_interleaves(x):
    x = x + 1

    def f(v):
        EVENTS.append(f"map {v}")
        return v + 1

    for v in map(f, [1, 2, 3]):
        EVENTS.append(f"body {v}")
    return x


def filter_interleaves(x):
    x = x + 1

    def keep(v):
        EVENTS.append(f"test {v}")
        return v % 2 == 0

    out = []
    for v in filter(keep, range(5)):
        EVENTS.append(f"body {v}")
        out.append(v)
    return x, out


def map_left_early(x):
    x = x + 1

    def f(v):
        EVENTS.append(v)
        return v

    for v in map(f, range(10)):
        if v == 2:
            break
    return x


def zip_pulls_in_order(x):
    x = x + 1
    pairs = list(zip(counting_gen(3), counting_gen(2)))
    return x, pairs


def enumerate_generator(x):
    x = x + 1
    out = []
    for i, v in enumerate(counting_gen(3), start=5):
        EVENTS.append(f"body {i}")
        out.append((i, v))
    return x, out


def infinite_generator_left(x):
    x = x + 1

    def naturals():
        n = 0
        while True:
            EVENTS.append(n)
            yield n
            n += 1

    for v in naturals():
        if v > 3:
            break
    return x * v


def generator_with_finally(x):
    x = x + 1

    def gen():
        try:
            yield 1
            yield 2
        finally:
            EVENTS.append("cleanup")

    for v in gen():
        break
    return x


def islice_of_generator(x):
    x = x + 1
    return x, list(itertools.islice(counting_gen(10), 2))


def reduce_and_sum_of_map(x):
    x = x + 1

    def f(v):
        EVENTS.append(v)
        return x * v

    return functools.reduce(lambda a, b: a + b, map(f, range(3))), sum(map(f, range(2)))


PROGRAMS = {f.__name__: f for f in (
    loop_interleaves_with_generator, generator_left_early, generator_never_consumed, generator_next_by_hand,
    generator_exhausted_by_next_default, inplace_tensor_ops_in_generator, generator_expression_with_side_effects,
    nested_generators, any_all_short_circuit, map_interleaves, filter_interleaves, map_left_early,
    zip_pulls_in_order, enumerate_generator, infinite_generator_left, generator_with_finally,
    islice_of_generator, reduce_and_sum_of_map)}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_lazy_iteration_like_eager(name):
    check_like_eager(PROGRAMS[name], x_arg)


def returns_a_generator(x):
    x = x + 1
    return x, counting_gen(2)


def test_generator_made_in_a_compiled_frame_stays_a_lazy_generator():
    import types
    import ember
    ember._dynamo.reset()
    compiled = ember.compile(returns_a_generator, backend="eager")
    for call in range(3):
        EVENTS.clear()
        y, gen = compiled(tensor(1.0, float(call)))
        assert isinstance(gen, types.GeneratorType) and EVENTS == []
        assert y.tolist() == [2.0, call + 1.0]
        assert list(gen) == [0, 1] and EVENTS == ["gen 0", "gen 1", "gen done"]
