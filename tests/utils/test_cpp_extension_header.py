"""ember/include/ember/generated/*.h are generated from the op table: the committed files must be
what the generator writes now (regenerate with `python -m ember.utils._cpp_header_gen`), and they
must cover the table. No compiler needed."""
import os
import subprocess
import sys

from ember.utils import _cpp_header_gen as gen


def test_committed_headers_are_in_sync_with_the_op_table():
    for name, text in gen.render().items():
        with open(os.path.join(gen.HEADER_DIR, name), encoding="utf-8") as f:
            assert f.read() == text, f"{name} is stale: run `python -m ember.utils._cpp_header_gen`"


def test_every_tensor_method_and_operator_of_the_table_has_a_cpp_spelling():
    from ember.ops import registry
    from ember.ops.table.dunders import DUNDERS
    methods, functions = gen._table()
    text = gen.render()
    for name in methods:
        if name.startswith("_") or name in gen.CPP_KEYWORDS:
            continue
        declared = f" {name}(A&&... a) const" in text["tensor_methods.h"]
        assert declared or name in gen.HAND_WRITTEN_METHODS, name
    assert " sin(A&&... a) const" in text["tensor_methods.h"] and " sin(A&&... a) {" in text["functions.h"]
    for dunder, (op_name, _) in DUNDERS.items():
        if op_name in registry.METHODS and dunder in {**gen.BINARY_OPERATORS, **gen.UNARY_OPERATORS,
                                                      **gen.INPLACE_OPERATORS, **gen.REFLECTED_OPERATORS}:
            assert f'"{dunder}"' in text["tensor_operators.h"], dunder


def test_return_types_follow_the_schemas():
    text = gen.render()["tensor_methods.h"]
    assert "at::Tensor sin(A&&" in text
    assert "std::tuple<at::Tensor, at::Tensor> sort(A&&" in text
    assert "at::IValue max(A&&" in text            # max() -> Tensor, max(dim) -> (Tensor, Tensor)
    assert "std::vector<at::Tensor> unbind(A&&" in text
    assert "at::Tensor view(std::initializer_list<int64_t> l" in text    # x.view({2, 3})


def test_import_ember_does_not_import_the_cpp_extension_modules():
    code = ("import sys, ember; print(sorted(m for m in sys.modules if m.startswith('ember.utils.') and "
            "('cpp' in m or 'pybind' in m)) or 'none', 'pybind11' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.getcwd())).stdout.split()
    assert out == ["none", "False"]
