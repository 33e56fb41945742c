"""`xp.<ufunc>.at` of the CUDA array module (ember/_cuda/array_module.py) against NumPy's: sums,
products, maxima and minima with repeated targets (index_add, index_put accumulate, index_reduce,
scatter_reduce), every dtype, complex included, on views."""
import numpy as np
import pytest


def _draw(rng, shape, dtype):
    values = rng.uniform(-2, 2, shape)
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.uniform(-2, 2, shape)
    return values.astype(dtype)


def _moved(a):
    import cupy
    return np.moveaxis(a, 1, 0) if isinstance(a, np.ndarray) else cupy.moveaxis(a, 1, 0)


@pytest.mark.parametrize("name", ["multiply", "maximum", "minimum", "add"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int64", "bool", "complex64", "complex128"])
def test_ufunc_at_matches_numpy_with_repeated_targets(name, dtype):
    import cupy
    from ember._cuda.array_module import xp
    if name in ("maximum", "minimum") and np.dtype(dtype).kind == "c":
        pytest.skip("PyTorch orders no complex numbers")
    # float sums go through atomics in any order: equal up to rounding; complex products as NumPy's
    # up to rounding (the device's complex multiply contracts into FMAs, NumPy's does not, H100);
    # everything else exactly
    inexact = (name == "add" and np.dtype(dtype).kind == "f") or (name == "multiply" and np.dtype(dtype).kind == "c")
    compare = np.testing.assert_array_equal if not inexact else \
        (lambda got, want: np.testing.assert_allclose(got, want, rtol=5e-3 if dtype == "float16" else
                                                      1e-5 if dtype == "complex64" else 1e-6))
    rng = np.random.default_rng(0)
    base = _draw(rng, (5, 4), dtype)
    for view in (lambda a: a, _moved):
        index = np.array([0, 3, 0, -1, 3, 3, 1])
        values = _draw(rng, (7,) + view(base).shape[1:], dtype)
        expected = base.copy()
        getattr(np, name).at(view(expected), index, values)
        on_device = cupy.asarray(base)
        getattr(xp, name).at(view(on_device), cupy.asarray(index), cupy.asarray(values))
        compare(on_device.get(), expected)
    expected, on_device = base.copy(), cupy.asarray(base)         # a tuple index with a slice, a scalar value
    getattr(np, name).at(expected, (slice(None), [0, 0, 2]), base.dtype.type(1))
    getattr(xp, name).at(on_device, (slice(None), cupy.asarray([0, 0, 2])), base.dtype.type(1))
    compare(on_device.get(), expected)
