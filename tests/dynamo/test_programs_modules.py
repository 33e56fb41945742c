"""nn.Modules inside compiled functions and compiled Modules: parameters and buffers as graph
inputs, submodules, containers, functional calls, train/eval. Compiled vs eager on fresh random
inputs with identical weights, counts checked against torch 2.13 (dynamo_harness)."""
import numpy as np
import pytest
import torch

import ember
from dynamo_harness import assert_close, check_program, rand, seeded_params, tensors


def build(factory):
    """static(lib, rng): the module factory(lib) with parameters drawn from rng."""
    def make(lib, rng):
        return (seeded_params(factory(lib), rng),)
    return make


def make_mlp(lib):
    nn = lib.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(lib.relu(self.fc1(x)))
    return MLP()


def make_with_buffer(lib):
    nn = lib.nn

    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(4))
            self.register_buffer("offset", lib.arange(4).float())
            self.factor = 1.5

        def forward(self, x):
            return x * self.weight * self.factor + self.offset
    return Scaled()


def make_module_list(lib):
    nn = lib.nn

    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                x = layer(x) + i
            return x
    return Stack()


def make_module_dict(lib):
    nn = lib.nn

    class Heads(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})

        def forward(self, x):
            return {name: head(x) for name, head in self.heads.items()}
    return Heads()


def make_training_branch(lib):
    nn = lib.nn

    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)
            if self.training:
                return y * 2
            return y - 1
    return Branchy()


def make_helper_method(lib):
    nn = lib.nn

    class WithHelpers(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4, bias=False)

        def normalise(self, x):
            return x / (x.norm(dim=-1, keepdim=True) + 1e-3)

        def forward(self, x):
            return self.normalise(self.proj(x)) + self.proj.weight.sum()
    return WithHelpers()


def sequential(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2), nn.Sigmoid())


def layer_norm_gelu(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.GELU())


def embedding(lib):
    return lib.nn.Embedding(10, 3)


def conv_block(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(2, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))


def batchnorm_eval(lib):
    bn = lib.nn.BatchNorm1d(4)
    return bn.eval()


def call_module(lib, m, x):
    return m(x)


def call_module_twice_and_functional(lib, m, x):
    y = m(x)
    return lib.nn.functional.relu(y) + m(x * 0.5)


def parameters_directly(lib, m, x):
    return x @ m.weight.t() + m.bias, len(list(m.parameters()))


def named_parameters_loop(lib, m, x):
    total = 0
    for name, p in m.named_parameters():
        total = total + p.sum()
    return x * total


def module_attribute_read(lib, m, x):
    return m(x) * m.factor


def functional_ops(lib, x, w, b):
    F = lib.nn.functional
    return F.linear(x, w, b), F.gelu(x), F.dropout(x, p=0.0, training=False), F.mse_loss(x, x * 0.5)


def embedding_inputs(lib, rng):
    return (lib.from_numpy(rng.integers(0, 10, size=(2, 5)).astype(np.int64)),)


PROGRAMS = [
    pytest.param(call_module, tensors((2, 4)), build(make_mlp), id="mlp"),
    pytest.param(call_module, tensors((2, 4)), build(make_with_buffer), id="parameter_buffer_float_attribute"),
    pytest.param(call_module, tensors((2, 4)), build(make_module_list), id="module_list_loop"),
    pytest.param(call_module, tensors((2, 4)), build(make_module_dict), id="module_dict"),
    pytest.param(call_module, tensors((2, 4)), build(make_training_branch), id="training_flag_branch"),
    pytest.param(call_module, tensors((2, 4)), build(make_helper_method), id="module_helper_method"),
    pytest.param(call_module, tensors((3, 4)), build(sequential), id="sequential"),
    pytest.param(call_module, tensors((3, 4)), build(layer_norm_gelu), id="layer_norm_gelu"),
    pytest.param(call_module, embedding_inputs, build(embedding), id="embedding"),
    pytest.param(call_module, tensors((1, 2, 4, 4)), build(conv_block), id="conv_block"),
    pytest.param(call_module, tensors((3, 4)), build(batchnorm_eval), id="batchnorm_eval"),
    pytest.param(call_module_twice_and_functional, tensors((2, 4)), build(make_mlp), id="module_called_twice"),
    pytest.param(parameters_directly, tensors((2, 4)), build(lambda lib: lib.nn.Linear(4, 3)),
                 id="parameters_directly"),
    pytest.param(named_parameters_loop, tensors((2, 4)), build(make_mlp), id="named_parameters_loop"),
    pytest.param(module_attribute_read, tensors((2, 4)), build(make_with_buffer), id="module_attribute_read"),
    pytest.param(functional_ops, tensors((2, 4), (3, 4), (3,)), None, id="functional_ops"),
]


@pytest.mark.parametrize("prog,inputs,static", PROGRAMS)
def test_module_program(prog, inputs, static):
    check_program(prog, inputs, static=static)


def make_batchnorm_train(lib):
    return lib.nn.BatchNorm1d(4)


def test_batchnorm_training_updates_buffers_like_eager():
    """Running statistics (buffers mutated in place by the module) end up equal to eager's."""
    check_program(call_module, tensors((6, 4)), static=build(make_batchnorm_train), calls=3)


@pytest.mark.parametrize("factory", [make_mlp, sequential, make_with_buffer, make_module_list],
                         ids=lambda f: f.__name__)
def test_compile_module_directly(factory):
    """lib.compile(module): the compiled module gives eager's values, one graph per module (torch's count),
    has torch's state_dict keys (2.13 prefixes them with '_orig_mod.') and the module's training flag."""
    counts, keys = {}, {}
    for lib in (torch, ember):
        lib._dynamo.reset()
        rng = np.random.default_rng(3)
        module = seeded_params(factory(lib), rng)
        counter = lib._dynamo.testing.CompileCounter()
        compiled = lib.compile(module, backend=counter)
        for call in range(3):
            x = rand(lib, np.random.default_rng(call), 2, 4)
            assert_close(compiled(x), module(x), f"{lib.__name__} call {call}")
        keys[lib.__name__] = list(compiled.state_dict())
        assert compiled.training == module.training
        counts[lib.__name__] = counter.frame_count, counter.op_count
    assert counts["ember"] == counts["torch"]
    assert keys["ember"] == keys["torch"]


def test_compiled_module_eval_switch_recompiles_and_matches():
    """Switching a compiled module to eval changes its training flag guard: a new graph, eval values."""
    counts = {}
    for lib in (torch, ember):
        lib._dynamo.reset()
        module = seeded_params(make_training_branch(lib), np.random.default_rng(0))
        counter = lib._dynamo.testing.CompileCounter()
        compiled = lib.compile(module, backend=counter)
        x = rand(lib, np.random.default_rng(1), 2, 4)
        assert_close(compiled(x), module(x), "train")
        module.eval()
        assert_close(compiled(x), module(x), "eval")
        module.train()
        assert_close(compiled(x), module(x), "train again")
        counts[lib.__name__] = counter.frame_count
    assert counts["ember"] == counts["torch"] == 2
