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
    n = arr.size
    if n and arr._c_contiguous:
        out = object.__new__(Tensor)
        out._data = arr.reshape(_views.infer_size(size, n))
        out._keys = self._keys & BACKEND_MASK
        out._version_counter = self._shared_version_counter()
        return out
    return _views.view(self, size)
