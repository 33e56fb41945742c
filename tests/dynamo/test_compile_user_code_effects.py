"""ember.compile and user code with side effects: ``__getattr__``, ``__getattribute__``, ``__hash__``,
``__eq__``, ``__len__``, ``__iter__``, ``__bool__``, properties, descriptors, ``__class__`` overrides,
plus global/nonlocal/attribute counters and object identity. Whatever such code does must happen as
often, in the same order and with the same results as in eager Python -- on every call, the first
(capturing) one included, whether the frame is captured, broken or run eagerly. Each test logs into
eager_equivalence.EVENTS and compares with eager ember call by call.
"""
from __future__ import annotations

import copy
import enum
import functools

import pytest

from eager_equivalence import EVENTS, check_like_eager, tensor


class WithGetattr:
    def __init__(self, k=2.0):
        self.k = k

    def __getattr__(self, name):
        EVENTS.append(f"getattr {name}")
        if name.startswith("missing"):
            raise AttributeError(name)
        return 3.0


class WithGetattribute:
    def __init__(self):
        self.k = 2.0

    def __getattribute__(self, name):
        EVENTS.append(f"getattribute {name}")
        return object.__getattribute__(self, name)


class WithHash:
    def __hash__(self):
        EVENTS.append("hash")
        return 7

    def __eq__(self, other):
        EVENTS.append("eq")
        return self is other


class WithEq:
    __hash__ = None

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        EVENTS.append(f"eq {self.v}")
        return isinstance(other, WithEq) and other.v == self.v


class WithProtocols:
    def __len__(self):
        EVENTS.append("len")
        return 2

    def __iter__(self):
        EVENTS.append("iter")
        return iter([1.0, 2.0])

    def __bool__(self):
        EVENTS.append("bool")
        return True

    def __contains__(self, item):
        EVENTS.append(f"contains {item}")
        return item == 1


class WithProperty:
    def __init__(self):
        self._v = 1.0

    @property
    def v(self):
        EVENTS.append("get v")
        self._v += 1
        return self._v


class LoggingDescriptor:
    def __get__(self, obj, cls):
        EVENTS.append("descriptor get")
        return 4.0

    def __set__(self, obj, value):
        EVENTS.append("descriptor set")


class NonDataDescriptor:
    def __get__(self, obj, cls):
        EVENTS.append("non-data get")
        return 5.0


class WithDescriptors:
    d = LoggingDescriptor()
    n = NonDataDescriptor()
    none_attr = None

    @functools.cached_property
    def cached(self):
        EVENTS.append("cached")
        return 6.0


class WithClassProperty:
    @property
    def __class__(self):
        EVENTS.append("__class__")
        return WithProtocols


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = 1.5


# ------------------------------------------------------------------------------------------------
def read_attr_via_getattr(o, x):
    x = x + 1
    return x * o.k + x * o.other


def getattr_with_default(o, x):
    x = x + 1
    return x * getattr(o, "other", 5.0) + x * getattr(o, "missing_one", 7.0)


def hasattr_through_getattr(o, x):
    x = x + 1
    return (x * 2 if hasattr(o, "other") else x) + (1 if hasattr(o, "missing_two") else 0)


def attr_via_getattribute(o, x):
    x = x + 1
    return x * o.k


def isinstance_of_getattribute_object(o, x):
    x = x + 1
    return x * 2 if isinstance(o, WithGetattribute) else x


def hash_in_dict_and_set(o, x):
    x = x + 1
    d = {o: 1}
    s = {o}
    return x + d[o] + len(s)


def eq_comparisons(o, x):
    x = x + 1
    same = o == WithEq(1)
    inside = o in [WithEq(0), WithEq(2)]
    return x * 2 if same else x, inside


def protocols(o, x):
    x = x + 1
    total = x
    for v in o:
        total = total + v
    return total * len(o), bool(o), 1 in o


def property_with_side_effects(o, x):
    x = x + 1
    return x * o.v + x * o.v


def descriptors(o, x):
    x = x + 1
    o.d = 3
    return x * o.d + x * o.n + x * o.cached + x * o.cached + (0 if o.none_attr is None else 1)


def class_property_object(o, x):
    x = x + 1
    return x * 2 if isinstance(o, WithProtocols) else x


def slotted_read(o, x):
    x = x + 1
    return x * o.a, getattr(o, "b", "empty")


class Color(enum.Enum):
    RED = 1
    BLUE = 2

    def describe(self):
        EVENTS.append(f"describe {self.name}")
        return self.value * 10

    def __str__(self):
        EVENTS.append("str")
        return f"Color{self.value}"

    @property
    def double(self):
        EVENTS.append("double")
        return self.value * 2


class Plain(enum.Enum):
    ON = 1
    OFF = 0


def enum_methods(c, x):
    x = x + 1
    return x * c.describe() + x * Color.BLUE.double, str(c), f"{Color.BLUE}", c is Color.RED


def plain_enum(p, x):
    x = x + 1
    return x * p.value if p is Plain.ON else x, p.name


class WithIndex:
    def __index__(self):
        EVENTS.append("index")
        return 1


def user_index(o, x):
    x = x + 1
    return x[o] * 2


class WithCopy:
    def __init__(self):
        self.items = [1]

    def __copy__(self):
        EVENTS.append("copy")
        new = WithCopy()
        new.items = list(self.items)
        return new


def copies(o, x):
    x = x + 1
    c = copy.copy(o)
    c.items.append(2)
    return x * len(c.items), o.items


CASES = {
    "enum_methods": (enum_methods, lambda call: (Color.RED if call % 2 else Color.BLUE, tensor(1.0))),
    "plain_enum": (plain_enum, lambda call: (Plain.ON if call % 2 else Plain.OFF, tensor(1.0))),
    "user_index": (user_index, lambda call: (WithIndex(), tensor(1.0, 2.0, 3.0))),
    "copy_with_dunder": (copies, lambda call: (WithCopy(), tensor(1.0))),
    "read_attr_via_getattr": (read_attr_via_getattr, lambda call: (WithGetattr(call), tensor(1.0, 2.0))),
    "getattr_with_default": (getattr_with_default, lambda call: (WithGetattr(), tensor(1.0))),
    "hasattr_through_getattr": (hasattr_through_getattr, lambda call: (WithGetattr(), tensor(1.0))),
    "attr_via_getattribute": (attr_via_getattribute, lambda call: (WithGetattribute(), tensor(1.0))),
    "isinstance_of_getattribute_object": (isinstance_of_getattribute_object,
                                          lambda call: (WithGetattribute(), tensor(1.0))),
    "hash_in_dict_and_set": (hash_in_dict_and_set, lambda call: (WithHash(), tensor(1.0))),
    "eq_comparisons": (eq_comparisons, lambda call: (WithEq(call), tensor(1.0))),
    "protocols": (protocols, lambda call: (WithProtocols(), tensor(1.0))),
    "property_with_side_effects": (property_with_side_effects, lambda call: (WithProperty(), tensor(1.0))),
    "descriptors": (descriptors, lambda call: (WithDescriptors(), tensor(1.0))),
    "class_property_object": (class_property_object, lambda call: (WithClassProperty(), tensor(1.0))),
    "slotted_read": (slotted_read, lambda call: (Slotted(), tensor(1.0))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_user_code_runs_as_often_as_in_eager(name):
    fn, make = CASES[name]
    check_like_eager(fn, make, calls=4)


# ------------------------------------------------------------------------------------------------
# state kept outside the arguments: globals, closures, attributes, identity

COUNTER = 0
LOG: list = []


def bump_global(x):
    global COUNTER
    x = x + 1
    COUNTER += 1
    LOG.append(COUNTER)
    return x * COUNTER


def make_closure_counter():
    count = 0

    def step(x):
        nonlocal count
        x = x + 1
        count += 1
        return x * count

    return step


class Holder:
    calls = 0


def bump_class_and_function_attributes(x):
    x = x + 1
    Holder.calls += 1
    bump_class_and_function_attributes.seen = getattr(bump_class_and_function_attributes, "seen", 0) + 1
    return x * Holder.calls


def reset_state():
    global COUNTER
    COUNTER = 0
    LOG.clear()
    Holder.calls = 0
    if hasattr(bump_class_and_function_attributes, "seen"):
        del bump_class_and_function_attributes.seen


def state_now():
    return COUNTER, list(LOG), Holder.calls, getattr(bump_class_and_function_attributes, "seen", None)


@pytest.mark.parametrize("fn", [bump_global, bump_class_and_function_attributes], ids=lambda f: f.__name__)
def test_global_and_attribute_counters(fn):
    check_like_eager(fn, lambda call: (tensor(1.0),), reset=reset_state, calls=4)
    after_compiled = state_now()
    reset_state()
    for _ in range(4):
        fn(tensor(1.0))
    assert after_compiled == state_now()


def test_nonlocal_counter():
    import ember
    eager, compiled = make_closure_counter(), ember.compile(make_closure_counter(), backend="eager")
    for _ in range(4):
        assert compiled(tensor(1.0)).tolist() == eager(tensor(1.0)).tolist()


def identity_and_aliasing(a, b, x):
    x = x + 1
    a.append(1)
    return x * len(b), a is b, id(a) == id(b)


def test_identity_of_aliased_arguments():
    def make(call):
        shared = [call]
        return (shared, shared, tensor(1.0)) if call % 2 else ([call], [call], tensor(1.0))
    check_like_eager(identity_and_aliasing, make, calls=4)


def appends_to_default(x, acc=[]):   # noqa: B006 - the shared default is the point
    x = x + 1
    acc.append(len(acc))
    return x * len(acc)


def test_mutable_default_accumulates_like_eager():
    check_like_eager(appends_to_default, lambda call: (tensor(1.0),), calls=4,
                     reset=lambda: appends_to_default.__defaults__[0].clear())
    assert appends_to_default.__defaults__[0] == [0, 1, 2, 3]


class Finalised:
    def __init__(self, v):
        self.v = v

    def __del__(self):
        EVENTS.append(f"del {getattr(self, 'v', '<blank>')}")


def makes_finalised_object(x):
    x = x + 1
    obj = Finalised(2.0)
    y = x * obj.v
    del obj
    EVENTS.append("after del")
    return y


def test_objects_with_del_are_finalised_once_per_call():
    # capture makes no stand-in instance of such a class (its __del__ would run an extra time); the
    # object is made at a graph break and handed to the resume function, which holds it until it
    # returns: its __del__ runs once per call, after the frame's last line (eagerly: at `del obj`)
    import ember
    ember._dynamo.reset()
    compiled = ember.compile(makes_finalised_object, backend="eager")
    for _ in range(3):
        EVENTS.clear()
        assert compiled(tensor(1.0)).tolist() == [4.0]
        assert sorted(EVENTS) == ["after del", "del 2.0"]
