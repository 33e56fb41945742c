"""Adversarial guard tests: state changed between calls of a compiled function must never be served
a stale compiled entry.

Each scenario calls a compiled function several times, changing something between calls (a default
argument, a class's method, another module's global, a module's hooks, a tensor view's offset...),
and asserts every compiled result equals the eager one. Scenarios torch 2.13 also gets right run on
both libraries; those where torch itself serves a stale entry (noted per test) run on ember alone.
"""
import sys
import types

import numpy as np
import pytest
import torch

import ember
from dynamo_harness import assert_close


def _lib_tensor(lib, *values):
    return lib.tensor(np.array(values, dtype=np.float32))


def run_scenario(make, libs=(torch, ember), calls=None):
    """make(lib) -> (fn, steps): fn(*args) is compiled; each step() mutates state and returns the
    next call's args. After each step the compiled result must equal a fresh eager call."""
    for lib in libs:
        lib._dynamo.reset()
        fn, steps = make(lib)
        compiled = lib.compile(fn, backend="eager")
        for i, step in enumerate(steps):
            args = step()
            got = compiled(*args)
            expected = fn(*args)
            assert_close(got, expected, f"{lib.__name__} step {i}: compiled result (stale entry?)")


def test_function_defaults_rebound_and_kwdefaults_mutated():
    def make(lib):
        f = lambda x, d=[1.0], *, s=2.0: x * d[0] * s + len(d)   # noqa: E731
        x = _lib_tensor(lib, 1, 2)

        def rebind():
            f.__defaults__ = ([9.0, 1.0],)
            return (x,)

        def kw():
            f.__kwdefaults__["s"] = 5.0
            return (x,)
        return f, [lambda: (x,), lambda: (f.__defaults__[0].append(3.0), (x,))[1], rebind, kw]
    run_scenario(make)


def test_inlined_function_kwdefaults_mutated():
    def make(lib):
        def helper(t, *, s=2.0):
            return t * s

        def f(x):
            return helper(x) + 1
        x = _lib_tensor(lib, 1, 2)

        def mutate():
            helper.__kwdefaults__["s"] = 7.0
            return (x,)
        return f, [lambda: (x,), mutate]
    run_scenario(make)


def test_function_code_swapped():
    def make(lib):
        def helper(t):
            return t + 1

        def f(x):
            return helper(x) * 2
        x = _lib_tensor(lib, 1, 2)

        def swap():
            helper.__code__ = (lambda t: t * 10).__code__
            return (x,)
        return f, [lambda: (x,), swap]
    run_scenario(make)


def _user_class_scenario(lib, mutate):
    class A:
        def __init__(self):
            self.k = 2.0

        def m(self, x):
            return x * self.k

    def f(a, x):
        return a.m(x) + 1
    a, x = A(), _lib_tensor(lib, 1, 2)
    return f, [lambda: (a, x), lambda: (mutate(A, a), (a, x))[1]]


def test_class_method_patched_after_compile():
    # torch 2.13 serves the stale inlined method here; ember guards the class's function
    run_scenario(lambda lib: _user_class_scenario(lib, lambda A, a: setattr(A, "m", lambda s, x: x - s.k)),
                 libs=(ember,))


def test_instance_attribute_shadows_method():
    run_scenario(lambda lib: _user_class_scenario(lib, lambda A, a: setattr(a, "m", lambda x: x * 100)))


def test_class_attribute_changed():
    def mutate(A, a):
        del a.k
        A.k = 11.0
    run_scenario(lambda lib: _user_class_scenario(lib, mutate))


def test_builtin_argument_replaced_by_other_callable():
    def make(lib):
        def f(fn, x):
            return fn(x) * 2
        x = _lib_tensor(lib, -1, 2)
        return f, [lambda: (abs, x), lambda: (lambda t: t * 3, x), lambda: (lib.neg, x)]
    run_scenario(make)


def test_global_of_another_module(monkeypatch):
    def make(lib):
        other = types.ModuleType("adversarial_other")
        monkeypatch.setitem(sys.modules, other.__name__, other)   # torch imports it by name
        exec("SCALE = 2.0\nFLAG = True\n"
             "def helper(x):\n    return x * SCALE if FLAG else x - SCALE\n", other.__dict__)

        def f(x):
            return other.helper(x) + 1
        x = _lib_tensor(lib, 1, 2)

        def scale():
            other.SCALE = 5.0
            return (x,)

        def flag():
            other.FLAG = False
            return (x,)
        return f, [lambda: (x,), scale, flag]
    run_scenario(make)


def test_tensor_global_of_another_module_around_a_break(monkeypatch):
    other = types.ModuleType("adversarial_other_t")
    monkeypatch.setitem(sys.modules, other.__name__, other)
    exec("def helper(x):\n    y = x + W\n    print('break')\n    return y * W\n", other.__dict__)

    def make(lib):
        other.W = lib.ones(2)
        x = _lib_tensor(lib, 1, 2)

        def rebind():
            other.W = lib.full((2,), 3.0)
            return (x,)

        def inplace():
            other.W.add_(1)
            return (x,)
        return other.helper, [lambda: (x,), rebind, inplace]
    run_scenario(make)


def test_storage_offset_of_views():
    def make(lib):
        base = lib.arange(6.0)

        def f(x):
            return x + x.storage_offset()
        return f, [lambda i=i: (base[i:i + 2],) for i in range(3)]
    run_scenario(make)


def test_is_leaf_of_input():
    # torch 2.13 folds is_leaf from its fake tensor without a guard (stale for a non-leaf input)
    def make(lib):
        def f(x):
            return x * 2 if x.is_leaf else x * 3
        leaf = lib.ones(2, requires_grad=True)
        return f, [lambda: (leaf,), lambda: (leaf * 1,), lambda: (leaf,)]
    run_scenario(make, libs=(ember,))


def _module_scenario(lib, mutate, indexed=False):
    nn = lib.nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 2)
            self.layers = nn.ModuleList([nn.Linear(2, 2)])

        def forward(self, x):
            y = self.lin(x)
            if indexed:
                return self.layers[-1](y)
            for layer in self.layers:
                y = layer(y)
            return y
    m = M()
    x = _lib_tensor(lib, 1, 2)
    return m, [lambda: (x,), lambda: (mutate(m), (x,))[1]]


def test_module_list_appended():
    run_scenario(lambda lib: _module_scenario(lib, lambda m: m.layers.append(lib.nn.Linear(2, 2))))


def test_module_list_negative_index_after_append():
    run_scenario(lambda lib: _module_scenario(lib, lambda m: m.layers.append(lib.nn.Linear(2, 2)), indexed=True))


def test_submodule_instance_forward_replaced():
    def patch(m):
        m.lin.forward = lambda x: x * 100
    run_scenario(lambda lib: _module_scenario(lib, patch))


def test_forward_hook_on_compiled_module():
    def make(lib):
        m, steps = _module_scenario(lib, lambda m: None)
        m.register_forward_hook(lambda mod, args, out: out * 10)   # before compiling
        return m, steps
    run_scenario(make)


def test_forward_hooks_added_after_compile():
    # torch 2.13 skips hook guards by default (config.skip_nnmodule_hook_guards); ember recompiles
    def hooks(m):
        m.register_forward_hook(lambda mod, args, out: out * 10)
        m.lin.register_forward_pre_hook(lambda mod, args: (args[0] * 3,))
    run_scenario(lambda lib: _module_scenario(lib, hooks), libs=(ember,))


def test_user_eq_is_not_identity():
    class AlwaysEqual:
        def __eq__(self, other):
            return True
        __hash__ = object.__hash__

    def make(lib):
        def f(x, s):
            return x * (1 if s == 3 else 2)
        x = _lib_tensor(lib, 1, 2)
        return f, [lambda: (x, 3), lambda: (x, AlwaysEqual()), lambda: (x, 4)]
    run_scenario(make)


def test_disabled_function_is_a_graph_break():
    counter = ember._dynamo.testing.CompileCounter()

    @ember.compiler.disable
    def eager_only(a):
        return a * 3

    fn = ember.compile(lambda a: eager_only(a + 1) - 1, backend=counter)
    a = ember.ones(3)
    assert_close(fn(a), (a + 1) * 3 - 1)
    assert_close(fn(a), (a + 1) * 3 - 1)
    assert counter.op_count == 2   # a + 1 and - 1, never the disabled function's multiply


def _aliasing_scenario(lib, make_container, mutate):
    """Call with two distinct containers, then one container twice, then distinct again; each call's
    eager twin gets fresh containers aliased the same way."""
    lib._dynamo.reset()

    def f(x, a, b):
        mutate(a)
        return x * len(b)
    compiled = lib.compile(f, backend="eager")
    x = _lib_tensor(lib, 1, 2)
    for step, aliased in enumerate((False, True, False)):
        args = []
        for _ in range(2):
            a = make_container()
            args.append((a, a) if aliased else (a, make_container()))
        assert_close(compiled(x, *args[0]), f(x, *args[1]), f"{lib.__name__} step {step} (stale entry?)")


def test_same_list_passed_twice_after_distinct_lists():
    # torch 2.13 reuses the entry captured for two distinct lists when one list is passed twice
    _aliasing_scenario(ember, list, lambda a: a.append(1))


def test_same_dict_passed_twice_after_distinct_dicts():
    _aliasing_scenario(ember, dict, lambda a: a.__setitem__("k", 1))


def test_same_object_passed_twice_after_distinct_objects():
    class Box:
        def __len__(self):
            return len(vars(self))
    _aliasing_scenario(ember, Box, lambda a: setattr(a, "k", 1))


def _check_calls(fn, make_args, calls=3, libs=(torch, ember)):
    """Compiled and eager on identical fresh arguments, `calls` times per library."""
    for lib in libs:
        lib._dynamo.reset()
        compiled = lib.compile(fn, backend="eager")
        for i in range(calls):
            got, expected = compiled(*make_args(lib, i)), fn(*make_args(lib, i))
            assert_close(got, expected, f"{lib.__name__} call {i}")


def test_list_aliased_by_two_locals_across_a_break():
    def f(x):
        a = [x]
        b = a
        print("graph break")
        b.append(x * 2)
        return len(a), a[-1]
    _check_calls(f, lambda lib, i: (_lib_tensor(lib, i, 2),))


def test_dict_aliased_by_two_locals_across_a_break():
    def f(x):
        a = {"x": x}
        b = a
        print("graph break")
        b["y"] = x * 2
        return len(a), a["y"]
    _check_calls(f, lambda lib, i: (_lib_tensor(lib, i, 2),))


def test_cell_written_after_a_break_is_seen_by_inner_function():
    def f(x):
        k = 1
        def g(t):
            return t * k
        y = g(x)
        k = 5
        print("graph break")
        z = g(x)
        k = 7
        return y, z, g(x)
    _check_calls(f, lambda lib, i: (_lib_tensor(lib, i, 2),))


def test_cell_written_in_loop_after_a_break():
    def f(x):
        k = 1
        def g(t):
            return t * k
        out = []
        for i in range(3):
            out.append(g(x))
            print("graph break")
            k = k + 2
        return out
    _check_calls(f, lambda lib, i: (_lib_tensor(lib, i, 2),))


def test_module_global_shadowing_a_builtin_after_compile(monkeypatch):
    # torch 2.13 does not guard that a builtin stays unshadowed by a module global
    module = types.ModuleType("adversarial_shadow")
    exec("def f(x):\n    return x * len([1, 2])\n", module.__dict__)
    monkeypatch.setitem(sys.modules, module.__name__, module)

    def make(lib):
        x = _lib_tensor(lib, 1, 2)

        def shadow():
            module.len = lambda seq: 10
            return (x,)

        def unshadow():
            del module.len
            return (x,)
        return module.f, [lambda: (x,), shadow, unshadow]
    run_scenario(make, libs=(ember,))


def _module_class_scenario(lib, mutate):
    class M(lib.nn.Module):
        scale = 2.0

        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)

        def helper(self, y):
            return y * self.scale

        def forward(self, x):
            return self.helper(self.lin(x))
    m, x = M(), _lib_tensor(lib, 1, 2)
    return m, [lambda: (x,), lambda: (mutate(M, m), (x,))[1]]


def test_module_class_attribute_changed():
    run_scenario(lambda lib: _module_class_scenario(lib, lambda M, m: setattr(M, "scale", 5.0)))


def test_module_class_method_patched():
    # torch 2.13 serves the stale inlined method here
    run_scenario(lambda lib: _module_class_scenario(lib, lambda M, m: setattr(M, "helper", lambda s, y: y - 100)),
                 libs=(ember,))


def test_module_instance_shadows_class_attribute():
    run_scenario(lambda lib: _module_class_scenario(lib, lambda M, m: setattr(m, "scale", 7.0)))


def test_bound_methods_of_one_object_passed_in_turn():
    class A:
        def __init__(self, k):
            self.k = k

        def m1(self, x):
            return x * self.k

        def m2(self, x):
            return x + self.k

    def make(lib):
        def f(fn, x):
            return fn(x)
        a, x = A(2.0), _lib_tensor(lib, 1, 2)
        return f, [lambda: (a.m1, x), lambda: (a.m2, x), lambda: (A(3.0).m1, x)]
    run_scenario(make)


def test_grad_mode_without_tensor_inputs():
    def make(lib):
        def f(n):
            return lib.ones(2, requires_grad=True) * n
        return f, [lambda: (2,)]
    for lib in (torch, ember):
        lib._dynamo.reset()
        f, _ = make(lib)
        compiled = lib.compile(f, backend="eager")
        assert_close(compiled(2), f(2))
        with lib.no_grad():
            assert_close(compiled(2), f(2), f"{lib.__name__} under no_grad (stale entry?)")


def test_default_dtype_changed_between_calls():
    for lib in (torch, ember):
        lib._dynamo.reset()

        def f(x):
            return lib.ones(2), x + 1
        compiled = lib.compile(f, backend="eager")
        x = lib.ones(2)
        assert_close(compiled(x), f(x))
        lib.set_default_dtype(lib.float64)
        try:
            assert_close(compiled(x), f(x), f"{lib.__name__} after set_default_dtype (stale entry?)")
        finally:
            lib.set_default_dtype(lib.float32)


@pytest.mark.parametrize("probe", ["hasattr", "getattr_default"])
def test_attribute_added_after_capture_found_it_missing(probe):
    class Holder:
        pass

    def make(lib):
        if probe == "hasattr":
            def f(x, o):
                return x * (2 if hasattr(o, "extra") else 3)
        else:
            def f(x, o):
                return x * getattr(o, "extra", 5)
        o, x = Holder(), _lib_tensor(lib, 1, 2)
        return f, [lambda: (x, o), lambda: (setattr(o, "extra", 7), (x, o))[1]]
    run_scenario(make)


def test_python_attribute_set_on_tensor_input():
    def make(lib):
        def f(x):
            return x * x.flag if hasattr(x, "flag") else x + 1
        x = _lib_tensor(lib, 1, 2)
        return f, [lambda: (x,), lambda: (setattr(x, "flag", 3.0), (x,))[1]]
    run_scenario(make)


def _loud(v):
    print("graph break")
    return v


@pytest.mark.parametrize("kind", ["list", "dict", "zip", "side_effect"])
def test_graph_break_inside_comprehension_keeps_earlier_items(kind):
    def f(x, values):
        if kind == "list":
            return [x * _loud(v) for v in values]
        if kind == "dict":
            return {i: x * _loud(v) for i, v in enumerate(values)}
        if kind == "zip":
            return [x * _loud(v) + w for v, w in zip(values, values[::-1])]
        seen = []
        return [seen.append(v) or x * v for v in values if _loud(v) > 0], seen
    _check_calls(f, lambda lib, i: (_lib_tensor(lib, i, 2), [1.0, -2.0, 3.0][: i + 1]))


def test_iterator_shared_by_callee_and_frame_across_a_break():
    def take_one(it, x):
        first = next(it)
        print("graph break")
        return x * first

    def f(x, values):
        it = iter(values)
        return take_one(it, x), list(it)
    _check_calls(f, lambda lib, i: (_lib_tensor(lib, i, 2), [1.0, 2.0, 3.0]))


def test_function_attribute_of_a_module_rebound(monkeypatch):
    other = types.ModuleType("adversarial_funcs")
    exec("def helper(x):\n    return x + 1\n", other.__dict__)
    monkeypatch.setitem(sys.modules, other.__name__, other)

    def make(lib):
        original = other.helper

        def f(x):
            return other.helper(x) * 2
        x = _lib_tensor(lib, 1, 2)

        def rebind():
            other.helper = lambda t: t * 100
            return (x,)

        def restore():
            other.helper = original
            return (x,)
        return f, [lambda: (x,), rebind, restore]
    run_scenario(make)


def _class_member_scenario(lib, mutate):
    class A:
        K = 3.0

        @staticmethod
        def s(x):
            return x * 2

        @classmethod
        def c(cls, x):
            return x * cls.K

    def f(a, x):
        return a.s(x) + a.c(x) + A.s(x)
    a, x = A(), _lib_tensor(lib, 1, 2)
    return f, [lambda: (a, x), lambda: (mutate(A), (a, x))[1]]


@pytest.mark.parametrize("change", ["staticmethod", "classmethod", "class_constant_read_by_classmethod"])
def test_class_members_patched(change):
    def mutate(A):
        if change == "staticmethod":
            A.s = staticmethod(lambda x: x * 10)
        elif change == "classmethod":
            A.c = classmethod(lambda cls, x: x - cls.K)
        else:
            A.K = 7.0
    # torch 2.13 serves the stale inlined classmethod after `A.c = ...`; torch 2.11 (the device's,
    # on Python 3.12) also serves a stale class constant read by a classmethod
    torch_version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    torch_stale = change == "classmethod" or (change == "class_constant_read_by_classmethod"
                                              and torch_version < (2, 13))
    libs = (ember,) if torch_stale else (torch, ember)
    run_scenario(lambda lib: _class_member_scenario(lib, mutate), libs=libs)


def test_class_level_containers_mutated_in_place():
    def make(lib):
        class Config:
            items = [1.0, 2.0]
            table = {"k": 2.0}

        class M(lib.nn.Module):
            dims = [1.0]

            def forward(self, x, cfg):
                return x * len(cfg.items) * cfg.table["k"] * len(self.dims)
        m, cfg, x = M(), Config(), _lib_tensor(lib, 1, 2)

        def mutate():
            Config.items.append(3.0)
            Config.table["k"] = 5.0
            M.dims.append(2.0)
            return (x, cfg)

        def f(x, cfg):
            return m(x, cfg)
        return f, [lambda: (x, cfg), mutate]
    run_scenario(make)
