"""Import statements inside captured code (IMPORT_NAME / IMPORT_FROM of modules already in
sys.modules), ember.compiler.is_compiling() under capture, and ember's Transformer modules compiling
without graph breaks. Oracle: the same function run eagerly."""
import builtins
import sys

import numpy as np
import pytest

import ember
from ember._dynamo import eval_frame


def _compile(fn):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    return ember.compile(fn, backend=backend), graphs


def _same(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def import_forms(x):
    import math
    import os.path
    import ember.nn.functional as F
    from ember import nn
    from ember.nn import functional
    y = F.relu(x) * math.pi + functional.gelu(x)
    if os.path.sep == "/":
        y = y + 1
    return nn.functional.silu(y)


def test_import_statements_are_captured_without_breaks():
    x = ember.randn(4)
    explanation = ember._dynamo.explain(import_forms)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    compiled, graphs = _compile(import_forms)
    for _ in range(2):
        x = ember.randn(4)
        _same(compiled(x), import_forms(x))
    assert len(graphs) == 1


def test_relative_import_resolves_against_the_package():
    namespace = {"__name__": "ember.nn._relative_probe", "__package__": "ember.nn", "ember": ember}
    exec("def f(x):\n    from .functional import relu\n    from .. import nn\n"
         "    return relu(x) + nn.functional.tanh(x)\n", namespace)
    f = namespace["f"]
    x = ember.randn(5)
    assert ember._dynamo.explain(f)(x).graph_break_count == 0
    compiled, _ = _compile(f)
    _same(compiled(x), f(x))


def test_module_not_imported_yet_is_left_to_python():
    sys.modules.pop("colorsys", None)

    def third():
        import colorsys
        return colorsys.ONE_THIRD

    def f(x):
        return x * 2 + third()
    x = ember.randn(3)
    reasons = [str(b.reason) for b in ember._dynamo.explain(f)(x).break_reasons]
    assert any("not imported yet" in r for r in reasons), reasons
    sys.modules.pop("colorsys", None)
    compiled, _ = _compile(f)
    _same(compiled(x), f(x))
    assert "colorsys" in sys.modules     # the import ran, as eagerly


def test_module_dropped_from_sys_modules_recompiles():
    import colorsys   # noqa: F401

    def f(x):
        import colorsys
        return x * colorsys.ONE_SIXTH
    compiled, graphs = _compile(f)
    x = ember.randn(3)
    _same(compiled(x), f(x))
    sys.modules.pop("colorsys")
    _same(compiled(x), f(x))
    reasons = eval_frame.guard_failures[f.__code__]
    assert any("sys.modules['colorsys']" in r for r in reasons), reasons
    assert "colorsys" in sys.modules


def test_replaced_import_hook_runs_on_every_call(monkeypatch):
    calls = []
    original = builtins.__import__

    def hook(name, *args, **kwargs):
        calls.append(name)
        return original(name, *args, **kwargs)

    def f(x):
        import math
        return x + math.e
    compiled, _ = _compile(f)
    x = ember.randn(2)
    compiled(x)
    monkeypatch.setattr(builtins, "__import__", hook)
    for _ in range(2):
        _same(compiled(x), x + np.e)
    assert calls.count("math") == 2


def test_from_import_of_a_missing_name_raises_as_eagerly():
    def f(x):
        from math import not_a_name_in_math   # noqa: F401
        return x
    compiled, _ = _compile(f)
    with pytest.raises(ImportError):
        f(ember.ones(1))
    with pytest.raises(ImportError):
        compiled(ember.ones(1))


def test_is_compiling_is_true_inside_captured_code():
    def f(x):
        if ember.compiler.is_compiling():
            return x + 1
        return x - 1
    x = ember.zeros(2)
    assert ember._dynamo.explain(f)(x).graph_break_count == 0
    compiled, _ = _compile(f)
    assert compiled(x).tolist() == [1.0, 1.0]
    assert f(x).tolist() == [-1.0, -1.0]


def _encoder(norm_first):
    ember.manual_seed(0)
    nn = ember.nn
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                       norm_first=norm_first)
    return nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(8)).eval()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masking", ["none", "causal_mask", "causal_mask_flagged", "padding"])
def test_transformer_encoder_has_no_graph_breaks(norm_first, masking):
    model = _encoder(norm_first)
    x = ember.randn(2, 5, 8)
    causal = ember.triu(ember.full((5, 5), float("-inf")), diagonal=1)
    kwargs = {"none": {}, "causal_mask": {"mask": causal},
              "causal_mask_flagged": {"mask": causal, "is_causal": True},
              "padding": {"src_key_padding_mask": ember.tensor([[False] * 5, [False] * 3 + [True] * 2])}}[masking]
    explanation = ember._dynamo.explain(model)(x, **kwargs)
    assert explanation.graph_break_count == 0, [str(b.reason) for b in explanation.break_reasons]
    compiled, graphs = _compile(model)
    with ember.no_grad():
        for _ in range(2):
            x = ember.randn(2, 5, 8)
            _same(compiled(x, **kwargs), model(x, **kwargs))
    assert len(graphs) == 1
