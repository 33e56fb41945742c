"""ember.compile after a class is changed: a module's (or submodule's) ``forward``, a class's ``__call__``,
methods, properties, static/class methods and base-class methods replaced after compiling must run
the new code on the next call, as an eager call would. Every step compares the compiled result with
a fresh eager call (torch 2.13 serves stale code in several of these; eager ember is the oracle).
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from dynamo_harness import assert_close


def _x():
    return ember.tensor(np.array([1.0, 2.0], dtype=np.float32))


def run_steps(compiled, eager, steps):
    """Each step changes something, then compiled() must equal eager() (both called with fresh x)."""
    ember._dynamo.reset()
    for i, step in enumerate(steps):
        step()
        assert_close(compiled(_x()), eager(_x()), f"step {i}: compiled result (stale code?)")


# ------------------------------------------------------------------------------------------------
# modules

def _module_classes():
    class Inner(ember.nn.Module):
        def forward(self, x):
            return x - 1

    class Outer(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def helper(self, x):
            return x * 2

        @property
        def scale(self):
            return 3.0

        def forward(self, x):
            return self.helper(self.inner(x)) * self.scale

    return Inner, Outer


PATCHES = {
    "root_forward": lambda Inner, Outer: setattr(Outer, "forward", lambda self, x: x * 10),
    "root_forward_calling_helper": lambda Inner, Outer: setattr(Outer, "forward", lambda self, x: self.helper(x) + 1),
    "helper_method": lambda Inner, Outer: setattr(Outer, "helper", lambda self, x: x * 7),
    "property": lambda Inner, Outer: setattr(Outer, "scale", property(lambda self: 0.5)),
    "submodule_forward": lambda Inner, Outer: setattr(Inner, "forward", lambda self, x: x + 100),
    "submodule_class_call": lambda Inner, Outer: setattr(Inner, "__call__", lambda self, x: x * -1),
    "root_class_call": lambda Inner, Outer: setattr(Outer, "__call__", lambda self, x: x * 50),
    "base_class_method": lambda Inner, Outer: setattr(ember.nn.Module, "_ember_test_probe", 1) or
    setattr(Outer, "helper", staticmethod(lambda x: x * 4)),
}


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_module_class_patched_after_compile(name):
    Inner, Outer = _module_classes()
    model = Outer()
    compiled = ember.compile(model, backend="eager")
    try:
        run_steps(compiled, model, [lambda: None, lambda: PATCHES[name](Inner, Outer), lambda: None])
    finally:
        if hasattr(ember.nn.Module, "_ember_test_probe"):
            del ember.nn.Module._ember_test_probe


def test_module_forward_patched_back_and_forth():
    Inner, Outer = _module_classes()
    model = Outer()
    compiled = ember.compile(model, backend="eager")
    original = Outer.forward
    steps = [lambda: None, lambda: setattr(Outer, "forward", lambda self, x: x * 9),
             lambda: setattr(Outer, "forward", original), lambda: setattr(Outer, "forward", lambda self, x: x - 9)]
    run_steps(compiled, model, steps)


def test_submodule_forward_patched_on_the_instance():
    Inner, Outer = _module_classes()
    model = Outer()
    compiled = ember.compile(model, backend="eager")
    run_steps(compiled, model, [lambda: None, lambda: setattr(model.inner, "forward", lambda x: x * 0.25)])


# ------------------------------------------------------------------------------------------------
# plain classes

def _plain_classes():
    class Base:
        def base_method(self, x):
            return x + 1

    class Thing(Base):
        factor = 2.0

        def method(self, x):
            return x * self.factor

        @staticmethod
        def static(x):
            return x - 3

        @classmethod
        def klass(cls, x):
            return x * cls.factor

        @property
        def prop(self):
            return 5.0

        def __call__(self, x):
            return x + 0.5

    return Base, Thing


def uses_everything(obj, x):
    return obj.method(x) + obj.static(x) + obj.klass(x) + obj.prop + obj.base_method(x) + obj(x)


PLAIN_PATCHES = {
    "method": lambda Base, Thing: setattr(Thing, "method", lambda self, x: x * 100),
    "staticmethod": lambda Base, Thing: setattr(Thing, "static", staticmethod(lambda x: x * 0)),
    "classmethod": lambda Base, Thing: setattr(Thing, "klass", classmethod(lambda cls, x: x + 40)),
    "property": lambda Base, Thing: setattr(Thing, "prop", property(lambda self: -1.0)),
    "base_method": lambda Base, Thing: setattr(Base, "base_method", lambda self, x: x * 3),
    "subclass_shadows_base": lambda Base, Thing: setattr(Thing, "base_method", lambda self, x: x - 8),
    "class_call": lambda Base, Thing: setattr(Thing, "__call__", lambda self, x: x * 6),
    "class_attribute": lambda Base, Thing: setattr(Thing, "factor", 9.0),
}


@pytest.mark.parametrize("name", sorted(PLAIN_PATCHES))
def test_plain_class_patched_after_compile(name):
    Base, Thing = _plain_classes()
    obj = Thing()
    compiled = ember.compile(uses_everything, backend="eager")
    ember._dynamo.reset()
    for i, step in enumerate([lambda: None, lambda: PLAIN_PATCHES[name](Base, Thing), lambda: None]):
        step()
        assert_close(compiled(obj, _x()), uses_everything(obj, _x()), f"step {i}")


def test_compiled_callable_object_follows_its_class_call():
    Base, Thing = _plain_classes()
    obj = Thing()
    compiled = ember.compile(obj, backend="eager")
    run_steps(compiled, obj, [lambda: None, lambda: setattr(Thing, "__call__", lambda self, x: x * -2),
                              lambda: setattr(Thing, "__call__", lambda self, x: self.method(x))])


def test_compiled_bound_method_keeps_its_function_like_eager():
    # a bound method object holds its function: patching the class does not change it, eagerly either
    Base, Thing = _plain_classes()
    obj = Thing()
    bound = obj.method
    compiled = ember.compile(bound, backend="eager")
    run_steps(compiled, bound, [lambda: None, lambda: setattr(Thing, "method", lambda self, x: x * 0)])
