"""``ember.compile(..., mode="reduce-overhead")``: the backend's compiled callable replayed from
CUDA graphs (ember/_cuda/graphs.py), PyTorch's cudagraph trees in their simplest form.

`cudagraphify(compiled, gm)` wraps what a backend returned for graph `gm`. Per input signature
(shapes, strides, dtypes and devices; nn.Parameters also by address, as they are used in place):

- the first call is a warm-up: the compiled call as it is (it compiles kernels, creates handles);
- the second records: static input buffers of the same layout, the compiled call captured once
  into a graph whose memory is its own pool, then replayed;
- later calls copy each input into its static buffer and replay. The outputs are new tensor
  objects over the graph's static output buffers, which the next replay of the same graph
  *overwrites* (PyTorch's behaviour): clone an output to keep it across calls.

The compiled call runs as it is (and says why once, under EMBER_LOGS=cudagraphs) where a
replay could not be exact: an input or output not on the GPU (reduce-overhead on the CPU is the
default mode, as PyTorch skips cudagraphs for CPU graphs), grad mode on with an input that
requires grad (a replay would not record the backward), random ops (ember draws on the host), an
input mutated in place or an output aliasing an input (the static buffer, not the caller's
tensor, would change), or any op the capture refused (a host sync such as ``.item()``).
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
_WARM = "warm"     # a signature whose warm-up ran: the next call records


def _random_op(gm):
    """The name of the first random op of graph `gm` (one that draws when it runs), or None."""
    for node in gm.graph.nodes:
        if node.op == "call_function":
            name = getattr(node.target, "__name__", "")
        elif node.op == "call_method":
            name = node.target
        else:
            continue
        if name not in _RANDOM:
            continue
        position, default = _TRAINING_ARG.get(name, (None, True))
        if node.op == "call_function" and position is not None:
            training = node.args[position] if len(node.args) > position else node.kwargs.get("training", default)
            if training is False:
                continue
        return name
    return None


def cudagraphify(compiled, gm):
    """`compiled` (a backend's callable for `gm`) replayed from CUDA graphs where that is exact."""
    random_op = _random_op(gm)
    return _Graphed(compiled, None if random_op is None else f"the graph has random ops ({random_op}): ember's "
                    f"CUDA random ops are seeded on the host per draw, so a replay would repeat one draw")


class _Graphed:
    __slots__ = ("compiled", "never", "records", "logged", "__weakref__")

    def __init__(self, compiled, never):
        self.compiled, self.never = compiled, never
        self.records: dict = {}       # signature -> _WARM, a reason (str) it runs as it is, or a _Record
        self.logged: set = set()

    def _skip(self, reason):
        if reason not in self.logged:
            self.logged.add(reason)
            trace_log("cudagraphs", lambda: f"skipping cudagraphs due to {reason}")

    def __call__(self, *args):
        if self.never is not None:
            self._skip(self.never)
            return self.compiled(*args)
        key = _signature(args)
        if key.__class__ is str:
            self._skip(key)
            return self.compiled(*args)
        record = self.records.get(key)
        if record is None:
            self.records[key] = _WARM
            return self._warm_up(key, args)
        if record is _WARM:
            record = self.records[key] = _record(self.compiled, args)
        if record.__class__ is str:
            self._skip(record)
            return self.compiled(*args)
        return record.run(args)

    def _warm_up(self, key, args):
        versions = [_version(a) for a in args if isinstance(a, Tensor)]
        out = self.compiled(*args)
        inputs = [a for a in args if isinstance(a, Tensor)]
        outputs = [o for o in (out if isinstance(out, (tuple, list)) else (out,)) if isinstance(o, Tensor)]
        reason = None
        if versions != [_version(a) for a in inputs]:
            reason = "mutated inputs"
        elif any(not o._keys & CUDA_BIT for o in outputs):
            reason = "cpu device (an output is not on the GPU)"
        elif {_allocation(o) for o in outputs if o._data.size} & {_allocation(a) for a in inputs if a._data.size}:
            reason = "an output aliasing an input"
        if reason is not None:
            self.records[key] = reason
            self._skip(reason)
        return out


def _version(t) -> int:
    counter = t._version_counter
    return 0 if counter is None else counter.value


def _allocation(t) -> int:
    return t._data.data.mem.ptr


def _signature(args):
    """The key of `args`' graph, or why they cannot be replayed from one (a str)."""
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
            key.append((d.shape, d.strides, d.dtype, d.device.id, d.data.ptr if isinstance(a, Parameter) else 0))
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


def _record(compiled, args):
    """Capture `compiled` on static copies of `args`: a _Record, or why the capture failed (a str)."""
    from ...nn.parameter import Parameter
    from ..._cuda.graphs import CUDAGraph, graph
    if any(isinstance(a, Tensor) and any(s < 0 for s in a._data.strides) for a in args):
        return "negative strides"
    statics = [_static_like(a) if isinstance(a, Tensor) and not isinstance(a, Parameter) else a for a in args]
    cuda_graph = CUDAGraph()
    try:
        with graph(cuda_graph):
            out = compiled(*statics)
    except (RuntimeError, NotImplementedError) as e:   # refusals: a host sync (CuPy), a host draw (ember) ...
        return f"an op the capture refused: {e}"
    return _Record(cuda_graph, args, statics, out)


class _Record:
    """One captured graph: its static inputs (those copied on each call) and outputs."""

    __slots__ = ("graph", "copied", "out", "flat")

    def __init__(self, cuda_graph, args, statics, out):
        self.graph = cuda_graph
        self.copied = [(i, s._data, s._data.flags.c_contiguous) for i, (a, s) in enumerate(zip(args, statics))
                       if s is not a]
        self.out = out
        self.flat = isinstance(out, (tuple, list))

    def run(self, args):
        import cupy
        for i, static, contiguous in self.copied:
            source = args[i]._data
            if contiguous and source.flags.c_contiguous:
                static.data.copy_from_device_async(source.data, static.nbytes)
            else:
                cupy.copyto(static, source)
        self.graph.replay()
        out = self.out
        if not self.flat:
            return alias(out, out._keys) if isinstance(out, Tensor) else out
        return type(out)(alias(o, o._keys) if isinstance(o, Tensor) else o for o in out)
