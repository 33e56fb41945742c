"""Side effects: in-place ops on inputs, mutation of lists, dicts, object attributes and globals,
replayed after the graph in program order (and around graph breaks). Compiled vs eager on fresh
random inputs -- results, inputs afterwards and global state afterwards all compared -- counts
checked against torch 2.13 (dynamo_harness)."""
import pytest

from dynamo_harness import check_program, rand, tensors


# ---- in-place ops on inputs ----------------------------------------------------------------------
def add_inplace_on_input(lib, a, b):
    a.add_(b)
    return a * 2


def several_inplace_methods(lib, a):
    a.mul_(2).add_(1)
    a.clamp_(-1.5, 1.5)
    return a.sum()


def augmented_assignment_on_input(lib, a, b):
    x = a
    x += b
    x *= 2
    return x


def setitem_on_input(lib, a, b):
    a[0] = b[0] * 10
    a[:, -1] = 0.0
    return a + 1


def zero_and_copy_inplace(lib, a, b):
    a.zero_()
    b.copy_(a + 3)
    return a, b


def inplace_on_view_of_input(lib, a):
    row = a[1]
    row.mul_(0)
    return a.sum(0)


def inplace_then_read_both(lib, a):
    before = a * 1
    a.sub_(1)
    return before - a


def inplace_with_graph_break(lib, a):
    a.add_(1)
    if a.sum() > 0:
        a.mul_(2)
    return a


# ---- lists, dicts and attributes ------------------------------------------------------------------
def list_input_mutated(lib, xs, a):
    xs.append(a * 2)
    xs[0] = xs[0] + 1
    return len(xs)


def list_input_pop_and_clear(lib, xs):
    last = xs.pop()
    first = xs.pop(0)
    return last + first, len(xs)


def list_input_extend_sort_ints(lib, xs, ints):
    ints.sort()
    ints.append(len(xs))
    xs.extend([x * 2 for x in xs])
    return ints[0]


def dict_input_mutated(lib, d, a):
    d["new"] = a + 1
    d["x"] = d["x"] * 2
    del d["y"]
    return len(d)


def dict_input_update(lib, d):
    d.update(z=d["x"] - 1)
    d.setdefault("w", d["x"] * 0)
    return d["z"].sum()


class Holder:
    def __init__(self, t):
        self.t = t
        self.count = 0
        self.history = []


def holder_static(lib, rng):
    return (Holder(rand(lib, rng, 3)),)


def attribute_assignment(lib, obj, a):
    obj.count += 1
    obj.t = obj.t + a
    obj.last = a * 2
    return obj.t


def attribute_list_append(lib, obj, a):
    obj.history.append(a.sum())
    obj.history.append(obj.count)
    return a


def attribute_mutation_across_break(lib, obj, a):
    obj.count = obj.count + 1
    if a.sum() > 0:
        obj.count = obj.count * 10
    obj.t = a
    return obj.count


def new_object_attribute_returned(lib, a):
    h = Holder(a)
    h.t = h.t * 3
    h.count = 7
    return h


# ---- globals ------------------------------------------------------------------------------
COUNTER = 0
LOG = []
STATE = {}
SCALE = None


def reset_globals(lib):
    global COUNTER, SCALE
    COUNTER = 0
    LOG.clear()
    STATE.clear()
    SCALE = None


def snapshot_globals(lib):
    return {"COUNTER": COUNTER, "LOG": list(LOG), "STATE": dict(STATE), "SCALE": SCALE}


GLOBAL_STATE = (reset_globals, snapshot_globals)


def global_counter_increment(lib, a):
    global COUNTER
    COUNTER += 1
    return a * 2


def global_tensor_assignment(lib, a):
    global SCALE
    SCALE = a.sum() * 2
    return a + 1


def global_list_append(lib, a):
    LOG.append("called")
    LOG.append(a.mean())
    return a.exp()


def global_dict_store(lib, a, b):
    STATE["sum"] = a + b
    STATE["n"] = a.shape[0]
    return STATE["sum"] * 2


def global_read_after_write(lib, a):
    global COUNTER
    COUNTER = COUNTER + 5
    return a * COUNTER


def side_effects_in_program_order(lib, obj, a):
    """Appends to one global log from several places: the replay must keep this order."""
    LOG.append("first")
    obj.history.append("second")
    LOG.append(len(obj.history))
    STATE["third"] = a * 3
    LOG.append("fourth")
    return a


def side_effects_around_break(lib, a):
    LOG.append("before")
    x = a * 2
    print("break")
    LOG.append("after")
    STATE["x"] = x
    return x


def side_effect_in_inlined_helper(lib, a):
    def record(t):
        LOG.append(t.sum())
        return t + 1
    return record(record(a))


PROGRAMS = [
    pytest.param(add_inplace_on_input, tensors((3,), (3,)), None, id="add_inplace_on_input"),
    pytest.param(several_inplace_methods, tensors((4,)), None, id="several_inplace_methods"),
    pytest.param(augmented_assignment_on_input, tensors((3,), (3,)), None, id="augmented_assignment_on_input"),
    pytest.param(setitem_on_input, tensors((3, 3), (3, 3)), None, id="setitem_on_input"),
    pytest.param(zero_and_copy_inplace, tensors((3,), (3,)), None, id="zero_and_copy_inplace"),
    pytest.param(inplace_on_view_of_input, tensors((3, 2)), None, id="inplace_on_view_of_input"),
    pytest.param(inplace_then_read_both, tensors((3,)), None, id="inplace_then_read_both"),
    pytest.param(inplace_with_graph_break, tensors((3,)), None, id="inplace_with_graph_break"),
    pytest.param(list_input_mutated, lambda lib, rng: ([rand(lib, rng, 2)], rand(lib, rng, 2)), None,
                 id="list_input_mutated"),
    pytest.param(list_input_pop_and_clear, lambda lib, rng: ([rand(lib, rng, 2) for _ in range(3)],), None,
                 id="list_input_pop"),
    pytest.param(list_input_extend_sort_ints, lambda lib, rng: ([rand(lib, rng, 2)], [3, 1, 2]), None,
                 id="list_input_extend_sort_ints"),
    pytest.param(dict_input_mutated, lambda lib, rng: ({"x": rand(lib, rng, 2), "y": rand(lib, rng, 2)},
                                                       rand(lib, rng, 2)), None, id="dict_input_mutated"),
    pytest.param(dict_input_update, lambda lib, rng: ({"x": rand(lib, rng, 2)},), None, id="dict_input_update"),
    pytest.param(attribute_assignment, tensors((3,)), holder_static, id="attribute_assignment"),
    pytest.param(attribute_list_append, tensors((3,)), holder_static, id="attribute_list_append"),
    pytest.param(attribute_mutation_across_break, tensors((3,)), holder_static, id="attribute_mutation_across_break"),
    pytest.param(new_object_attribute_returned, tensors((3,)), None, id="new_object_attribute_returned"),
]


@pytest.mark.parametrize("prog,inputs,static", PROGRAMS)
def test_side_effect_program(prog, inputs, static):
    check_program(prog, inputs, static=static, calls=3)


GLOBAL_PROGRAMS = [
    pytest.param(global_counter_increment, tensors((3,)), None, id="global_counter_increment"),
    pytest.param(global_tensor_assignment, tensors((3,)), None, id="global_tensor_assignment"),
    pytest.param(global_list_append, tensors((3,)), None, id="global_list_append"),
    pytest.param(global_dict_store, tensors((3,), (3,)), None, id="global_dict_store"),
    pytest.param(global_read_after_write, tensors((3,)), None, id="global_read_after_write"),
    pytest.param(side_effects_in_program_order, tensors((3,)), holder_static, id="side_effects_in_program_order"),
    pytest.param(side_effects_around_break, tensors((3,)), None, id="side_effects_around_break"),
    pytest.param(side_effect_in_inlined_helper, tensors((3,)), None, id="side_effect_in_inlined_helper"),
]


@pytest.mark.parametrize("prog,inputs,static", GLOBAL_PROGRAMS)
def test_global_mutation_program(prog, inputs, static):
    check_program(prog, inputs, static=static, calls=3, state=GLOBAL_STATE)
