"""The table of PyTorch CUDA's dtype refusals (ember/ops/table CUDA_REFUSALS) and the registry's
wrapper that applies it to an op's CUDA kernel, checked on the CPU (the refusals themselves run
against PyTorch CUDA in the op oracle on the device: scripts/device_cuda_oracle.sh)."""
import pytest
import torch

import ember
from ember.ops import registry
from ember.ops.table import CUDA_REFUSALS, NO_CUDA_KERNEL

CASES = [(op, dtype) for op, rows in CUDA_REFUSALS.items() for dtype in rows]


@pytest.mark.parametrize("op,dtype", CASES)
def test_listed_dtypes_raise_pytorch_cuda_error(op, dtype):
    exc, _ = CUDA_REFUSALS[op][dtype]
    ran = []
    kernel = registry._refusing(lambda *args: ran.append(args), CUDA_REFUSALS[op])
    x = ember.ones(3, dtype=getattr(ember, dtype))
    with pytest.raises(exc) as info:
        kernel(x)
    assert not ran                                    # refused before computing
    c10 = getattr(ember, dtype).c10_name
    assert c10 in str(info.value) or "HalfTensor" in str(info.value)
    # a CUDA-only refusal: PyTorch's CPU kernel computes the same program
    getattr(torch, op)(torch.ones(3, dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("op", sorted(CUDA_REFUSALS))
def test_other_dtypes_reach_the_kernel(op):
    kernel = registry._refusing(lambda x: ("ran", x.dtype), CUDA_REFUSALS[op])
    for dtype in ("float32", "float64"):
        assert kernel(ember.ones(2, dtype=getattr(ember, dtype))) == ("ran", getattr(ember, dtype))


@pytest.mark.parametrize("op", sorted(CUDA_REFUSALS))
def test_the_cuda_kernel_of_the_op_is_wrapped(op):
    handle = getattr(registry.aten, op).default
    from ember._core.dispatch import DispatchKey
    cuda_kernel = handle.table[DispatchKey.CUDA]
    assert cuda_kernel.__code__ is registry._refusing(None, {}).__code__


@pytest.mark.parametrize("op", sorted(NO_CUDA_KERNEL))
def test_ops_without_a_cuda_kernel_refuse_like_pytorchs_dispatcher(op):
    from ember._core.dispatch import CUDA_BIT, DispatchKey
    for handle in (getattr(registry.aten, op)._overloads.values()):
        assert DispatchKey.CUDA not in handle.kernels, handle.name
        with pytest.raises(NotImplementedError, match=f"Could not run '{handle.name}' with arguments from the 'CUDA'"):
            handle.redispatch(CUDA_BIT, ember.ones(3))
