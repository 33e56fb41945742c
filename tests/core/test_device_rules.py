"""ember/_core/device_rules.py against PyTorch's own source of the rule: native_functions.yaml of
the installed PyTorch (torchgen's copy), whose ``device_check`` and ``dispatch`` entries decide which
CUDA kernels get a device-checking wrapper. The behaviour on the GPU is tests/cuda/test_cuda_device_rules.py."""
import os
import re

import pytest

import ember
from ember._core import device_rules as rules
from ember._core.dispatch import _all_ops


def _native_functions():
    """{name.overload: {"check": ExactSame/NoCheck, "cuda": has a CUDA kernel of its own,
    "delegate": structured_delegate or None, "structured": bool}} parsed from the yaml's few keys we read."""
    torchgen = pytest.importorskip("torchgen")
    path = os.path.join(os.path.dirname(torchgen.__file__), "packaged", "ATen", "native", "native_functions.yaml")
    if not os.path.exists(path):
        pytest.skip("this PyTorch install has no native_functions.yaml")
    entries, current, in_dispatch = {}, None, False
    for line in open(path, encoding="utf-8"):
        m = re.match(r"- func: ([\w.]+)\(", line)
        if m:
            current = entries.setdefault(m.group(1), dict(check="ExactSame", cuda=False, delegate=None,
                                                          structured=False))
            in_dispatch = False
            continue
        if current is None or not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        key, _, value = line.split("#")[0].strip().partition(":")
        if indent == 2:
            in_dispatch = key == "dispatch"
            if key == "device_check":
                current["check"] = value.strip()
            elif key == "structured_delegate":
                current["delegate"] = value.strip()
            elif key == "structured":
                current["structured"] = value.strip() == "True"
        elif in_dispatch and indent >= 4 and "CUDA" in [k.strip() for k in key.split(",")]:
            current["cuda"] = True
    return entries


@pytest.fixture(scope="module")
def native():
    return _native_functions()


def _has_cuda_kernel(native, name):
    entry = native[name]
    return entry["cuda"] or (entry["delegate"] is not None and _has_cuda_kernel(native, entry["delegate"]))


def _tensor_arguments(op):
    return sum(1 for a in op.schema.arguments if a.type.startswith("Tensor"))


def test_wrapper_checked_ops_are_exactly_pytorchs_checked_cuda_kernels(native):
    ops = {op.name: op for op in _all_ops}
    own = {name for name in rules._STRUCTURED + rules._UNSTRUCTURED}
    for name in own:     # each listed op: checked, with a CUDA kernel, structured as listed
        entry = native[name]
        assert entry["check"] == "ExactSame" and _has_cuda_kernel(native, name), name
        assert (entry["structured"] or entry["delegate"] is not None) == (name in rules._STRUCTURED), name
    # and none missing: every ember op of two or more tensor arguments that PyTorch checks
    expected = {name for name, entry in native.items()
                if f"aten::{name}" in ops and entry["check"] == "ExactSame" and _has_cuda_kernel(native, name)
                and (_tensor_arguments(ops[f"aten::{name}"]) >= 2
                     or any(a.is_list and a.type.startswith("Tensor") for a in ops[f"aten::{name}"].schema.arguments))}
    assert expected == own, (sorted(expected - own), sorted(own - expected))


def test_indexing_and_copying_ops_have_no_wrapper_check(native):
    for name in rules.INDEXING | rules.COPIES:
        entry = native.get(name.removeprefix("aten::"))
        if entry is not None:     # tensor_split's overload is CompositeImplicit: no wrapper either
            assert entry["check"] == "NoCheck" or not _has_cuda_kernel(native, name.removeprefix("aten::")), name


def test_decomposed_ops_are_registered_and_rename_real_arguments():
    ops = {op.name: op for op in _all_ops}
    for name, (wrapper, renamed) in rules.WRAPPER_CHECKED.items():
        assert name in ops, name
        assert wrapper.startswith("wrapper_CUDA_")
        assert set(renamed) <= {a.name for a in ops[name].schema.arguments}, name


def test_wrapper_names_follow_torchgen():
    # the two spellings PyTorch's messages show (device oracle logs): structured and not
    assert rules.WRAPPER_CHECKED["aten::index_select"][0] == "wrapper_CUDA__index_select"
    assert rules.WRAPPER_CHECKED["aten::gather"][0] == "wrapper_CUDA_gather"
    assert rules.WRAPPER_CHECKED["aten::scatter.value"][0] == "wrapper_CUDA_scatter_value"


def test_wrapper_error_names_the_first_argument_on_another_device():
    ops = {op.name: op for op in _all_ops}
    x, idx = ember.zeros(3, 4), ember.tensor([0, 1])
    meta_idx, meta_x = idx.to("meta"), x.to("meta")
    err = rules.wrapper_error(ops["aten::index_select"], (x, 0, meta_idx), ember.Tensor)
    assert isinstance(err, RuntimeError)
    assert str(err) == ("Expected all tensors to be on the same device, but got index is on meta, different "
                        "from other tensors on cpu (when checking argument in method wrapper_CUDA__index_select)")
    err = rules.wrapper_error(ops["aten::index_select"], (meta_x, 0, idx), ember.Tensor)
    assert "got index is on cpu, different from other tensors on meta" in str(err)
    # a composite op speaks with its decomposition's argument names; list arguments are searched too
    err = rules.wrapper_error(ops["aten::repeat_interleave.self_Tensor"], (x, meta_idx, None, None), ember.Tensor)
    assert "got index is on meta" in str(err) and "wrapper_CUDA__index_select" in str(err)
    err = rules.wrapper_error(ops["aten::cat"], ([x, meta_x], 0), ember.Tensor)
    assert "got tensors is on meta" in str(err) and "wrapper_CUDA_cat" in str(err)
    assert rules.wrapper_error(ops["aten::index_select"], (x, 0, idx), ember.Tensor) is None
