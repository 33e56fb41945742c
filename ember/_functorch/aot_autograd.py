"""AOT autograd: trace a program and its backward ahead of time, split them, compile both.

    f = aot_function(fn, fw_compiler=comp, bw_compiler=comp, partition_fn=default_partition)
    f(x, w).sum().backward()       # forward and backward run the compiled graphs
    m = aot_module(model, fw_compiler=comp)             # parameters and buffers become graph inputs
    run = aot_module_simplified(gm, example_inputs, fw_compiler=comp)     # dynamo's backends call this

PyTorch's torch._functorch.aot_autograd, on ember's own pieces:

1. **The joint graph.** The program runs once under make_fx's Tracer (make_fx.py) with its tensor
   inputs as *primals* (``primals_1 ...``); then ``ember.autograd.grad`` runs ember's own autograd on
   the outputs that require grad, with one *tangent* (``tangents_1 ...``) per such output. The
   derivative formulas are ember ops, so the backward records as ops too:
   ``(*primals, *tangents) -> (*forward outputs, *gradients)``, each node tagged
   ``meta["aot_stage"]`` "forward" or "backward" (what eager would run when).
2. **The partition** (partitioners.py) splits it into a forward ``primals -> (outputs, saved)`` and
   a backward ``(saved, tangents) -> gradients``.
3. **The runtime**: an ``ember.autograd.Function`` whose forward calls ``fw_compiler(fw_gm)`` and
   whose backward calls ``bw_compiler(bw_gm)``, compiled at the first ``.backward()``. When no
   input requires grad (or grad mode is off) only the forward is traced: the *inference* graph.

What a traced graph cannot show is handled here, never approximated:

* **Random ops** run where eager runs them: the forward's in the forward graph, in program order and
  once (partitioners never recompute them), the backward's in the backward graph. Tracing draws no
  numbers: the generator state is restored after the trace.
* **Outputs that alias inputs** (an input returned, or a view of one) are regenerated on the real
  input after the call (the view replayed), so they alias as in eager.
* **Mutation** (any op the op-properties table says writes a tensor: ``x.add_(1)``, ``x[0].mul_(2)``,
  ``out=``, BatchNorm's running stats, a view of an intermediate): the program is traced again
  *functionalised* (functionalize.py), so the graphs hold no mutating op; the written inputs' new
  values become extra forward outputs and a runtime epilogue writes them back with ``copy_``
  (_aot_mutations.py says how, and which writes still run eagerly).
* **Data-dependent Python** (``bool(t)``, ``t.item()`` on a traced tensor): the trace would bake this
  run's value in, so the program runs eagerly.

A program that falls back says why once, under the ``aot_graphs`` log (EMBER_LOGS=aot_graphs), and
on the compiled callable's ``fallback_reason``.

Tracing runs the program on *fake tensors* (fake_tensor.py): fakes of its inputs (a module's
parameters and buffers are inputs here), tangents made in the mode, tensors it reaches otherwise
converted as used, so the trace computes nothing and writes nothing real. Where a fake trace cannot
be made (an op without a Meta kernel, a value read from an untraced fake, a refusal), it is made
again on clones of the real inputs (one real forward and backward; ``fake_trace_failure`` and the
``aot_graphs`` log say why), and where that fails too the program runs eagerly. The graphs print
with ``print_readable`` (``f32[4, 4]`` annotations); EMBER_LOGS=aot_joint_graph,aot_graphs prints
them as they are made.
"""
from __future__ import annotations

import contextlib
import itertools
import operator

from .._core.dispatch import DispatchKey, OperatorHandle, _ExcludeDispatchKeyGuard
from .._core.tensor import Tensor
from .._core.tensor_spec import spec_of
from .._logging import trace_log
from ..autograd.grad_mode import _set_grad_enabled, is_grad_enabled, set_grad_enabled
# _aot_mutations, data_dependence (fake and functional tensors) and the Tracer are imported where a
# trace runs: a process whose graphs come from the AOT cache never loads them
from . import _aot_cache, _aot_node
from ._aot_fast_path import call_with_grad_mode, spec_matcher
from .partitioners import default_partition

_graph_ids = itertools.count()


class AOTFallback(Exception):
    """The program cannot be compiled exactly: it runs eagerly (the message says why)."""


def _fake_trace_failures():
    from .fake_tensor import DataDependentOutputException
    # no Meta kernel, a derivative that needs values, a functionalisation refusal; a value read from an
    # untraced fake (a real trace makes it a constant; a *traced* tensor's read is DataDependentTrace,
    # which a real trace would raise too: eager); a value computed outside the dispatcher (AOTFallback)
    return NotImplementedError, DataDependentOutputException, AOTFallback


# ---------------------------------------------------------------------------------------------
# tracing
# ---------------------------------------------------------------------------------------------
def _trace_inputs(args, mode=None):
    """The tensors the trace runs on: detached clones (so an in-place op during the trace leaves the
    caller's tensors alone, and inputs that share memory are traced apart, as the runtime checks),
    requiring grad as the originals do. With a FakeTensorMode: fakes of them (``from_tensor``, then
    a fake clone), so the trace computes nothing."""
    with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
        out = []
        for a in args:
            source = a if mode is None else mode.from_tensor(a)
            with mode if mode is not None else contextlib.nullcontext():
                c = _clone_keeping_layout(source.detach())
            out.append(c.requires_grad_(True) if a.requires_grad else c)
        return out


def _clone_keeping_layout(t):
    """A copy of `t` with its strides: the trace records what the real input allows (a reshape of a
    sliced or expanded input is a copy, not a view), so the graph runs on the real one. A plain clone
    would make a non-dense input contiguous and the trace would record views the input refuses."""
    import ember
    c = t.clone()
    if c.stride() == t.stride():
        return c
    broadcast = [d for d in range(t.dim()) if t.stride(d) == 0 and t.shape[d] > 1]
    if broadcast:   # an expanded input: one copy of its distinct elements, expanded again
        one = t
        for d in broadcast:
            one = one.narrow(d, 0, 1)
        return _clone_keeping_layout(one).expand(t.shape)
    c = ember.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
    return c.copy_(t)


def _dropout_through_a_mask(input, p, train):
    """dropout of a tensor that requires grad: eager's Autograd kernel draws the mask in NumPy and
    multiplies by it, so a trace would see only the op and a constant mask in the backward. Here the
    mask is the op itself applied to ones (the same draws, from the same generator: one random node
    the backward reads), then a recorded multiplication -- eager's values exactly."""
    import ember
    if not (isinstance(input, Tensor) and input.requires_grad):
        return NotImplemented
    return input * ember.ops.aten.dropout.default(ember.ones_like(input), p, train)


def _feature_dropout_through_a_mask(input, p, train):
    import ember
    if not (isinstance(input, Tensor) and input.requires_grad):
        return NotImplemented
    return input * ember.ops.aten.feature_dropout.default(ember.ones_like(input), p, train)


def joint_decompositions() -> dict:
    """Decompositions every joint trace needs (the caller's decompositions= take precedence)."""
    import ember
    aten = ember.ops.aten
    return {aten.dropout.default: _dropout_through_a_mask, aten.feature_dropout.default: _feature_dropout_through_a_mask}


def trace_joint(fn, args, *, decompositions=None, with_backward: bool = True, functional: bool = False,
                fake: bool = False):
    """The joint graph of ``fn(*args)`` (module docstring, step 1), or its forward alone when
    `with_backward` is False or nothing requires grad. Returns ``(gm, info)``; info: ``num_fwd_outputs``,
    ``tangent_outputs`` (which outputs get a tangent), ``out_kind`` (how fn returned: "single",
    "tuple", "list"), ``mutations`` (`functional`: fn runs functionalised, the new values of the
    inputs it wrote lead the forward outputs; an `InputMutations`, else None). `fake`: trace on fake
    tensors (the tangents too); tensors fn reaches other than its arguments become fakes as used."""
    import ember
    from . import _aot_mutations, data_dependence
    from .make_fx import Tracer, tracing
    tracer = Tracer(decompositions={**joint_decompositions(), **(decompositions or {})})
    mode = None
    if fake:
        from .fake_tensor import FakeTensorMode
        mode = FakeTensorMode(allow_non_fake_inputs=True)
    traced = _trace_inputs(args, mode)
    for i, t in enumerate(traced):
        tracer.add_input(f"primals_{i + 1}", t)
    rng = ember.get_rng_state()
    grad_mode = is_grad_enabled()
    try:
        with mode if mode is not None else contextlib.nullcontext(), tracing(tracer), \
                data_dependence.forbidden(tracer):
            if functional:
                new_values, result, mutations = _aot_mutations.run_functionalised(fn, traced)
            else:
                new_values, result, mutations = [], fn(*traced), None
            # a program may leave grad mode switched (dynamo's graphs end with the mode the code set);
            # the graph records ops only, so the runtime sets it afterwards
            grad_mode_after = is_grad_enabled()
            _set_grad_enabled(grad_mode)
            outs, out_kind = _flat_outputs(result)
            for node in tracer.graph.nodes:
                node.meta["aot_stage"] = "forward"
            if mutations is None:
                aliased = {i for i, o in enumerate(outs) if _input_alias(tracer, o) is not None}
            else:
                aliased = {len(new_values) + k for k in mutations.aliases}
            outs = new_values + outs
            wants_grad = [t for t in traced if t.requires_grad]
            tangent_outputs = [i for i, o in enumerate(outs) if with_backward and wants_grad and i not in aliased
                               and isinstance(o, Tensor) and o.requires_grad and o.dtype.category >= 2]
            grads = [None] * len(traced)
            hidden = hidden_saved_value(tracer, [outs[i] for i in tangent_outputs])
            if hidden:
                raise AOTFallback(hidden)
            if tangent_outputs:
                try:
                    grads = _record_backward(ember, tracer, traced, [outs[i] for i in tangent_outputs])
                except RuntimeError as e:
                    # eager's backward would refuse too (a saved tensor modified in place ...): eager
                    # raises it at .backward(), after the forward's values and side effects
                    raise AOTFallback(f"the traced backward failed as eager's would: {e}") from e
                for node in tracer.graph.nodes:
                    node.meta.setdefault("aot_stage", "backward")
            tracer.set_output(tuple(outs) + (tuple(grads) if tangent_outputs else ()))
    finally:
        ember.set_rng_state(rng)
        _set_grad_enabled(grad_mode)
    info = {"num_fwd_outputs": len(outs), "tangent_outputs": tangent_outputs, "out_kind": out_kind,
            "mutations": mutations,
            "grad_mode_after": grad_mode_after if grad_mode_after != grad_mode else None}
    return tracer.graph_module(), info


def _record_backward(ember, tracer, traced, diff_outs):
    """Add one tangent placeholder per differentiable output and record autograd.grad."""
    with _ExcludeDispatchKeyGuard(DispatchKey.Tracer):
        # on the output's device, as eager's backward makes them (a CPU tangent of a CUDA loss would
        # meet the CUDA tensors of its derivative formulas: a device mismatch, not eager's graph)
        tangents = [ember.ones(tuple(o.shape), dtype=o.dtype, device=o.device) for o in diff_outs]
    first_op = next(n for n in tracer.graph.nodes if n.op != "placeholder")
    with tracer.graph.inserting_before(first_op):
        for i, t in enumerate(tangents):
            tracer.add_input(f"tangents_{i + 1}", t).meta["aot_stage"] = "backward"
    wanted = [i for i, t in enumerate(traced) if t.requires_grad]
    found = ember.autograd.grad(diff_outs, [traced[i] for i in wanted], tangents, allow_unused=True)
    grads = [None] * len(traced)
    for i, g in zip(wanted, found):
        grads[i] = g
    return grads


def _flat_outputs(result):
    if isinstance(result, tuple):
        return list(result), "tuple"
    if isinstance(result, list):
        return list(result), "list"
    return [result], "single"


def _restructure(outs, out_kind):
    return outs[0] if out_kind == "single" else (list(outs) if out_kind == "list" else tuple(outs))


# ---------------------------------------------------------------------------------------------
# what the trace cannot express: aliases of inputs, hidden saved values; mutating nodes
# ---------------------------------------------------------------------------------------------
def _view_base(node):
    """The node a view (or getitem of a multi-view op) reads its memory from, else None."""
    from ..ops import properties
    if node.op != "call_function":
        return None
    if node.target is operator.getitem or (isinstance(node.target, OperatorHandle)
                                           and properties.of_op(node.target).aliases_args):
        return next((a for a in node.args if hasattr(a, "op")), None)
    return None


def alias_chain(node):
    """``(placeholder, [view nodes from it to node])`` if `node`'s value is (a view of) a graph
    input, else None."""
    chain = []
    while node is not None and node.op != "placeholder":
        chain.append(node)
        node = _view_base(node)
    return None if node is None else (node, chain[::-1])


def _input_alias(tracer, value):
    entry = tracer.values.get(id(value)) if isinstance(value, Tensor) else None
    return alias_chain(entry[1]) if entry is not None and entry[0] is value else None


def mutating_nodes(gm):
    """The nodes of `gm` that write a tensor in place, by the op-properties table."""
    from ..fx.passes import purity
    return (n for n in gm.graph.nodes if n.op == "call_function" and purity.mutated_inputs(n))


def hidden_saved_value(tracer, outputs):
    """Why the backward cannot be traced, if autograd saved a tensor the trace never saw: a kernel
    computed it outside the dispatcher (alpha dropout's NumPy noise, say) and a derivative formula
    will read it, so the graph would replay this run's value as a constant. None when all is seen."""
    from ..autograd.graph import SavedTensor
    known = lambda t: (tracer.values.get(id(t), (None,))[0] is t or tracer.attr_nodes.get(id(t), (None,))[0] is t  # noqa: E731
                       or getattr(tracer.by_data.get(id(t._data), (None,))[0], "_data", None) is t._data)
    seen, todo = set(), [o.grad_fn for o in outputs if isinstance(o, Tensor) and o.grad_fn is not None]
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        saved = list(getattr(node, "saved", {}).values()) + list(getattr(node, "_saved", None) or ())
        for item in saved:
            for s in (item if isinstance(item, list) else [item]):
                if isinstance(s, SavedTensor) and s.tensor is not None and not known(s.tensor):
                    return (f"{node.name()} saved a tensor of shape {list(s.tensor.shape)} computed outside the "
                            f"dispatcher, which the traced backward would replay as a constant")
        todo.extend(fn for fn, _ in getattr(node, "next_functions", ()) if fn is not None)
    return None


# ---------------------------------------------------------------------------------------------
# the runtime
# ---------------------------------------------------------------------------------------------
def _log_graph(artifact, title, gm):
    trace_log(artifact, lambda: f"TRACED GRAPH\n ===== {title} =====\n" + gm.print_readable(print_output=False))


class CompiledGraph:
    """One traced program for one input spec: its compiled forward (and lazily its backward)."""

    def __init__(self, fn, args, fw_compiler, bw_compiler, partition_fn, decompositions, cache_key=None):
        self.graph_id = next(_graph_ids)
        self.fn = fn
        self.fallback_reason = self.fake_trace_failure = None
        cached = _aot_cache.load(cache_key, len(args)) if cache_key is not None else None
        if cached is not None:       # the same program traced in an earlier process (_aot_cache)
            info, fw_gm, self.bw_gm = cached
            self.aliases = {}
        else:
            from . import data_dependence
            try:
                info, fw_gm, self.bw_gm = self._trace_and_partition(fn, args, partition_fn, decompositions)
            except (data_dependence.DataDependentTrace, AOTFallback, NotImplementedError) as e:
                # NotImplementedError: an op or a derivative the trace cannot record (conv's NumPy backward),
                # or a mutation functionalisation cannot express (_aot_mutations' docstring)
                self._fall_back(f"{type(e).__name__}: {e}")
                return
        self.info = info
        self.out_kind = info["out_kind"]
        self.num_fwd = info["num_fwd_outputs"]
        self.mutations = info["mutations"]
        self.tangent_outputs = info["tangent_outputs"]
        self.plain = self.mutations is None and not self.aliases and info["grad_mode_after"] is None
        if cached is None and cache_key is not None and self.plain and self.fake_trace_failure is None:
            _aot_cache.store(cache_key, info, fw_gm, self.bw_gm)
        _log_graph("aot_graphs", f"Forward graph {self.graph_id}" + ("" if self.bw_gm is not None else " (inference)"), fw_gm)
        self.forward = fw_compiler(fw_gm, list(args))
        self.bw_compiler = bw_compiler or fw_compiler
        self.function = self._autograd_function() if self.tangent_outputs else None
        # an inference graph none of whose values requires grad records nothing in any grad mode:
        # it runs without the switch (a frame and two writes of the thread state per call)
        self.inference_grad_switch = any(n.op != "output" and ("val" not in n.meta or _requires_grad(n.meta["val"]))
                                         for n in fw_gm.graph.nodes)

    def _trace_and_partition(self, fn, args, partition_fn, decompositions):
        """(info, forward graph, backward graph or None for an inference graph); sets self.aliases."""
        joint, info = self._trace(fn, args, decompositions)
        outputs = list(joint.graph.nodes)[-1].args[0]
        num_fwd = info["num_fwd_outputs"]
        aliases = {i: alias_chain(o) for i, o in enumerate(outputs[:num_fwd]) if hasattr(o, "op")}
        self.aliases = {i: c for i, c in aliases.items() if c is not None and info["mutations"] is None}
        if not info["tangent_outputs"]:
            return info, joint, None
        _log_graph("aot_joint_graph", f"Joint graph {self.graph_id}", joint)
        fw_gm, bw_gm = partition_fn(joint, None, num_fwd_outputs=num_fwd)
        return info, fw_gm, bw_gm

    def _trace(self, fn, args, decompositions):
        """The joint graph, traced on fake tensors; where that trace cannot be made (an op without a
        Meta kernel, a kernel or backward that needs values, data-dependent Python ...), traced again
        on clones of the real inputs (one real forward and backward: slower, as exact), saying why."""
        try:
            return self._trace_mutation_aware(fn, args, decompositions, fake=True)
        except _fake_trace_failures() as e:
            self.fake_trace_failure = f"{type(e).__name__}: {e}"
            trace_log("aot_graphs", lambda: f"aot_autograd: graph {self.graph_id} traced on real inputs: the fake "
                                            f"trace failed ({self.fake_trace_failure})")
        return self._trace_mutation_aware(fn, args, decompositions, fake=False)

    @staticmethod
    def _trace_mutation_aware(fn, args, decompositions, fake):
        """The joint graph; traced again functionalised when the plain trace holds a mutating op (or
        eager autograd refused one on the trace's leaf inputs), so the compiled graphs never write."""
        try:
            joint, info = trace_joint(fn, args, decompositions=decompositions, fake=fake)
            if not any(mutating_nodes(joint)):
                return joint, info
        except RuntimeError as e:
            # the trace's inputs are leaves: a write to an input that requires grad is refused here even
            # where the caller's input is not a leaf (the functional trace decides; eager refusals stay)
            if "leaf Variable that requires grad" not in str(e):
                raise
        try:
            return trace_joint(fn, args, decompositions=decompositions, functional=True, fake=fake)
        except RuntimeError as e:
            if "Variable that requires grad" not in str(e):     # a write to a view of a leaf input ...
                raise
            raise AOTFallback(f"eager refuses this write where the caller's tensor is a leaf: {e}") from e

    def _fall_back(self, reason):
        self.fallback_reason = reason
        trace_log("aot_graphs", lambda: f"aot_autograd: graph {self.graph_id} runs eagerly: {reason}")

    def run_backward(self, args):
        """The compiled backward on saved values + tangents (compiled on first use), grad mode off."""
        if self.backward is None:
            _log_graph("aot_graphs", f"Backward graph {self.graph_id}", self.bw_gm)
            self.backward = self.bw_compiler(self.bw_gm, args)
        return tuple(call_with_grad_mode(False, self.backward, args))

    def _autograd_function(self):
        """The autograd.Function of a graph that is not plain (mutations, aliases: _aot_node records
        plain graphs)."""
        from ..autograd.function import Function
        compiled = self
        num_fwd, tangent_outputs = self.num_fwd, self.tangent_outputs
        differentiable = set(tangent_outputs)

        class CompiledFunction(Function):
            @staticmethod
            def forward(ctx, *primals):
                results = compiled.forward(*primals)
                outs, saved = results[:num_fwd], results[num_fwd:]
                if compiled.mutations is not None:
                    from . import _aot_mutations
                    saved = _aot_mutations.protect_saved(saved, primals, compiled.mutations)
                ctx.save_for_backward(*saved)
                ctx.mark_non_differentiable(*[o for i, o in enumerate(outs)
                                              if i not in differentiable and isinstance(o, Tensor)])
                return tuple(outs)

            @staticmethod
            def backward(ctx, *grads):
                if is_grad_enabled():     # create_graph=True: the compiled backward has no derivative
                    raise RuntimeError("ember.compile with AOT autograd does not support double backward "
                                       "(create_graph=True through a compiled graph)")
                tangents = [grads[i].contiguous() for i in tangent_outputs]
                return compiled.run_backward(list(ctx.saved_tensors) + tangents)
        return CompiledFunction

    backward = None
    output_meta = None       # _aot_node: {tangent output: (shape, dtype, device)}, from the first call
    mutations = None
    plain = False
    inference_grad_switch = True

    def __call__(self, args):
        if self.fallback_reason is not None or (
                self.mutations is not None and _mutations().runs_eagerly(self.mutations, args)):
            return self.fn(*args)
        if self.function is None:
            # no output is differentiable (grad-mode switches are not in the graph)
            outs = call_with_grad_mode(False, self.forward, args) if self.inference_grad_switch else \
                self.forward(*args)
        elif self.plain:     # nothing to write back, regenerate or switch: the common case
            return _restructure(_aot_node.record(self, args), self.out_kind)
        else:
            # the trace found differentiable outputs, so grad mode was on where they were computed
            # (the program may switch it on itself: the switch is not in the graph)
            outs = call_with_grad_mode(True, self.function.apply, args)
        if self.plain:       # an inference graph: nothing to write back, regenerate or switch
            return _restructure(outs, self.out_kind)
        outs = list(outs)
        if self.mutations is not None:
            written = len(self.mutations.inputs)
            _mutations().write_back(self.mutations, args, outs[:written])
            outs = _mutations().regenerate_aliases(self.mutations, args, outs[written:])
        for i, (placeholder, chain) in self.aliases.items():
            outs[i] = _replay_views(args, placeholder, chain)
        if self.info["grad_mode_after"] is not None:
            _set_grad_enabled(self.info["grad_mode_after"])
        return _restructure(outs, self.out_kind)


def _requires_grad(val) -> bool:
    if isinstance(val, (tuple, list)):
        return any(_requires_grad(v) for v in val)
    return isinstance(val, Tensor) and val.requires_grad


def _mutations():
    from . import _aot_mutations
    return _aot_mutations


def _replay_views(args, placeholder, chain):
    """Apply the recorded view ops to the real input, so the output aliases it as in eager (with
    history only if the traced output had it: a view taken under no_grad has none)."""
    env = {placeholder: args[int(placeholder.name.rsplit("_", 1)[1]) - 1]}
    if not chain:
        return env[placeholder]
    with set_grad_enabled(bool(getattr(chain[-1].meta.get("val"), "requires_grad", True))):
        for node in chain:
            call_args = tuple(env.get(a, a) if hasattr(a, "op") else a for a in node.args)
            env[node] = node.target(*call_args, **node.kwargs)
    return env[chain[-1]]


class _Cached:
    """A callable that traces and compiles once per input spec (shapes, strides, dtypes, devices,
    requires_grad, grad mode), like PyTorch's aot_function."""

    def __init__(self, fn, fw_compiler, bw_compiler, partition_fn, decompositions):
        self.fn, self.fw_compiler, self.bw_compiler = fn, fw_compiler, bw_compiler
        self.partition_fn, self.decompositions = partition_fn, decompositions
        self.graphs: dict = {}
        self.last = (lambda args: False, None)     # (matcher, graph) of the graph the last call ran
        self.cache_namespace = None      # set where the traced graphs may go to disk (_aot_cache)

    def key(self, args):
        for i, a in enumerate(args):
            if not isinstance(a, Tensor):
                raise TypeError(f"aot_function: argument {i} is a {type(a).__name__}; compiled functions take "
                                f"tensors (close over other values)")
        return (is_grad_enabled(),) + tuple(spec_of(a) for a in args)

    def compiled_for(self, args) -> CompiledGraph:
        matches, graph = self.last
        if matches(args):        # the steady state: no key built (_aot_fast_path)
            return graph
        key = self.key(args)
        graph = self.graphs.get(key)
        if graph is None:
            cache_key = None if self.cache_namespace is None else _aot_cache.entry_key(self.cache_namespace, key)
            graph = self.graphs[key] = CompiledGraph(self.fn, args, self.fw_compiler, self.bw_compiler,
                                                     self.partition_fn, self.decompositions, cache_key)
        self.last = (spec_matcher(key), graph)
        return graph

    def __call__(self, *args):
        return self.compiled_for(args)(args)


# ---------------------------------------------------------------------------------------------
# the entry points
# ---------------------------------------------------------------------------------------------
def aot_function(fn, fw_compiler, bw_compiler=None, partition_fn=default_partition, decompositions=None):
    """`fn` compiled per input spec: ``fw_compiler(fw_gm, example_inputs) -> callable`` runs the
    forward, ``bw_compiler`` (default: fw_compiler) the backward. `fn` takes tensors."""
    if not callable(fn):
        raise TypeError(f"aot_function: expected a callable, got {type(fn).__name__}")
    return _Cached(fn, fw_compiler, bw_compiler, partition_fn, decompositions)


def functional_call(module, tensors: dict, args):
    """``module(*args)`` with its parameters and buffers replaced by `tensors` ({qualified name: tensor})."""
    saved = []
    try:
        for name, t in tensors.items():
            owner_name, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_name) if owner_name else module
            table = owner._parameters if attr in owner._parameters else owner._buffers
            saved.append((table, attr, table[attr]))
            table[attr] = t
        return module(*args)
    finally:
        for table, attr, t in reversed(saved):
            table[attr] = t


def _state_of(module):
    named = dict(module.named_parameters())
    named.update(module.named_buffers())
    return named


def aot_module(mod, fw_compiler, bw_compiler=None, partition_fn=default_partition, decompositions=None):
    """An nn.Module running `mod` through aot_function, its parameters and buffers lifted to graph inputs."""
    from ..nn import Module
    names = list(_state_of(mod))

    def flat_fn(*flat):
        return functional_call(mod, dict(zip(names, flat[:len(names)])), flat[len(names):])

    compiled = aot_function(flat_fn, fw_compiler, bw_compiler, partition_fn, decompositions)

    class AOTModule(Module):
        def __init__(self):
            super().__init__()
            self.orig_module = mod

        def forward(self, *args):
            state = _state_of(mod)
            return compiled(*[state[n] for n in names], *args)
    return AOTModule()


def aot_module_simplified(mod, example_inputs, fw_compiler, bw_compiler=None, partition_fn=default_partition,
                          decompositions=None, **_ignored):
    """Dynamo's entry: trace `mod` (a GraphModule) on `example_inputs` now and return the callable
    ``run(*inputs)``; parameters and buffers the module holds are lifted to graph inputs."""
    state = _state_of(mod)
    names = list(state)
    if not all(isinstance(a, Tensor) for a in example_inputs):
        trace_log("aot_graphs", "aot_autograd: a graph with non-tensor inputs runs as it is")
        return mod.forward

    def flat_fn(*flat):
        return functional_call(mod, dict(zip(names, flat[:len(names)])), flat[len(names):])

    compiled = _Cached(flat_fn, fw_compiler, bw_compiler, partition_fn, decompositions)
    if partition_fn is default_partition and not decompositions and _aot_cache.enabled():
        compiled.cache_namespace = _aot_cache.program_namespace(mod)
    first = compiled.compiled_for([*state.values(), *example_inputs])
    params = tuple(state.values())

    def run(*args):
        flat = params + args
        matches, graph = compiled.last       # compiled_for's first step, inlined: the steady state
        return graph(flat) if matches(flat) else compiled.compiled_for(flat)(flat)
    run.fallback_reason, run.fake_trace_failure = first.fallback_reason, first.fake_trace_failure
    run.compiled = compiled
    return run
