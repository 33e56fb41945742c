"""Legacy constructors (``ember.FloatTensor(2, 3)``, ``LongTensor([...])``, ``ember.Tensor(*sizes)``) and
indexing with a ``range``, against PyTorch 2.13."""
import numpy as np
import pytest
import torch

import ember
from oracle import as_numpy

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor", "ShortTensor",
         "CharTensor", "ByteTensor", "BoolTensor"]


def dtype_name(t):
    return str(t.dtype).split(".")[-1]


def outcome(fn):
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 - the type is what is compared
        return "raise", type(exc)


@pytest.mark.parametrize("name", NAMES + ["Tensor"])
@pytest.mark.parametrize("sizes", [(2, 3), (0,), (4,), (1, 0, 2), ()])
def test_sizes_give_an_uninitialised_tensor_of_the_dtype(name, sizes):
    e, t = getattr(ember, name)(*sizes), getattr(torch, name)(*sizes)
    assert tuple(e.shape) == tuple(t.shape) and dtype_name(e) == dtype_name(t)
    assert type(e) is ember.Tensor


@pytest.mark.parametrize("name", NAMES + ["Tensor"])
@pytest.mark.parametrize("data", [[1.7, -2.2, 3.0], [[0, 1], [2, 3]], (1, 0), [], [True, False],
                                  np.array([1.5, 2.5]), np.array([[1, 2]], dtype=np.int64)])
def test_data_is_copied_and_converted(name, data):
    got, want = outcome(lambda: getattr(ember, name)(data)), outcome(lambda: getattr(torch, name)(data))
    assert got[0] == want[0], (got, want)
    if got[0] == "raise":   # e.g. ByteTensor([-2.2]): out of range
        assert got[1] is want[1]
        return
    e, t = got[1], want[1]
    assert dtype_name(e) == dtype_name(t)
    np.testing.assert_array_equal(as_numpy(e), as_numpy(t))


@pytest.mark.parametrize("name", ["FloatTensor", "LongTensor", "Tensor"])
def test_a_size_object_means_sizes(name):
    e, t = getattr(ember, name)(ember.Size([2, 5])), getattr(torch, name)(torch.Size([2, 5]))
    assert tuple(e.shape) == tuple(t.shape) == (2, 5)


@pytest.mark.parametrize("args", [(2.5,), ("a",), (2, [3]), (2, 3.0), (-1,), (2, -3), ([[1, 2], [3]],), (None,)])
@pytest.mark.parametrize("name", ["FloatTensor", "LongTensor", "Tensor"])
def test_bad_arguments_raise_as_in_torch(name, args):
    got, want = outcome(lambda: getattr(ember, name)(*args)), outcome(lambda: getattr(torch, name)(*args))
    assert got[0] == want[0] == "raise" and got[1] is want[1], (got, want)


def test_a_tensor_argument_aliases_when_the_dtype_matches():
    for lib in (ember, torch):
        a = lib.ones(3)
        b = lib.Tensor(a)
        b[0] = 5
        assert a[0].item() == 5 and b is not a
        with pytest.raises(TypeError):
            lib.LongTensor(a)


def test_isinstance_checks_dtype_and_cpu():
    for lib in (ember, torch):
        row = [isinstance(x, getattr(lib, n)) for x in (lib.zeros(1), lib.zeros(1, dtype=lib.int64),
                                                        lib.zeros(1, dtype=lib.uint8)) for n in NAMES]
        if lib is ember:
            ember_row = row
    assert ember_row == row
    assert isinstance(ember.FloatTensor(2), ember.Tensor)
    assert not isinstance(ember.zeros(1, device="meta"), ember.FloatTensor)
    assert not isinstance(torch.zeros(1, device="meta"), torch.FloatTensor)


def test_tensor_subclass_without_its_own_new():
    class Mine(ember.Tensor):
        pass
    m = Mine([1.0, 2.0])
    assert type(m) is Mine and m.tolist() == [1.0, 2.0]
    assert isinstance(ember.nn.Parameter(ember.ones(2)), ember.FloatTensor)


RANGES = [range(2, 5), range(0, 10, 3), range(5, 0, -1), range(0), range(-3, 0), range(8, 12), range(3, 1)]


@pytest.mark.parametrize("r", RANGES, ids=str)
def test_range_index(r):
    x = np.arange(20.0).reshape(10, 2)
    results = [outcome(lambda lib=lib: as_numpy(lib.from_numpy(x.copy())[r])) for lib in (ember, torch)]
    assert results[0][0] == results[1][0]
    if results[0][0] == "ok":
        np.testing.assert_array_equal(results[0][1], results[1][1])
    else:
        assert results[0][1] is results[1][1]


@pytest.mark.parametrize("index", [(slice(None), range(1, 3)), (range(2), range(1, 3)), (range(2), 0),
                                   (Ellipsis, range(0, 4, 2))], ids=str)
def test_range_in_a_tuple_index_and_setitem(index):
    x = np.arange(12.0).reshape(3, 4)
    e, t = ember.from_numpy(x.copy()), torch.from_numpy(x.copy())
    np.testing.assert_array_equal(as_numpy(e[index]), as_numpy(t[index]))
    e[index] = -1.0
    t[index] = -1.0
    np.testing.assert_array_equal(as_numpy(e), as_numpy(t))


def test_range_index_backpropagates():
    x = np.arange(6.0)
    grads = []
    for lib in (ember, torch):
        a = lib.tensor(x, requires_grad=True)
        a[range(1, 4)].sum().backward()
        grads.append(as_numpy(a.grad))
    np.testing.assert_array_equal(*grads)
