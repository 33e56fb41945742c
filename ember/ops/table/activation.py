"""Activation operators (table rows) and ``ember.nn.functional``'s activation functions.

Rows use PyTorch's aten schemas; where PyTorch exposes an op only in ``torch.nn.functional``
the row's namespace is "nn.functional". The Python functions at the bottom are
``torch.nn.functional``'s Python-level wrappers (``inplace=`` picks the in-place operator).
"""
from ..registry import Op, aten
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


# ---------------------------------------------------------------------------------------
# torch.nn.functional's Python wrappers
# ---------------------------------------------------------------------------------------
class _Bindings:
    """``_b.relu`` is the generated binding of ``aten::relu`` (looked up once, after the table
    is registered), so the wrappers below cost one extra Python call."""

    def __getattr__(self, name):
        fn = getattr(aten, name).default.entry
        setattr(self, name, fn)
        return fn


_b = _Bindings()


def relu(input, inplace=False):
    """max(input, 0)."""
    return _b.relu_(input) if inplace else _b.relu(input)


def relu_(input):
    return _b.relu_(input)


def relu6(input, inplace=False):
    """min(max(input, 0), 6)."""
    return _b.hardtanh_(input, 0.0, 6.0) if inplace else _b.relu6(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return _b.leaky_relu_(input, negative_slope)
    return _b.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _b.leaky_relu_(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _b.elu_(input, alpha) if inplace else _b.elu(input, alpha)


def elu_(input, alpha=1.0):
    return _b.elu_(input, alpha)


def selu(input, inplace=False):
    return _b.selu_(input) if inplace else _b.selu(input)


def selu_(input):
    return _b.selu_(input)


def celu(input, alpha=1.0, inplace=False):
    return _b.celu_(input, alpha) if inplace else _b.celu(input, alpha)


def celu_(input, alpha=1.0):
    return _b.celu_(input, alpha)


def silu(input, inplace=False):
    """input * sigmoid(input)."""
    return _b.silu_(input) if inplace else _b.silu(input)


def mish(input, inplace=False):
    """input * tanh(softplus(input))."""
    return _b.mish_(input) if inplace else _b.mish(input)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(input, min_val, max_val); min_val > max_val is a ValueError (checked in Python)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _b.hardtanh_(input, min_val, max_val)
    return _b.hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _b.hardtanh_(input, min_val, max_val)


def hardsigmoid(input, inplace=False):
    return _b.hardsigmoid_(input) if inplace else _b.hardsigmoid(input)


def hardswish(input, inplace=False):
    return _b.hardswish_(input) if inplace else _b.hardswish(input)


def threshold(input, threshold, value, inplace=False):
    """input <= threshold ? value : input."""
    if inplace:
        return _b.threshold_(input, threshold, value)
    return _b.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _b.threshold_(input, threshold, value)


def hardshrink(input, lambd=0.5, *, out=None):
    return _b.hardshrink(input, lambd) if out is None else aten.hardshrink.out(input, lambd, out=out)


def prelu(input, weight):
    return _b.prelu(input, weight)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU; in eval mode (training=False) a leaky_relu with slope (lower + upper) / 2."""
    if training:
        raise NotImplementedError("rrelu: training=True (random negative slopes) is not implemented")
    return leaky_relu(input, (lower + upper) / 2, inplace)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


def _torch_rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rrelu(input, lower, upper, training)


def _torch_rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    return rrelu(input, lower, upper, training, inplace=True)


def softsign(input):
    """input / (1 + |input|) (a Python composite in PyTorch too)."""
    return input / (input.abs() + 1)


def tanhshrink(input):
    """input - tanh(input) (a Python composite in PyTorch too)."""
    return input - input.tanh()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


PYTHON_FUNCTIONS = {F: {
    "relu": relu, "relu_": relu_, "relu6": relu6, "leaky_relu": leaky_relu, "leaky_relu_": leaky_relu_,
    "elu": elu, "elu_": elu_, "selu": selu, "selu_": selu_, "celu": celu, "celu_": celu_, "silu": silu,
    "mish": mish, "hardtanh": hardtanh, "hardtanh_": hardtanh_, "hardsigmoid": hardsigmoid,
    "hardswish": hardswish, "threshold": threshold, "threshold_": threshold_, "hardshrink": hardshrink,
    "prelu": prelu, "softsign": softsign, "tanhshrink": tanhshrink, "sigmoid": sigmoid, "tanh": tanh,
    "rrelu": rrelu, "rrelu_": rrelu_,
}, "": {"rrelu": _torch_rrelu, "rrelu_": _torch_rrelu_}}
