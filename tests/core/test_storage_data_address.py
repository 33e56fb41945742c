"""storage.data_address: a NumPy array's address from its array interface; a CUDA array's (CuPy's
class declares ``__cuda_array_interface__``) from ``.data.ptr``, without building the interface dict
(which asking the instance would do, at every launch that passes a pointer)."""
import types

import numpy as np

from ember._core.storage import data_address


def test_numpy_address_is_the_interfaces():
    a = np.arange(6, dtype=np.float32)
    assert data_address(a[2:]) == a.__array_interface__["data"][0] + 8


def test_cuda_like_array_address_without_building_its_interface():
    class CudaLike:
        data = types.SimpleNamespace(ptr=4096)

        @property
        def __cuda_array_interface__(self):
            raise AssertionError("the interface dict was built")
    assert data_address(CudaLike()) == 4096


def test_other_objects_answer_data_ptr():
    class Other:
        def data_ptr(self):
            return 1234
    assert data_address(Other()) == 1234
