"""``ember.compile(..., mode="reduce-overhead")``: compiled callables replayed from CUDA graphs
(ember/_cuda/graphs.py), PyTorch's cudagraph trees in their simplest form.

`cudagraphify(compiled, gm)` wraps a compiled callable for graph `gm`: under the AOT backends
("inductor", "aot_eager": `aot_backend`) the forward and the backward AOT autograd compiled,
tensors in and out after the partition, so training steps replay too; under any other backend
the callable the backend returned. Per input signature (shapes, strides, dtypes and devices; by
address too for *stable* inputs: nn.Parameters, used in place, and outputs of another graph's
replay, such as the activations a forward saved for its backward):

- the first call of a layout is a warm-up: the compiled call as it is (it compiles kernels, creates
  handles);
- the second records: static input buffers of the same layout for the inputs that are not
  stable, the compiled call captured once into a graph whose memory is its own pool (forward and
  backward have a pool each, so a backward's replay leaves the saved activations alone), then
  replayed;
- later calls copy each such input into its static buffer and replay. The outputs are new tensor
  objects over the graph's output buffers; an output that is an input (or a view of one) is
  the caller's input (or that view of it). Before the next replay, any output still held (the
  loss kept by the caller, the saved values of a forward whose backward has not run) is moved
  to a copy of its own (ember/_cuda/replay_outputs.py), where PyTorch would raise on access;
  where a holder cannot be moved (a view of an output) that one call runs without its graph.

The compiled call runs as it is (and says why once, under EMBER_LOGS=cudagraphs) where a
replay could not be exact: an input or output not on the GPU (reduce-overhead on the CPU is the
default mode, as PyTorch skips cudagraphs for CPU graphs), grad mode on with an input that
requires grad outside AOT autograd (a replay would not record the backward), random ops (ember
draws on the host; dropout with p=0 draws nothing), an input mutated in place (the static
buffer, not the caller's tensor, would change), or any op the capture refused (a host sync such
as ``.item()``).
"""
from __future__ import annotations

from ...autograd.grad_mode import is_grad_enabled
from ..._core.dispatch import CUDA_BIT
from ..._core.tensor import Tensor, alias
from ..._logging import trace_log

_RANDOM = frozenset((
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "normal", "normal_",
    "uniform_", "bernoulli", "bernoulli_", "exponential_", "geometric_", "log_normal_", "cauchy_", "random_",
    "multinomial", "poisson", "native_dropout", "dropout", "dropout_", "dropout1d", "dropout2d", "dropout3d",
    "alpha_dropout", "alpha_dropout_", "feature_dropout", "feature_alpha_dropout", "rrelu", "rrelu_",
    "gumbel_softmax", "draw_seed"))
# functional forms whose randomness depends on a `training` argument: (its position, its default)
_TRAINING_ARG = {"dropout": (2, True), "dropout1d": (2, True), "dropout2d": (2, True), "dropout3d": (2, True),
                 "alpha_dropout": (2, False), "feature_alpha_dropout": (2, False), "rrelu": (3, False)}
_NOT_REPLAYED = object()    # _Record.run's answer when an output it must overwrite cannot be moved
_POOL = object()            # an output spec: an alias of the output's buffer in the graph's pool
_pool_owner: dict = {}      # allocation address of a recorded graph's output -> id of its _Graphed


def _random_op(gm):
    """The name of the first random op of graph `gm` (one that draws when it runs), or None."""
    for node in gm.graph.nodes:
        if node.op == "call_function":     # a Python function, or an aten overload ("dropout.default")
            name = getattr(node.target, "__name__", "").split(".")[0]
        elif node.op == "call_method":
            name = node.target
        else:
            continue
        if name not in _RANDOM:
            continue
        position, default = _TRAINING_ARG.get(name, (None, True))
        if node.op == "call_function" and position is not None:
            training = node.args[position] if len(node.args) > position else node.kwargs.get("training", default)
            p = node.args[1] if len(node.args) > 1 else node.kwargs.get("p", 0.5)
            if training is False or (type(p) in (int, float) and p == 0):   # (the kernels return the input)
                continue
        return name
    return None


def aot_backend(registered):
    """The AOT backend `registered` ("inductor", "aot_eager") whose compiled forwards and backwards
    are replayed from CUDA graphs; None for a backend not built on AOT autograd."""
    from . import aot_eager, inductor
    from .common import aot_autograd, nop
    if registered is inductor:
        from ..._inductor.compile_fx import compile_fx as compiler
    elif registered is aot_eager:
        compiler = nop
    else:
        return None

    def compile_then_cudagraphify(gm, example_inputs):
        return cudagraphify(compiler(gm, example_inputs), gm)
    return aot_autograd(fw_compiler=compile_then_cudagraphify, bw_compiler=compile_then_cudagraphify)


def cudagraphify(compiled, gm):
    """`compiled` (a backend's callable for `gm`) replayed from CUDA graphs where that is exact."""
    random_op = _random_op(gm)
    return _Graphed(compiled, None if random_op is None else f"the graph has random ops ({random_op}): ember's "
                    f"CUDA random ops are seeded on the host per draw, so a replay would repeat one draw")


class _Graphed:
    __slots__ = ("compiled", "never", "records", "warmed", "logged", "__weakref__")

    def __init__(self, compiled, never):
        self.compiled, self.never = compiled, never
        self.records: dict = {}       # signature -> a _Record, or the reason (str) it runs as it is
        # layout (the signature without addresses) -> None once warmed up, or the reason it runs as it is:
        # a backward whose saved inputs move into the forward's pool records without a second warm-up
        self.warmed: dict = {}
        self.logged: set = set()

    def _skip(self, reason):
        if reason not in self.logged:
            self.logged.add(reason)
            trace_log("cudagraphs", lambda: f"skipping cudagraphs due to {reason}")

    def __call__(self, *args):
        if self.never is not None:
            self._skip(self.never)
            return self.compiled(*args)
        key = _signature(args, id(self))
        if key.__class__ is str:
            self._skip(key)
            return self.compiled(*args)
        record = self.records.get(key)
        if record is None:
            layout = tuple(k[:4] + (0,) if len(k) == 5 else k for k in key)
            if layout not in self.warmed:
                return self._warm_up(layout, args)
            record = self.records[key] = self.warmed[layout] or _record(self.compiled, args, key, id(self))
        if record.__class__ is str:
            self._skip(record)
            return self.compiled(*args)
        out = record.run(args)
        if out is _NOT_REPLAYED:
            self._skip("an output of the previous replay held where it cannot be moved (a view of it, "
                       "an alias made of it) (that call only)")
            return self.compiled(*args)
        return out

    def _warm_up(self, layout, args):
        versions = [_version(a) for a in args if isinstance(a, Tensor)]
        out = self.compiled(*args)
        inputs = [a for a in args if isinstance(a, Tensor)]
        outputs = [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, Tensor)]
        reason = None
        if versions != [_version(a) for a in inputs]:
            reason = "mutated inputs"
        elif any(not o._keys & CUDA_BIT for o in outputs):
            reason = "cpu device (an output is not on the GPU)"
        self.warmed[layout] = reason
        if reason is not None:
            self._skip(reason)
        return out


def _version(t) -> int:
    counter = t._version_counter
    return 0 if counter is None else counter.value


def _signature(args, owner):
    """The key of `args`' graph, or why they cannot be replayed from one (a str). A stable input
    (module docstring) is keyed by its address too (0 for the others): the graph reads it there."""
    from ...nn.parameter import Parameter
    grad = is_grad_enabled()
    key = []
    for a in args:
        if isinstance(a, Tensor):
            if not a._keys & CUDA_BIT:
                return "cpu device (an input is not on the GPU)"
            if grad and a.requires_grad:
                return "an input requiring grad under grad mode (the backward would not be captured)"
            d = a._data
            pointer = d.data
            stable = pointer.ptr and (isinstance(a, Parameter) or _pool_owner.get(pointer.mem.ptr, owner) != owner)
            key.append((d.shape, d.strides, d.dtype, pointer.device_id, pointer.ptr if stable else 0))
        else:
            try:
                hash(a)
            except TypeError:
                return f"an input of type {type(a).__name__}"
            key.append((type(a), a))
    return tuple(key)


def _static_like(t):
    """A new CUDA tensor with `t`'s shape, strides and dtype (its own allocation), holding `t`'s values."""
    import cupy
    from ..._cuda.kernels import wrap_cuda
    d = t._data
    extent = d.itemsize + sum((n - 1) * s for n, s in zip(d.shape, d.strides)) if d.size else 0
    memory = cupy.cuda.alloc(max(extent, 1))
    static = cupy.ndarray(d.shape, d.dtype, memory, d.strides)
    cupy.copyto(static, d)
    return wrap_cuda(static)


def _record(compiled, args, key, owner):
    """Capture `compiled` on `args`, those not stable replaced by static copies: a _Record, or why
    the capture failed (a str)."""
    import weakref
    from ..._cuda.graphs import CUDAGraph, graph
    if any(isinstance(a, Tensor) and any(s < 0 for s in a._data.strides) for a in args):
        return "negative strides"
    statics = [_static_like(a) if isinstance(a, Tensor) and not k[4] else a for a, k in zip(args, key)]
    cuda_graph = CUDAGraph()
    try:
        with graph(cuda_graph):
            out = compiled(*statics)
    except (RuntimeError, NotImplementedError) as e:   # refusals: a host sync (CuPy), a host draw (ember) ...
        return f"an op the capture refused ({_where(e)}): {e}"
    flat = out if isinstance(out, (tuple, list)) else (out,)
    specs = [_output_spec(o, statics) for o in flat]
    reason = next((s for s in specs if s.__class__ is str), None)      # (why an output cannot be returned)
    if reason is not None:
        return reason
    record = _Record(cuda_graph, args, statics, out, specs)
    allocations = {a.data.mem.ptr for a in record.outputs.arrays}
    for ptr in allocations:
        _pool_owner[ptr] = owner
    weakref.finalize(record, _forget_pool, allocations)
    return record


def _where(error) -> str:
    """The innermost ember function `error` passed through ("ember/ops/cpu/indexing.py:_oob"): which
    kernel read the device, for the log."""
    import traceback
    frames = [f for f in traceback.extract_tb(error.__traceback__) if "/ember/" in f.filename.replace("\\", "/")]
    if not frames:
        return "outside ember"
    path = frames[-1].filename.replace("\\", "/")
    return f"{path[path.rindex('/ember/') + 1:]}:{frames[-1].name}"


def _forget_pool(allocations):
    for ptr in allocations:
        _pool_owner.pop(ptr, None)


def _output_spec(o, statics):
    """How a replay returns output `o` of the capture: _POOL (an alias of its buffer in the graph's
    pool); (i, None) for input i itself; (i, (size, stride, offset from the input's)) for a view
    of input i, taken of the caller's input; None for a value that is not a tensor. A str: why not."""
    if not isinstance(o, Tensor):
        return None
    for i, s in enumerate(statics):
        if o is s:
            return i, None
        if isinstance(s, Tensor) and o._data.size and s._data.size and o._data.data.mem is s._data.data.mem:
            item = o._data.itemsize
            delta, rest = divmod(o._data.data.ptr - s._data.data.ptr, item)
            if rest or item != s._data.itemsize:
                return "an output viewing an input with another dtype"
            return i, (tuple(o.shape), tuple(o.stride()), delta)
    return _POOL


class _Record:
    """One captured graph: its static inputs (those copied on each call) and outputs."""

    __slots__ = ("graph", "copied", "out", "specs", "flat", "outputs", "__weakref__")

    def __init__(self, cuda_graph, args, statics, out, specs):
        from ..._cuda.replay_outputs import ReplayOutputs, cupy_memory
        self.graph = cuda_graph
        self.copied = [(i, s._data, s._data.flags.c_contiguous) for i, (a, s) in enumerate(zip(args, statics))
                       if s is not a]
        self.flat = isinstance(out, (tuple, list))
        self.out = out if self.flat else (out,)
        self.specs = specs
        self.outputs = ReplayOutputs([o._data for o, spec in zip(self.out, specs) if spec is _POOL and o._data.size],
                                     cupy_memory())

    def run(self, args):
        """The outputs of one replay on `args`; _NOT_REPLAYED where an output still held cannot be moved."""
        import cupy
        outputs = self.outputs
        moves = outputs.moves()
        if moves is None:
            return _NOT_REPLAYED
        if moves:
            outputs.move(moves)
        for i, static, contiguous in self.copied:
            source = args[i]._data
            if contiguous and source.flags.c_contiguous:
                static.data.copy_from_device_async(source.data, static.nbytes)
            else:
                cupy.copyto(static, source)
        self.graph.replay()
        result, handed, made = [], [], {}
        for o, spec in zip(self.out, self.specs):
            if spec is _POOL:      # one alias per captured tensor: an output returned twice is one object
                if id(o) not in made:
                    made[id(o)] = alias(o, o._keys)
                    handed.append(made[id(o)])
                o = made[id(o)]
            elif spec is not None:
                i, view = spec
                o = args[i] if view is None else args[i].as_strided(view[0], view[1],
                                                                     args[i].storage_offset() + view[2])
            result.append(o)
        outputs.handed_out(handed)
        if not self.flat:
            return result[0]
        return type(self.out)(result)
