"""Scriptable ``forward`` methods for ember's own nn modules.

Several ember.nn classes get their ``forward`` from a table (activations are built from lambdas,
dropout and pooling call ``type(self)._fn``, conv dispatches through a dict): perfectly good
eager Python, but outside the script language. Rather than bend those files, this table gives
each such class a plain forward written in the language (the same computation, reading the
same attributes), which ``ember.jit.script`` compiles in place of the class's own forward.
Sequential's forward iterates over ``self``: it is built directly as IR (``sequential_forward``).
Any class may also define ``__script_forward__(self, ...)``: script compiles it instead of forward.

Lookups walk the class's MRO, so subclasses (``NonDynamicallyQuantizableLinear``) inherit an
entry unless they define their own forward.
"""
from __future__ import annotations

import ember
from ember.nn import functional as F
from ember.nn.modules import activation as _act, container as _cont, conv as _conv, dropout as _drop
from ember.nn.modules import flatten as _flat, linear as _lin, normalization as _norm, pooling as _pool
from ember.nn.modules import sparse as _sparse


def _identity(self, input):
    return input


def _linear(self, input):
    return F.linear(input, self.weight, self.bias)


def _bilinear(self, input1, input2):
    return F.bilinear(input1, input2, self.weight, self.bias)


def _relu(self, input):
    return F.relu(input, self.inplace)


def _tanh(self, input):
    return ember.tanh(input)


def _sigmoid(self, input):
    return ember.sigmoid(input)


def _gelu(self, input):
    return F.gelu(input, approximate=self.approximate)


def _silu(self, input):
    return F.silu(input, self.inplace)


def _leaky_relu(self, input):
    return F.leaky_relu(input, self.negative_slope, self.inplace)


def _elu(self, input):
    return F.elu(input, self.alpha, self.inplace)


def _hardtanh(self, input):
    return F.hardtanh(input, self.min_val, self.max_val, self.inplace)


def _softplus(self, input):
    return F.softplus(input, self.beta, self.threshold)


def _softmax(self, input):
    return F.softmax(input, self.dim)


def _log_softmax(self, input):
    return F.log_softmax(input, self.dim)


def _threshold(self, input):
    return F.threshold(input, self.threshold, self.value, self.inplace)


def _rrelu(self, input):
    return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)


def _hardsigmoid(self, input):
    return F.hardsigmoid(input, self.inplace)


def _hardswish(self, input):
    return F.hardswish(input, self.inplace)


def _mish(self, input):
    return F.mish(input, self.inplace)


def _celu(self, input):
    return F.celu(input, self.alpha, self.inplace)


def _selu(self, input):
    return F.selu(input, self.inplace)


def _glu(self, input):
    return F.glu(input, self.dim)


def _hardshrink(self, input):
    return F.hardshrink(input, self.lambd)


def _softshrink(self, input):
    return F.softshrink(input, self.lambd)


def _logsigmoid(self, input):
    return F.logsigmoid(input)


def _softsign(self, input):
    return F.softsign(input)


def _tanhshrink(self, input):
    return F.tanhshrink(input)


def _softmin(self, input):
    return F.softmin(input, self.dim)


def _dropout(self, input):
    return F.dropout(input, self.p, self.training, self.inplace)


def _dropout1d(self, input):
    return F.dropout1d(input, self.p, self.training, self.inplace)


def _dropout2d(self, input):
    return F.dropout2d(input, self.p, self.training, self.inplace)


def _dropout3d(self, input):
    return F.dropout3d(input, self.p, self.training, self.inplace)


def _alpha_dropout(self, input):
    return F.alpha_dropout(input, self.p, self.training, self.inplace)


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


def _conv1d(self, input):
    return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


def _conv2d(self, input):
    return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


def _layer_norm(self, input):
    return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


def _embedding(self, input):
    return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                       self.scale_grad_by_freq, self.sparse)


def _flatten(self, input):
    return input.flatten(self.start_dim, self.end_dim)


def _max_pool1d(self, input):
    return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


def _avg_pool1d(self, input):
    return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                        self.count_include_pad)


def _adaptive_avg_pool1d(self, input):
    return F.adaptive_avg_pool1d(input, self.output_size)


def _adaptive_avg_pool2d(self, input):
    return F.adaptive_avg_pool2d(input, self.output_size)


def _max_pool2d(self, input):
    return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


def _avg_pool2d(self, input):
    return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                        self.count_include_pad, self.divisor_override)


SCRIPT_FORWARDS = {
    _lin.Identity: _identity, _lin.Linear: _linear, _lin.Bilinear: _bilinear,
    _act.ReLU: _relu, _act.Tanh: _tanh, _act.Sigmoid: _sigmoid, _act.GELU: _gelu, _act.SiLU: _silu,
    _act.LeakyReLU: _leaky_relu, _act.ELU: _elu, _act.Hardtanh: _hardtanh, _act.Softplus: _softplus,
    _act.Softmax: _softmax, _act.LogSoftmax: _log_softmax,
    _act.Threshold: _threshold, _act.RReLU: _rrelu, _act.Hardsigmoid: _hardsigmoid, _act.Hardswish: _hardswish,
    _act.Mish: _mish, _act.CELU: _celu, _act.SELU: _selu, _act.GLU: _glu, _act.Hardshrink: _hardshrink,
    _act.Softshrink: _softshrink, _act.LogSigmoid: _logsigmoid, _act.Softsign: _softsign,
    _act.Tanhshrink: _tanhshrink, _act.Softmin: _softmin,
    _drop.Dropout: _dropout, _drop.Dropout1d: _dropout1d, _drop.Dropout2d: _dropout2d,
    _drop.Dropout3d: _dropout3d, _drop.AlphaDropout: _alpha_dropout,
    _norm._BatchNorm: _batch_norm,
    _pool.MaxPool1d: _max_pool1d, _pool.AvgPool1d: _avg_pool1d,
    _pool.AdaptiveAvgPool1d: _adaptive_avg_pool1d, _pool.AdaptiveAvgPool2d: _adaptive_avg_pool2d,
    _conv.Conv1d: _conv1d, _conv.Conv2d: _conv2d,
    _norm.LayerNorm: _layer_norm, _sparse.Embedding: _embedding, _flat.Flatten: _flatten,
    _pool.MaxPool2d: _max_pool2d, _pool.AvgPool2d: _avg_pool2d,
}

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
            return SCRIPT_FORWARDS[klass]
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
        from ember.jit.ir.types import NO_DEFAULT, Argument, NoneType, Signature, TensorType, from_annotation
        globals_ = getattr(fn, "__globals__", None)

        def type_of(ann):
            return TensorType() if ann is inspect.Parameter.empty else from_annotation(ann, globals_)

        sig = inspect.signature(fn)
        graph = ir.new_graph()
        args = []
        for i, p in enumerate(sig.parameters.values()):
            t = info.type if i == 0 else type_of(p.annotation)
            node = graph.placeholder(p.name, type_expr=t)
            node.meta["jit_name"] = p.name
            default = NO_DEFAULT if i == 0 or p.default is inspect.Parameter.empty else p.default
            args.append(Argument(p.name, t, default))
        ret = type_of(sig.return_annotation)
        message = f"The method '{fn.__name__}' was marked as @ember.jit.unused and cannot be called from script"
        ir.call(graph, prim.RaiseException, (message, "RuntimeError"), type_=NoneType())
        value = ir.call(graph, prim.Uninitialized, (), type_=ret)
        graph.output(value)
        return graph, Signature(fn.__name__, tuple(args), ret)
    return build


def traced_forward(info):
    """Build the forward of an ``ember.jit.trace``d module (mixing tracing and scripting, as torch
    allows): its recorded graph, with ``get_attr "a.b"`` as a ``prim::GetAttr`` chain on self.

    Returns (graph, Signature) like ``compile_function``; every value is typed Tensor except where
    the traced node carries a script type."""
    from ember.fx.node import map_arg
    from ember.jit import ir
    from ember.jit.ir import prim
    from ember.jit.ir.types import Argument, ScriptType, Signature, TensorType, TupleType
    source = info.module.graph_module.graph
    graph = ir.new_graph()
    self_value = graph.placeholder("self", type_expr=info.type)
    self_value.meta["jit_name"] = "self"
    env, args = {}, [Argument("self", info.type)]

    def typed(node):
        t = getattr(node, "type", None)
        return t if isinstance(t, ScriptType) else TensorType()

    for node in source.nodes:
        if node.op == "placeholder":
            env[node] = graph.placeholder(node.name, type_expr=typed(node))
            env[node].meta["jit_name"] = node.name
            args.append(Argument(node.name, typed(node)))
        elif node.op == "get_attr":
            value, owner = self_value, info
            for part in str(node.target).split("."):
                attr = owner.attribute(part) if owner is not None else None
                t = attr.type if attr is not None and attr.type is not None else TensorType()
                value = ir.call(graph, prim.GetAttr, (value, part), type_=t)
                owner = attr.module_info if attr is not None else None
            env[node] = value
        elif node.op in ("call_function", "call_method"):
            new = ir.call(graph, node.target, map_arg(node.args, env.__getitem__),
                          map_arg(node.kwargs, env.__getitem__), type_=typed(node))
            new.meta.update({k: v for k, v in node.meta.items() if k in ("loc",)})
            env[node] = new
        elif node.op == "output":
            result = map_arg(node.args[0], env.__getitem__)
            if isinstance(result, (tuple, list)):
                result = ir.call(graph, prim.TupleConstruct, tuple(result),
                                 type_=TupleType(tuple(r.type for r in result)))
            graph.output(result)
            return graph, Signature("forward", tuple(args), result.type)
        else:
            raise NotImplementedError(f"scripting a traced module: {node.op} nodes are not supported")
    raise RuntimeError("scripting a traced module: its graph has no output")
