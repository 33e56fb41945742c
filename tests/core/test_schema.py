"""The schema parser, checked against every schema PyTorch registers."""
import pytest
import torch

from ember._core.schema import parse_schema, NO_DEFAULT

SUPPORTED = ("Tensor", "int", "float", "bool", "Scalar", "ScalarType", "str", "Generator", "Device",
             "Layout", "MemoryFormat", "SymInt", "Dimname", "Any")


def _torch_schemas():
    out = []
    for s in torch._C._jit_get_all_schemas():
        text = str(s)
        if not text.startswith("aten::"):
            continue
        if any(bad in text for bad in ("Storage", "Stream", "__torch__", "t[]", "t?", "Dict(", "Future",
                                        "Tensor(a -> *)", "ScalarType[]", "Scalar[]", "Device[]", "bool[]",
                                        "float[]?", "str[]", "complex", "Any", "GenericList", "(t", " t ",
                                        "Layout[]", "*)", "int[][]", "DimnameList", "Dimname[]", "ConstQuantizerPtr",
                                        "RRef", "Await", "Capsule", "AnyEnumType", "t1", "t2", "Object", "[]?[]",
                                        "(b|a)", "(a|b)", "QScheme", "Tensor[](", "-> Tensor[](", "SymInt[]?[]", "Tensor(b", "Tensor(c", "...", "Tensor(a)[]", "Tensor(a!)[]")):
            continue
        out.append(text)
    return out


def test_round_trips_pytorchs_own_schemas():
    schemas = _torch_schemas()
    assert len(schemas) > 1000
    failures = []
    for text in schemas:
        try:
            parsed = parse_schema(text)
        except ValueError as e:
            failures.append((text, str(e)))
            continue
        if "aten::" + str(parsed) != text:
            failures.append((text, "aten::" + str(parsed)))
    assert not failures[:5], f"{len(failures)} of {len(schemas)} differ, e.g. {failures[:5]}"


def test_fields():
    s = parse_schema("sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
    assert (s.name, s.overload_name) == ("sum", "dim_IntList")
    dim = s.arguments[1]
    assert dim.type == "int" and dim.is_list and dim.list_size == 1 and dim.optional and dim.default is NO_DEFAULT
    assert s.arguments[2].default is False and s.arguments[3].kwarg_only
    add_ = parse_schema("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)")
    assert add_.is_inplace and add_.arguments[0].is_write and add_.arguments[0].alias == "a"
    mx = parse_schema("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
    assert [r.name for r in mx.returns] == ["values", "indices"]


@pytest.mark.parametrize("bad", ["add(Tensor self", "add(Tensor self) Tensor", "f(Widget w) -> Tensor",
                                 "f(Tensor a, Tensor a) -> Tensor"])
def test_errors_name_the_problem(bad):
    with pytest.raises(ValueError, match="schema"):
        parse_schema(bad)
