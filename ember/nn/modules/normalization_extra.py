"""The normalization modules beyond normalization.py's: InstanceNorm3d, SyncBatchNorm (batch norm of
one process: ember has no process groups), LocalResponseNorm and the legacy CrossMapLRN2d."""
from __future__ import annotations

from ...autograd.function import Function
from .. import functional as F
from .module import Module
from .normalization import _BatchNorm, _InstanceNorm

__all__ = ["InstanceNorm3d", "SyncBatchNorm", "LocalResponseNorm", "CrossMapLRN2d"]


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or (C, D, H, W) input."""
    _ndim = 3


class SyncBatchNorm(_BatchNorm):
    """Batch normalization whose statistics PyTorch reduces over a process group when
    torch.distributed is initialised; ember runs one process, where PyTorch computes plain batch
    norm too."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group=None, device=None, dtype=None, *,
                 bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d inside it replaced by a SyncBatchNorm sharing its
        parameters and running statistics."""
        from ...autograd.grad_mode import no_grad
        converted = module
        if isinstance(module, _BatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


class LocalResponseNorm(Module):
    """x / (k + alpha * mean of x**2 over `size` neighbouring channels) ** beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)


def _cross_map_scale(square, size, alpha, k):
    """k + alpha/size * (sum of x**2 over the channel window) as PyTorch's legacy Lua-port kernel
    computes it: window [c - pre + 1, c + pre - 1] with pre = (size - 1) // 2 + 1, except that its
    running sum never drops channel 0 once the window has moved past it; that is kept here."""
    import ember
    channels = square.shape[1]
    pre = int((size - 1) / 2 + 1)
    index = ember.arange(channels, device=square.device)
    lo, hi = (index - pre + 1).clamp_min(0), (index + pre - 1).clamp_max(channels - 1)
    cumulative = ember.cat([ember.zeros_like(square[:, :1]), square.cumsum(1)], 1)
    window = cumulative[:, hi + 1] - cumulative[:, lo]
    window = window + (index >= pre).to(square.dtype).reshape(1, -1, 1, 1) * square[:, :1]
    return window * (alpha / size) + k


class _CrossMapLRN2dFunction(Function):
    """PyTorch's backward for this layer is the textbook LRN gradient (a symmetric window), not the
    derivative of its forward; ember returns the same gradient."""

    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
        scale = _cross_map_scale(input * input, size, alpha, k)
        output = scale.pow(-beta) * input
        ctx.save_for_backward(input, output, scale)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        return output

    @staticmethod
    def backward(ctx, grad_output):
        import ember
        input, output, scale = ctx.saved_tensors
        size, channels = ctx.size, input.shape[1]
        ratio = grad_output * output / scale
        before = int(size - (size - 1) / 2)        # PyTorch's inversePrePad
        padded = ember.cat([ember.zeros_like(ratio[:, :1]).expand(-1, before, -1, -1), ratio,
                            ember.zeros_like(ratio[:, :1]).expand(-1, max(size - 1 - before, 0), -1, -1)], 1)
        cumulative = ember.cat([ember.zeros_like(padded[:, :1]), padded.cumsum(1)], 1)
        index = ember.arange(channels, device=input.device)
        accumulated = cumulative[:, index + size] - cumulative[:, index]
        grad = scale.pow(-ctx.beta) * grad_output - (2 * ctx.alpha * ctx.beta / size) * input * accumulated
        return grad, None, None, None, None


class CrossMapLRN2d(Module):
    """The legacy (Lua Torch) cross-channel local response norm of 4-D input."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return _CrossMapLRN2dFunction.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return "{size}, alpha={alpha}, beta={beta}, k={k}".format(**self.__dict__)
