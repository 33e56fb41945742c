"""Graph breaks: tensor-dependent control flow, print, .item(), .tolist(), breaks in loops and in
nested calls, several breaks in a row, values on the stack at the break. Compiled vs eager on
fresh random inputs (several calls, so both sides of a data-dependent branch run), frame counts
-- graphs compiled, including the resume functions compiled on first call -- checked against
torch 2.13 (dynamo_harness)."""
import pytest

from dynamo_harness import check_program, rand, tensors


def data_dependent_if(lib, a, b):
    x = a / (lib.abs(a) + 1)
    if b.sum() < 0:
        b = b * -1
    return x * b


def data_dependent_if_else(lib, a):
    y = a.cos()
    if y.mean() > 0.5:
        z = y * 2
    else:
        z = y - 2
    return z + 1


def tensor_truthiness(lib, a):
    if (a > 0).any():
        return a.relu()
    return a.neg()


def tensor_max_compare(lib, a):
    return a * 2 if a.max() > 1.0 else a / 2


def print_in_middle(lib, a):
    x = a * 2
    print("halfway", tuple(x.shape))
    return x + 1


def print_first(lib, a):
    print("start")
    return a.sin()


def item_in_middle(lib, a):
    s = a.sum().item()
    return a * s + 1


def tolist_in_middle(lib, a):
    values = a.tolist()
    return a + len(values), values[0] > -100


def two_breaks_in_a_row(lib, a, b):
    x = a + b
    if x.sum() > 0:
        x = x * 2
    y = x.exp()
    if y.mean() > 1:
        y = y - 1
    return y


def break_with_live_stack_value(lib, a, b):
    def loud(t):
        print("loud")
        return t * 3
    return a + loud(b)


def break_inside_nested_call(lib, a):
    def inner(t):
        u = t + 1
        print("inner")
        return u * 2
    return inner(a).sum(), a - 1


def break_two_calls_deep(lib, a):
    def level2(t):
        if t.sum() > 0:
            return t - 1
        return t + 1

    def level1(t):
        return level2(t * 2) * 3
    return level1(a) + a


def loud_triple(t):
    print("loud")
    return t * 3


def branchy_helper(t):
    if t.sum() > 0:
        return t - 1
    return t + 1


def break_in_module_level_helper(lib, a, b):
    return a + loud_triple(b)


def calls_branchy_helper(t):
    return branchy_helper(t * 2) * 3


def break_in_module_level_helper_two_deep(lib, a):
    return calls_branchy_helper(a) + a


def break_in_for_loop_body(lib, a):
    out = a
    for i in range(3):
        out = out + i
        if out.sum() > 0:
            out = out * 0.5
    return out


def break_statement_on_tensor(lib, a):
    out = a
    for _ in range(5):
        out = out * 1.5
        if out.abs().max() > 4:
            break
    return out


def while_tensor_condition(lib, a):
    x = a.abs() + 0.1
    while x.sum() < 20:
        x = x * 2
    return x


def print_in_loop(lib, a):
    for i in range(2):
        print("step", i)
        a = a + 1
    return a


def break_in_user_method(lib, obj, a):
    return obj.run(a) * 2


class Noisy:
    def __init__(self, scale):
        self.scale = scale

    def run(self, x):
        y = x * self.scale
        print("running")
        return y + 1


def noisy_static(lib, rng):
    return (Noisy(rand(lib, rng, 3)),)


def module_forward_with_break(lib, m, x):
    return m(x).sum(0)


def make_branchy_module(lib, rng):
    from dynamo_harness import seeded_params

    class Branchy(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 3)

        def forward(self, x):
            y = self.lin(x)
            if y.sum() > 0:
                y = y.relu()
            return y * 2
    return (seeded_params(Branchy(), rng),)


def break_returns_python_value(lib, a):
    n = a.shape[0]
    k = int(a.sum().item() > 0)
    return a * n, k


def locals_dead_after_break(lib, a, b):
    tmp = a * b
    unused = tmp + 1  # noqa: F841  (dead at the break: not an argument of the resume function)
    if tmp.sum() > 0:
        return tmp
    return -tmp


def break_before_side_effect(lib, a, xs):
    y = a * 2
    print("before append")
    xs.append(y)
    return y + 1


def numpy_conversion_breaks(lib, a):
    n = float(a.detach().sum())
    return a + n


PROGRAMS = [
    pytest.param(data_dependent_if, tensors((10,), (10,)), None, id="data_dependent_if"),
    pytest.param(data_dependent_if_else, tensors((4,)), None, id="data_dependent_if_else"),
    pytest.param(tensor_truthiness, tensors((3,)), None, id="tensor_truthiness"),
    pytest.param(tensor_max_compare, tensors((3,)), None, id="tensor_max_compare"),
    pytest.param(print_in_middle, tensors((3,)), None, id="print_in_middle"),
    pytest.param(print_first, tensors((3,)), None, id="print_first"),
    pytest.param(item_in_middle, tensors((3,)), None, id="item_in_middle"),
    pytest.param(tolist_in_middle, tensors((3,)), None, id="tolist_in_middle"),
    pytest.param(two_breaks_in_a_row, tensors((3,), (3,)), None, id="two_breaks_in_a_row"),
    pytest.param(break_with_live_stack_value, tensors((3,), (3,)), None, id="break_with_live_stack_value"),
    pytest.param(break_inside_nested_call, tensors((3,)), None, id="break_inside_nested_call"),
    pytest.param(break_two_calls_deep, tensors((3,)), None, id="break_two_calls_deep"),
    pytest.param(break_in_module_level_helper, tensors((3,), (3,)), None, id="break_in_module_level_helper"),
    pytest.param(break_in_module_level_helper_two_deep, tensors((3,)), None,
                 id="break_in_module_level_helper_two_deep"),
    pytest.param(break_in_for_loop_body, tensors((3,)), None, id="break_in_for_loop_body"),
    pytest.param(break_statement_on_tensor, tensors((3,)), None, id="break_statement_on_tensor"),
    pytest.param(while_tensor_condition, tensors((3,)), None, id="while_tensor_condition"),
    pytest.param(print_in_loop, tensors((3,)), None, id="print_in_loop"),
    pytest.param(break_in_user_method, tensors((3,)), noisy_static, id="break_in_user_method"),
    pytest.param(module_forward_with_break, tensors((2, 3)), make_branchy_module, id="module_forward_with_break"),
    pytest.param(break_returns_python_value, tensors((3,)), None, id="break_returns_python_value"),
    pytest.param(locals_dead_after_break, tensors((3,), (3,)), None, id="locals_dead_after_break"),
    pytest.param(break_before_side_effect, lambda lib, rng: (rand(lib, rng, 3), []), None,
                 id="break_before_side_effect"),
    pytest.param(numpy_conversion_breaks, tensors((3,)), None, id="float_of_tensor_breaks"),
]


@pytest.mark.parametrize("prog,inputs,static", PROGRAMS)
def test_graph_break_program(prog, inputs, static):
    check_program(prog, inputs, static=static, calls=4)


def test_print_output_same_as_eager(capsys):
    """What the program prints around a graph break comes out once per call, in eager's order."""
    import ember
    import numpy as np

    def prog(lib, a):
        print("one")
        x = a + 1
        print("two", tuple(x.shape))
        return x
    a = rand(ember, np.random.default_rng(0), 3)
    prog(ember, a)
    prog(ember, a)
    eager_out = capsys.readouterr().out
    compiled = ember.compile(prog, backend="eager")
    compiled(ember, a)
    compiled(ember, a)
    assert capsys.readouterr().out == eager_out


def no_break(lib, a, b):
    x = a.relu() + b.shape[0]
    return lib.where(x > 1, x, b).sum(0)


def test_fullgraph_program_without_break_compiles_one_graph():
    check_program(no_break, tensors((3, 2), (3, 2)), fullgraph=True)
