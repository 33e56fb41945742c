"""Dropout modules: each calls its functional with ``self.training``."""
from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"

    @property
    def _is_impure(self) -> bool:
        """torch.fx's flag for passes: while training a call draws random numbers, so dead-code
        elimination must keep it even when its result is unused."""
        return self.training and self.p > 0

    def forward(self, input):
        return type(self)._fn(input, self.p, self.training, self.inplace)


def _dropout(name, fn):
    return type(name, (_DropoutNd,), {"_fn": staticmethod(fn), "__module__": __name__,
                                      "__doc__": f"nn.{name}: F.{fn.__name__} while training, identity in eval."})


Dropout = _dropout("Dropout", F.dropout)
Dropout1d = _dropout("Dropout1d", F.dropout1d)
Dropout2d = _dropout("Dropout2d", F.dropout2d)
Dropout3d = _dropout("Dropout3d", F.dropout3d)
AlphaDropout = _dropout("AlphaDropout", F.alpha_dropout)
FeatureAlphaDropout = _dropout("FeatureAlphaDropout", F.feature_alpha_dropout)
