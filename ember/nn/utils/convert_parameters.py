"""parameters_to_vector / vector_to_parameters."""
from __future__ import annotations

from ..._core.tensor import Tensor


def _check_same_device(param, old_device):
    if old_device is None:
        return param.device
    if param.device != old_device:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return old_device


def parameters_to_vector(parameters):
    """Flatten and concatenate `parameters` into one 1-D tensor."""
    from ... import cat
    device = None
    vec = []
    for param in parameters:
        device = _check_same_device(param, device)
        vec.append(param.view(-1))
    return cat(vec)


def vector_to_parameters(vec, parameters) -> None:
    """Copy slices of the 1-D `vec` into `parameters` (their ``.data`` is replaced, as PyTorch)."""
    if not isinstance(vec, Tensor):
        from ..modules.module import _typename
        raise TypeError(f"expected torch.Tensor, but got: {_typename(vec)}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        num = param.numel()
        param.data = vec[pointer:pointer + num].view_as(param).data
        pointer += num
