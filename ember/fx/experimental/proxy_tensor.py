"""``from torch.fx.experimental.proxy_tensor import make_fx`` under ``import ember as torch``:
the tracer is ember._functorch.make_fx (loaded when this module is)."""
from ember._functorch.make_fx import make_fx

__all__ = ["make_fx"]
