"""ember.tensor(data) as PyTorch builds it from Python data: dtype inference by promotion over
every element (NumPy scalars, 0-d tensors and arrays keep their dtype), PyTorch's checked
conversion into integer dtypes (NaN, inf and out-of-range values raise RuntimeError; uint8
wraps -255..-1), float overflow to inf, shapes and ragged input, and the exception types of bad
data. Each case runs in ember and PyTorch: same dtype, shape and values, or same exception type."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember

inf, nan = math.inf, math.nan


def _outcome(prog, lib):
    try:
        t = prog(lib)
        vals = t.to(lib.float64).tolist() if t.dtype in (lib.bfloat16, lib.float16) else t.tolist()
        return "ok", (str(t.dtype).split(".")[-1], tuple(t.shape), repr(vals))
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e)


def _same(prog):
    got, expected = _outcome(prog, ember), _outcome(prog, torch)
    assert got[0] is expected[0], f"ember {got}; torch {expected}"
    assert got[1] == expected[1] if got[0] == "ok" else True


INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]
VALUES = [0, 1, -1, 127, 128, -128, -129, 255, 256, -255, -256, 32767, 32768, 2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1,
          2 ** 63 - 1, -2 ** 63, 2 ** 63, 2 ** 64, True, False, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 127.9, 128.0, 255.0,
          255.5, 256.0, -1.0, 1e20, -1e20, inf, -inf, nan, 1j, 1 + 0j]


@pytest.mark.parametrize("value", VALUES, ids=repr)
@pytest.mark.parametrize("dtype", INT_DTYPES + ["bool", "float16", "bfloat16", "float32", "float64", "complex64"])
def test_checked_conversion_of_python_numbers(dtype, value):
    _same(lambda L: L.tensor([value], dtype=getattr(L, dtype)))
    _same(lambda L: L.tensor(value, dtype=getattr(L, dtype)))


@pytest.mark.parametrize("value", [np.float64(nan), np.float32(inf), np.float64(300.0), np.int64(300), np.int16(-300),
                                   np.int64(-1), np.uint8(200), np.bool_(True), np.float16(-1.5)], ids=repr)
@pytest.mark.parametrize("dtype", INT_DTYPES + ["float32"])
def test_checked_conversion_of_numpy_scalars(dtype, value):
    _same(lambda L: L.tensor([value], dtype=getattr(L, dtype)))


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint8"])
def test_arrays_and_tensors_are_cast_unchecked(dtype):
    # data that is itself an ndarray or a tensor is cast as C casts (no overflow check), as in PyTorch
    _same(lambda L: L.tensor(np.array([300.0, -1.0, 1.5]), dtype=getattr(L, dtype)))
    _same(lambda L: L.as_tensor(np.array([300, -1]), dtype=getattr(L, dtype)))


def test_checked_conversion_in_as_tensor_asarray_new_tensor():
    for prog in (lambda L: L.as_tensor([nan], dtype=L.int64), lambda L: L.asarray([nan], dtype=L.int64),
                 lambda L: L.ones(2, dtype=L.int64).new_tensor([nan]),
                 lambda L: L.ones(2, dtype=L.uint8).new_tensor([-1]),
                 lambda L: L.tensor([[1, 2], [3, 300]], dtype=L.int8)):
        _same(prog)


SCALARS = [np.float64(1.5), np.float32(1.5), np.float16(1.5), np.int8(3), np.int16(3), np.int32(3), np.int64(3),
           np.uint8(3), np.complex64(1j), np.complex128(1j), 1.5, 2, True, 1j]


@pytest.mark.parametrize("a", SCALARS + [np.bool_(True)], ids=repr)
def test_inferred_dtype_of_one_number(a):
    _same(lambda L: L.tensor(a))
    _same(lambda L: L.tensor([a]))


@pytest.mark.parametrize("b", SCALARS, ids=repr)
@pytest.mark.parametrize("a", SCALARS, ids=repr)
def test_inferred_dtype_by_promotion(a, b):
    _same(lambda L: L.tensor([a, b]))
    _same(lambda L: L.tensor([[a], [b]]))


@pytest.mark.parametrize("default", ["float64", "float16", "float32"])
def test_inference_follows_the_default_dtype(default):
    def prog(L):
        old = L.get_default_dtype()
        L.set_default_dtype(getattr(L, default))
        try:
            return L.tensor([[1.5, 2], [np.float32(1), True]])
        finally:
            L.set_default_dtype(old)
    _same(prog)


MIXED = {
    "0-d float64 tensor and a float": lambda L: L.tensor([L.tensor(1., dtype=L.float64), 2.0]),
    "0-d int32 tensor and an int": lambda L: L.tensor([L.tensor(1, dtype=L.int32), 2]),
    "0-d int32 tensor and a float": lambda L: L.tensor([L.tensor(1, dtype=L.int32), 2.5]),
    "one-element 1-d tensors": lambda L: L.tensor([L.ones(1), L.zeros(1, 1)]),
    "int32 arrays": lambda L: L.tensor([np.array([1, 2], dtype=np.int32)]),
    "int32 array and a list": lambda L: L.tensor([np.array([1, 2], dtype=np.int32), [3, 4]]),
    "float16 array": lambda L: L.tensor(np.array([1.5], dtype=np.float16)),
    "range": lambda L: L.tensor(range(4)),
    "ranges": lambda L: L.tensor([range(2), range(2)]),
    "tuples": lambda L: L.tensor(((1, 2), (3, 4))),
    "empty": lambda L: L.tensor([]),
    "empty rows": lambda L: L.tensor([[], []]),
    "empty int": lambda L: L.tensor([], dtype=L.int64),
    "bool and float": lambda L: L.tensor([1.5, True]),
    "nested 3-d": lambda L: L.tensor([[[1, 2]], [[3, 4]]]),
    "bool from complex": lambda L: L.tensor([1 + 2j, 0j], dtype=L.bool),
    "float target from big int": lambda L: L.tensor([2 ** 70], dtype=L.float32),
}


@pytest.mark.parametrize("name", sorted(MIXED))
def test_mixed_data(name):
    _same(MIXED[name])


BAD = {
    "object": lambda L: L.tensor(object()),
    "None": lambda L: L.tensor(None),
    "[None]": lambda L: L.tensor([None]),
    "nested None": lambda L: L.tensor([[1, 2], [3, None]]),
    "dict": lambda L: L.tensor({1: 2}),
    "set": lambda L: L.tensor({1}),
    "str": lambda L: L.tensor("abc"),
    "bytes": lambda L: L.tensor(b"ab"),
    "[str]": lambda L: L.tensor(["a"]),
    "[1, str]": lambda L: L.tensor([1, "a"]),
    "ragged longer": lambda L: L.tensor([[1, 2], [3]]),
    "ragged shorter": lambda L: L.tensor([[1], [2, 3]]),
    "ragged empty": lambda L: L.tensor([[1], []]),
    "scalar then list": lambda L: L.tensor([1, [2]]),
    "list then scalar": lambda L: L.tensor([[1], 2]),
    "[1-d tensors]": lambda L: L.tensor([L.ones(2), L.ones(2)]),
    "[None] float": lambda L: L.tensor([None], dtype=L.float32),
    "[None] int": lambda L: L.tensor([None], dtype=L.int64),
    "[object] float": lambda L: L.tensor([object()], dtype=L.float32),
    "complex to float": lambda L: L.tensor([1 + 2j], dtype=L.float32),
    "complex to int": lambda L: L.tensor([1 + 2j], dtype=L.int64),
    "int beyond int64": lambda L: L.tensor([2 ** 64]),
    "int beyond int64 to int8": lambda L: L.tensor([2 ** 63], dtype=L.int8),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_data_raises_pytorchs_exception_type(name):
    _same(BAD[name])
