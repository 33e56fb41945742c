"""The three spellings of a dtype in PyTorch's messages live on the dtype (ember/_core/dtype.py);
each is checked against a message PyTorch prints with it."""
from __future__ import annotations

import pytest
import torch

import ember
from ember._core import dtype as _dt
from tests.oracle import DTYPES, INT_DTYPES


def _message(lib, fn):
    try:
        fn(lib)
    except Exception as e:  # the message is what is compared; both libraries must raise
        return type(e), str(e)
    raise AssertionError(f"{lib.__name__} did not raise")


@pytest.mark.parametrize("name", list(DTYPES))
def test_c10_name_is_the_legacy_tensor_type(name):
    """``Tensor.type()`` prints ``<lib>.<c10 name>Tensor``; ``t[0] = [1]`` names the same type."""
    e = ember.zeros(2, dtype=getattr(ember, name))
    t = torch.zeros(2, dtype=DTYPES[name])
    assert e.type() == t.type().replace("torch.", "ember.")
    assert _dt._BY_NAME[name].c10_name + "Tensor" == t.type().split(".")[1]
    assert _message(ember, lambda L: e.__setitem__(0, [1])) == _message(torch, lambda L: t.__setitem__(0, [1]))


@pytest.mark.parametrize("name", [n for n in INT_DTYPES if n != "int64"])  # -2**40 fits int64
def test_cpp_type_in_random_bounds_message(name):
    """random_'s bound check prints the demangled C++ type ("short int" for int16)."""
    def fn(L):
        return L.zeros(2, dtype=getattr(L, name)).random_(-2 ** 40, 5)
    assert _message(ember, fn) == _message(torch, fn)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float64", "complex64", "int64", "int16", "uint8", "bool"])
def test_cpp_type_in_out_dtype_message(name):
    """cumsum with dtype= into an out= of another dtype: "Expected out tensor to have dtype <cpp type>"."""
    def fn(L):
        return L.cumsum(L.ones(2), 0, dtype=L.float32, out=L.empty(0, dtype=getattr(L, name)))
    assert _message(ember, fn) == _message(torch, fn)


@pytest.mark.parametrize("name", [n for n in INT_DTYPES if n != "int64"])  # 2**40 fits int64
def test_c_type_in_scalar_overflow_message(name):
    """A scalar that does not fit: "value cannot be converted to type <c type> without overflow"."""
    def fn(L):
        x = L.ones(2, dtype=getattr(L, name))
        return L.addcmul(x, x, x, value=2 ** 40)
    assert _message(ember, fn) == _message(torch, fn)


@pytest.mark.parametrize("name", list(DTYPES))
def test_scalar_type_code_is_the_one_torch_records(name):
    """A traced ``x.to(dtype)`` records c10::ScalarType's enum value as a constant."""
    traced = torch.jit.trace(lambda x: x.to(DTYPES[name]), torch.zeros(2), check_trace=False)
    codes = {int(n.output().toIValue()) for n in traced.graph.nodes()
             if n.kind() == "prim::Constant" and n.output().type().kind() == "IntType"}
    assert _dt._BY_NAME[name].scalar_type_code in codes
    assert _dt.BY_SCALAR_TYPE_CODE[_dt._BY_NAME[name].scalar_type_code] is _dt._BY_NAME[name]
