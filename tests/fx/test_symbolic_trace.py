"""ember.fx.symbolic_trace on 50 programs: each GraphModule computes what eager computes on fresh
random inputs, and `gm.code`, exec'ed and traced again, re-creates the same graph. Then the node
formats against torch.fx on the same source, concrete_args, wrap, stack traces and TraceErrors."""
import copy
import inspect
import operator
import os
import tempfile
from math import sqrt

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.fx import symbolic_trace, Tracer, TraceError, GraphModule
from ember.fx._symbolic_trace import PH
from ember.nn.parameter import Parameter


# -- functions kept opaque with wrap() (module scope, as wrap requires) ------------------------
def clamp_positive_rows(x):
    """Data-dependent Python control flow: untraceable, so it is wrapped."""
    return x if float(x.sum()) > 0 else -x


ember.fx.wrap("clamp_positive_rows")


@ember.fx.wrap
def scaled_by_norm(x, eps):
    return x / (float(x.abs().max()) + eps)


# -- the programs ----------------------------------------------------------------------------
def rand(*shape):
    return ember.randn(*shape)


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(ember.relu(self.fc1(x)))


class OwnParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = Parameter(ember.randn(4, 5))
        self.register_buffer("shift", ember.randn(5))

    def forward(self, x):
        return x @ self.w + self.shift


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = TwoLayer()
        self.norm = nn.LayerNorm(3)

    def forward(self, x):
        return self.norm(self.inner(x)) * 2


class WithSequential(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))

    def forward(self, x):
        return self.body(x).softmax(-1)


class WithModuleList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


class WithModuleDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})

    def forward(self, x):
        return self.heads["a"](x).sum(-1) + self.heads["b"](x).mean(-1)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.pool = nn.MaxPool2d(2)
        self.flat = nn.Flatten()

    def forward(self, x):
        return self.flat(self.pool(F.relu(self.bn(self.conv(x)))))


class EmbedMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, idx):
        return self.emb(idx).mean(1)


class TensorAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = ember.tensor([1.0, 2.0, 3.0])

    def forward(self, x):
        return x * self.scale


class KwargsModule(nn.Module):
    def forward(self, x, y=None, alpha: float = 2.0):
        return x + alpha * y


class ResidualBlock(nn.Module):           # a user module: traced through when nested
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return x + self.lin(x).sigmoid()


class WithResidual(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(ResidualBlock(), ResidualBlock())

    def forward(self, x):
        return self.blocks(x)


def _inplace_ops(x):
    y = x.clone()
    y.add_(1).mul_(2)
    y.clamp_(min=-1.0)
    return y


def _inplace_operators(x, z):
    y = x.clone()
    y += 1
    y *= z
    y -= x
    return y


def _setitem(x):
    y = x.clone()
    y[0] = 5.0
    y[:, 1] = y[:, 2]
    return y


def _tuple_input(pair):
    a, b = pair
    return a * b, a - b


def _dict_io(d):
    return {"sum": d["a"] + d["b"], "prod": d["a"] * d["b"]}


def _unpack_chunk(x):
    a, b = x.chunk(2)
    return ember.cat([b, a * 2], dim=0)


def _max_with_indices(x):
    out = x.max(dim=1)
    return out.values, out.indices


# (id, program, input maker). A program is a function or a factory `lambda: Module()`.
PROGRAMS = [
    ("sigmoid_neg", lambda x: ember.sigmoid(x).neg(), lambda: (rand(3, 4),)),
    ("arith", lambda x, y: 2 * x + 1 - y / 3 + x * y, lambda: (rand(3, 4), rand(3, 4))),
    ("reflected", lambda x: (1 - x) / (2 + x.abs()) + 3 * x - 2 ** x, lambda: (rand(5),)),
    ("unary", lambda x: -x + abs(x) + (+x), lambda: (rand(2, 3),)),
    ("compare_where", lambda x, y: ember.where(x > y, x, y) + (x <= 0).float(), lambda: (rand(4), rand(4))),
    ("matmul", lambda a, b: a @ b, lambda: (rand(3, 4), rand(4, 2))),
    ("floordiv_mod", lambda x: x // 0.7 + x % 0.5, lambda: (rand(6),)),
    ("bitwise", lambda a, b: (a & b) | (a ^ ~b), lambda: (ember.rand(5) > 0.5, ember.rand(5) > 0.5)),
    ("views", lambda x: x.view(2, 6).transpose(0, 1).reshape(-1).unsqueeze(0), lambda: (rand(3, 4),)),
    ("transpose_attr", lambda x: x.T @ x, lambda: (rand(3, 2),)),
    ("index_basic", lambda x: x[0] + x[:, 1:3].sum(-1, keepdim=True)[1:2].mean() + x[..., None][1, 2, 0],
     lambda: (rand(3, 4),)),
    ("index_mask", lambda x, y: x[y > 0], lambda: (rand(6), rand(6))),
    ("index_list", lambda x: x[[0, 2]], lambda: (rand(3, 4),)),
    ("shape_args", lambda x: x.reshape(x.shape[0], -1) * x.size(1), lambda: (rand(2, 3, 4),)),
    ("zeros_like_size", lambda x: ember.zeros(x.size(0), 2) + x[:, :2], lambda: (rand(3, 4),)),
    ("constant_tensor", lambda x: x + ember.ones(4) * 2, lambda: (rand(3, 4),)),
    ("sum_kwargs", lambda x: ember.sum(x, dim=1, keepdim=True) - x.mean(0), lambda: (rand(3, 4),)),
    ("dtype_conv", lambda x: x.to(ember.float64) + x.double() * x.long(), lambda: (rand(4) * 5,)),
    ("reductions", lambda x: x.amax(-1) - x.amin(-1) + x.std(0).sum(), lambda: (rand(3, 4),)),
    ("softmax_family", lambda x: F.softmax(x, dim=-1) + F.log_softmax(x, -1).exp() + F.gelu(x),
     lambda: (rand(2, 5),)),
    ("functional_linear", lambda x, w, b: F.relu(F.linear(x, w, b)), lambda: (rand(3, 4), rand(5, 4), rand(5))),
    ("layer_norm", lambda x: F.layer_norm(x, (4,)), lambda: (rand(2, 4),)),
    ("linalg_norm", lambda x: ember.linalg.vector_norm(x, dim=-1) + ember.linalg.norm(x), lambda: (rand(3, 4),)),
    ("stack_split", lambda x: ember.stack(x.split(2, dim=1), dim=0).sum(0), lambda: (rand(3, 4),)),
    ("multi_output", lambda x: (x.sin(), x.cos(), x.tanh()), lambda: (rand(4),)),
    ("list_output", lambda x: [x + 1, [x * 2, {"k": x - 1}]], lambda: (rand(4),)),
    ("max_namedtuple", _max_with_indices, lambda: (rand(3, 5),)),
    ("unpack_chunk", _unpack_chunk, lambda: (rand(4, 3),)),
    ("tuple_input", _tuple_input, lambda: ((rand(3), rand(3)),)),
    ("dict_io", _dict_io, lambda: ({"a": rand(2, 2), "b": rand(2, 2)},)),
    ("inplace_methods", _inplace_ops, lambda: (rand(3, 3),)),
    ("inplace_operators", _inplace_operators, lambda: (rand(3, 3), rand(3, 3))),
    ("setitem", _setitem, lambda: (rand(3, 4),)),
    ("autowrap_math", lambda x: x / sqrt(x.shape[-1]), lambda: (rand(2, 9),)),
    ("wrap_by_name", lambda x: clamp_positive_rows(x) * 2, lambda: (rand(4),)),
    ("wrap_decorator", lambda x: scaled_by_norm(x, 1e-6) + 1, lambda: (rand(4),)),
    ("method_chain", lambda x: x.exp().log1p().clamp(max=2.0).pow(2).sqrt(), lambda: (rand(3, 3),)),
    ("cumsum_sort", lambda x: x.cumsum(0) + ember.sort(x, dim=0).values, lambda: (rand(5, 2),)),
    ("two_layer", TwoLayer, lambda: (rand(2, 4),)),
    ("own_parameter", OwnParameter, lambda: (rand(3, 4),)),
    ("nested_modules", Outer, lambda: (rand(2, 4),)),
    ("sequential", WithSequential, lambda: (rand(3, 4),)),
    ("module_list", WithModuleList, lambda: (rand(2, 4),)),
    ("module_dict", WithModuleDict, lambda: (rand(2, 4),)),
    ("conv_net", lambda: ConvNet().eval(), lambda: (rand(2, 2, 6, 6),)),
    ("embedding", EmbedMean, lambda: (ember.randint(0, 10, (3, 5)),)),
    ("tensor_attribute", TensorAttribute, lambda: (rand(2, 3),)),
    ("module_kwargs", KwargsModule, lambda: (rand(3), rand(3))),
    ("residual_user_modules", WithResidual, lambda: (rand(2, 4),)),
    ("bare_sequential", lambda: nn.Sequential(nn.Linear(4, 3), nn.ReLU()), lambda: (rand(5, 4),)),
]


def build(program):
    """The callable to trace: a Module instance for Module factories, else the function."""
    if inspect.isclass(program):
        return program()
    if program.__name__ == "<lambda>" and not inspect.signature(program).parameters:
        return program()
    return program


def assert_same(actual, expected):
    if isinstance(expected, ember.Tensor):
        assert isinstance(actual, ember.Tensor), type(actual)
        assert actual.shape == expected.shape and actual.dtype == expected.dtype
        np.testing.assert_allclose(actual.detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-6)
    elif isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys()
        for k in expected:
            assert_same(actual[k], expected[k])
    else:
        assert actual == expected


def signature_of(graph):
    """What must survive a round trip through generated code: opcodes and targets."""
    return [(n.op, n.target) for n in graph.nodes]


def retrace_generated_code(gm):
    """exec gm.code with its globals, install it as the forward of a fresh Module sharing gm's
    submodules, parameters, buffers and constants, and trace that."""
    python_code = gm.graph.python_code(root_module="self")
    namespace = dict(python_code.globals)
    exec(compile(gm.code, "<gm.code>", "exec"), namespace)
    cls = type("Regenerated", (nn.Module,), {"forward": namespace["forward"]})
    root = cls()
    for store in ("_parameters", "_buffers", "_modules"):
        root.__dict__[store] = gm.__dict__[store]
    for k, v in gm.__dict__.items():
        if isinstance(v, ember.Tensor):
            root.__dict__[k] = v
    return symbolic_trace(root)


@pytest.mark.parametrize("name,program,make_inputs", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_round_trip(name, program, make_inputs):
    ember.manual_seed(hash(name) % 1000)
    root = build(program)
    gm = symbolic_trace(root)
    assert isinstance(gm, GraphModule)
    gm.graph.lint()
    for _ in range(2):                       # fresh inputs each time: nothing was baked in
        inputs = make_inputs()
        expected = root(*copy.deepcopy(inputs))
        assert_same(gm(*copy.deepcopy(inputs)), expected)
    again = retrace_generated_code(gm)
    assert signature_of(again.graph) == signature_of(gm.graph), gm.code
    assert again.code == gm.code


def test_program_count():
    assert len(PROGRAMS) >= 40


# -- what the nodes look like ------------------------------------------------------------------
def test_targets_are_the_public_functions():
    gm = symbolic_trace(lambda x: F.relu(ember.sigmoid(x)) + ember.linalg.norm(x))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets[0] is ember.sigmoid and targets[0] == ember.sigmoid
    assert targets[1] is F.relu and targets[2] is ember.linalg.norm and targets[3] is operator.add
    assert not hasattr(ember.sigmoid, "__fx_recording__")      # restored after the trace


def test_module_nodes():
    gm = symbolic_trace(Outer())
    ops = [(n.op, n.target) for n in gm.graph.nodes if n.op != "call_function"]
    assert ops == [("placeholder", "x"), ("call_module", "inner.fc1"), ("call_module", "inner.fc2"),
                   ("call_module", "norm"), ("output", "output")]
    relu = next(n for n in gm.graph.nodes if n.op == "call_function" and n.target is ember.relu)
    assert relu.args[0].name == "inner_fc1"
    gm = symbolic_trace(OwnParameter())
    assert [n.target for n in gm.graph.nodes if n.op == "get_attr"] == ["w", "shift"]


class Scale(nn.Module):
    def forward(self, x):
        return x * 3


class UsesScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = Scale()

    def forward(self, x):
        return self.scale(x) + 1


def test_custom_leaf_module():
    class LeafTracer(Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, Scale) or super().is_leaf_module(m, qualname)

    root = UsesScale()
    graph = LeafTracer().trace(root)
    assert [(n.op, n.target) for n in graph.nodes][1] == ("call_module", "scale")
    gm = GraphModule(root, graph)
    x = rand(3)
    assert_same(gm(x), root(x))
    assert [n.op for n in symbolic_trace(root).graph.nodes][1] == "call_function"   # default: traced through


# same source under torch and ember: same nodes, same printed graph (modulo the library name)
FORMAT_SOURCE = '''
def f(x, y):
    a = torch.sigmoid(x) * 2
    b = a.sum(dim=1, keepdim=True) + y[0]
    c, d = torch.relu(b - x).chunk(2)
    return c.transpose(0, 1), d.shape, -d
'''


def _load(lib):
    namespace = {"torch": lib}
    exec(compile(FORMAT_SOURCE, "format_source.py", "exec"), namespace)
    return namespace["f"]


def test_graph_format_matches_torch_fx():
    ours = symbolic_trace(_load(ember)).graph
    theirs = torch.fx.symbolic_trace(_load(torch)).graph
    name = lambda t: t if isinstance(t, str) else t.__name__  # noqa: E731
    assert [(n.op, n.name, name(n.target)) for n in ours.nodes] == \
           [(n.op, n.name, name(n.target)) for n in theirs.nodes]
    assert str(ours).replace("ember.", "torch.") == str(theirs)


# -- concrete_args -------------------------------------------------------------------------------
def test_concrete_args_bool_specialises_control_flow():
    def f(x, flag):
        if flag:
            return x * 2
        return x - 1

    gm = symbolic_trace(f, concrete_args={"flag": True})
    x = rand(3)
    assert_same(gm(x, True), x * 2)
    with pytest.raises(AssertionError, match="flag has been specialized to have value True"):
        gm(x, False)
    assert signature_of(retrace_generated_code(gm).graph) == signature_of(gm.graph)
    theirs = torch.fx.symbolic_trace(f, concrete_args={"flag": True})
    assert [n.name for n in gm.graph.nodes if n.op == "placeholder"] == \
           [n.name for n in theirs.graph.nodes if n.op == "placeholder"]


def test_concrete_args_none_and_ph():
    def f(x, bias=None, scale=None):
        y = x * scale
        if bias is not None:
            y = y + bias
        return y

    gm = symbolic_trace(f, concrete_args={"bias": None, "scale": PH})
    x, s = rand(3), rand(3)
    assert_same(gm(x, None, s), x * s)
    with pytest.raises(AssertionError, match="bias has been specialized to have value None"):
        gm(x, rand(3), s)
    assert sum(n.op == "placeholder" for n in gm.graph.nodes) == 3
    assert signature_of(retrace_generated_code(gm).graph) == signature_of(gm.graph)
    with pytest.raises(TypeError, match="not parameters"):
        symbolic_trace(f, concrete_args={"nope": 1})


# -- wrap ----------------------------------------------------------------------------------------
def test_wrap_records_one_opaque_call():
    gm = symbolic_trace(lambda x: clamp_positive_rows(x) + scaled_by_norm(x, 0.5))
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [clamp_positive_rows, scaled_by_norm, operator.add]
    assert globals()["clamp_positive_rows"] is clamp_positive_rows   # restored


def test_wrap_len_in_a_module(tmp_path):
    path = tmp_path / "uses_len.py"
    path.write_text("import ember\nember.fx.wrap('len')\n\ndef f(x):\n    return x * len(x)\n")
    namespace = {"__name__": "uses_len"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    gm = symbolic_trace(namespace["f"])
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [len, operator.mul]
    x = rand(4, 2)
    assert_same(gm(x), x * 4)
    assert "len" not in namespace                 # the builtin is visible again
    with pytest.raises(NotImplementedError, match="top level"):
        ember.fx.wrap("len")


# -- stack traces and errors ---------------------------------------------------------------------
def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_stack_trace_names_user_line():
    def f(x):
        y = x.relu()
        return y + 1

    gm = symbolic_trace(f)
    relu = next(n for n in gm.graph.nodes if n.target == "relu")
    assert relu.meta["stack_trace"] == (f'  File "{__file__}", line {_line_of(f, "x.relu()")}, in f\n'
                                        f"    y = x.relu()\n")
    lin = next(n for n in symbolic_trace(Outer()).graph.nodes if n.target == "inner.fc1")
    trace = lin.meta["stack_trace"]
    assert "in forward\n    return self.norm(self.inner(x)) * 2" in trace
    assert trace.rstrip().endswith("return self.fc2(ember.relu(self.fc1(x)))")


def test_control_flow_raises_trace_error_naming_the_line():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    with pytest.raises(TraceError) as info:
        symbolic_trace(f)
    msg = str(info.value)
    assert "control flow" in msg and f'"{__file__}", line {_line_of(f, "if x.sum")}' in msg
    assert "if x.sum() > 0:" in msg
    assert isinstance(info.value, ValueError)
    assert not hasattr(ember.sum, "__fx_recording__") and nn.Module.__call__.__name__ == "_call_impl"


@pytest.mark.parametrize("body,construct", [
    ("for row in x:\n        pass\n    return x", "iterating"),
    ("return x * len(x)", "len()"),
    ("return x * float(x)", "float()"),
    ("return ember.ones(3)[:int(x)]", "int()"),
    ("return [1, 2, 3][x]", "Python int"),
    ("return 1 in x", "`in`"),
    ("return x if x.max() and x.min() else x", "control flow"),
])
def test_concrete_value_constructs(body, construct):
    path = os.path.join(tempfile.mkdtemp(), "prog.py")
    with open(path, "w") as fh:
        fh.write(f"import ember\n\ndef f(x):\n    {body}\n")
    namespace = {}
    exec(compile(open(path).read(), path, "exec"), namespace)
    with pytest.raises(TraceError) as info:
        symbolic_trace(namespace["f"])
    assert construct in str(info.value)
    assert f'File "{path}", line 4, in f' in str(info.value)


def test_binding_saved_before_the_trace_is_recorded():
    saved = ember.sigmoid

    def f(x):
        return saved(x)                     # a reference taken before the trace: the patch misses it
    gm = symbolic_trace(f)                  # ...and the Proxy's dispatch key records it (aten op)
    assert [n.op for n in gm.graph.nodes] == ["placeholder", "call_function", "output"]
    x = ember.randn(4)
    assert ember.equal(gm(x), ember.sigmoid(x))


def test_nested_container_proxy_args_and_unsupported_signature():
    def f(x, *rest):
        return x
    with pytest.raises(NotImplementedError, match=r"\*args"):
        symbolic_trace(f)
