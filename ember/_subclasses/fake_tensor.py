"""``torch._subclasses.fake_tensor``: ember's fake tensors live in ember/_functorch/fake_tensor.py."""
from .._functorch.fake_tensor import (FakeTensorMode, FakeTensor, FakeTensorDeviceMismatchError,  # noqa: F401
                                      DataDependentOutputException, DynamicOutputShapeException, is_fake)
