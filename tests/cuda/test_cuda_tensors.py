"""CUDA tensors: moving between devices, factories on the device, mixing devices, views and
in-place ops on device memory, DLPack with CuPy and PyTorch. The oracle is PyTorch on the GPU."""
import numpy as np
import pytest
import torch

import ember
from oracle import check, make


def test_to_cuda_and_back_keeps_values_dtype_and_device():
    for dtype in ("float32", "float64", "float16", "int64", "int32", "uint8", "bool", "bfloat16"):
        a = make((3, 5), dtype)
        e = ember.tensor(a, dtype=getattr(ember, dtype))
        for moved in (e.cuda(), e.to("cuda"), e.to("cuda:0", non_blocking=True), e.to(ember.device("cuda", 0))):
            assert moved.device == ember.device("cuda", 0) and str(moved.device) == "cuda:0"
            assert moved.is_cuda and not moved.is_cpu and moved.get_device() == 0
            assert moved.dtype is e.dtype
            back = moved.cpu()
            assert back.device.type == "cpu"
            np.testing.assert_array_equal(back.float().numpy(), e.float().numpy())
        assert e.cuda().cuda() is not None and (c := e.cuda()).to("cuda") is c   # no copy when already there


def test_to_device_and_dtype_together():
    e = ember.arange(6).reshape(2, 3)
    t = e.to("cuda", ember.float16)
    assert t.device.type == "cuda" and t.dtype is ember.float16
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(6, dtype=np.float16).reshape(2, 3))


@pytest.mark.parametrize("factory", [
    lambda lib: lib.zeros(2, 3, device="cuda"),
    lambda lib: lib.ones(4, dtype=lib.float16, device="cuda"),
    lambda lib: lib.full((2, 2), 7, device="cuda"),
    lambda lib: lib.arange(10, device="cuda"),
    lambda lib: lib.arange(0, 1, 0.25, device="cuda"),
    lambda lib: lib.linspace(0, 1, 5, device="cuda"),
    lambda lib: lib.eye(3, device="cuda"),
    lambda lib: lib.empty(3, device="cuda").fill_(2),
    lambda lib: lib.tensor([[1, 2], [3, 4]], device="cuda"),
    lambda lib: lib.zeros_like(lib.ones(2, 3, device="cuda")),
    lambda lib: lib.full_like(lib.ones(2, 3, device="cuda"), 5.0),
    lambda lib: lib.ones(2, 3, device="cuda").new_zeros(4),
])
def test_factories_on_the_device(factory):
    got, want = factory(ember), factory(torch)
    assert got.device.type == "cuda"
    check(lambda lib: factory(lib))


def test_random_factories_on_the_device_are_seeded():
    ember.cuda.manual_seed(5)
    a = ember.randn(100, device="cuda")
    ember.cuda.manual_seed(5)
    b = ember.randn(100, device="cuda")
    assert a.device.type == "cuda"
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    r = ember.rand(1000, device="cuda")
    assert 0 <= float(r.min()) and float(r.max()) < 1 and abs(float(r.mean()) - 0.5) < 0.05


def test_mixing_devices_raises_pytorchs_error():
    for fn in (lambda lib, a, b: a + b, lambda lib, a, b: lib.matmul(a, b), lambda lib, a, b: lib.cat([a, b])):
        errors = []
        for lib in (torch, ember):
            a, b = lib.ones(2, 2, device="cuda"), lib.ones(2, 2)
            with pytest.raises(RuntimeError) as info:
                fn(lib, a, b)
            errors.append(str(info.value))
        assert "Expected all tensors to be on the same device" in errors[1], errors
        assert "cuda:0" in errors[1] and "cpu" in errors[1]


def test_zero_dim_cpu_tensor_mixes_with_cuda_like_a_scalar():
    for lib in (torch, ember):
        a = lib.arange(4.0, device="cuda")
        s = lib.tensor(3.0)
        r = a * s + s
        assert r.device.type == "cuda"
        np.testing.assert_allclose(r.cpu().numpy(), np.arange(4.0) * 3 + 3)


def test_views_and_inplace_write_device_memory():
    def program(lib, x):
        x = x.clone()
        v = x[1:, ::2]
        v.mul_(10)
        x.t()[0].add_(1)
        x[0, 0] = -5
        return x, v.contiguous(), x.view(-1)[3:7], x.transpose(0, 1).reshape(-1)
    check(program, make((3, 4)))


def test_item_tolist_repr_and_numpy_refusal():
    e = ember.arange(3.0, device="cuda")
    assert e.tolist() == [0.0, 1.0, 2.0] and e[1].item() == 1.0 and float(e.sum()) == 3.0
    assert "device='cuda:0'" in repr(e)
    with pytest.raises(TypeError, match="cuda"):
        e.numpy()


def test_dlpack_zero_copy_with_cupy_and_torch():
    import cupy
    c = cupy.arange(6, dtype=cupy.float32)
    e = ember.from_dlpack(c)
    assert e.device.type == "cuda" and e.data_ptr() == c.data.ptr
    e.add_(1)                                   # shared memory: CuPy sees the write
    np.testing.assert_array_equal(c.get(), np.arange(6) + 1)
    back = cupy.from_dlpack(e)
    assert back.data.ptr == c.data.ptr
    t = torch.arange(4.0, device="cuda")
    e2 = ember.from_dlpack(t)
    assert e2.data_ptr() == t.data_ptr()
    t2 = torch.from_dlpack(e2)
    assert t2.data_ptr() == t.data_ptr() and t2.device.type == "cuda"


def test_pin_memory():
    e = ember.arange(8.0)
    p = e.pin_memory()
    assert p.is_pinned() and not e.is_pinned()
    np.testing.assert_array_equal(p.numpy(), e.numpy())
    np.testing.assert_array_equal(p.to("cuda", non_blocking=True).cpu().numpy(), e.numpy())
