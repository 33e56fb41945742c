"""compile_fx: a GraphModule + example inputs -> a callable running generated C kernels.

    fn = compile_fx(gm, example_inputs)     # gm: an aten graph (make_fx) or what dynamo captured
    fn(*inputs)                             # specialised to the inputs' shapes/strides/dtypes;
                                            # other layouts compile another variant

The pipeline (seed 001): make_fx (if gm is not an aten graph of these inputs) -> GraphLowering
(lowering.py: aten -> loop IR) -> scheduler (fusion) -> codegen_c (one C function per fused
group) -> codecache.load_many -> wrapper (an fx GraphModule calling kernels). The fallback is
eager: a graph that cannot be compiled exactly (NotLowerable: an in-place op, a non-tensor
input), no C compiler, or a compile error runs `gm` itself, with one warning for compiler
problems; `config.strict` turns these into errors. EMBER_LOGS=output_code prints the wrapper and
the kernels.
"""
from __future__ import annotations

import threading
import warnings

from .._logging import trace_log
from . import config
from .wrapper import GuardMismatch, PlanMismatch, build_wrapper, plan_wrapper
# graph (the lowering tables), ir, the scheduler and the code generator are imported where a graph is
# lowered: a process whose graphs all come from the graph cache never loads them

MAX_VARIANTS = 8
_warned: set = set()


def compile_fx(gm, example_inputs):
    """The compiled callable for `gm` (see the module docstring)."""
    return CompiledFunction(gm, list(example_inputs))


class CompiledFunction:
    def __init__(self, gm, example_inputs):
        self.gm = gm
        self.variants = {}
        self.lock = threading.Lock()
        self.current = self._variant(example_inputs)

    def __call__(self, *args):
        current = self.current
        if current is not None:
            try:
                with self.lock:          # the intermediate pool is one per variant
                    return current.forward(*args)
            except GuardMismatch:
                pass
        return self._slow_path(args)

    def benchmark_compiled_module(self, times=10, repeat=5) -> float:
        """Median milliseconds per call of the current variant on fresh random inputs of the layout
        it was compiled for (Inductor's `benchmark_compiled_module`); prints it too."""
        import statistics
        import time
        import ember
        if self.current is None:
            raise RuntimeError("benchmark_compiled_module: this graph runs eagerly (nothing was compiled)")
        inputs = []
        device = self.current._ember_device
        for shape, stride, dtype in self.current._ember_layouts:
            t = ember.empty_strided(tuple(shape), stride, dtype=dtype, device=device)
            inputs.append(t.normal_() if dtype.is_floating_point else t.zero_())
        sync = ember.cuda.synchronize if device == "cuda" else (lambda: None)
        self(*inputs)                   # the first call may tune block sizes
        samples = []
        for _ in range(repeat):
            sync()
            t0 = time.perf_counter()
            for _ in range(times):
                self(*inputs)
            sync()                      # on the GPU: until the launched kernels finish
            samples.append((time.perf_counter() - t0) / times * 1e3)
        ms = statistics.median(samples)
        print(f"{ms:.4f} ms per call")
        return ms

    def _slow_path(self, args):
        variant = self._variant(args)
        if variant is None:
            return self.gm(*args)
        self.current = variant
        try:
            with self.lock:
                return variant.forward(*args)
        except GuardMismatch:          # e.g. an input that records autograd now: eager does that
            return self.gm(*args)

    def _variant(self, inputs):
        from .._core.tensor import Tensor
        if not all(isinstance(t, Tensor) for t in inputs):
            return None
        # the ndarray's own strides: what the wrapper's input check compares (a size-1 or empty
        # dim's NumPy stride can differ between tensors PyTorch calls alike)
        key = tuple((t.shape, getattr(t._data, "strides", None), t.dtype) for t in inputs)
        if key in self.variants:
            return self.variants[key]
        # inputs that require grad are compiled too: the wrapper's input check runs the graph eagerly
        # only on a call that would record autograd (grad mode on); AOT autograd calls it under no_grad
        if len(self.variants) >= MAX_VARIANTS or len({t.device.type for t in inputs}) > 1 or \
                not all(t.device.type in ("cpu", "cuda") for t in inputs):
            return None
        if inputs and inputs[0].device.type == "cuda" and not _triton_available():
            return None
        self.variants[key] = variant = _compile_or_fallback(self.gm, inputs)
        if variant is not None:
            variant._ember_layouts = [(t.shape, t.stride(), t.dtype) for t in inputs]
            variant._ember_device = inputs[0].device.type if inputs else "cpu"
        return variant


def _triton_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("triton") is not None


def _compile_or_fallback(gm, inputs):
    from .codecache import CCompileError, CompilerUnavailable
    try:
        return compile_graph(gm, inputs)
    except _not_lowerable() as e:      # (evaluated only when something was raised)
        if config.strict:
            raise
        trace_log("output_code", lambda: f"ember._inductor: graph runs eagerly: {e}")
        return None
    except (CompilerUnavailable, CCompileError) as e:
        if config.strict:
            raise
        if type(e) not in _warned:
            _warned.add(type(e))
            where = f" (source kept at {e.source_path})" if isinstance(e, CCompileError) else ""
            warnings.warn(f"ember._inductor: {type(e).__name__}{where}; graphs run eagerly", RuntimeWarning,
                          stacklevel=4)
        return None


def _not_lowerable():
    from .graph import NotLowerable
    return NotLowerable


def _aten_graph(gm, inputs):
    """gm itself when it is already an aten graph traced for inputs of this layout, else make_fx of it
    (run on the real inputs without recording autograd, the random generator's state restored)."""
    from .._core.dispatch import OperatorHandle
    import operator
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    vals = [n.meta.get("val") for n in placeholders]
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    if len(vals) == len(inputs) and all(v is not None and tuple(v.shape) == tuple(t.shape) and v.stride() == t.stride()
                                        and v.dtype == t.dtype for v, t in zip(vals, inputs)) and \
            all(isinstance(n.target, OperatorHandle) or n.target is operator.getitem for n in calls) and \
            all("val" in n.meta for n in calls):
        return gm
    import ember
    from .._functorch import make_fx
    from .graph import NotLowerable
    state = ember.get_rng_state()
    try:
        with ember.no_grad():
            return make_fx(gm)(*inputs)
    except NotLowerable:
        raise
    except (RuntimeError, TypeError, ValueError, NotImplementedError) as e:
        raise NotLowerable(f"make_fx could not trace the graph: {type(e).__name__}: {e}") from e
    finally:
        ember.set_rng_state(state)


def graph_device(inputs) -> str:
    """Where a graph's kernels run: "cuda" when its inputs are CUDA tensors; "triton-cpu" for CPU
    inputs under config.cpu_codegen = "triton" (Triton's interpreter); else "cpu" (C)."""
    if inputs and inputs[0].device.type == "cuda":
        return "cuda"
    return "triton-cpu" if config.cpu_codegen == "triton" else "cpu"


def lower_and_schedule(aten_gm, inputs, device="cpu"):
    """The device-independent half: lowering, dead code elimination, the scheduler.
    Returns (GraphLowering, groups, reads, kept buffer names)."""
    from .graph import GraphLowering, _leaves
    from .scheduler import schedule
    from . import ir
    g = GraphLowering(aten_gm, inputs, "cuda" if device == "cuda" else "cpu", triton=device != "cpu").run()
    # outputs not yet in memory are computed into fresh buffers
    def realize_out(v):
        if isinstance(v, (list, tuple)):
            return type(v)(realize_out(x) for x in v)
        return g.realize(v) if isinstance(v, ir.Pointwise) else v
    g.outputs = realize_out(g.outputs)
    kept = {v.buffer.name for v in _leaves(g.outputs) if isinstance(v, ir.BufferValue)}
    for node in g.nodes:
        if isinstance(node, ir.ExternCall):
            kept |= {a.buffer.name for a in _leaves([node.args, list(node.kwargs.values())])
                     if isinstance(a, ir.BufferValue)}
    nodes = _dead_code_elimination(g.nodes, kept)
    groups = schedule(nodes, kept)
    reads = {b.name: b.reads() for gr in groups if not isinstance(gr, ir.ExternCall) for b in gr.members}
    return g, groups, reads, kept


def compile_graph(gm, inputs):
    """Lower, schedule, generate, compile and wrap: the wrapper GraphModule for these inputs; a graph
    already compiled on this machine (the graph cache) skips straight to the wrapper."""
    aten_gm = _aten_graph(gm, inputs)
    device = graph_device(inputs)
    key = graph_key(aten_gm, inputs)
    wrapper_gm = _from_graph_cache(key, aten_gm)
    if wrapper_gm is not None:
        return wrapper_gm
    from .codecache import cache_key, kernel_pointer, load_c
    from .codegen_c import generate_kernel, prelude
    from . import ir
    g, groups, reads, kept = lower_and_schedule(aten_gm, inputs, device)
    if device != "cpu":
        from .compile_triton import triton_wrapper
        wrapper_gm, payload = triton_wrapper(g, groups, reads, kept, aten_gm, device)
        _cache_put(key, payload)
        return wrapper_gm
    functions, kernels = [], {}
    for gr in groups:
        if isinstance(gr, ir.ExternCall):
            continue
        # names by position: the same graph gives the same source (a kernel-cache hit)
        name = f"ember_k{len(kernels)}_" + "_".join(_kind(b) for b in gr.members)[:40]
        src, bufs, checks = generate_kernel(gr, name, reads, config.threads)
        functions.append(src)
        kernels[id(gr)] = (name, bufs, checks)
    # one source (one compiler process) per graph: starting the compiler is most of its cost
    source = prelude() + "\n".join(functions)
    lib = load_c(source) if kernels else None
    fnptrs = {name: kernel_pointer(lib, name) for name, _, _ in kernels.values()}
    plan = plan_wrapper(g, groups, kernels, kept)
    wrapper_gm = build_wrapper(plan, fnptrs, aten_gm)
    trace_log("output_code", lambda: "WRAPPER\n" + wrapper_gm.code + "\nKERNELS\n" + "\n".join(functions))
    _cache_put(key, {"plan": plan, "library": cache_key(source) if kernels else None, "kernels": sorted(fnptrs)})
    return wrapper_gm


def _cache_put(key, payload):
    from .codecache import graph_cache_put
    if key is not None:
        try:
            graph_cache_put(key, payload)
        except (TypeError, ValueError) as e:     # an extern argument JSON cannot hold: not cached
            trace_log("output_code", lambda: f"ember._inductor: graph not cached: {e}")


_source_digest = None


def _fuser_digest() -> str:
    """A digest of the fuser's own source: a cached plan is only valid for the code that wrote it."""
    global _source_digest
    if _source_digest is None:
        import hashlib
        import os
        h = hashlib.sha256()
        here = os.path.dirname(os.path.abspath(__file__))
        for name in sorted(os.listdir(here)):
            if name.endswith(".py"):
                with open(os.path.join(here, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
        _source_digest = h.hexdigest()
    return _source_digest


def graph_text(aten_gm):
    """The graph as text for its cache key: every node's name, opcode, target and arguments, in order
    (what the generated code says, without generating it: a warm start that finds the graph's
    wrapper in the cache never generates the aten graph's Python). None when an argument has no
    text that is the same in every process (an object printed with its address)."""
    from ..fx.node import Node, _get_qualified_name
    lines = []

    def arg(v):
        if isinstance(v, Node):
            return "%" + v.name
        if isinstance(v, (tuple, list)):
            inner = ", ".join(arg(x) for x in v)
            return f"({inner},)" if isinstance(v, tuple) else f"[{inner}]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {arg(x)}" for k, x in v.items()) + "}"
        if isinstance(v, slice):
            return f"slice({arg(v.start)}, {arg(v.stop)}, {arg(v.step)})"
        text = repr(v)
        if " at 0x" in text:
            raise _NoStableText
        return text if v is None or isinstance(v, (bool, int, float, str)) else f"{type(v).__qualname__}:{text}"

    try:
        for n in aten_gm.graph.nodes:
            target = n.target if isinstance(n.target, str) else _get_qualified_name(n.target)
            lines.append(f"{n.name} = {n.op} {target} {arg(n.args)} {arg(n.kwargs)}")
    except _NoStableText:
        return None
    return "\n".join(lines)


class _NoStableText(Exception):
    pass


def graph_key(aten_gm, inputs):
    """The graph cache's key: the aten graph (graph_text), the layouts of its inputs and constants, the
    config the kernels depend on and the fuser's source (the toolchain is added by codecache).
    None when the graph is not cacheable (a constant that is not a plain tensor, an argument without
    a stable text)."""
    from .._core.tensor import Tensor
    import hashlib
    text = graph_text(aten_gm)
    if text is None:
        return None
    layouts = [(tuple(t.shape), t._data.strides, t.dtype.name) for t in inputs]
    for n in aten_gm.graph.nodes:
        if n.op == "get_attr":
            t = getattr(aten_gm, n.target, None)
            if not isinstance(t, Tensor):
                return None
            # a 0-d host constant's value: a device graph inlines it (GraphLowering's _host_scalar)
            value = repr(t.item()) if t.dim() == 0 and t.device.type == "cpu" else None
            layouts.append((n.target, tuple(t.shape), t._data.strides, t.dtype.name, value))
    device = graph_device(inputs)
    if device != "cpu":
        layouts.append(device)
    text = "\0".join(("ember-graph-plan-2", _fuser_digest(), text, repr(layouts), str(config.threads),
                      repr(config.cflags), str(config.use_libmvec), str(config.fallback_random)))
    return hashlib.sha256(text.encode()).hexdigest()


def _from_graph_cache(key, aten_gm):
    """The wrapper rebuilt from a cached plan (its kernels loaded by key, never compiled), or None."""
    if key is None:
        return None
    from . import codecache
    payload = codecache.graph_cache_get(key)
    if payload is None:
        return None
    try:
        if isinstance(payload.get("plan"), dict) and payload["plan"].get("device") in ("cuda", "triton-cpu"):
            from .compile_triton import from_payload
            wrapper_gm = from_payload(payload, aten_gm)
            if wrapper_gm is None:
                return None
            trace_log("output_code", lambda: "WRAPPER (from the graph cache)\n" + wrapper_gm.code)
            return wrapper_gm
        library, names = payload["library"], payload["kernels"]
        fnptrs = {}
        if library is not None:
            lib = codecache.load_cached(library)
            if lib is None:
                return None              # the kernels' library is gone: compile again (and re-put)
            fnptrs = {name: codecache.kernel_pointer(lib, name) for name in names}
        wrapper_gm = build_wrapper(payload["plan"], fnptrs, aten_gm)
    except (PlanMismatch, KeyError, TypeError, ValueError, AttributeError) as e:
        codecache.log.warning("ember cache: graph entry %s does not fit this graph (%s: %s); compiling it again",
                              key[:12], type(e).__name__, e)
        codecache._count("graph_rejected")
        return None
    trace_log("output_code", lambda: "WRAPPER (from the graph cache)\n" + wrapper_gm.code + "\nKERNELS: "
              + (codecache.kept_source_path(library) if library else "none"))
    return wrapper_gm


def _kind(buf):
    from . import ir
    body = buf.body
    return body.reduction_type if isinstance(body, ir.ReductionBody) else "pointwise"


def _dead_code_elimination(nodes, kept):
    from .graph import _leaves, ir
    needed, out = set(kept), []
    for node in reversed(nodes):
        if isinstance(node, ir.ExternCall):
            out.append(node)
            needed |= {a.buffer.name for a in _leaves([node.args, list(node.kwargs.values())])
                       if isinstance(a, ir.BufferValue)}
        elif node.name in needed:
            out.append(node)
            needed |= {p.name for p, _ in node.reads()}
    return out[::-1]
