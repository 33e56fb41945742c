"""``nn.init``: in-place initialisers, following torch/nn/init.py (fans, gains, errors).

Every function fills its tensor under ``no_grad`` and returns it; random ones draw from
`generator` (ember's default generator when None).
"""
from __future__ import annotations

import math
import warnings

from ..autograd.grad_mode import no_grad

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
           "orthogonal_", "sparse_"]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d")


def calculate_gain(nonlinearity, param=None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill with U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill with N(mean, std**2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _norm_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None):
    """Fill with N(mean, std**2) truncated to [a, b] (inverse-CDF method, as PyTorch)."""
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        lo = _norm_cdf((a - mean) / std)
        hi = _norm_cdf((b - mean) / std)
        tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor


def constant_(tensor, val: float):
    """Fill with `val`."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill with 1."""
    with no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor):
    """Fill with 0."""
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Fill a 2-D tensor with the identity matrix."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .. import eye
    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor, groups: int = 1):
    """Fill a 3/4/5-D (conv weight) tensor with the Dirac delta, preserving input channels."""
    dimensions = tensor.ndimension()
    if dimensions not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    with no_grad():
        tensor.zero_()
        centre = tuple(s // 2 for s in sizes[2:])
        for g in range(groups):
            for d in range(min_dim):
                tensor[(g * out_chans_per_grp + d, d) + centre] = 1
    return tensor


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    return gain / math.sqrt(fan)


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None):
    """He uniform: U(-bound, bound), bound = gain * sqrt(3 / fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op")
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None):
    """He normal: N(0, std**2), std = gain / sqrt(fan)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op")
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain: float = 1, generator=None):
    """Fill with a (semi-)orthogonal matrix from the QR decomposition of a normal matrix."""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    from .. import linalg
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    with no_grad():
        flattened = tensor.new_empty((rows, cols)).normal_(0, 1, generator=generator)
        if rows < cols:
            flattened = flattened.t()
        q, r = linalg.qr(flattened)
        q = q * r.diagonal().sign()  # make the decomposition unique
        if rows < cols:
            q = q.t()
        tensor.view_as(q).copy_(q)
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std: float = 0.01, generator=None):
    """Fill a 2-D tensor so that a `sparsity` fraction of each column is zero, the rest N(0, std**2)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .. import randperm
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col_idx in range(cols):
            zero_indices = randperm(rows, generator=generator)[:num_zeros]
            tensor[zero_indices, col_idx] = 0
    return tensor


def _deprecated(new):
    def old(*args, **kwargs):
        warnings.warn(f"`nn.init.{new.__name__[:-1]}` is now deprecated in favor of `nn.init.{new.__name__}`.",
                      FutureWarning, stacklevel=2)
        return new(*args, **kwargs)
    old.__name__ = new.__name__[:-1]
    old.__doc__ = f"Deprecated alias of {new.__name__}."
    return old


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
