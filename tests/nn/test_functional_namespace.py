"""ember.nn.functional's names: the Python wrappers are written in ember/nn/functional*.py (so "go to
definition" lands on them), the rest are the op table's generated bindings, and every one is
named by ``registry.public_name`` with a dotted name that leads back to it."""
import importlib
import inspect

import torch

import ember
import ember.nn.functional as F
from ember.ops import registry
from ember.ops import table


def _public_callables(module):
    return {n: getattr(module, n) for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))}


def _resolve(dotted):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_every_function_is_a_binding_or_written_in_nn_functional():
    for name, fn in _public_callables(F).items():
        if registry.op_of(fn) is not None or getattr(fn, "__ember_overloads__", None):
            continue                                  # a row's generated binding (or its overload resolver)
        module = inspect.getmodule(fn).__name__
        in_functional_file = module == "ember.nn.functional" or module.startswith("ember.nn.functional_")
        assert in_functional_file or module == "ember.ops.table.reduction", (name, module)


def test_public_name_leads_back_to_the_function():
    for name, fn in _public_callables(F).items():
        dotted = registry.public_name(fn)
        assert dotted is not None, name
        assert _resolve(dotted) is fn, (name, dotted)


def test_same_names_as_torch_where_both_have_them():
    """Every F name ember has that torch.nn.functional has too is a function there as well."""
    ours = _public_callables(F)
    theirs = {n for n in dir(torch.nn.functional) if not n.startswith("_")}
    for name in ("relu", "interpolate", "cross_entropy", "kl_div", "max_pool2d", "conv2d", "dropout", "fold",
                 "scaled_dot_product_attention", "binary_cross_entropy_with_logits", "softmax", "one_hot"):
        assert name in ours and name in theirs


def test_torch_namespace_spellings_keep_torch_defaults():
    """ember.kl_div / ember.binary_cross_entropy_with_logits default to reduction 'none' (0) like
    torch's bindings, F's to 'mean'; the written versions are the ones ember exposes."""
    x = ember.tensor([[0.2, 0.8], [0.6, 0.4]]).log()
    y = ember.tensor([[0.3, 0.7], [0.5, 0.5]])
    tx, ty = torch.tensor(x.tolist()), torch.tensor(y.tolist())
    assert ember.kl_div(x, y).shape == torch.kl_div(tx, ty).shape == (2, 2)
    assert F.kl_div(x, y, reduction="batchmean").shape == ()
    assert ember.binary_cross_entropy_with_logits(x, y).shape == torch.binary_cross_entropy_with_logits(tx, ty).shape
    assert registry.public_name(ember.kl_div) == "ember.kl_div"
    assert registry.public_name(ember.rrelu) == "ember.rrelu"


def test_the_table_families_hold_no_nn_functional_wrappers():
    for family in table.FAMILIES:
        module = importlib.import_module(f"ember.ops.table.{family}")
        assert "nn.functional" not in getattr(module, "PYTHON_FUNCTIONS", {}) or family == "reduction", family


def test_tensor_indexing_is_written_outside_the_table():
    """``Tensor.__getitem__`` / ``__setitem__`` / ``ember.nonzero`` live in ember/ops/tensor_indexing.py;
    the indexing family holds rows only."""
    from ember.ops.table import indexing as rows
    for fn in (ember.Tensor.__getitem__, ember.Tensor.__setitem__, ember.nonzero, ember.Tensor.nonzero):
        assert inspect.getmodule(fn).__name__ == "ember.ops.tensor_indexing"
    assert not hasattr(rows, "PYTHON_METHODS") and not hasattr(rows, "PYTHON_FUNCTIONS")
    assert registry.public_name(ember.nonzero) == "ember.nonzero"
    t = ember.arange(6).reshape(2, 3)
    tt = torch.arange(6).reshape(2, 3)
    assert t[1, 1:].tolist() == tt[1, 1:].tolist()
    ours, theirs = ember.nonzero(t > 2, as_tuple=True), torch.nonzero(tt > 2, as_tuple=True)
    assert [x.tolist() for x in ours] == [x.tolist() for x in theirs]
