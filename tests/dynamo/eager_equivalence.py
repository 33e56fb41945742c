"""Run a program eagerly and under ``ember.compile`` and demand the same observable behaviour, call
by call: results, the exception raised (type and message), the events the program logged (user code
with side effects appends to ``EVENTS``), and the arguments after the call.

    def prog(x, log_obj):
        EVENTS.append("called")
        return x * log_obj.k

    check_like_eager(prog, lambda call: (ember.randn(3), Obj()), calls=3)

Each call gets fresh arguments from ``make_args(call)``; ``random`` and NumPy are seeded with the
call number first, so a program drawing random numbers draws the same ones eagerly and compiled.
Eager ember is the oracle: the compiler may graph-break or run a frame eagerly, never differ.
"""
from __future__ import annotations

import random
import warnings

import numpy as np

import ember
from dynamo_harness import assert_close

EVENTS: list = []


def _outcome(fn, args, kwargs):
    try:
        return ("returned", fn(*args, **kwargs))
    except Exception as e:   # noqa: BLE001 - the exception is what is compared
        return ("raised", type(e), str(e))


def _series(fn, make_args, calls, reset):
    runs = []
    if reset is not None:
        reset()
    for call in range(calls):
        random.seed(call)
        np.random.seed(call)
        EVENTS.clear()
        args = make_args(call)
        kwargs = {}
        if isinstance(args, dict):
            args, kwargs = (), args
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = _outcome(fn, args, kwargs)
        runs.append((outcome, list(EVENTS), list(args), [(w.category, str(w.message)) for w in caught]))
    return runs


def check_like_eager(fn, make_args, *, calls=3, reset=None, compiled=None, warnings_too=False):
    """Compare `calls` eager calls with `calls` compiled ones (see the module docstring). `reset()`
    (optional) restores program state kept outside the arguments before each series. Returns the
    compiled runs: [(outcome, events, args after, warnings)] per call."""
    ember._dynamo.reset()
    eager = _series(fn, make_args, calls, reset)
    compiled_fn = compiled if compiled is not None else ember.compile(fn, backend="eager")
    got = _series(compiled_fn, make_args, calls, reset)
    for call, (want, have) in enumerate(zip(eager, got)):
        (w_outcome, w_events, w_args, w_warn), (g_outcome, g_events, g_args, g_warn) = want, have
        assert g_outcome[0] == w_outcome[0], f"call {call}: compiled {g_outcome[0]} {g_outcome[1:]}, eager " \
                                             f"{w_outcome[0]} {w_outcome[1:]}"
        if w_outcome[0] == "raised":
            assert g_outcome[1:] == w_outcome[1:], f"call {call}: exception {g_outcome[1:]} != eager {w_outcome[1:]}"
        else:
            assert_close(g_outcome[1], w_outcome[1], f"call {call}: compiled result")
        assert g_events == w_events, f"call {call}: events {g_events} != eager {w_events}"
        assert_close(g_args, w_args, f"call {call}: arguments after the call")
        if warnings_too:
            assert g_warn == w_warn, f"call {call}: warnings {g_warn} != eager {w_warn}"
    return got


def tensor(*values):
    return ember.tensor(np.array(values, dtype=np.float32))
