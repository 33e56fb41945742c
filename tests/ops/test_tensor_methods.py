"""Oracle tests of the Tensor methods that are not operators (ember/ops/table/tensor_methods.py):
element-wise Python callables, the legacy ``new``, conjugate transposes, layout and memory queries,
the answers for hardware ember lacks and the removed names, and the *_scatter ops as methods."""
import warnings

import numpy as np
import pytest
import torch

import ember
from oracle import check, device_scope, make, to_ember


def test_apply_map_map2():
    x, y, z = make((2, 3)), make((3,)), make((2, 3))
    check(lambda lib, a: a.clone().apply_(lambda v: v * 2 + 1), x)
    check(lambda lib, a: a.clone().apply_(lambda v: v * 2.7), make((4,), "int64"))
    check(lambda lib, a, b: a.clone().map_(b, lambda p, q: p - q), x, y)
    check(lambda lib, a, b, c: a.clone().map2_(b, c, lambda p, q, r: p * q + r), x, y, z)
    check(lambda lib, a: a.clone().apply_(lambda v: -v), np.array(3.0))
    check(lambda lib, a: a.clone().requires_grad_().apply_(lambda v: v), x)
    for lib in (ember, torch):
        t = lib.ones(3)
        assert t.apply_(lambda v: v) is t


def test_new_legacy_constructor():
    x = make((2, 3), "float64")
    check(lambda lib, t: t.new([1, 2]), x)
    check(lambda lib, t: t.new((2, 3)), x)
    check(lambda lib, t: tuple(t.new(2, 3).shape), x)
    check(lambda lib, t: (tuple(t.new().shape), str(t.new().dtype).split(".")[-1]), x)
    check(lambda lib, t: str(t.new(lib.Size([4])).dtype).split(".")[-1], make((2,), "int32"))
    check(lambda lib, t: t.new(lib.tensor([1, 2])), x)


def test_conjugate_transposes():
    check(lambda lib, t: t.H.resolve_conj(), make((2, 3), "complex64"))
    check(lambda lib, t: t.mH.resolve_conj(), make((4, 2, 3), "complex64"))
    check(lambda lib, t: t.H, make((), "float32"))
    check(lambda lib, t: t.H, make((3,)))
    check(lambda lib, t: (t.mH.data_ptr() == t.data_ptr()), make((2, 3)))


def test_layout_and_memory_queries():
    x = make((2, 3, 4))
    check(lambda lib, t: t.dim_order(), x)
    check(lambda lib, t: t.permute(2, 0, 1).dim_order(), x)
    check(lambda lib, t: t[:, :1].dim_order(), x)
    if hasattr(torch.Tensor, "const_data_ptr"):
        check(lambda lib, t: t.const_data_ptr() == t.data_ptr(), x)
    else:                      # an older PyTorch (the GPU machine's) has no const_data_ptr: 2.13's answer
        with device_scope():
            t = to_ember(x)
            assert t.const_data_ptr() == t.data_ptr()
    check(lambda lib, t: (t.is_set_to(t), t.is_set_to(t.view(6, 4)), t.is_set_to(t.clone())), x)
    check(lambda lib, t: (t.is_shared(), t.is_pinned(), t.is_distributed()), x)
    check(lambda lib, t: (t.share_memory_() is t, t.is_shared()), x)
    check(lambda lib, t: (t.name, str(t.grad_dtype).split(".")[-1]), x)
    check(lambda lib, t: t.module_load(lib.ones(2, 3, 4)), x)


def test_hardware_requests_fail_as_on_a_cpu_build():
    x = make((2,))
    for method in ("pin_memory", "xpu", "ipu", "mtia"):
        check(lambda lib, t: getattr(t, method)(), x)
    for lib in (ember, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert lib.ones(1).volatile is False
        assert any("volatile was removed" in str(w.message) for w in caught)


@pytest.mark.parametrize("call", [lambda t: t.eig(), lambda t: t.symeig(), lambda t: t.lstsq(t),
                                  lambda t: t.solve(t), lambda t: t.reinforce(1.0)])
def test_removed_methods_raise_like_torch(call):
    check(lambda lib, t: call(t), make((3, 3)))


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_scatter_ops_as_methods(dtype):
    x = make((4, 5), dtype)
    check(lambda lib, t, s: t.select_scatter(s, 0, 2), x, make((5,), dtype))
    check(lambda lib, t, s: t.slice_scatter(s, 1, 1, 5, 2), x, make((4, 2), dtype))
    check(lambda lib, t, s: t.diagonal_scatter(s, 1), x, make((4,), dtype))
    check(lambda lib, t, s: t.as_strided_scatter(s, (2, 2), (5, 1), 1), x, make((2, 2), dtype))
    check(lambda lib, t, s: t.select_scatter(s, 0, 2), x, make((4,), dtype))


def test_bfloat16_views_of_non_contiguous_results_keep_their_dtype():
    """A view of a bfloat16 array whose root is not C-contiguous went through __array_interface__,
    which cannot name the extension dtype (it came back as raw 'V2' bytes)."""
    x = ember.arange(6.0).reshape(2, 3).bfloat16().T / 2.0
    assert x.T.dtype == ember.bfloat16 and x[1:].dtype == ember.bfloat16
    np.testing.assert_array_equal((x.T @ x).float().numpy(),
                                  (torch.arange(6.0).reshape(2, 3).bfloat16().T / 2.0).T.matmul(
                                      torch.arange(6.0).reshape(2, 3).bfloat16().T / 2.0).float().numpy())


def test_resize_family():
    x = make((2, 3))
    check(lambda lib, t: t.clone().resize_(3, 2), x)
    check(lambda lib, t: t.clone().resize_((6,)), x)
    check(lambda lib, t: t.clone().resize_(2, 2), x)
    check(lambda lib, t: t.clone().resize_(4, 3)[:2].reshape(-1)[:6], x)
    check(lambda lib, t: t.clone().t().resize_(3, 2), x)   # same sizes: a no-op, strides kept
    check(lambda lib, t: t.clone().t().resize_(2, 3), x)   # restrided over its storage
    check(lambda lib, t, o: t.clone().resize_as_(o), x, make((1, 6)))
    check(lambda lib, t: t.clone().requires_grad_().resize_(6), x)
    for lib in (ember, torch):
        t = lib.arange(6.0)
        v = t.resize_(2, 2)
        assert v is t and t.is_contiguous() and tuple(t.shape) == (2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda lib, t: t.resize(3, 2), x)
        check(lambda lib, t, o: t.resize_as(o), x, make((6,)))


def test_set_():
    x, y = make((2, 3)), make((4,))
    check(lambda lib, a, b: (a.set_(b), a.data_ptr() == b.data_ptr())[1], x, y)
    check(lambda lib, a, b: a.set_(b), x, y)
    check(lambda lib, a, b: a.set_(b, 1, (2, 1), (2, 1)), x, y)
    check(lambda lib, a: tuple(a.set_().shape), x)
    check(lambda lib, a, b: a.set_(b), x, make((3,), "int64"))
    for lib in (ember, torch):
        a, b = lib.zeros(3), lib.ones(4)
        a.set_(b)
        b.add_(1)
        assert a.tolist() == [2.0] * 4 and a.is_set_to(b)


def test_as_strided_inplace():
    x = make((4, 4))
    check(lambda lib, t: t.clone().as_strided_((2, 2), (4, 1), 1), x)
    for lib in (ember, torch):
        t = lib.arange(16.0)
        r = t.as_strided_((3, 3), (4, 1))
        assert r is t and t.data_ptr() == t.data_ptr() and t.stride() == (4, 1)


def test_as_subclass():
    class Mine(ember.Tensor):
        pass

    class Theirs(torch.Tensor):
        pass
    for lib, cls in ((ember, Mine), (torch, Theirs)):
        t = lib.arange(3.0)
        s = t.as_subclass(cls)
        assert type(s) is cls and s.data_ptr() == t.data_ptr() and s.tolist() == [0.0, 1.0, 2.0]
        with pytest.raises(TypeError):
            t.as_subclass(int)
