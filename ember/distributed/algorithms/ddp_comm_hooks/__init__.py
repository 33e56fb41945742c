"""Communication hooks for ``DistributedDataParallel.register_comm_hook`` (PyTorch's ``default_hooks``)."""
from . import default_hooks  # noqa: F401
