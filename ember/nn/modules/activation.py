"""Activation modules, generated from a table: (name, constructor parameters, call, extra_repr).

Each row becomes a Module subclass whose ``__init__`` takes the listed parameters (positional or
keyword, with PyTorch's defaults) and whose ``forward`` calls ember.nn.functional. PReLU (it owns
a parameter) is written out. MultiheadAttention lives in transformer.py.
"""
from __future__ import annotations

import inspect

from .. import functional as F, init
from ..parameter import Parameter
from ._common import empty
from .module import Module

_REQUIRED = inspect.Parameter.empty


def _inplace(self):
    return "inplace=True" if self.inplace else ""


def _comma_inplace(self):
    return ", inplace=True" if self.inplace else ""


# name: (parameters [(name, default)], forward(self, x), extra_repr(self) or None)
_TABLE = {
    "Threshold": ([("threshold", _REQUIRED), ("value", _REQUIRED), ("inplace", False)],
                  lambda s, x: F.threshold(x, s.threshold, s.value, s.inplace),
                  lambda s: f"threshold={s.threshold}, value={s.value}{_comma_inplace(s)}"),
    "ReLU": ([("inplace", False)], lambda s, x: F.relu(x, inplace=s.inplace), _inplace),
    "RReLU": ([("lower", 1.0 / 8), ("upper", 1.0 / 3), ("inplace", False)],
              lambda s, x: F.rrelu(x, s.lower, s.upper, s.training, s.inplace),
              lambda s: f"lower={s.lower}, upper={s.upper}{_comma_inplace(s)}"),
    "Hardtanh": ([("min_val", -1.0), ("max_val", 1.0), ("inplace", False)],
                 lambda s, x: F.hardtanh(x, s.min_val, s.max_val, s.inplace),
                 lambda s: f"min_val={s.min_val}, max_val={s.max_val}{_comma_inplace(s)}"),
    "Sigmoid": ([], lambda s, x: x.sigmoid(), None),
    "Hardsigmoid": ([("inplace", False)], lambda s, x: F.hardsigmoid(x, s.inplace), None),
    "Tanh": ([], lambda s, x: x.tanh(), None),
    "SiLU": ([("inplace", False)], lambda s, x: F.silu(x, inplace=s.inplace), _inplace),
    "Mish": ([("inplace", False)], lambda s, x: F.mish(x, inplace=s.inplace), _inplace),
    "Hardswish": ([("inplace", False)], lambda s, x: F.hardswish(x, s.inplace), None),
    "ELU": ([("alpha", 1.0), ("inplace", False)], lambda s, x: F.elu(x, s.alpha, s.inplace),
            lambda s: f"alpha={s.alpha}{_comma_inplace(s)}"),
    "CELU": ([("alpha", 1.0), ("inplace", False)], lambda s, x: F.celu(x, s.alpha, s.inplace),
             lambda s: f"alpha={s.alpha}{_comma_inplace(s)}"),
    "SELU": ([("inplace", False)], lambda s, x: F.selu(x, s.inplace), _inplace),
    "GLU": ([("dim", -1)], lambda s, x: F.glu(x, s.dim), lambda s: f"dim={s.dim}"),
    "GELU": ([("approximate", "none")], lambda s, x: F.gelu(x, approximate=s.approximate),
             lambda s: f"approximate={s.approximate!r}"),
    "Hardshrink": ([("lambd", 0.5)], lambda s, x: F.hardshrink(x, s.lambd), lambda s: f"{s.lambd}"),
    "LeakyReLU": ([("negative_slope", 1e-2), ("inplace", False)],
                  lambda s, x: F.leaky_relu(x, s.negative_slope, s.inplace),
                  lambda s: f"negative_slope={s.negative_slope}{_comma_inplace(s)}"),
    "LogSigmoid": ([], lambda s, x: F.logsigmoid(x), None),
    "Softplus": ([("beta", 1.0), ("threshold", 20.0)], lambda s, x: F.softplus(x, s.beta, s.threshold),
                 lambda s: f"beta={s.beta}, threshold={s.threshold}"),
    "Softshrink": ([("lambd", 0.5)], lambda s, x: F.softshrink(x, s.lambd), lambda s: str(s.lambd)),
    "Softsign": ([], lambda s, x: F.softsign(x), None),
    "Tanhshrink": ([], lambda s, x: F.tanhshrink(x), None),
    "Softmin": ([("dim", None)], lambda s, x: F.softmin(x, s.dim, _stacklevel=5), lambda s: f"dim={s.dim}"),
    "Softmax": ([("dim", None)], lambda s, x: F.softmax(x, s.dim, _stacklevel=5), lambda s: f"dim={s.dim}"),
    "LogSoftmax": ([("dim", None)], lambda s, x: F.log_softmax(x, s.dim, _stacklevel=5),
                   lambda s: f"dim={s.dim}"),
}


def _make_activation(name, params, call, extra):
    sig = inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
                            + [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
                               for p, d in params])

    def __init__(self, *args, **kwargs):
        try:
            bound = sig.bind(self, *args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{name}.__init__(): {e}") from None
        bound.apply_defaults()
        Module.__init__(self)
        for p, _ in params:
            setattr(self, p, bound.arguments[p])

    __init__.__signature__ = sig
    ns = {"__init__": __init__, "forward": lambda self, input: call(self, input), "__module__": __name__,
          "__doc__": f"Applies F.{name.lower()} element-wise (PyTorch's nn.{name})."}
    if extra is not None:
        ns["extra_repr"] = extra
    return type(name, (Module,), ns)


for _name, _row in _TABLE.items():
    globals()[_name] = _make_activation(_name, *_row)
# torch.fx's flag for passes: RReLU draws its slopes at random while training
RReLU._is_impure = property(lambda self: self.training)  # noqa: F821  (defined from the table)


class ReLU6(Hardtanh):  # noqa: F821  (defined from the table)
    """min(max(0, x), 6)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace(self)


class Softmax2d(Module):
    """Softmax over the channel dimension of (C, H, W) or (N, C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3, _stacklevel=5)


class PReLU(Module):
    """max(0, x) + weight * min(0, x), with a learnable slope per channel (or one shared)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Fill the slope(s) with `init`."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


__all__ = list(_TABLE) + ["ReLU6", "Softmax2d", "PReLU"]
