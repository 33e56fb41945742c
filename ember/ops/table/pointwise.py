"""Pointwise operators: unary math, binary arithmetic, comparisons, activations."""
from ..registry import Op
from ..cpu import pointwise as cpu
from ..meta import pointwise as meta

BINARY = dict(inplace=True, out=True, numbers_as_tensors=True)
UNARY = dict(inplace=True, out=True)

OPS = [
    Op("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", cpu=cpu.add, meta=meta.binary, **BINARY),
    Op("sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", cpu=cpu.sub, meta=meta.binary, **BINARY),
    Op("rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", cpu=cpu.rsub, meta=meta.binary,
       numbers_as_tensors=True),
    Op("mul.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpu.mul, meta=meta.binary, **BINARY),
    Op("neg(Tensor self) -> Tensor", cpu=cpu.neg, meta=meta.unary_same, **UNARY),
    Op("abs(Tensor self) -> Tensor", cpu=cpu.abs, meta=meta.unary_real, **UNARY),
    Op("exp(Tensor self) -> Tensor", cpu=cpu.exp, meta=meta.unary_float, **UNARY),
    Op("sqrt(Tensor self) -> Tensor", cpu=cpu.sqrt, meta=meta.unary_float, **UNARY),
    Op("sigmoid(Tensor self) -> Tensor", cpu=cpu.sigmoid, meta=meta.unary_float, **UNARY),
    Op("tanh(Tensor self) -> Tensor", cpu=cpu.tanh, meta=meta.unary_float, **UNARY),
]
