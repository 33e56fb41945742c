"""The same values as an ember and a torch tensor on the GPU, and their comparison (the CUDA kernel
tests' shared helpers)."""
import numpy as np
import torch

import ember


def cuda(a):
    """An ember CUDA tensor holding NumPy array `a`."""
    return ember.from_numpy(np.ascontiguousarray(a)).cuda()


def pair(shape, dtype, seed, requires_grad=False, scale=1.0, shift=0.0):
    """(ember, torch) CUDA tensors of `dtype` holding the same standard-normal draws."""
    a = (np.random.default_rng(seed).standard_normal(shape) * scale + shift).astype(np.float32)
    t = torch.tensor(a, device="cuda").to(getattr(torch, dtype)).requires_grad_(requires_grad)
    e = ember.tensor(a, device="cuda").to(getattr(ember, dtype)).requires_grad_(requires_grad)
    return e, t


def close(e, t, tol):
    """Same dtype, on the GPU, and values within `tol` (compared in float32 on the host)."""
    assert e.dtype == getattr(ember, str(t.dtype).split(".")[1]) and e.device.type == "cuda"
    np.testing.assert_allclose(e.float().detach().cpu().numpy(), t.float().detach().cpu().numpy(), rtol=tol, atol=tol)
