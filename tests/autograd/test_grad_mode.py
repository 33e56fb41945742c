"""no_grad / enable_grad / set_grad_enabled / inference_mode: context manager, decorator and
function forms, nesting, thread-locality — the same program in ember and PyTorch."""
from __future__ import annotations

import threading

import numpy as np

import ember
from _both import both, arr


def test_context_managers_nested():
    def prog(T, x):
        out = [T.is_grad_enabled()]
        with T.no_grad():
            a = x * 2
            out.append(T.is_grad_enabled())
            with T.enable_grad():
                b = x * 2
                out.append(T.is_grad_enabled())
                with T.set_grad_enabled(False):
                    c = x * 2
                    out.append(T.is_grad_enabled())
            out.append(T.is_grad_enabled())
        out.append(T.is_grad_enabled())
        return out + [a.requires_grad, b.requires_grad, c.requires_grad, a.grad_fn is None, b.grad_fn is not None]
    both(prog, arr(2))


def test_decorator_forms():
    def prog(T, x):
        @T.no_grad()
        def f1(v):
            return v * 2, T.is_grad_enabled()

        @T.no_grad
        def f2(v):
            return v * 2

        @T.enable_grad()
        def f3(v):
            return v * 2

        @T.set_grad_enabled(False)
        def f4(v):
            return v * 2

        @T.inference_mode()
        def f5(v):
            return v * 2, T.is_inference_mode_enabled()

        @T.inference_mode
        def f6(v):
            return v * 2

        @T.no_grad()
        def gen(v):
            yield v * 2
            yield T.is_grad_enabled()

        after_def = T.is_grad_enabled()
        r1, e1 = f1(x)
        with T.no_grad():
            r3 = f3(x)
        r5, inf5 = f5(x)
        g = list(gen(x))
        return [after_def, r1.requires_grad, e1, f2(x).requires_grad, r3.requires_grad, f4(x).requires_grad,
                r5.requires_grad, inf5, f6(x).requires_grad, g[0].requires_grad, g[1], T.is_grad_enabled(),
                f1.__name__]
    both(prog, arr(2))


def test_set_grad_enabled_function_form():
    def prog(T, x):
        T.set_grad_enabled(False)
        a = x * 2
        state = T.is_grad_enabled()
        T.set_grad_enabled(True)
        b = x * 2
        return [state, a.requires_grad, b.requires_grad, T.is_grad_enabled()]
    both(prog, arr(2))


def test_exceptions_restore_mode():
    def prog(T, x):
        try:
            with T.no_grad():
                raise ValueError
        except ValueError:
            pass
        return T.is_grad_enabled()
    both(prog, arr(2))


def test_inference_mode():
    def prog(T, x):
        out = []
        with T.inference_mode():
            out += [T.is_grad_enabled(), T.is_inference_mode_enabled(), (x * 2).requires_grad]
            with T.inference_mode(False):
                out += [T.is_grad_enabled(), T.is_inference_mode_enabled()]
        with T.no_grad():
            out += [T.is_inference_mode_enabled()]
        out += [T.is_grad_enabled(), T.is_inference_mode_enabled(), (x * 2).requires_grad]
        return out
    both(prog, arr(2))


def test_grad_mode_is_thread_local():
    seen = {}

    def worker():
        seen["worker"] = ember.is_grad_enabled()
        x = ember.ones(2, requires_grad=True)
        seen["records"] = (x * 2).requires_grad

    with ember.no_grad():
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        assert not ember.is_grad_enabled()
    assert seen == {"worker": True, "records": True}


def test_no_grad_allows_in_place_on_leaf_and_no_history():
    x = ember.tensor(np.ones(3), requires_grad=True)
    with ember.no_grad():
        x.add_(1)
        y = x.exp()
    assert x.is_leaf and x.requires_grad and y.grad_fn is None and not y.requires_grad
