"""Normalization layers: BatchNorm1d/2d/3d, InstanceNorm1d/2d, LayerNorm, GroupNorm, RMSNorm."""
from __future__ import annotations

import numbers

from ... import zeros, ones, tensor as _tensor, long as _long
from .. import functional as F, init
from ..parameter import Parameter
from ._common import empty, weight_and_bias
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "LayerNorm",
           "GroupNorm", "RMSNorm"]


def _factory(device, dtype):
    kw = {}
    if device is not None:
        kw["device"] = device
    if dtype is not None:
        kw["dtype"] = dtype
    return kw


class _NormBase(Module):
    """Shared state of batch and instance norm: affine parameters and running statistics."""

    _version = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        kw = _factory(device, dtype)
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        weight_and_bias(self, num_features, num_features, weight=affine, bias=bias, device=device, dtype=dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, **kw))
            self.register_buffer("running_var", ones(num_features, **kw))
            self.register_buffer("num_batches_tracked",
                                 _tensor(0, dtype=_long, **{k: v for k, v in kw.items() if k != "dtype"}))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running var 1, num_batches_tracked 0."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset running statistics; weight 1, bias 0."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        raise NotImplementedError

    def extra_repr(self) -> str:
        return ("{num_features}, eps={eps}, momentum={momentum}, affine={affine}, "
                "bias={use_bias}, track_running_stats={track_running_stats}".format(
                    **self.__dict__, use_bias=self.bias is not None))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs, copies):
        # Checkpoints older than version 2 lack num_batches_tracked; PyTorch fills it in.
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = self.num_batches_tracked if self.num_batches_tracked is not None \
                    else _tensor(0, dtype=_long)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs, copies)


class _BatchNorm(_NormBase):
    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            # momentum=None: cumulative moving average over the batches seen.
            factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        bn_training = True if self.training else (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias, bn_training,
                            factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization over (N, C) or (N, C, L) input."""

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalization over (N, C, H, W) input."""

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalization over (N, C, D, H, W) input."""

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class _InstanceNorm(_NormBase):
    _ndim = 0

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input):
        n = self._ndim
        if input.dim() not in (n + 1, n + 2):
            raise ValueError(f"expected {n + 1}D or {n + 2}D input (got {input.dim()}D input)")
        feature_dim = input.dim() - n - 1
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
        if input.dim() == n + 1:  # unbatched
            return self._instance(input.unsqueeze(0)).squeeze(0)
        return self._instance(input)

    def _instance(self, input):
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                               self.training or not self.track_running_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) or (C, L) input."""
    _ndim = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) or (C, H, W) input."""
    _ndim = 2


def _normalized_shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (normalized_shape,)
    return tuple(normalized_shape)


class LayerNorm(Module):
    """Normalization over the trailing `normalized_shape` dimensions."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _normalized_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        weight_and_bias(self, self.normalized_shape, self.normalized_shape, weight=elementwise_affine, bias=bias, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return ("{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}, "
                "bias={use_bias}".format(**self.__dict__, use_bias=self.bias is not None))


class GroupNorm(Module):
    """Normalization over groups of channels."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        weight_and_bias(self, num_channels, num_channels, weight=affine, bias=bias, device=device, dtype=dtype)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return "{num_groups}, {num_channels}, eps={eps}, affine={affine}, bias={use_bias}".format(
            **self.__dict__, use_bias=self.bias is not None)


class RMSNorm(Module):
    """Root-mean-square normalization over the trailing `normalized_shape` dimensions."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _normalized_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Weight 1."""
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return "{normalized_shape}, eps={eps}, elementwise_affine={elementwise_affine}".format(**self.__dict__)
