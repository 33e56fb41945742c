"""Scriptable ``forward`` methods for ember's own nn modules.

Several ember.nn classes get their ``forward`` from a table (activations are built from lambdas,
dropout and pooling call ``type(self)._fn``, conv dispatches through a dict): perfectly good
eager Python, but outside the script language. Rather than bend those files, this table gives
each such class a plain forward written in the language (the same computation, reading the
same attributes; mostly one expression), which ``ember.jit.script`` compiles in place of the
class's own forward. Sequential's forward iterates over ``self``: it is built directly as IR (``sequential_forward``).
Any class may also define ``__script_forward__(self, ...)``: script compiles it instead of forward.

Lookups walk the class's MRO, so subclasses (``NonDynamicallyQuantizableLinear``) inherit an
entry unless they define their own forward.
"""
from __future__ import annotations

import functools

import ember
from ember.fx.graph_module import _exec_forward
from ember.nn import functional as F
from ember.nn.modules import activation as _act, container as _cont, conv as _conv, dropout as _drop
from ember.nn.modules import flatten as _flat, linear as _lin, normalization as _norm, pooling as _pool
from ember.nn.modules import sparse as _sparse


def _bilinear(self, input1, input2):
    return F.bilinear(input1, input2, self.weight, self.bias)


def _batch_norm(self, input):
    # _BatchNorm.forward, minus the input-rank check (a Python-side error message)
    factor = 0.0
    if self.momentum is not None:
        factor = self.momentum
    if self.training and self.track_running_stats:
        if self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
    bn_training = self.training
    if not self.training:
        bn_training = self.running_mean is None and self.running_var is None
    if not self.training or self.track_running_stats:
        return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias, bn_training,
                            factor, self.eps)
    return F.batch_norm(input, None, None, self.weight, self.bias, bn_training, factor, self.eps)


# class -> its forward: the expression ``forward(self, input)`` returns, or a function for the few
# that need more than one expression or other parameters
SCRIPT_FORWARDS = {
    _lin.Identity: "input",
    _lin.Linear: "F.linear(input, self.weight, self.bias)",
    _act.ReLU: "F.relu(input, self.inplace)",
    _act.Tanh: "ember.tanh(input)",
    _act.Sigmoid: "ember.sigmoid(input)",
    _act.GELU: "F.gelu(input, approximate=self.approximate)",
    _act.SiLU: "F.silu(input, self.inplace)",
    _act.LeakyReLU: "F.leaky_relu(input, self.negative_slope, self.inplace)",
    _act.ELU: "F.elu(input, self.alpha, self.inplace)",
    _act.Hardtanh: "F.hardtanh(input, self.min_val, self.max_val, self.inplace)",
    _act.Softplus: "F.softplus(input, self.beta, self.threshold)",
    _act.Softmax: "F.softmax(input, self.dim)",
    _act.LogSoftmax: "F.log_softmax(input, self.dim)",
    _act.Threshold: "F.threshold(input, self.threshold, self.value, self.inplace)",
    _act.RReLU: "F.rrelu(input, self.lower, self.upper, self.training, self.inplace)",
    _act.Hardsigmoid: "F.hardsigmoid(input, self.inplace)",
    _act.Hardswish: "F.hardswish(input, self.inplace)",
    _act.Mish: "F.mish(input, self.inplace)",
    _act.CELU: "F.celu(input, self.alpha, self.inplace)",
    _act.SELU: "F.selu(input, self.inplace)",
    _act.GLU: "F.glu(input, self.dim)",
    _act.Hardshrink: "F.hardshrink(input, self.lambd)",
    _act.Softshrink: "F.softshrink(input, self.lambd)",
    _act.LogSigmoid: "F.logsigmoid(input)",
    _act.Softsign: "F.softsign(input)",
    _act.Tanhshrink: "F.tanhshrink(input)",
    _act.Softmin: "F.softmin(input, self.dim)",
    _drop.Dropout: "F.dropout(input, self.p, self.training, self.inplace)",
    _drop.Dropout1d: "F.dropout1d(input, self.p, self.training, self.inplace)",
    _drop.Dropout2d: "F.dropout2d(input, self.p, self.training, self.inplace)",
    _drop.Dropout3d: "F.dropout3d(input, self.p, self.training, self.inplace)",
    _drop.AlphaDropout: "F.alpha_dropout(input, self.p, self.training, self.inplace)",
    _conv.Conv1d: "F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)",
    _conv.Conv2d: "F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)",
    _pool.MaxPool1d: "F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, "
                     "self.ceil_mode)",
    _pool.MaxPool2d: "F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, "
                     "self.ceil_mode)",
    _pool.AvgPool1d: "F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, "
                     "self.count_include_pad)",
    _pool.AvgPool2d: "F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode, "
                     "self.count_include_pad, self.divisor_override)",
    _pool.AdaptiveAvgPool1d: "F.adaptive_avg_pool1d(input, self.output_size)",
    _pool.AdaptiveAvgPool2d: "F.adaptive_avg_pool2d(input, self.output_size)",
    _norm.LayerNorm: "F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)",
    _sparse.Embedding: "F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type, "
                       "self.scale_grad_by_freq, self.sparse)",
    _flat.Flatten: "input.flatten(self.start_dim, self.end_dim)",
    _lin.Bilinear: _bilinear,
    _norm._BatchNorm: _batch_norm,
}


@functools.cache
def _forward_of(klass):
    """The function script compiles for `klass`'s table entry (a one-expression entry becomes
    Python source, kept in linecache so errors quote it)."""
    entry = SCRIPT_FORWARDS[klass]
    if callable(entry):
        return entry
    return _exec_forward(f"def forward(self, input):\n    return {entry}\n", {"F": F, "ember": ember})


# Classes whose forward is known to lie outside the language (and has no entry above): scripting
# one raises a FrontendError naming the class instead of a confusing error from its source.
UNSCRIPTABLE = (_cont.ModuleDict, _cont.ParameterList, _cont.ParameterDict)


def script_forward_for(cls):
    """The forward to compile for `cls`: a ``__script_forward__`` method the class defines (a
    scriptable stand-in for a forward that is not), else its table entry (nearest in the MRO,
    unless a subclass below it defines its own forward), else None (compile its own forward)."""
    for klass in cls.__mro__:
        hook = vars(klass).get("__script_forward__")
        if hook is not None:
            return hook
        if klass in SCRIPT_FORWARDS:
            return _forward_of(klass)
        if "forward" in klass.__dict__:
            return None
    return None


def needs_check(cls, fn) -> str | None:
    """Why `cls`'s forward `fn` cannot be scripted as written (None when it may be)."""
    if issubclass(cls, UNSCRIPTABLE):
        return "its forward is not supported in script"
    if getattr(fn, "__name__", "") == "<lambda>":
        return "its forward is built from a lambda (add the class to ember/jit/frontend/module_builtins.py)"
    return None


def sequential_forward(info):
    """Build ``Sequential.forward`` as IR: each child's forward called in turn on the running value.

    Returns (graph, Signature) like ``compile_function``."""
    from ember.jit import ir
    from ember.jit.ir import prim
    from ember.jit.ir.types import Argument, ModuleType, Signature, TensorType
    graph = ir.new_graph()
    self_value = graph.placeholder("self", type_expr=ModuleType(info.qualified_name))
    self_value.meta["jit_name"] = "self"
    names = list(info.module._modules)
    first = info.attribute(names[0]).module_info.method("forward") if names else None
    in_type = first.schema.arguments[1].type if first is not None and len(first.schema.arguments) > 1 \
        else TensorType()
    value = graph.placeholder("input", type_expr=in_type)
    value.meta["jit_name"] = "input"
    for name in names:
        attr = info.attribute(name)
        child = ir.call(graph, prim.GetAttr, (self_value, name), type_=attr.type)
        callee = attr.module_info.method("forward")
        if len(callee.schema.arguments) != 2:
            raise RuntimeError(f"Sequential: child '{name}' ({attr.module_info.qualified_name}) must take exactly "
                               f"one input to be called in a Sequential, its forward is {callee.schema}")
        value = ir.call(graph, prim.CallMethod, (child, "forward", value), type_=callee.schema.return_type)
        value.meta["callee"] = callee
        value.meta["jit_name"] = "input"
    graph.output(value)
    sig = Signature("forward", (Argument("self", self_value.type), Argument("input", in_type)), value.type)
    return graph, sig


def unused_method_builder(fn):
    """A builder for an ``@ember.jit.unused`` method: a graph with the method's signature (types
    from its annotations, Tensor by default) whose body raises, as torch compiles unused methods.
    The module still scripts and saves; only calling the method fails."""
    import inspect

    def build(info):
        from ember.jit import ir
        from ember.jit.ir import prim
        from ember.jit.ir.types import NO_DEFAULT, Argument, NoneType, Signature

        from .builtins import annotated_type
        sig = inspect.signature(fn)
        graph = ir.new_graph()
        args = []
        for i, p in enumerate(sig.parameters.values()):
            t = info.type if i == 0 else annotated_type(p.annotation, fn)
            node = graph.placeholder(p.name, type_expr=t)
            node.meta["jit_name"] = p.name
            default = NO_DEFAULT if i == 0 or p.default is inspect.Parameter.empty else p.default
            args.append(Argument(p.name, t, default))
        ret = annotated_type(sig.return_annotation, fn)
        message = f"The method '{fn.__name__}' was marked as @ember.jit.unused and cannot be called from script"
        ir.call(graph, prim.RaiseException, (message, "RuntimeError"), type_=NoneType())
        value = ir.call(graph, prim.Uninitialized, (), type_=ret)
        graph.output(value)
        return graph, Signature(fn.__name__, tuple(args), ret)
    return build


def traced_forward(info):
    """Build the forward of an ``ember.jit.trace``d module (mixing tracing and scripting, as torch
    allows): its recorded graph in the script form (``ember.jit._trace.script_form``).

    Returns (graph, Signature) like ``compile_function``."""
    from ember.jit._trace import script_form
    return script_form(info.module.graph_module, info.module, info.type)
