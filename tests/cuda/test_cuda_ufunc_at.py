"""`xp.<ufunc>.at` of the CUDA array module (ember/_cuda/array_module.py) against NumPy's: products,
maxima and minima with repeated targets (index_reduce, scatter_reduce), every dtype, on views."""
import numpy as np
import pytest


@pytest.mark.parametrize("name", ["multiply", "maximum", "minimum"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int64", "bool"])
def test_ufunc_at_matches_numpy_with_repeated_targets(name, dtype):
    import cupy
    from ember._cuda.array_module import xp
    rng = np.random.default_rng(0)
    base = rng.uniform(-2, 2, (5, 4)).astype(dtype)
    for view in (lambda a: a, lambda a: np.moveaxis(a, 1, 0) if isinstance(a, np.ndarray) else cupy.moveaxis(a, 1, 0)):
        index = np.array([0, 3, 0, -1, 3, 3, 1])
        values = rng.uniform(-2, 2, (7,) + view(base).shape[1:]).astype(dtype)
        expected = base.copy()
        getattr(np, name).at(view(expected), index, values)
        on_device = cupy.asarray(base)
        getattr(xp, name).at(view(on_device), cupy.asarray(index), cupy.asarray(values))
        np.testing.assert_array_equal(on_device.get(), expected)
    expected, on_device = base.copy(), cupy.asarray(base)         # a tuple index with a slice, a scalar value
    getattr(np, name).at(expected, (slice(None), [0, 0, 2]), base.dtype.type(1))
    getattr(xp, name).at(on_device, (slice(None), cupy.asarray([0, 0, 2])), base.dtype.type(1))
    np.testing.assert_array_equal(on_device.get(), expected)
