"""Activation operators (table rows).

Rows use PyTorch's aten schemas; where PyTorch exposes an op only in ``torch.nn.functional``
the row's namespace is "nn.functional". ``torch.nn.functional``'s Python-level wrappers
(``inplace=`` picks the in-place operator) are in ember/nn/functional.py.
"""
from ..registry import Op
from ..cpu import activation as cpu
from ..meta import activation as meta

F = "nn.functional"
FN = dict(namespace=F, variants="function")
BOTH = dict(inplace=True, out=True)

OPS = [
    Op("relu(Tensor self) -> Tensor", cpu=cpu.relu, meta=meta.relu, inplace=True,  # torch.relu: no out=
       direct_binding=True),
    Op("relu6(Tensor self) -> Tensor", cpu=cpu.relu6, meta=meta.relu6, **FN),
    Op("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", cpu=cpu.leaky_relu,
       meta=meta.float_unary("leaky_relu_cpu"), **FN, **BOTH),
    Op("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor", cpu=cpu.elu,
       meta=meta.float_unary("elu_cpu"), **FN, **BOTH),
    Op("selu(Tensor self) -> Tensor", cpu=cpu.selu, meta=meta.float_unary("elu_cpu"), variants="function",
       inplace=True),
    Op("celu(Tensor self, Scalar alpha=1.) -> Tensor", cpu=cpu.celu, meta=meta.celu, variants="function", inplace=True),
    Op('gelu(Tensor self, *, str approximate="none") -> Tensor', cpu=cpu.gelu, meta=meta.gelu, **FN, **BOTH),
    Op("silu(Tensor self) -> Tensor", cpu=cpu.silu, meta=meta.float_unary("silu_cpu", complex_ok=True), **FN, **BOTH),
    Op("mish(Tensor self) -> Tensor", cpu=cpu.mish, meta=meta.float_unary("mish_cpu"), **FN, **BOTH),
    Op("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", cpu=cpu.softplus,
       meta=meta.float_unary("softplus_cpu"), **FN, out=True),
    Op("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", cpu=cpu.hardtanh,
       meta=meta.hardtanh, **FN, **BOTH),
    Op("hardsigmoid(Tensor self) -> Tensor", cpu=cpu.hardsigmoid, meta=meta.float_unary("hardsigmoid_cpu"),
       **FN, **BOTH),
    Op("hardswish(Tensor self) -> Tensor", cpu=cpu.hardswish, meta=meta.float_unary("hardswish_cpu"),
       **FN, **BOTH),
    Op("log_sigmoid(Tensor self) -> Tensor", cpu=cpu.log_sigmoid, meta=meta.float_unary("log_sigmoid_cpu"),
       python_name="logsigmoid", **FN, out=True),
    Op("threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor", cpu=cpu.threshold, meta=meta.threshold,
       variants="function", **BOTH),
    Op("hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", cpu=cpu.hardshrink,
       meta=meta.float_unary("hardshrink_cpu"), out=True),
    Op("softshrink(Tensor self, Scalar lambd=0.5) -> Tensor", cpu=cpu.softshrink, meta=meta.softshrink,
       **FN, out=True),
    Op("prelu(Tensor self, Tensor weight) -> Tensor", cpu=cpu.prelu, meta=meta.prelu),
    Op("glu(Tensor self, int dim=-1) -> Tensor", cpu=cpu.glu, meta=meta.glu, **FN),  # F.glu: no out=
]
