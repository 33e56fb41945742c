"""aten::view on the CUDA key. The geometry kernel that views share across backends
(ember/ops/cpu/views.py) answers a contiguous CUDA tensor with CuPy's reshape after computing
strides, an offset and a layout check it then discards (~10 us of Python and CuPy attribute
reads on the lent machine); here that case is the reshape alone. Imports no CuPy."""
from __future__ import annotations

from .._core.dispatch import BACKEND_MASK
from .._core.tensor import Tensor
from ..ops.cpu import views as _views


def view(self, size):
    """A non-empty C-contiguous tensor takes any shape of its size with row-major strides
    (what `_views.view` computes for it); anything else goes through the geometry kernel."""
    arr = self._data
    if arr.size and arr._c_contiguous:
        try:       # CuPy's reshape infers a -1 as infer_size does; a size it refuses gets PyTorch's error below
            data = arr.reshape(size)
        except ValueError:
            return _views.view(self, size)
        if data.shape != size:     # a -1 inferred; CuPy reads any negative as -1: infer_size raises PyTorch's error
            _views.infer_size(size, arr.size)
        out = object.__new__(Tensor)
        out._data = data
        out._keys = self._keys & BACKEND_MASK
        out._version_counter = self._shared_version_counter()
        return out
    return _views.view(self, size)
