"""ember.fx GraphModule: owns what its graph reads, runs generated code, prints like torch.fx."""
import copy
import operator
import pickle

import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.fx

STACK = '  File "/tmp/prog.py", line 12, in forward\n    return self.layers[0](x) + self.scale\n'


def make_root(lib):
    """Same module tree (and the same weights) in torch and ember."""
    root = lib.nn.Module()
    root.layers = lib.nn.ModuleList([lib.nn.Linear(3, 4), lib.nn.ReLU()])
    root.register_buffer("scale", lib.ones(4) * 2)
    rng = np.random.default_rng(0)
    with lib.no_grad():
        root.layers[0].weight.copy_(lib.tensor(rng.standard_normal((4, 3)).astype("float32")))
        root.layers[0].bias.copy_(lib.tensor(rng.standard_normal(4).astype("float32")))
    return root


def make_graph(lib, fx, with_meta=False):
    g = fx.Graph()
    x = g.placeholder("x")
    lin = g.call_module("layers.0", (x,))
    w = g.get_attr("layers.0.weight")
    s = g.get_attr("scale")
    add = g.call_function(operator.add, (lin, s))
    add.meta["stack_trace"] = STACK
    r = g.call_module("layers.1", (add,))
    mm = g.call_function(lib.matmul, (r, w))
    t = g.call_function(lib.ops.aten.t.default, (mm,))
    out = g.call_method("sum", (t,), {"dim": -1})
    g.output((out, r))
    if with_meta:
        shapes = {"x": (2, 3), "layers_0": (2, 4), "layers_0_weight": (4, 3), "scale": (4,), "add": (2, 4),
                  "layers_1": (2, 4), "matmul": (2, 3), "t_default": (3, 2), "sum_1": (3,)}
        for node in g.nodes:
            if node.name in shapes:
                node.meta["val"] = lib.empty(*shapes[node.name], device="meta")
        g.find_nodes(op="placeholder")[0].meta["val"] = lib.empty(2, 3, dtype=lib.float64, device="meta")
    return g


def as_ember(text):
    return text.replace("torch.", "ember.")


def ember_input():
    return np.random.default_rng(1).standard_normal((2, 3)).astype("float32")


def test_owns_attributes_and_runs_like_torch():
    gm = ember.fx.GraphModule(make_root(ember), make_graph(ember, ember.fx))
    tgm = torch.fx.GraphModule(make_root(torch), make_graph(torch, torch.fx))
    assert sorted(n for n, _ in gm.named_parameters()) == sorted(n for n, _ in tgm.named_parameters())
    assert sorted(n for n, _ in gm.named_buffers()) == sorted(n for n, _ in tgm.named_buffers())
    assert [n for n, _ in gm.named_modules()] == [n for n, _ in tgm.named_modules()]
    x = ember_input()
    got, want = gm(ember.tensor(x)), tgm(torch.tensor(x))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_shares_parameters_with_root():
    root = make_root(ember)
    gm = ember.fx.GraphModule(root, make_graph(ember, ember.fx))
    assert gm.layers.get_submodule("0").weight is root.layers[0].weight
    assert gm.get_submodule("layers.0") is root.layers[0]


def test_code_matches_torch():
    gm = ember.fx.GraphModule(make_root(ember), make_graph(ember, ember.fx))
    tgm = torch.fx.GraphModule(make_root(torch), make_graph(torch, torch.fx))
    assert gm.code == as_ember(tgm.code)
    assert "add = layers_0 + scale;  layers_0 = scale = None" in gm.code


def test_repr_and_str_match_torch():
    gm = ember.fx.GraphModule(make_root(ember), make_graph(ember, ember.fx))
    tgm = torch.fx.GraphModule(make_root(torch), make_graph(torch, torch.fx))
    assert repr(gm) == repr(tgm)
    assert str(gm) == as_ember(str(tgm))


def test_print_readable_matches_torch(capsys):
    gm = ember.fx.GraphModule(make_root(ember), make_graph(ember, ember.fx, with_meta=True))
    tgm = torch.fx.GraphModule(make_root(torch), make_graph(torch, torch.fx, with_meta=True))
    ours = gm.print_readable(print_output=False)
    assert ours == as_ember(tgm.print_readable(print_output=False))
    assert 'def forward(self, x: "f64[2, 3]"):' in ours
    assert 'add: "f32[2, 4]" = layers_0 + scale' in ours
    assert "# File: /tmp/prog.py:12 in forward, code: return self.layers[0](x) + self.scale" in ours
    gm.print_readable()
    assert capsys.readouterr().out == ours + "\n"


def test_print_readable_nested_graph_module_matches_torch():
    def nested(lib, fx):
        inner_g = fx.Graph()
        a = inner_g.placeholder("a")
        inner_g.output(inner_g.call_function(operator.mul, (a, 2)))
        inner = fx.GraphModule(lib.nn.Module(), inner_g, "Inner")
        g = fx.Graph()
        x = g.placeholder("x")
        g.output(g.call_module("sub", (x,)))
        return fx.GraphModule({"sub": inner}, g)
    ours = nested(ember, ember.fx).print_readable(print_output=False)
    assert ours == as_ember(nested(torch, torch.fx).print_readable(print_output=False))


def test_tensor_meta_annotation():
    shape_prop = pytest.importorskip("ember.fx.passes.shape_prop")
    g = make_graph(ember, ember.fx)
    gm = ember.fx.GraphModule(make_root(ember), g)
    shape_prop.ShapeProp(gm).propagate(ember.tensor(ember_input()))
    assert 'sum_1: "f32[3]" = t_default.sum(dim = -1)' in gm.print_readable(print_output=False)


def test_recompile_after_editing_graph_and_setting_graph():
    gm = ember.fx.GraphModule(make_root(ember), make_graph(ember, ember.fx))
    x = ember.tensor(ember_input())
    before = gm(x)[0]
    sum_node = gm.graph.find_nodes(op="call_method", target="sum")[0]
    with gm.graph.inserting_after(sum_node):
        neg = gm.graph.call_function(operator.neg, (sum_node,))
    sum_node.replace_all_uses_with(neg)
    neg.args = (sum_node,)
    gm.recompile()
    assert "neg = -sum_1" in gm.code
    np.testing.assert_allclose(gm(x)[0].detach().numpy(), -before.detach().numpy())
    g2 = ember.fx.Graph()
    p = g2.placeholder("x")
    g2.output(g2.call_function(operator.mul, (p, 3)))
    gm.graph = g2
    assert g2.owning_module is gm
    assert gm(ember.tensor([1.0])).tolist() == [3.0]
    assert "mul = x * 3" in gm.code


def test_graph_modules_do_not_share_forward():
    def gm_of(k):
        g = ember.fx.Graph()
        x = g.placeholder("x")
        g.output(g.call_function(operator.mul, (x, k)))
        return ember.fx.GraphModule(ember.nn.Module(), g)
    a, b = gm_of(2), gm_of(5)
    assert a(ember.tensor([1.0])).tolist() == [2.0] and b(ember.tensor([1.0])).tolist() == [5.0]
    assert isinstance(a, ember.fx.GraphModule) and isinstance(a, ember.nn.Module)


def test_dict_root_and_missing_target():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    w = g.get_attr("p.w")
    g.output(g.call_function(operator.add, (x, w)))
    gm = ember.fx.GraphModule({"p.w": ember.ones(2)}, g)
    assert [n for n, _ in gm.named_buffers()] == ["p.w"]
    assert gm(ember.zeros(2)).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="p.w"):
        ember.fx.GraphModule({}, g)
    with pytest.raises(RuntimeError, match="unsupported type"):
        ember.fx.GraphModule(3, g)
    # torch raises the same exception type for the dict case
    tg = torch.fx.Graph()
    tx = tg.placeholder("x")
    tg.output(tg.call_function(operator.add, (tx, tg.get_attr("p.w"))))
    with pytest.raises(RuntimeError):
        torch.fx.GraphModule({}, tg)


def test_class_name():
    gm = ember.fx.GraphModule(make_root(ember), make_graph(ember, ember.fx), class_name="MyGraph")
    tgm = torch.fx.GraphModule(make_root(torch), make_graph(torch, torch.fx), class_name="MyGraph")
    assert repr(gm) == repr(tgm)
    assert gm.print_readable(print_output=False).startswith("class MyGraph(ember.nn.Module):")


def test_deepcopy_is_independent_and_equal():
    gm = ember.fx.GraphModule(make_root(ember), make_graph(ember, ember.fx, with_meta=True))
    gm.meta["note"] = [1]
    c = copy.deepcopy(gm)
    assert c.code == gm.code and str(c.graph) == str(gm.graph)
    assert c.graph is not gm.graph and c.graph.owning_module is c
    assert c.get_submodule("layers.0").weight is not gm.get_submodule("layers.0").weight
    assert c.meta == {"note": [1]} and c.meta["note"] is not gm.meta["note"]
    x = ember.tensor(ember_input())
    np.testing.assert_allclose(c(x)[0].detach().numpy(), gm(x)[0].detach().numpy())
    with ember.no_grad():
        c.get_submodule("layers.0").weight.zero_()
    assert not np.allclose(c(x)[0].detach().numpy(), gm(x)[0].detach().numpy())
    assert c.print_readable(print_output=False) == gm.print_readable(print_output=False)


def test_pickle_round_trip():
    gm = ember.fx.GraphModule(make_root(ember), make_graph(ember, ember.fx, with_meta=True),
                              class_name="Saved")
    data = pickle.dumps(gm)
    assert b"<code" not in data
    back = pickle.loads(data)
    assert back.code == gm.code and str(back.graph) == str(gm.graph)
    assert repr(back) == repr(gm)
    x = ember.tensor(ember_input())
    for a, b in zip(back(x), gm(x)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())
    assert back.graph.find_nodes(op="call_function", target=ember.ops.aten.t.default)
    assert back.graph.find_nodes(op="call_function", target=operator.add)[0].meta["stack_trace"] == STACK


def test_traceback_points_into_generated_code():
    g = ember.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(operator.truediv, (x, 0)))
    gm = ember.fx.GraphModule(ember.nn.Module(), g)
    import traceback
    with pytest.raises(ZeroDivisionError) as info:
        gm(1)
    text = "".join(traceback.format_exception(info.value))
    assert "<eval_with_key>" in text and "truediv = x / 0" in text
