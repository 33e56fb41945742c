"""``ember.backends``: the backend switches scripts set (``cudnn.benchmark = True``,
``cuda.matmul.allow_tf32 = True``), answered as a CPU build of PyTorch answers them.

Setting a flag is accepted and reads back; ember's CPU kernels do not consult them (there is
no cuDNN, TF32 or MPS here), just as PyTorch's CPU kernels ignore them.
"""
from . import cuda, cudnn, mps, opt_einsum  # noqa: F401
