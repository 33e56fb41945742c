"""GraphExecutor: runs a scripted function's graph, profiling first, then specialised plans.

Seed 001's ProfilingGraphExecutorImpl, in ember:

1. At construction the graph is copied and ``passes.inline`` replaces prim.CallFunction /
   prim.CallMethod by the callees' graphs (the caller's graph is left as it was).
2. A call whose input *signature* (`input_signature`) has no optimised plan yet runs a
   *profiling* copy of the graph (``passes.insert_profile_nodes``), which records what every
   profiled tensor looked like in ``node.meta["val"]``.
3. After ``config.num_profiled_runs`` such runs for a signature, the optimised graph is built:
   the observations become the values' types (``passes.specialize_types``), kept only where the
   signature guarantees them (``passes.keep_guaranteed_types``: the guard only checks inputs,
   and passes fold ``x.size(0)`` from these types), profile nodes are removed (first, not last
   as in the spec's list: they would only hold the passes back), ``passes.PIPELINE`` runs, then
   ``passes.fuse_groups`` (``config.fusion_enabled``) and every registered fusion pass.
4. Optimised plans are cached per signature. The guard (TorchScript's prim::TypeCheck at the
   top of the optimised graph) is the signature lookup itself: any other signature is a
   *bailout* to the generic (profiling) path, which in turn builds a plan for it. Once
   ``config.max_plans`` signatures have plans, further ones share a single plan optimised
   without profiled types (shapes that keep changing stop being specialised).

Plans run ember's public functions (or, where that is exactly the same, the dispatcher
operator they call), so autograd records through them as in eager mode.

    ex = GraphExecutor(graph)
    ex.run(x, y)            # profiling run
    ex.run(x, y)            # optimised plan for this signature
    print(ex.graph_for(x, y))
"""
from __future__ import annotations

import warnings

import ember
from ember.fx.graph import Graph

from ember._core.dispatch import AUTOGRAD_BIT as _AUTOGRAD_BIT
from ember._core.dispatch import tls as _tls
from ember._core.tensor import Tensor as _Tensor
from ember._core.tensor_spec import spec_of as _spec_of

from . import config
from .. import passes
from ..ir import callee_graph, clone, prim, walk
from .instructions import compile_graph
from .interpreter import run_plan

_fusion_passes: list = []


def register_fusion_pass(fn) -> None:
    """Run `fn(graph) -> graph` on every optimised graph, after the other passes (the fuser's
    hook; prim::FusionGroup nodes it creates run their meta["subgraph"])."""
    _fusion_passes.append(fn)


def clear_fusion_passes() -> None:
    """Forget every registered fusion pass (tests)."""
    _fusion_passes.clear()


def _log(graph: Graph | None = None, message: str | None = None) -> None:
    """EMBER_JIT_LOG_LEVEL="graph_executor" (passes log themselves under their own names):
    the optimised graph of each new plan; ">graph_executor" adds plan events and the plans."""
    from ember.fx.passes import jit_log
    if graph is not None:
        jit_log.log_graph("graph_executor", graph)
    level = jit_log.GRAPH_UPDATE
    if message is not None and jit_log.is_enabled("graph_executor", level):
        jit_log.log("graph_executor", message(), level)   # message: built only when enabled


def _fx_graph(graph) -> Graph:
    """An fx Graph, a printable wrapper with ``.fx_graph``, or a function with ``._graph``."""
    g = callee_graph(graph)
    if g is None:
        raise TypeError(f"GraphExecutor: expected an ember.fx Graph, got {type(graph).__name__}")
    return g


def run_graph(graph, inputs) -> object:
    """Run `graph` once on `inputs` through the instruction interpreter (no inlining, no
    profiling, no optimisation)."""
    g = _fx_graph(graph)
    plan = compile_graph(g)
    if sets_grad_mode(g):
        return restoring_grad_mode(lambda *xs: run_plan(plan, list(xs)))(*inputs)
    return run_plan(plan, list(inputs))


def executor_of(callee) -> "GraphExecutor":
    """The executor of a scripted callee (a ScriptFunction/ScriptMethod or a Graph), cached on it."""
    ex = getattr(callee, "_ember_executor", None)
    if ex is None:
        ex = GraphExecutor(_fx_graph(callee))
        try:
            callee._ember_executor = ex
        except AttributeError:  # a Graph with slots, or a frozen object: no cache
            pass
    return ex


def input_signature(inputs) -> tuple:
    """The plan cache key (see the module docstring), computed on every call: grad mode, then
    per tensor input what it looked like (``spec_of``: class, device and requires_grad as the
    key set, dtype, shape and strides; the record dynamo's TENSOR_MATCH guard compares), per
    other input its Python type."""
    return (not (_tls.exclude & _AUTOGRAD_BIT),
            *[_spec_of(x) if x.__class__ is _Tensor or isinstance(x, _Tensor) else x.__class__ for x in inputs])


def describe_signature(inputs) -> tuple:
    """A readable signature: per input ``(dtype, shape, requires_grad, device)`` for tensors,
    the Python type otherwise, then ``grad_enabled=...``."""
    return (*[(x.dtype, tuple(x.shape), x.requires_grad, x.device) if isinstance(x, _Tensor) else type(x)
              for x in inputs], f"grad_enabled={ember.is_grad_enabled()}")


class _Runner:
    """A graph ready to run: `call` is its generated Python (``codegen.generate``), or with
    ``config.use_codegen`` off the reference instruction interpreter; `plan` is the instruction
    list (compiled when first asked for: debug state, the interpreter)."""
    __slots__ = ("graph", "direct", "call", "source", "profiled_graph", "description", "_plan")

    def __init__(self, graph: Graph, optimized: bool):
        from . import codegen
        self.graph = graph
        self.direct = optimized and config.specialize_ops
        self.profiled_graph = self.description = self._plan = self.source = None
        fn = None
        if config.use_codegen:
            try:
                fn = codegen.generate(graph, direct=self.direct)
                self.source = fn.__source__
            except Exception as e:  # noqa: BLE001 - a codegen bug must not break the program
                warnings.warn(f"ember.jit: generating code for a plan failed ({type(e).__name__}: {e}); "
                              f"running it in the instruction interpreter", RuntimeWarning, stacklevel=2)
        self.call = fn if fn is not None else (lambda *xs: run_plan(self.plan, xs))
        if sets_grad_mode(graph):
            self.call = restoring_grad_mode(self.call)

    @property
    def plan(self):
        if self._plan is None:
            from . import codegen
            self._plan = compile_graph(self.graph, codegen.fast_resolve if self.direct else None)
            self._plan.source = self.source
        return self._plan


def sets_grad_mode(graph) -> bool:
    """True if `graph` (or a block of it) changes the grad mode (``with no_grad():`` in script)."""
    return any(n.op == "call_function" and n.target is prim.SetGradEnabled for n in walk(graph))


def restoring_grad_mode(call):
    """`call` wrapped so that the grad mode is restored when it raises: a scripted ``with
    no_grad():`` restores the mode itself only on normal exit (the IR has no exception edges)."""
    from ember.autograd.grad_mode import _set_enabled, is_grad_enabled

    def guarded(*inputs):
        enabled = is_grad_enabled()
        try:
            return call(*inputs)
        except BaseException:
            _set_enabled(enabled)
            raise
    return guarded


class GraphExecutor:
    """Runs a script graph; see the module docstring. `optimize=False` always runs the generic
    plan (no profiling, no passes besides inlining)."""

    def __init__(self, graph, *, optimize: bool = True):
        source = _fx_graph(graph)
        self.source_graph = source
        g = clone(source)
        try:
            passes.inline(g)
        except Exception as e:  # noqa: BLE001 - calls left in place still run (their own executors)
            warnings.warn(f"ember.jit: inlining failed ({type(e).__name__}: {e}); calls run un-inlined",
                          RuntimeWarning, stacklevel=2)
            g = clone(source)
        self.graph = g                      # the inlined generic graph
        self.optimize = optimize
        self._generic = None                # _Runner of the generic graph
        self._plans: dict = {}              # signature -> _Runner of the optimised graph
        self._profiling: dict = {}          # signature -> [profiling graph, runs so far, _Runner]
        self._unspecialized = None          # _Runner used once config.max_plans signatures have plans
        self.stats = {"profiling_runs": 0, "optimized_runs": 0, "bailouts": 0, "generic_runs": 0,
                      "unspecialized_runs": 0}

    # -- running ----------------------------------------------------------------------------
    def run(self, *inputs):
        """Run the graph on `inputs` (one per placeholder) and return its output value."""
        if not self.optimize:
            self.stats["generic_runs"] += 1
            return self._generic_runner().call(*inputs)
        sig = input_signature(inputs)
        runner = self._plans.get(sig)
        if runner is not None:
            self.stats["optimized_runs"] += 1
            return runner.call(*inputs)
        if self._plans:
            self.stats["bailouts"] += 1
            if len(self._plans) >= max(1, config.max_plans):
                # Too many signatures (shapes that keep changing): stop specialising and run
                # one plan optimised without profiled types, valid for every signature.
                _log(message=lambda: f"bailout: signature {describe_signature(inputs)}: plan limit reached, "
                                     f"running the unspecialised plan")
                self.stats["unspecialized_runs"] += 1
                return self._unspecialized_runner().call(*inputs)
            _log(message=lambda: f"bailout: no plan for signature {describe_signature(inputs)}; profiling it")
        return self._profile_run(sig, inputs)

    def _unspecialized_runner(self) -> _Runner:
        if self._unspecialized is None:
            self._unspecialized = _Runner(self._optimize_or_generic(self.graph, None), optimized=True)
        return self._unspecialized

    __call__ = run

    def _generic_runner(self) -> _Runner:
        if self._generic is None:
            self._generic = _Runner(self.graph, optimized=False)
        return self._generic

    def _profile_run(self, sig, inputs):
        entry = self._profiling.get(sig)
        if entry is None:
            graph = clone(self.graph)
            passes.insert_profile_nodes(graph)
            entry = self._profiling[sig] = [graph, 0, _Runner(graph, optimized=False)]
        graph, _, runner = entry
        self.stats["profiling_runs"] += 1
        result = runner.call(*inputs)
        entry[1] += 1
        if entry[1] >= max(1, config.num_profiled_runs):
            self._install(sig, self._optimize_or_generic(graph, inputs), graph, describe_signature(inputs))
            del self._profiling[sig]
        return result

    def _install(self, sig, graph: Graph, profiled: Graph | None = None, description=None) -> None:
        runner = self._plans[sig] = _Runner(graph, optimized=True)
        runner.profiled_graph, runner.description = profiled, description or sig
        _log(graph, lambda: f"new plan for signature {runner.description}:\n{runner.plan}")

    # -- optimising -------------------------------------------------------------------------
    def _optimize_or_generic(self, profiled: Graph, inputs) -> Graph:
        """The optimised graph, or the generic one when optimising fails (compiler failures fall
        back, they never break a program)."""
        try:
            return self._optimize(profiled, inputs)
        except Exception as e:  # noqa: BLE001 - see the docstring
            warnings.warn(f"ember.jit: optimising the graph failed ({type(e).__name__}: {e}); running it "
                          f"unoptimised", RuntimeWarning, stacklevel=4)
            return self.graph

    def _optimize(self, profiled: Graph, inputs) -> Graph:
        g = clone(profiled)   # the profiling graph keeps its meta for debug_state
        if inputs is not None:   # None: the unspecialised plan (profiled types are not used)
            passes.specialize_types(g, inputs)
        passes.remove_profile_nodes(g)
        passes.keep_guaranteed_types(g, inputs if inputs is not None else [])
        for run in passes.PIPELINE:
            run(g)
        if inputs is not None and config.fusion_enabled:   # needs the profiled looks: specialised plans only
            from ..passes.fuse_groups import fuse_groups
            fuse_groups(g)
        for fusion in list(_fusion_passes):
            result = fusion(g)
            g = g if result is None else result
        return g

    # -- introspection ----------------------------------------------------------------------
    def graph_for(self, *inputs) -> Graph:
        """The optimised graph for `inputs`' signature (running the profiling runs it needs)."""
        if not self.optimize:
            return self.graph
        sig = input_signature(inputs)
        while sig not in self._plans:
            self._profile_run(sig, inputs)
        return self._plans[sig].graph

    def debug_state(self) -> dict:
        """Plans by signature, the generic plan, profiling in progress and run counters."""
        from ..passes.fuse_groups import fusion_groups
        return {
            "graph": self.graph,
            "generic_plan": self._generic.plan if self._generic is not None else None,
            "plans": {r.description: r.plan for r in self._plans.values()},
            "optimized_graphs": {r.description: r.graph for r in self._plans.values()},
            "profiled_graphs": {r.description: r.profiled_graph for r in self._plans.values()},
            "profiling": {sig: {"graph": e[0], "runs": e[1]} for sig, e in self._profiling.items()},
            "unspecialized_plan": self._unspecialized.plan if self._unspecialized is not None else None,
            "stats": dict(self.stats),
            "fusion_groups": {r.description: [n.meta["kernel"].describe() for n in fusion_groups(r.graph)
                                              if "kernel" in n.meta] for r in self._plans.values()},
        }
