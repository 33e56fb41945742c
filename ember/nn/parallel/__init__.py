"""``nn.parallel``: ``DataParallel`` as PyTorch gives it without an accelerator.

With no GPU, PyTorch's DataParallel keeps the module as ``.module``, sets ``device_ids = []`` and
calls the module directly; its state dict keys carry the ``module.`` prefix. ember has no
accelerator, so that is the whole of it. ``DistributedDataParallel`` (``distributed.py``) runs
on ``ember.distributed``'s process groups.
"""
from __future__ import annotations

from ..modules.module import Module
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "data_parallel", "DistributedDataParallel"]


class DataParallel(Module):
    """A transparent wrapper: ``DataParallel(m)(x) == m(x)``; ``device_ids``/``output_device``/``dim``
    are accepted and ignored, as PyTorch does when no accelerator is present."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0) -> None:
        super().__init__()
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim: int = 0, module_kwargs=None):
    """The functional form needs a device to scatter to; without one PyTorch raises, and so does ember."""
    raise RuntimeError("device type could not be determined")
