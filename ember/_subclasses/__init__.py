"""``torch._subclasses`` for programs that ``import ember as torch``: fake tensors."""
from . import fake_tensor  # noqa: F401
