"""dtype= arguments as PyTorch reads them: Python's float/int/bool/complex stand for float64 /
int64 / bool / complex128 (whatever the default dtype), in factories, tensor constructors,
reductions, Tensor.to/view/new_*; strings and NumPy dtypes are refused with TypeError; and
Tensor.type's own rules. Every case runs in ember and PyTorch and compares the dtype or the
exception type."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

PY_TYPES = [float, int, bool, complex]


def _outcome(prog, lib):
    try:
        return "ok", str(prog(lib)).replace("torch.", "ember.")
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)


def _same(prog):
    got, expected = _outcome(prog, ember), _outcome(prog, torch)
    assert got[0] is expected[0], f"ember {got}; torch {expected}"
    if got[0] == "ok":
        assert got[1] == expected[1]


FACTORIES = {  # name -> positional arguments (lib -> tuple)
    "zeros": lambda L: (2,), "ones": lambda L: (2,), "empty": lambda L: (2,), "arange": lambda L: (3,),
    "full": lambda L: ((2,), 1), "rand": lambda L: (2,), "randn": lambda L: (2,), "tensor": lambda L: ([1, 0],),
    "as_tensor": lambda L: ([1, 0],), "asarray": lambda L: ([1, 0],), "linspace": lambda L: (0, 1, 3),
    "eye": lambda L: (2,), "randint": lambda L: (0, 3, (2,)), "randperm": lambda L: (3,),
    "zeros_like": lambda L: (L.ones(2),), "ones_like": lambda L: (L.ones(2),), "empty_like": lambda L: (L.ones(2),),
    "full_like": lambda L: (L.ones(2), 1), "rand_like": lambda L: (L.ones(2),), "randn_like": lambda L: (L.ones(2),),
    "scalar_tensor": lambda L: (1,),
}


@pytest.mark.parametrize("py_type", PY_TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("factory", sorted(FACTORIES))
def test_factory_python_type_dtype(factory, py_type):
    _same(lambda L: (lambda r: (r.dtype, tuple(r.shape)))(
        getattr(L, factory)(*FACTORIES[factory](L), dtype=py_type)))


@pytest.mark.parametrize("default", ["float64", "float32"])
@pytest.mark.parametrize("py_type", PY_TYPES, ids=lambda t: t.__name__)
def test_python_float_is_float64_whatever_the_default(default, py_type):
    def prog(L):
        old = L.get_default_dtype()
        L.set_default_dtype(getattr(L, default))
        try:
            return L.zeros(1, dtype=py_type).dtype, L.tensor([1], dtype=py_type).dtype, L.ones(1).to(py_type).dtype
        finally:
            L.set_default_dtype(old)
    _same(prog)


METHODS = {  # name -> (positional args, passes dtype as keyword)
    "to": ((), False), "view": ((), False), "new_zeros": (((2,),), True), "new_ones": (((2,),), True),
    "new_empty": (((2,),), True), "new_full": (((2,), 1), True), "new_tensor": (([1],), True),
    "sum": ((), True), "mean": ((), True), "prod": ((), True), "cumsum": ((0,), True),
    "softmax": ((0,), True), "log_softmax": ((0,), True),
}


@pytest.mark.parametrize("py_type", PY_TYPES, ids=lambda t: t.__name__)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_method_python_type_dtype(method, py_type):
    args, keyword = METHODS[method]
    if method == "cumsum" and py_type is bool:
        pytest.skip("PyTorch has no bool cumsum kernel (NotImplementedError); ember computes it")

    def prog(L):
        m = getattr(L.ones(2, 2, dtype=L.float64), method)
        return (m(*args, dtype=py_type) if keyword else m(py_type, *args)).dtype
    _same(prog)


@pytest.mark.parametrize("py_type", PY_TYPES, ids=lambda t: t.__name__)
def test_to_forms(py_type):
    _same(lambda L: (L.ones(2).to(dtype=py_type).dtype, L.ones(2).to("cpu", py_type).dtype,
                     L.ones(2).to("cpu", dtype=py_type).dtype))


BAD_DTYPES = [np.float64, np.dtype("float64"), np.int32, "float64", "float", 1, 1.5, object, list, type(None)]


@pytest.mark.parametrize("bad", BAD_DTYPES, ids=repr)
@pytest.mark.parametrize("where", ["zeros", "tensor", "as_tensor", "ones_like", "arange", "full", "sum", "to",
                                   "new_zeros"])
def test_refused_dtypes(where, bad):
    calls = {
        "zeros": lambda L: L.zeros(2, dtype=bad), "tensor": lambda L: L.tensor([1.], dtype=bad),
        "as_tensor": lambda L: L.as_tensor([1.], dtype=bad), "ones_like": lambda L: L.ones_like(L.ones(2), dtype=bad),
        "arange": lambda L: L.arange(3, dtype=bad), "full": lambda L: L.full((2,), 1., dtype=bad),
        "sum": lambda L: L.ones(2).sum(dtype=bad), "to": lambda L: L.ones(2).to(dtype=bad),
        "new_zeros": lambda L: L.ones(2).new_zeros(2, dtype=bad),
    }
    _same(lambda L: calls[where](L).dtype)


@pytest.mark.parametrize("arg", [float, int, "torch.DoubleTensor", "torch.LongTensor", "foo", "float64"],
                         ids=repr)
def test_type_method(arg):
    _same(lambda L: L.ones(2).type(arg).dtype)


def test_type_method_names():
    _same(lambda L: [L.ones(1, dtype=d).type() for d in (L.float32, L.float64, L.int64, L.int8, L.uint8, L.bool,
                                                          L.float16, L.complex64)])
    assert ember.ones(1).type(ember.ones(1, dtype=ember.int32).type()).dtype is ember.int32


NUMPY_SCALAR_ARGS = {  # NumPy scalars passed where PyTorch takes numbers or ints
    "full float64": lambda L: L.full((2,), np.float64(1.5)),
    "full float32": lambda L: L.full((2,), np.float32(1.5)),
    "full int32": lambda L: L.full((2,), np.int32(1)),
    "arange float64": lambda L: L.arange(np.float64(3)),
    "arange int32": lambda L: L.arange(np.int32(3)),
    "arange float32 step": lambda L: L.arange(0, 1, np.float32(0.25)),
    "linspace": lambda L: L.linspace(np.float64(0), np.float64(1), np.int64(3)),
    "randint": lambda L: L.randint(np.int64(0), np.int64(1), (np.int32(2),)),
    "zeros size": lambda L: L.zeros(np.int64(3)),
    "zeros sizes": lambda L: L.zeros((np.int32(2), np.int64(3))),
    "ones float size": lambda L: L.ones(np.float64(3)),
    "add float64": lambda L: L.ones(2) + np.float64(1.5),
    "add int64 to int32": lambda L: L.ones(2, dtype=L.int32) + np.int64(1),
    "add float64 to int32": lambda L: L.ones(2, dtype=L.int32) + np.float64(1.5),
    "mul float32 half": lambda L: L.ones(2, dtype=L.float16) * np.float32(2),
    "setitem": lambda L: (lambda x: (x.__setitem__(0, np.float64(2.5)), x)[1])(L.zeros(2)),
    "fill_ int": lambda L: L.zeros(2, dtype=L.int64).fill_(np.float64(2.5)),
    "clamp": lambda L: L.ones(2).clamp(np.float64(0.5), np.float64(0.7)),
    "pow": lambda L: L.ones(2, dtype=L.int64).pow(np.float64(2)),
    "full_like": lambda L: L.full_like(L.ones(2, dtype=L.int64), np.float64(2.7)),
    "scalar_tensor": lambda L: L.scalar_tensor(np.float64(1.5)),
    "where": lambda L: L.where(L.ones(2) > 0, np.float64(1.5), np.float64(0.5)),
    "sum dim": lambda L: L.ones(2, 3).sum(np.int64(1)),
    "narrow": lambda L: L.arange(5).narrow(np.int64(0), np.int32(1), np.int64(2)),
}


@pytest.mark.parametrize("name", sorted(NUMPY_SCALAR_ARGS))
def test_numpy_scalar_arguments(name):
    _same(lambda L: (lambda r: (r.dtype, tuple(r.shape), r.tolist() if name != "randint" else None))(
        NUMPY_SCALAR_ARGS[name](L)))


@pytest.mark.parametrize("call", [lambda L, m: m.to(float), lambda L, m: m.to(dtype=float), lambda L, m: m.to(int),
                                  lambda L, m: m.to("cpu", complex), lambda L, m: m.to(np.float64)])
def test_module_to_python_type(call):
    _same(lambda L: [p.dtype for p in call(L, L.nn.Linear(2, 2)).parameters()])
