"""The op-properties table (ember/ops/properties.py) against the op rows and against PyTorch.

PyTorch is the oracle where it has the same operator overload: its tags (nondeterministic_seeded,
pointwise, reduction, data_dependent_output, dynamic_output_shape) and its schema's alias annotations (which arguments are written, whether
the result is a view). Where torch has no counterpart the table is checked against ember's own
rows and, for Python-level functions, against what the function does when it runs.
"""
import functools
import importlib

import pytest
import torch

import ember
from ember.fx import prim
from ember.ops import properties, registry
from oracle import TORCH_BEFORE_2_13


def torch_overload(name):
    """torch.ops.aten.<name>.<overload> for ember's "aten::name.overload", or None."""
    ns, rest = name.split("::", 1)
    base, _, overload = rest.partition(".")
    packet = getattr(torch.ops.aten, base, None) if ns == "aten" else None
    return getattr(packet, overload or "default", None) if packet is not None else None


def shared_ops():
    """(ember op, torch op) for every overload both have."""
    pairs = [(op, torch_overload(name)) for name, op in sorted(registry.OPERATORS.items())]
    return [(op, t) for op, t in pairs if t is not None]


SHARED = shared_ops()


def test_most_ops_have_a_torch_counterpart():
    assert len(SHARED) > 0.9 * len(registry.OPERATORS)


@pytest.mark.parametrize("op,theirs", SHARED, ids=[op.name for op, _ in SHARED])
def test_facts_agree_with_torch_schema_and_tags(op, theirs):
    p = properties.of_op(op)
    written = [i for i, a in enumerate(theirs._schema.arguments) if a.alias_info is not None and a.alias_info.is_write]
    assert p.mutates == tuple(op.schema.arguments[i].name for i in written)   # by position: ember's derived
    assert bool(p.mutates) == theirs._schema.is_mutable
    view = any(r.alias_info is not None and not r.alias_info.is_write for r in theirs._schema.returns)
    assert p.is_view == view
    assert p.is_random == (torch.Tag.nondeterministic_seeded in theirs.tags)


def _row_overload(op):
    return op.row.schema.split("(", 1)[0]


ROW_OPS = [(op, t) for op, t in SHARED if op.row is not None and op.schema.qualified_name == _row_overload(op)]


@pytest.mark.parametrize("op,theirs", ROW_OPS, ids=[op.name for op, _ in ROW_OPS])
def test_pointwise_and_reduction_tags_agree_with_torch(op, theirs):
    """Rows carry the tags torch gives the same overload (torch forgets some derived in-place /
    out= overloads, e.g. gelu_; ember's derive theirs from the row, checked below)."""
    p = properties.of_op(op)
    pointwise = torch.Tag.pointwise in theirs.tags or (op.name in POINTWISE_TAG_ADDED_IN_2_13 and TORCH_BEFORE_2_13)
    assert p.is_pointwise == pointwise
    assert p.is_reduction == (torch.Tag.reduction in theirs.tags)


# overloads PyTorch 2.13 tags pointwise that older releases (the GPU machine's) do not
POINTWISE_TAG_ADDED_IN_2_13 = {"aten::leaky_relu"}


# ember rows that are composites of dynamic-shape ops in PyTorch (properties.DYNAMIC_OUTPUT_SHAPE says so)
DYNAMIC_IN_EMBER_ONLY = {"aten::repeat_interleave.self_Tensor", "aten::nonzero_numpy"}


def test_data_dependent_facts_agree_with_torch_tags():
    """data_dependent_output / dynamic_output_shape hold exactly where torch tags the same overload
    (what fake tensors refuse, ember/_functorch/fake_tensor.py)."""
    differ = set()
    for op, theirs in SHARED:
        p = properties.of_op(op)
        assert p.data_dependent_output == (torch.Tag.data_dependent_output in theirs.tags), op.name
        if p.dynamic_output_shape != (torch.Tag.dynamic_output_shape in theirs.tags):
            differ.add(op.name)
    names = {op.name for op, _ in SHARED}
    differ |= {op.name for op in registry.OPERATORS.values() if properties.of_op(op).dynamic_output_shape} - names
    assert differ == DYNAMIC_IN_EMBER_ONLY


def test_pointwise_and_reduction_tables_name_only_existing_rows():
    rows = {_row_overload(op) for op in registry.OPERATORS.values() if op.row is not None}
    assert properties.POINTWISE <= rows and properties.REDUCTION <= rows
    assert not properties.POINTWISE & properties.REDUCTION


def _derived(kind):
    """Overloads derived from a row: in-place (`name_`) or out=."""
    found = []
    for op in registry.OPERATORS.values():
        row = op.row
        if row is None or op.schema.qualified_name == _row_overload(op):
            continue
        if kind == "inplace" and op.schema.name.endswith("_") and not any(a.kwarg_only and a.is_write
                                                                           for a in op.schema.arguments):
            found.append(op)
        if kind == "out" and any(a.name == "out" for a in op.schema.arguments):
            found.append(op)
    return found


def test_every_inplace_overload_writes_its_first_argument_and_shares_its_rows_facts():
    ops = _derived("inplace")
    assert len(ops) > 100
    for op in ops:
        p, base = properties.of_op(op), properties.of_op(registry.OPERATORS["aten::" + _row_overload(op)])
        assert p.mutates == (op.schema.arguments[0].name,), op.name
        assert not p.pure and not p.cse_safe and p.aliases_args, op.name
        assert (p.is_random, p.is_pointwise, p.is_reduction) == (base.is_random, base.is_pointwise,
                                                                 base.is_reduction), op.name


def test_every_out_overload_writes_out_and_shares_its_rows_facts():
    ops = _derived("out")
    assert len(ops) > 100
    for op in ops:
        p, base = properties.of_op(op), properties.of_op(registry.OPERATORS["aten::" + _row_overload(op)])
        assert p.mutates == ("out",), op.name
        assert (p.is_random, p.is_pointwise, p.is_reduction) == (base.is_random, base.is_pointwise,
                                                                 base.is_reduction), op.name


def test_random_ops_are_nondeterministic_never_pure_or_merged():
    random_ops = [op for op in registry.OPERATORS.values() if properties.of_op(op).is_random]
    assert {"aten::rand", "aten::bernoulli", "aten::dropout", "aten::uniform_",
            "aten::scaled_dot_product_attention"} <= {op.name for op in random_ops}
    for op in random_ops:
        p = properties.of_op(op)
        assert p.nondeterministic and not p.pure and not p.cse_safe, op.name
    for op in registry.OPERATORS.values():   # a Generator argument means the op draws from it
        if any(a.type == "Generator" for a in op.schema.arguments):
            assert properties.of_op(op).is_random, op.name


def test_uninitialized_memory_is_nondeterministic_but_deletable():
    for name in ("aten::empty.memory_format", "aten::empty_like", "aten::new_empty", "aten::empty_strided"):
        p = properties.of_op(registry.OPERATORS[name])
        assert p.nondeterministic and not p.is_random and p.pure and not p.cse_safe


# -- bindings and names ---------------------------------------------------------------------------
def test_every_binding_carries_its_operator():
    for name, op in registry.OPERATORS.items():
        if op.entry is None:
            continue
        assert op.entry.__ember_op__ is op and registry.op_of(op.entry) is op, name
    assert registry.op_of(ember.add) is ember.ops.aten.add.Tensor
    assert registry.op_of(ember.Tensor.add_) is ember.ops.aten.add_.Tensor


def test_a_wrapper_of_a_binding_is_not_taken_for_it():
    @functools.wraps(ember.relu)
    def logged_relu(x):
        print("relu")
        return ember.relu(x)
    assert logged_relu.__ember_op__ is ember.ops.aten.relu.default      # copied by functools.wraps
    assert registry.op_of(logged_relu) is None and registry.ops_of(logged_relu) == ()
    assert properties.of(logged_relu) == properties.UNKNOWN and registry.public_name(logged_relu) is None


def test_functions_choosing_among_overloads_report_all_of_them():
    assert {op.name for op in registry.ops_of(ember.max)} == {"aten::max", "aten::max.dim", "aten::max.other"}
    assert {op.name for op in registry.ops_of(ember.div)} == {"aten::div.Tensor", "aten::div.Tensor_mode"}
    assert {op.name for op in registry.ops_of(ember.Tensor.div_)} == {"aten::div_.Tensor", "aten::div_.Tensor_mode"}
    assert properties.of(ember.Tensor.div_).mutates == ("self",)


def test_public_name_reaches_the_same_object():
    names = registry.public_functions()
    assert len(names) > 500
    for name, fn in names.items():
        module, _, attr = name.rpartition(".")
        assert getattr(importlib.import_module(module), attr) is fn, name
        assert registry.public_name(fn) == name
    assert registry.public_name(ember.nn.functional.relu) == "ember.nn.functional.relu"
    assert registry.public_name(ember.is_tensor) == "ember.is_tensor"
    assert registry.public_name(len) is None and registry.public_name(ember.Tensor) is None


# -- Python-level functions, methods and Python's own ----------------------------------------------
def test_python_table_names_exist():
    for name in properties.PYTHON_FUNCTIONS:
        module, _, attr = name.rpartition(".")
        fn = getattr(importlib.import_module(module), attr)
        assert registry.public_name(fn) == name and properties.of(fn) == properties.PYTHON_FUNCTIONS[name]


@pytest.mark.parametrize("call", [
    lambda: ember.rand(4), lambda: ember.randn(4),
    lambda: ember.nn.functional.dropout(ember.ones(64), 0.5, True),
    lambda: ember.nn.functional.scaled_dot_product_attention(ember.ones(1, 4, 4), ember.ones(1, 4, 4),
                                                             ember.randn(1, 4, 4), dropout_p=0.5),
], ids=["rand", "randn", "dropout", "sdpa"])
def test_functions_marked_random_draw_random_numbers(call):
    ember.manual_seed(0)
    first, second = call(), call()
    ember.manual_seed(0)
    again = call()
    assert not ember.equal(first, second) and ember.equal(first, again)


@pytest.mark.parametrize("fn", [ember.nn.functional.relu_, ember.nn.functional.elu_, ember.nn.functional.selu_,
                                ember.nn.functional.leaky_relu_, ember.nn.functional.hardtanh_])
def test_python_inplace_functions_write_their_input(fn):
    assert properties.of(fn).mutates == (0,)
    x = ember.tensor([-3.0, 2.0])
    fn(x)
    assert x.tolist() != [-3.0, 2.0]


def test_methods_depend_on_the_receiver():
    assert properties.of_method("add_", "tensor").mutates == ("self",)
    assert properties.of_method("sort", "tensor").pure                  # Tensor.sort returns new tensors
    assert properties.of_method("sort", "other").mutates == (0,)        # list.sort sorts in place
    assert not properties.of_method("sort", None).pure                  # unknown receiver: either
    assert properties.of_method("__setitem__", "tensor").mutates == (0,)
    assert properties.of_method("backward", "tensor").side_effects
    assert properties.of_method("requires_grad_", "tensor").mutates == (0,)


def test_prim_ops_carry_their_rows():
    for op in prim.all_ops():
        assert properties.of(op) is op.properties
    row = properties.of
    assert row(prim.Constant).cse_safe and row(prim.TupleConstruct).cse_safe and not row(prim.ListConstruct).cse_safe
    assert not row(prim.Print).pure and not row(prim.RaiseException).pure
    assert row(prim.If).pure and not row(prim.If).cse_safe
    assert properties.of(prim.CallFunction).mutates == ("*",)
    assert properties.of(prim.SetGradEnabled).grad_mode_switch


def test_grad_mode_switches_are_barriers_in_the_table():
    from ember.autograd import grad_mode
    for fn in (grad_mode._set_grad_enabled, grad_mode._enter_inference_mode, grad_mode._exit_inference_mode):
        p = properties.of(fn)
        assert p.grad_mode_switch and not p.pure
