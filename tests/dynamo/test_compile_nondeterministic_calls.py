"""ember.compile never bakes the result of a call that can answer differently each time: random,
NumPy's random, time, os.urandom, uuid, secrets, datetime, id(), a global counter. Each compiled call
must draw anew, as eager Python does; warnings, logging and print must fire on every call with the
same text and source location as eagerly. Seeded generators are compared with eager ember call by
call (eager_equivalence.check_like_eager seeds ``random`` and NumPy with the call number); the rest
must give a new value on every compiled call.
"""
from __future__ import annotations

import contextlib
import datetime
import io
import itertools
import logging
import os
import random
import secrets
import time
import uuid
import warnings

import numpy as np
import pytest

import ember
from eager_equivalence import EVENTS, check_like_eager, tensor


def x_arg(call):
    return (tensor(1.0, 2.0),)


def uses_random(x):
    return x * random.random() + random.randint(1, 100) + random.uniform(-1, 1) + random.gauss(0, 1)


def uses_random_choice_and_sample(x):
    x = x + 1
    return x, random.choice(["a", "b", "c", "d"]), random.sample(range(50), 3)


def shuffles_argument(x, xs):
    x = x + 1
    random.shuffle(xs)
    return x * xs[0]


def uses_numpy_random(x):
    return x * float(np.random.rand()) + int(np.random.randint(0, 1000))


def uses_random_instance(x):
    rng = random.Random(1234)
    return x * rng.random()


def uses_global_generator_instance(x):
    return x * GLOBAL_RNG.random()


GLOBAL_RNG = random.Random(0)
COUNT = itertools.count()


def uses_global_count(x):
    return x + next(COUNT)


def reset_generators():
    global COUNT
    GLOBAL_RNG.seed(0)
    COUNT = itertools.count()


SEEDED = {f.__name__: f for f in (uses_random, uses_random_choice_and_sample, uses_numpy_random,
                                  uses_random_instance, uses_global_generator_instance, uses_global_count)}


@pytest.mark.parametrize("name", sorted(SEEDED))
def test_seeded_draws_match_eager_on_every_call(name):
    runs = check_like_eager(SEEDED[name], x_arg, calls=4, reset=reset_generators)
    results = [repr(outcome[1]) for outcome, _, _, _ in runs]
    if name != "uses_random_instance":       # (a fresh Random(1234) draws the same on every call)
        assert len(set(results)) == len(results), "a compiled call repeated an earlier call's draw"


def test_shuffle_of_an_argument_list():
    check_like_eager(shuffles_argument, lambda call: (tensor(1.0), list(range(10))), calls=4)


# values that cannot be seeded: every compiled call must return a new one
def draw_urandom(x):
    return x * 2, os.urandom(8)


def draw_uuid(x):
    return x * 2, str(uuid.uuid4())


def draw_secrets(x):
    return x * 2, secrets.token_hex(8)


def draw_time(x):
    return x * 2, time.perf_counter_ns()


def draw_datetime(x):
    return x * 2, datetime.datetime.now().isoformat()


@pytest.mark.parametrize("fn", [draw_urandom, draw_uuid, draw_secrets, draw_time, draw_datetime],
                         ids=lambda f: f.__name__)
def test_unseedable_values_are_new_on_every_call(fn):
    ember._dynamo.reset()
    compiled = ember.compile(fn, backend="eager")
    values = []
    for _ in range(4):
        y, value = compiled(tensor(1.0))
        assert y.tolist() == [2.0]
        values.append(value)
        time.sleep(0.001)
    assert len(set(values)) == len(values), f"compiled calls repeated a value: {values}"
    assert type(values[0]) is type(fn(tensor(1.0))[1])


def id_of_argument(x, obj):
    return x * 2, id(obj), id(x) == id(obj)


def test_id_is_read_at_run_time():
    ember._dynamo.reset()
    compiled = ember.compile(id_of_argument, backend="eager")
    objects = [object() for _ in range(4)]
    for obj in objects:
        _, value, same = compiled(tensor(1.0), obj)
        assert value == id(obj) and same is False


# ------------------------------------------------------------------------------------------------
# warnings, logging, print: every call, same text and location as eagerly

def warns(x):
    x = x + 1
    warnings.warn("careful", UserWarning)
    return x * 2


def _helper_warning():
    warnings.warn("from the helper", RuntimeWarning, stacklevel=2)


def warns_through_helper(x):
    x = x + 1
    _helper_warning()
    return x * 3


def warns_in_loop(x):
    for i in range(3):
        warnings.warn(f"step {i}", UserWarning)
        x = x + i
    return x


def _recorded(fn, filter_action, calls=3):
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(filter_action)
        for _ in range(calls):
            fn(tensor(1.0))
    for w in caught:
        out.append((w.category, str(w.message), w.filename, w.lineno))
    return out


@pytest.mark.parametrize("action", ["always", "default", "once", "module"])
@pytest.mark.parametrize("fn", [warns, warns_through_helper, warns_in_loop], ids=lambda f: f.__name__)
def test_warnings_fire_like_eager(fn, action):
    ember._dynamo.reset()
    eager = _recorded(fn, action)
    compiled = _recorded(ember.compile(fn, backend="eager"), action)
    assert compiled == eager and eager


LOGGER = logging.getLogger("ember.tests.compile_nondeterministic")


class _EventsHandler(logging.Handler):
    def emit(self, record):
        EVENTS.append((record.levelname, record.getMessage(), record.funcName, record.lineno))


def logs(x):
    x = x + 1
    LOGGER.warning("value %d", 3)
    return x * 2


def prints(x):
    x = x + 1
    print("hello", 3, sep="-")
    return x * 2


def test_logging_fires_on_every_call_like_eager():
    handler = _EventsHandler()
    LOGGER.addHandler(handler)
    LOGGER.propagate = False
    try:
        runs = check_like_eager(logs, x_arg, calls=3)
        assert all(len(events) == 1 for _, events, _, _ in runs)
    finally:
        LOGGER.removeHandler(handler)


def test_print_on_every_call():
    ember._dynamo.reset()
    outputs = []
    for fn in (prints, ember.compile(prints, backend="eager")):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            for _ in range(3):
                fn(tensor(1.0))
        outputs.append(buffer.getvalue())
    assert outputs[0] == outputs[1] == "hello-3\n" * 3


def _caller():
    import sys
    frame = sys._getframe(1)
    EVENTS.append((frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno))
    print("", end="")    # not capturable: the helper is called at a graph break


def inspects_its_caller(x):
    x = x + 1
    _caller()
    return x * 2


def test_function_called_at_a_break_sees_its_real_caller():
    # a helper run at a graph break is called from the compiled frame itself: no ember frame between
    check_like_eager(inspects_its_caller, x_arg, calls=3)
