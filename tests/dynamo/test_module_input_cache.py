"""The graph call's kept inputs (module_guards.graph_call_through_cache): parameters and buffers read
through pinned modules are kept in a tuple while no module state was written, instead of being read
again through ``self.blocks[1].lin.weight`` on every call. After every kind of change to the module
tree or the tensors, the compiled model gives eager's values; modules whose writes are not tracked
are read fresh; ember._dynamo.reset() lets a compiled model be freed. Oracle: the same model run
eagerly."""
import gc
import warnings
import weakref

import numpy as np
import pytest

import ember

nn = ember.nn


class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.register_buffer("shift", ember.ones(n))

    def forward(self, x):
        return self.lin(x).relu() + self.shift


class Net(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.blocks = nn.ModuleList([Block(n) for _ in range(3)])
        self.head = nn.Linear(n, 2)
        self.table = nn.ParameterDict({"bias": nn.Parameter(ember.zeros(2))})

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x) + self.table["bias"]


def _compiled(model):
    ember._dynamo.reset()
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return ember.compile(model, backend=backend), graphs


def _same(model, compiled, x):
    with ember.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)


def _callers(fn):
    return [name for name in fn.__globals__ if name.startswith("__call_graph")]


def _new_parameter(model):
    model.head.weight = nn.Parameter(ember.randn(2, 4))


def _data_swap(model):
    model.blocks[1].lin.weight.data = ember.randn(4, 4)


def _in_place(model):
    with ember.no_grad():
        model.blocks[2].lin.bias.mul_(-3)


def _block_replaced(model):
    model.blocks[0] = Block(4)


def _buffer_replaced(model):
    model.blocks[1].shift = ember.full((4,), 5.0)


def _dict_item_replaced(model):
    model.table["bias"] = nn.Parameter(ember.ones(2))


def _submodule_attribute_rebound(model):
    model.blocks[2].lin = nn.Linear(4, 4)


CHANGES = [_new_parameter, _data_swap, _in_place, _block_replaced, _buffer_replaced, _dict_item_replaced,
           _submodule_attribute_rebound]


@pytest.mark.parametrize("change", CHANGES, ids=lambda f: f.__name__.strip("_"))
def test_every_change_gives_eager_values(change):
    ember.manual_seed(0)
    model = Net()
    compiled, _ = _compiled(model)
    x = ember.randn(3, 4)
    _same(model, compiled, x)
    assert _callers(Net.forward)   # the graph is called through a caller keeping the inputs
    _same(model, compiled, x)
    change(model)
    for _ in range(2):
        _same(model, compiled, x)


def test_two_instances_alternating():
    ember.manual_seed(0)
    first, second = Net(), Net()
    compiled_first, _ = _compiled(first)
    compiled_second = ember.compile(second, backend=lambda gm, example_inputs: gm.forward)
    x = ember.randn(2, 4)
    for _ in range(3):
        _same(first, compiled_first, x)
        _same(second, compiled_second, x)
    _new_parameter(second)
    _same(first, compiled_first, x)
    _same(second, compiled_second, x)


class Untracked(nn.Module):
    """Writes straight into the instance __dict__: the state version never moves."""
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def __setattr__(self, name, value):
        if name == "sneaky":
            object.__getattribute__(self, "__dict__")["lin"] = value
        else:
            super().__setattr__(name, value)

    def forward(self, x):
        return self.lin(x)


def test_untracked_module_is_read_fresh():
    ember.manual_seed(0)
    model = Untracked()
    compiled, _ = _compiled(model)
    x = ember.randn(2, 4)
    _same(model, compiled, x)
    model.sneaky = nn.Linear(4, 4)   # lands in __dict__, shadowing _modules['lin']
    _same(model, compiled, x)


def test_module_reached_through_a_global_and_rebound():
    ember.manual_seed(0)
    namespace = {"MODEL": Net()}
    exec("def run(x):\n    return MODEL(x) * 2\n", namespace)
    compiled, _ = _compiled(namespace["run"])
    x = ember.randn(2, 4)
    with ember.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), namespace["run"](x).numpy(), rtol=1e-6)
        _new_parameter(namespace["MODEL"])
        np.testing.assert_allclose(compiled(x).numpy(), namespace["run"](x).numpy(), rtol=1e-6)
        namespace["MODEL"] = Net()
        np.testing.assert_allclose(compiled(x).numpy(), namespace["run"](x).numpy(), rtol=1e-6)


class Broken(nn.Module):
    """A graph break between the blocks: the resume function's graph reads modules too."""
    def __init__(self):
        super().__init__()
        self.a, self.b = Block(4), Block(4)

    def forward(self, x):
        y = self.a(x)
        print("", end="")
        return self.b(y)


def test_graph_after_a_break_keeps_inputs_too():
    ember.manual_seed(0)
    model = Broken()
    compiled, graphs = _compiled(model)
    x = ember.randn(2, 4)
    _same(model, compiled, x)
    assert len(graphs) == 2
    model.b.lin.weight = nn.Parameter(ember.randn(4, 4))
    _same(model, compiled, x)


def test_gradients_reach_the_kept_parameters():
    ember.manual_seed(0)
    model = Net()
    compiled, _ = _compiled(model)
    x = ember.randn(3, 4)
    for _ in range(2):
        model.zero_grad()
        compiled(x).sum().backward()
        got = [p.grad.numpy().copy() for p in model.parameters()]
        model.zero_grad()
        model(x).sum().backward()
        for g, p in zip(got, model.parameters()):
            np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6, atol=1e-6)
        _new_parameter(model)


def test_reset_lets_the_model_be_freed():
    ember.manual_seed(0)
    model = Net()
    compiled, _ = _compiled(model)
    with ember.no_grad():
        compiled(ember.randn(2, 4))
    assert _callers(Net.forward)
    ref = weakref.ref(model.blocks[0].lin.weight)
    del model, compiled
    ember._dynamo.reset()
    gc.collect()
    assert ref() is None


class Parameters(nn.Module):
    def __init__(self):
        super().__init__()
        self.plist = nn.ParameterList([nn.Parameter(ember.randn(4)), nn.Parameter(ember.randn(4))])
        self.pdict = nn.ParameterDict({"scale": nn.Parameter(ember.randn(4))})

    def forward(self, x):
        return (x + self.plist[0] + self.plist[-1]) * self.pdict["scale"]


def test_parameter_list_and_dict_items_are_captured():
    """Indexing a ParameterList/ParameterDict runs its own __getitem__ (it used to be taken for a
    ModuleList index, and a string key failed the capture)."""
    ember.manual_seed(0)
    model = Parameters()
    x = ember.randn(2, 4)
    explanation = ember._dynamo.explain(model)(x)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0, explanation.break_reasons
    compiled, graphs = _compiled(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # the items' guards compile: no eager fallback
        _same(model, compiled, x)
        model.pdict["scale"] = nn.Parameter(ember.ones(4))
        model.plist[0] = nn.Parameter(ember.zeros(4))
        _same(model, compiled, x)
