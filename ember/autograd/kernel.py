"""The Autograd dispatch key: its kernel records a graph node and redispatches below itself.

For an op with a derivative formula (``ember/ops/derivatives/*.py``), the kernel runs the op
with Autograd excluded (so ops called inside kernels record nothing), then — if any tensor
input requires grad — creates a `FormulaNode` whose name is PyTorch's (``AddBackward0``),
saves exactly the inputs the formula names (checked against their version counters later),
and marks the outputs as requiring grad with that node as their ``grad_fn``.

A formula is a function whose parameter names say what it needs:
  ``grad`` / ``grads``            the gradient of output 0 / of every output
  ``needs_grad``                  per Tensor argument, whether it wants a gradient (skip work)
  an argument name (``self``)     that input (tensors are saved; other values kept as is)
  ``<arg>_shape``                 the shape a tensor input had
  ``<arg>_dtype_device``          the (device, dtype) a tensor input had
  ``result`` / ``results``        output 0 / every output (saved without a reference cycle)
It returns one gradient per Tensor argument of the schema (a list for ``Tensor[]``; None
where there is none). Gradients are summed back to the input's shape when the op broadcast,
and cast to the input's dtype.

Ops with neither a formula nor a composite kernel get the global fallback: outputs that are
not floating point need no gradient; otherwise it raises NotImplementedError naming the op,
rather than ever returning a tensor with a silently missing gradient.
"""
from __future__ import annotations

import inspect

from .._core.dispatch import (DispatchKey, AUTOGRAD_BIT, CPU_BIT, CUDA_BIT, _ExcludeDispatchKeyGuard, register_fallback,
                              tls)
from .._core.dtype import _FROM_NP
from .._core.tensor import Tensor
from .graph import AutogradMeta, Node, SavedTensor, gradient_edge, next_sequence_nr

_EXCLUDE = DispatchKey.Autograd
_CUDA_KEY = int(DispatchKey.CUDA)


class Formula:
    """A derivative formula and what it asks for (read once from its parameter names)."""

    def __init__(self, fn):
        self.fn = fn
        self.params = tuple(inspect.signature(fn).parameters)
        self.param_set = frozenset(self.params)
        # what FormulaNode.apply passes besides the recorded values, read once here
        self.wants_grad, self.wants_grads = "grad" in self.param_set, "grads" in self.param_set
        self.wants_needs_grad = "needs_grad" in self.param_set


def _camel(name: str) -> str:
    base = name.split("::")[-1].split(".")[0]
    return "".join(p[:1].upper() + p[1:] for p in base.strip("_").split("_")) or "Unknown"


# PyTorch numbers a node by the order of its op's overloads in derivatives.yaml, and names a
# few after the op they decompose to; everything not listed is ``<CamelName>Backward0``.
# In-place overloads share the functional name unless listed (``t_`` -> TBackward1).
NODE_NAMES = {
    "add.Scalar": "AddBackward1", "sub.Scalar": "SubBackward1", "mul.Scalar": "MulBackward1",
    "rsub.Scalar": "RsubBackward1", "div.Scalar": "DivBackward1", "div.Tensor_mode": "DivBackward2",
    "pow.Tensor_Tensor": "PowBackward1", "pow.Scalar": "PowBackward2",
    "max": "MaxBackward1", "max.dim": "MaxBackward0", "min": "MinBackward1", "min.dim": "MinBackward0",
    "median": "MedianBackward0", "median.dim": "MedianBackward1", "nanmedian": "NanmedianBackward0",
    "nanmedian.dim": "NanmedianBackward1", "mean.dim": "MeanBackward1", "sum.dim_IntList": "SumBackward1",
    "prod.dim_int": "ProdBackward1", "squeeze.dim": "SqueezeBackward1", "squeeze.dims": "SqueezeBackward2",
    "squeeze_": "SqueezeBackward3", "squeeze_.dim": "SqueezeBackward4", "squeeze_.dims": "SqueezeBackward5",
    "clamp": "ClampBackward1", "clamp.Tensor": "ClampBackward0", "clamp_min.Tensor": "ClampMinBackward1",
    "clamp_max.Tensor": "ClampMaxBackward1", "transpose_": "TransposeBackward1", "t_": "TBackward1",
    "unsqueeze_": "UnsqueezeBackward1", "fill.Tensor": "FillBackward1", "fill_.Tensor": "FillBackward3",
    "fill_.Scalar": "FillBackward2", "masked_fill.Tensor": "MaskedFillBackward1",
    "masked_fill_.Tensor": "MaskedFillBackward1", "remainder.Tensor": "RemainderBackward1",
    "fmod.Tensor": "FmodBackward1", "lerp.Tensor": "LerpBackward1", "threshold_": "ThresholdBackward1",
    "leaky_relu_": "LeakyReluBackward1", "elu_": "EluBackward1", "celu_": "CeluBackward1",
    "round.decimals": "RoundBackward1", "scatter.value": "ScatterBackward1", "sort.stable": "SortBackward1",
    "xlogy.Scalar_Self": "XlogyBackward1", "xlogy.Scalar_Other": "XlogyBackward2", "copysign.Scalar": "CopysignBackward1",
    "index_fill.int_Tensor": "IndexFillBackward1", "norm.ScalarOpt_dim": "LinalgVectorNormBackward0",
    "norm.Scalar": "LinalgVectorNormBackward0", "div.Scalar_mode": "DivBackward2",
    "_softmax": "SoftmaxBackward0", "softmax.int": "SoftmaxBackward0", "_log_softmax": "LogSoftmaxBackward0",
    "log_softmax.int": "LogSoftmaxBackward0", "reshape": "ViewBackward0", "_unsafe_view": "UnsafeViewBackward0",
    "split.Tensor": "SplitBackward0", "split_with_sizes": "SplitWithSizesBackward0", "unbind.int": "UnbindBackward0",
    "select.int": "SelectBackward0", "slice.Tensor": "SliceBackward0", "transpose.int": "TransposeBackward0",
    "var.correction": "VarBackward0", "std.correction": "StdBackward0", "native_layer_norm": "NativeLayerNormBackward0",
    "acosh_": "AcoshBackward1", "asinh_": "AsinhBackward1", "atanh_": "AtanhBackward1",
}



def _matmul_name(args):
    """PyTorch's matmul decomposes; its grad_fn is named after the op it lowers to."""
    a, b = args[0].ndim, args[1].ndim
    if a <= 2 and b <= 2:
        return {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (1, 2): "SqueezeBackward4"}.get((a, b), "MmBackward0")
    return "CloneBackward0" if a == 2 else "UnsafeViewBackward0"


# Ops whose PyTorch node name depends on the arguments of the call.
NODE_NAME_BY_ARGS = {
    "rsub.Tensor": lambda args: "RsubBackward1" if not isinstance(args[1], Tensor) or args[1]._wrapped_number
    else None,   # `1 - x` is rsub.Scalar in PyTorch
    "matmul": _matmul_name,
    "pow.Tensor_Tensor": lambda args: "PowBackward0" if not isinstance(args[1], Tensor) or args[1]._wrapped_number
    else "PowBackward2" if not isinstance(args[0], Tensor) or args[0]._wrapped_number else None,
}

_NODE_TYPES: dict = {}


def node_name(op_name: str) -> str:
    """The class name PyTorch gives the grad_fn of `op_name` (``aten::add.Tensor`` -> AddBackward0)."""
    qual = op_name.split("::")[-1]
    return NODE_NAMES.get(qual) or NODE_NAMES.get(qual.replace("_.", ".").rstrip("_") if "_" in qual else qual) \
        or _camel(qual) + "Backward0"


def _node_type(op, formula, fixed_slots, has_list, name: str = None):
    """The node class of `op` (one per op, formula and PyTorch node name: batch_norm has two formulas).
    What every node of the op shares (its formula, op, argument slots) lives on the class: a
    recorded op stores only its own values."""
    key = (op.name, name, formula)
    cls = _NODE_TYPES.get(key)
    if cls is None:
        body = {"formula": formula, "op": op, "slots": fixed_slots, "has_list": has_list}
        if not has_list and not any(r.is_list for r in op.schema.returns):
            body["apply"] = _generating_apply
        cls = _NODE_TYPES[key] = type(name or node_name(op.name), (FormulaNode,), body)
    return cls


def _generating_apply(self, grads):
    """A node class's first apply: generate its straight-line apply (kernel_codegen.generate_apply;
    at import it would cost ~0.1 ms for each of hundreds of classes, most never run), install it on
    the class, and run it."""
    from .kernel_codegen import generate_apply
    cls = type(self)
    helpers = {"fix_grads": _fix_grads, "unpack_saved": _unpack_saved, "sum_to": sum_to, "FROM_NP": _FROM_NP,
               "results": _results}
    cls.apply = generate_apply(cls, cls.formula, len(cls.op.schema.returns), FormulaNode.apply, helpers) \
        or FormulaNode.apply
    return cls.apply(self, grads)


class FormulaNode(Node):
    """A backward node that evaluates a derivative formula.

    What the formula reads is gathered when the op is recorded (`make_kernel`): ``kw`` holds its
    plain arguments by parameter name (non-tensor arguments, ``<arg>_shape``, ``<arg>_dtype_device``),
    ``saved`` the tensors it reads (SavedTensor, or a list of them for ``Tensor[]``; also ``result`` /
    ``results``), unpacked and version-checked when the node runs.

    Class attributes (`_node_type`, one class per op): ``formula``, ``op``, ``slots`` (per tensor
    arg: (name, is_list, n_edges); a node of an op with a Tensor[] argument sets its own, since
    the list's length is the call's) and ``has_list`` (whether a tensor arg is a Tensor[], else
    one edge per slot)."""

    def __init__(self, kw, saved, dtypes, out_meta, next_edges):
        self.next_functions = next_edges    # (node, input_nr) per input, (None, 0) where none
        self.sequence_nr = next_sequence_nr()
        self.kw = kw              # parameter name -> plain value
        self.saved = saved        # parameter name -> SavedTensor (or list of them)
        self.dtypes = dtypes      # edge index -> (shape, dtype) of the input it feeds, None where no gradient
        self.out_meta = out_meta  # per output: (shape, dtype, device) or None (not differentiable)

    def _unpack(self, name):
        return _unpack_saved(self.saved[name], type(self).__name__)

    def apply(self, grads):
        out_meta = self.out_meta
        grads = _fix_grads(grads, out_meta)
        formula = self.formula
        params = formula.param_set
        kwargs = self.kw.copy()
        if formula.wants_grad:
            kwargs["grad"] = grads[0]
        if formula.wants_grads:
            kwargs["grads"] = tuple(grads[:len(out_meta)])
        if formula.wants_needs_grad:
            kwargs["needs_grad"] = self._needs_grad()
        node_name = type(self).__name__
        for name, s in self.saved.items():
            if name in params:
                if s.__class__ is SavedTensor:     # (_unpack_saved's common case, without its frame)
                    kwargs[name] = s.unpack(node_name)
                else:
                    kwargs[name] = _unpack_saved(s, node_name)
        if len(kwargs) != len(formula.params):
            missing = next(p for p in formula.params if p not in kwargs)
            raise RuntimeError(f"derivative of {self.op.name}: unknown formula parameter '{missing}'")
        return _results(self, formula.fn(**kwargs))

    def _needs_grad(self):
        """Per Tensor argument: does any of its elements want a gradient (an edge)?"""
        if not self.has_list:      # one edge per argument
            return tuple([e[0] is not None for e in self.next_functions])   # an edge is (node, slot)
        out, i = [], 0
        for _, _, n in self.slots:
            out.append(any(e[0] is not None for e in self.next_functions[i:i + n]))   # an edge is (node, slot)
            i += n
        return tuple(out)

    def release(self):
        for s in self.saved.values():
            if s.__class__ is list:
                for x in s:
                    if x is not None:
                        x.release()
            elif s is not None:
                s.release()


def _fix_grads(grads, out_meta):
    """The output gradients a formula sees: `grads`, or with zeros where one is missing."""
    if len(grads) < len(out_meta):
        return _materialize(grads, out_meta)
    for g in grads:
        if g is None:
            return _materialize(grads, out_meta)
    return grads


def _results(node, out):
    """The input gradients of `node` from what its formula returned: one per edge, summed back to
    the input's shape where the op broadcast, cast to its dtype, None where it needs none."""
    slots = node.slots
    if not isinstance(out, (tuple, list)) or (len(slots) == 1 and slots[0][1]):
        out = (out,)
    if not node.has_list:      # one gradient per slot
        flat = out[:len(slots)]
    else:
        flat = []
        for (name, is_list, n), g in zip(slots, out):
            if is_list:
                flat.extend(list(g) if g is not None else [None] * n)
            else:
                flat.append(g)
    result = []
    for meta, g in zip(node.dtypes, flat):
        if meta is None:  # the input needs no gradient (PyTorch leaves it undefined)
            g = None
        elif g is not None:
            shape, dtype = meta     # (the input's array shape: a tuple, compared without making a Size)
            if g._data.shape != shape:
                g = sum_to(g, shape)
            if _FROM_NP[g._data.dtype] is not dtype:     # (g.dtype without its property)
                g = g.to(dtype)
        result.append(g)
    return result


def _unpack_saved(s, node_name):
    """A saved value (SavedTensor, a list of them for Tensor[], or None), unpacked for `node_name`."""
    if s.__class__ is list:
        return [x.unpack(node_name) if x is not None else None for x in s]
    return None if s is None else s.unpack(node_name)


def _materialize(grads, out_meta):
    """The output gradients with zeros where one is missing (None) for a differentiable output."""
    from .. import zeros
    full = []
    for i, meta in enumerate(out_meta):
        g = grads[i] if i < len(grads) else None
        if g is None and meta is not None:
            g = zeros(meta[0], dtype=meta[1], device=meta[2])
        full.append(g)
    return full


def sum_to(g, shape):
    """Sum a broadcast gradient back to `shape`."""
    shape = tuple(shape)
    if tuple(g.shape) == shape:
        return g
    lead = g.ndim - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    if dims:
        g = g.sum(dims, keepdim=True)
    if lead:
        g = g.reshape(shape) if g.numel() == _numel(shape) else g.sum(list(range(lead)))
    return g.reshape(shape) if tuple(g.shape) != shape else g


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _requires_grad(x) -> bool:
    return isinstance(x, Tensor) and bool(x._keys & AUTOGRAD_BIT)


def _differentiable(t) -> bool:
    return isinstance(t, Tensor) and t.dtype.category >= 2  # floating or complex


def _out_meta(t):
    """(shape, dtype, device) of a differentiable output, None for any other (its dtype read once)."""
    if not isinstance(t, Tensor):
        return None
    dtype = t.dtype
    return (t._data.shape, dtype, t.device) if dtype.category >= 2 else None


def _any_requires_grad(args) -> bool:
    for a in args:
        if _requires_grad(a):
            return True
        if isinstance(a, (list, tuple)):
            for x in a:
                if _requires_grad(x):
                    return True
    return False


def _check_inplace(op, target, args=()):
    if not target._keys & AUTOGRAD_BIT and getattr(target._data, "base", None) is not None and \
            any(_requires_grad(a) or (isinstance(a, (list, tuple)) and any(_requires_grad(x) for x in a))
                for a in args[1:]):
        # Writing a value that requires grad into a view (z[0] = x * 2): the base tensor would
        # have to take on the history (PyTorch's CopySlices); refuse rather than lose the gradient.
        raise NotImplementedError(f"{op.schema.name}(): writing a tensor that requires grad into a view of a tensor "
                                  "that does not is not supported by ember's autograd yet; write into a tensor "
                                  "that owns its memory (e.g. build the result with ember.stack/cat)")
    meta = target._autograd
    if target._keys & AUTOGRAD_BIT and (meta is None or meta.grad_fn is None):
        raise RuntimeError(f"{op.schema.name}(): a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if meta is not None and meta.view_base is not None and _requires_grad(meta.view_base):
        base = meta.view_base
        while base._autograd is not None and base._autograd.view_base is not None:
            base = base._autograd.view_base
        if base._autograd is None or base._autograd.grad_fn is None:
            raise RuntimeError(f"{op.schema.name}(): a view of a leaf Variable that requires grad is being used in "
                               "an in-place operation.")
        raise NotImplementedError(f"{op.schema.name}(): in-place operations on a view of a tensor that requires "
                                  "grad are not supported by ember's autograd yet")


_NO_EDGE = (None, 0)


def make_kernel(op, formula: Formula):
    """The Autograd-key kernel of `op` for `formula` (see module docstring).

    What a call records is planned here, once per op, from the schema and the formula's parameter
    names: which arguments to save, which to keep as values, which shapes and devices the formula
    reads; a call only follows the plan."""
    schema = op.schema
    arguments = schema.arguments
    inplace = schema.is_inplace
    is_out = schema.is_out
    is_view = bool(schema.returns) and schema.returns[0].alias is not None and not schema.returns[0].is_write
    wants = formula.param_set
    name_by_args = NODE_NAME_BY_ARGS.get(op.name.split("::")[-1])
    tensor_args = tuple((i, a.is_list) for i, a in enumerate(arguments) if a.type == "Tensor")
    has_list = any(is_list for _, is_list in tensor_args)
    fixed_slots = tuple((a.name, a.is_list, 1) for a in arguments if a.type == "Tensor")
    node_type = _node_type(op, formula, fixed_slots, has_list)
    saves = tuple((i, a.name, a.is_list) for i, a in enumerate(arguments) if a.type == "Tensor" and a.name in wants)
    values = tuple((i, a.name) for i, a in enumerate(arguments) if a.type != "Tensor" and a.name in wants)
    shapes = tuple((i, a.name + "_shape", a.is_list) for i, a in enumerate(arguments)
                   if a.type == "Tensor" and a.name + "_shape" in wants)
    devices = tuple((i, a.name + "_dtype_device") for i, a in enumerate(arguments) if a.name + "_dtype_device" in wants)
    wants_result = "result" in wants or "results" in wants
    redispatch = op.redispatch
    table = op.table
    # Where a tensor can come: the binding converts every other argument (numbers, int lists ...), so
    # a call with all its arguments is checked at these positions only; a shorter one (a caller past
    # the binding) everywhere.
    single_positions = None if has_list else tuple(i for i, _ in tensor_args)
    n_args = len(arguments)
    # the common shape of op gets this plan written out as straight-line code on its first full call
    generate = [_generated_shape(schema, has_list)]

    def kernel(op_, keys, *args):
        if generate[0] and len(args) == n_args:
            generate[0] = False
            generated = _swap_in_generated(op, kernel, dict(
                n_args=n_args, tensor_args=tensor_args, values=values, saves=saves, shapes=shapes, devices=devices,
                wants_result=wants_result, is_view=is_view, node_type=node_type, name_by_args=name_by_args,
                special_type=lambda special: _node_type(op, formula, fixed_slots, has_list, special)))
            if generated is not None:
                return generated(op_, keys, *args)
        excluded = tls.exclude
        if single_positions is None or len(args) < n_args:
            grad_needed = _any_requires_grad(args)
        else:
            grad_needed = False
            for i in single_positions:
                x = args[i]
                if isinstance(x, Tensor) and x._keys & AUTOGRAD_BIT:
                    grad_needed = True
                    break
        if not grad_needed:
            tls.exclude = excluded | AUTOGRAD_BIT
            try:
                # a backend alone: what redispatch would pick, a frame sooner (None: it raises NoKernelError)
                if keys == CPU_BIT and table[0] is not None:
                    return table[0](*args)
                if keys == CUDA_BIT and table[_CUDA_KEY] is not None:
                    return table[_CUDA_KEY](*args)
                return redispatch(keys, *args)
            finally:
                tls.exclude = excluded
        if is_out:
            raise RuntimeError(f"{schema.name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        if inplace:
            _check_inplace(op, args[0], args)
        saved, kw = {}, {}
        for i, name, is_list in saves:
            v = args[i]
            if is_list:
                saved[name] = [SavedTensor(x) if isinstance(x, Tensor) else None for x in (v or [])]
            elif isinstance(v, Tensor):
                if inplace and i == 0:  # `self` is about to be overwritten: save its old value
                    with _ExcludeDispatchKeyGuard(_EXCLUDE):
                        v = v.clone()
                saved[name] = SavedTensor(v)
            else:
                kw[name] = v
        for i, name in values:
            kw[name] = args[i]
        for i, param, is_list in shapes:
            v = args[i]
            if is_list:
                kw[param] = [tuple(x.shape) if isinstance(x, Tensor) else None for x in (v or [])]
            elif isinstance(v, Tensor):
                kw[param] = tuple(v.shape)
        edges, dtypes = [], []
        for i, is_list in tensor_args:
            v = args[i]
            for x in ((v or ()) if is_list else (v,)):
                if isinstance(x, Tensor) and x._keys & AUTOGRAD_BIT:
                    meta = x._autograd      # (gradient_edge's first case, without its call)
                    edges.append((meta.grad_fn, meta.output_nr) if meta is not None and meta.grad_fn is not None
                                 else gradient_edge(x))
                    dtypes.append((x._data.shape, x.dtype))
                else:
                    edges.append(_NO_EDGE)
                    dtypes.append(None)
        tls.exclude = excluded | AUTOGRAD_BIT
        try:
            if keys == CPU_BIT and table[0] is not None:
                out = table[0](*args)
            elif keys == CUDA_BIT and table[_CUDA_KEY] is not None:
                out = table[_CUDA_KEY](*args)
            else:
                out = redispatch(keys, *args)
        finally:
            tls.exclude = excluded
        outs = out if isinstance(out, (tuple, list)) else (out,)
        out_meta = tuple(map(_out_meta, outs))
        node_cls = node_type
        if name_by_args is not None:
            special = name_by_args(args)
            if special is not None:
                node_cls = _node_type(op, formula, fixed_slots, has_list, special)
        node = node_cls(kw, saved, dtypes, out_meta, tuple(edges))
        if has_list:    # the call's list lengths
            node.slots = tuple((arguments[i].name, is_list, len(args[i] or ()) if is_list else 1)
                               for i, is_list in tensor_args)
        for i, param in devices:
            v = args[i]
            kw[param] = (v.device, v.dtype)
        if wants_result:
            bump = 1 if inplace else 0
            res = [SavedTensor(o, node, is_output=True, expected_bump=bump, output_nr=nr)
                   if isinstance(o, Tensor) else None for nr, o in enumerate(outs)]
            saved["result"] = res[0]
            saved["results"] = res
        view_base = args[0] if is_view and isinstance(args[0], Tensor) else None
        nr = 0
        for o in outs:
            if out_meta[nr] is not None:
                o._keys |= AUTOGRAD_BIT
                meta = o._autograd
                if meta is None:
                    meta = o._autograd = AutogradMeta(node, nr)
                else:
                    meta.grad_fn, meta.output_nr = node, nr
                if view_base is not None:
                    meta.view_base = view_base
            nr += 1
        return out
    kernel.__name__ = f"autograd_{schema.name}"
    return kernel


def _generated_shape(schema, has_list) -> bool:
    """Whether kernel_codegen covers `schema`: no Tensor[] argument, one Tensor result, not in-place,
    no out= (else the planning kernel keeps the op)."""
    returns = schema.returns
    return (not has_list and not schema.is_inplace and not schema.is_out and len(returns) == 1
            and returns[0].type == "Tensor" and not returns[0].is_list and not schema._parenthesised_return)


def _swap_in_generated(op, planning_kernel, plan):
    """Register the generated kernel of `op` (kernel_codegen) where `planning_kernel` is registered;
    None (and nothing changed) where another kernel has taken its place (a wrapper such as
    batch_norm's, which picks one of two planning kernels per call, or a library override)."""
    if op.kernels.get(DispatchKey.Autograd) is not planning_kernel:
        return None
    from .kernel_codegen import generate
    generated = generate(op, plan, planning_kernel)
    op.register(DispatchKey.Autograd, generated)
    return generated


def _fallback(op, keys, *args):
    """Autograd for ops without a formula: fine when nothing requires grad or the outputs are
    not differentiable; NotImplementedError otherwise (never a silently missing gradient)."""
    if _any_requires_grad(args):
        if op.schema.is_out:
            raise RuntimeError(f"{op.schema.name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        if op.schema.is_mutable:
            raise NotImplementedError(f"the derivative for '{op.name}' is not implemented (an input requires grad)")
        with _ExcludeDispatchKeyGuard(_EXCLUDE):
            out = op.redispatch(keys, *args)
        for o in (out if isinstance(out, (tuple, list)) else [out]):
            if _differentiable(o):
                raise NotImplementedError(f"the derivative for '{op.name}' is not implemented (an input requires "
                                          "grad)")
        return out
    with _ExcludeDispatchKeyGuard(_EXCLUDE):
        return op.redispatch(keys, *args)


def _nondifferentiable(op, keys, *args):
    """Ops whose outputs never need a gradient (creation, comparisons, argmax ...)."""
    with _ExcludeDispatchKeyGuard(_EXCLUDE):
        return op.redispatch(keys, *args)


def install(operators: dict, formulas: dict, nondifferentiable) -> None:
    """Register the Autograd kernels: a formula kernel per op in `formulas` (and for its
    derived in-place overload), the pass-through kernel for `nondifferentiable` ops, and the
    global fallback for the rest."""
    # a formula or a nondifferentiable entry must name an operator (a typo or a renamed op would
    # otherwise leave the op on the fallback silently); its in-place and out= variants may not exist
    for kind, names in (("derivative formula", formulas), ("NONDIFFERENTIABLE entry", nondifferentiable)):
        unknown = sorted(n for n in names if "aten::" + n not in operators)
        if unknown:
            raise KeyError(f"{kind} for {', '.join(unknown)} names no operator in the op table "
                           "(ember/ops/derivatives/: fix the name or remove the entry)")
    register_fallback(DispatchKey.Autograd, _fallback)
    for name, fn in formulas.items():
        formula = Formula(fn)
        for qual in _with_inplace(name):
            op = operators.get("aten::" + qual)
            if op is not None and DispatchKey.Autograd not in op.kernels:
                op.register(DispatchKey.Autograd, make_kernel(op, formula))
    for name in nondifferentiable:
        for qual in _with_inplace(name) + _with_out(name):
            op = operators.get("aten::" + qual)
            if op is not None and DispatchKey.Autograd not in op.kernels:
                op.register(DispatchKey.Autograd, _nondifferentiable)


def _with_inplace(name):
    base, _, overload = name.partition(".")
    return [name, f"{base}_.{overload}" if overload else base + "_"]


def _with_out(name):
    base, _, overload = name.partition(".")
    return [f"{base}.out", f"{base}.{overload}_out"] if overload else [f"{base}.out"]
