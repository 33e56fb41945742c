"""The loop IR: what a lowered aten graph is before it becomes C.

    Expr                      an affine index: {loop variable: coefficient} + constant (views are
                              rewrites of these, so they copy nothing)
    ops.add(a, b, dtype)      the `ops` handler protocol: an `inner_fn(index)` body calls ops.*;
                              whoever runs it (codegen_c's C emitter, the dependency collector)
                              decides what a value is
    Value                     what a lowering returns (Inductor's TensorBox): shape, dtype, loader
      BufferValue             a strided window onto a Buffer (input, computed, extern output)
      Pointwise               `inner_fn(index)` not yet stored anywhere: inlined into its readers
    Buffer                    InputBuffer | ComputedBuffer(Pointwise | ReductionBody) | ExternBuffer

Realisation (a Pointwise becomes a ComputedBuffer): graph outputs, extern arguments, reshapes that
are not strided rewrites, and values read by several consumers whose body is expensive (see
`Pointwise.should_realize`). Everything else is inlined into the consumer: that is vertical fusion.
"""
from __future__ import annotations

import contextlib
import math

from .._core.storage import contiguous_strides  # noqa: F401  (the loop IR's row-major strides)
from .._core import dtype as _dt

# -- affine index expressions ------------------------------------------------------------------


class Expr:
    """sum(coeff * var) + const over loop variables (strings); immutable."""
    __slots__ = ("terms", "const")

    def __init__(self, terms=None, const=0):
        self.terms = {v: c for v, c in (terms or {}).items() if c}
        self.const = int(const)

    @staticmethod
    def var(name):
        return Expr({name: 1})

    def __add__(self, other):
        if isinstance(other, int):
            return Expr(self.terms, self.const + other)
        terms = dict(self.terms)
        for v, c in other.terms.items():
            terms[v] = terms.get(v, 0) + c
        return Expr(terms, self.const + other.const)

    def __mul__(self, k: int):
        return Expr({v: c * k for v, c in self.terms.items()}, self.const * k)

    def coeff(self, var) -> int:
        return self.terms.get(var, 0)

    def render(self, rename=None) -> str:
        """C text; `rename` maps a variable to a new name, or to None (merged into another loop)."""
        parts = []
        for v, c in self.terms.items():
            if rename is not None and v in rename:
                v = rename[v]
                if v is None:
                    continue
            parts.append(v if c == 1 else f"{c}*{v}")
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)

    def __repr__(self):
        return self.render()


# the term of an index that depends on loaded data (gather, index, embedding)
INDIRECT = Expr({"@indirect": 1})


def strided_index(index, strides, offset=0) -> Expr:
    out = Expr(const=offset)
    for i, s in zip(index, strides):
        out = out + i * s
    return out



# -- the ops handler ---------------------------------------------------------------------------


class _OpsProxy:
    """`ops.<name>(...)` calls the current handler's method (set with `set_handler`)."""
    handler = None

    def __getattr__(self, name):
        return getattr(_OpsProxy.handler, name)


ops = _OpsProxy()


@contextlib.contextmanager
def set_handler(handler):
    prev, _OpsProxy.handler = _OpsProxy.handler, handler
    try:
        yield handler
    finally:
        _OpsProxy.handler = prev


class DependencyCollector:
    """An ops handler that records loads [(buffer, Expr)] and nothing else (values are None)."""

    def __init__(self):
        self.loads = []

    def load(self, buf, index):
        self.loads.append((buf, index))

    def masked(self, mask, body, other, dtype):
        """A masked body's loads are recorded as if it always ran (its indices may leave the buffer
        where the mask is false, so the scheduler never takes them for row-local reads)."""
        body()

    def index_expr(self, expr, dtype):
        # a loop index used as a value (masks): recorded so that loop merging keeps its loops apart
        self.loads.append((INDEX_ONLY, expr))

    def rand(self, seed, offset, dtype):
        self.loads.append((INDEX_ONLY, offset))

    def load_indirect(self, buf, base, indirect):
        # the element read depends on data: recorded with a term no loop variable has, which the
        # scheduler treats as "anywhere in the buffer"
        self.loads.append((buf, base + INDIRECT))

    def __getattr__(self, name):
        return lambda *args, **kwargs: None

# -- buffers -----------------------------------------------------------------------------------

# dtypes the C code handles, by their C storage type; anything else runs its eager kernel (extern).
# float16/bfloat16 are stored as their bits and computed in float (codegen_c.ctype).
C_TYPES = {_dt.float32: "float", _dt.float64: "double", _dt.int64: "int64_t", _dt.int32: "int32_t",
           _dt.int16: "int16_t", _dt.int8: "int8_t", _dt.uint8: "uint8_t", _dt.bool_: "_Bool",
           _dt.float16: "uint16_t", _dt.bfloat16: "uint16_t"}


class Buffer:
    """Memory with a name, shape, dtype and element strides."""
    kind = "buffer"

    def __init__(self, name, shape, dtype, strides=None):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.strides = tuple(strides) if strides is not None else contiguous_strides(shape)

    @property
    def numel(self):
        return math.prod(self.shape)

    def __repr__(self):
        return f"{self.kind} {self.name}: {self.dtype} {list(self.shape)} strides {list(self.strides)}"


# the "buffer" of an index used as a value (never allocated, never read)
INDEX_ONLY = Buffer("@index", (), None)


class InputBuffer(Buffer):
    kind = "input"

    def __init__(self, name, shape, dtype, strides, position):
        super().__init__(name, shape, dtype, strides)
        self.position = position


class ComputedBuffer(Buffer):
    """A buffer written by a generated kernel: body is a PointwiseBody or a ReductionBody."""
    kind = "computed"

    def __init__(self, name, shape, dtype, body):
        super().__init__(name, shape, dtype)
        self.body = body

    def reads(self):
        """[(buffer, Expr)] over the body's canonical loop variables (i0.. outer, r0.. reduction)."""
        collector = DependencyCollector()
        with set_handler(collector):
            self.body.run(self.canonical_vars())
        return collector.loads

    def canonical_vars(self):
        return self.body.vars("i", "r")

    def __repr__(self):
        return super().__repr__() + f" = {self.body!r}"


class ExternBuffer(Buffer):
    """One output of an eager op called from the compiled graph (matmul, conv, anything unlowered)."""
    kind = "extern"

    def __init__(self, name, shape, dtype, strides, call, output_index):
        super().__init__(name, shape, dtype, strides)
        self.call, self.output_index = call, output_index


class ExternCall:
    """`op(*args, **kwargs)` run eagerly; tensor arguments are BufferValues, outputs ExternBuffers."""

    def __init__(self, name, op, args, kwargs):
        self.name, self.op, self.args, self.kwargs = name, op, args, kwargs
        self.outputs = []

    def __repr__(self):
        return f"extern {self.name} = {getattr(self.op, 'name', self.op)}"


class PointwiseBody:
    def __init__(self, ranges, inner_fn):
        self.ranges, self.inner_fn = tuple(ranges), inner_fn

    def vars(self, outer, _reduction):
        return [f"{outer}{d}" for d in range(len(self.ranges))], []

    def run(self, variables):
        return self.inner_fn([Expr.var(v) for v in variables[0]])

    def __repr__(self):
        return f"pointwise{list(self.ranges)}"


class ReductionBody:
    """reduction_type over reduction_ranges of inner_fn(index, rindex), for each index in ranges.

    reduction_type: sum prod max min any all argmax argmin, welford_mean welford_m2 (the running
    mean / sum of squared deviations of Welford's one pass). src_dtype is what inner_fn yields."""

    def __init__(self, ranges, reduction_ranges, reduction_type, inner_fn, src_dtype):
        self.ranges, self.reduction_ranges = tuple(ranges), tuple(reduction_ranges)
        self.reduction_type, self.inner_fn, self.src_dtype = reduction_type, inner_fn, src_dtype

    def vars(self, outer, reduction):
        return ([f"{outer}{d}" for d in range(len(self.ranges))],
                [f"{reduction}{d}" for d in range(len(self.reduction_ranges))])

    def run(self, variables):
        outer, rvars = variables
        return self.inner_fn([Expr.var(v) for v in outer], [Expr.var(v) for v in rvars])

    def __repr__(self):
        return f"{self.reduction_type}{list(self.ranges)} over {list(self.reduction_ranges)}"

class ScatterBody:
    """out = copy of base_fn(index) over `ranges`, then, serially in order over `update_ranges`,
    out[positions(rindex)] (+)= value_fn(rindex): positions gives, per dim of out, an Expr or a
    loaded index (checked in the kernel, `op` names the error). A serial loop: duplicate indices
    accumulate (or the last write wins) exactly as eager's loop does, whatever config.threads is."""

    def __init__(self, ranges, base_fn, update_ranges, positions, value_fn, accumulate, op, wrap):
        self.ranges, self.base_fn, self.update_ranges = tuple(ranges), base_fn, tuple(update_ranges)
        self.positions, self.value_fn, self.accumulate, self.op, self.wrap = positions, value_fn, accumulate, op, wrap

    def vars(self, outer, reduction):
        return ([f"{outer}{d}" for d in range(len(self.ranges))],
                [f"{reduction}{d}" for d in range(len(self.update_ranges))])

    def run(self, variables):
        outer, rvars = variables
        self.base_fn([Expr.var(v) for v in outer])
        ridx = [Expr.var(v) for v in rvars]
        for p in self.positions(ridx):
            if not isinstance(p, Expr):
                ops.check_index(p, 1, self.wrap, self.op)
        self.value_fn(ridx)

    def __repr__(self):
        return f"scatter{list(self.ranges)} from {list(self.update_ranges)}"

# -- values (what lowerings pass around) -------------------------------------------------------


class Value:
    shape: tuple
    dtype: object

    def make_loader(self):
        raise NotImplementedError


class BufferValue(Value):
    """A strided window (shape, strides, offset in elements) onto `buffer`; views rewrite these."""

    def __init__(self, buffer, shape=None, strides=None, offset=0):
        self.buffer = buffer
        self.shape = tuple(buffer.shape if shape is None else shape)
        self.strides = tuple(buffer.strides if strides is None else strides)
        self.offset = offset
        self.dtype = buffer.dtype

    def make_loader(self):
        buf, strides, offset = self.buffer, self.strides, self.offset
        return lambda index: ops.load(buf, strided_index(index, strides, offset))

    def is_whole_buffer(self):
        b = self.buffer
        return self.shape == b.shape and self.strides == b.strides and self.offset == 0

    def is_contiguous(self):
        return self.strides == contiguous_strides(self.shape) or math.prod(self.shape) <= 1


class Pointwise(Value):
    """A value defined by `inner_fn(index) -> ops value`, inlined wherever it is read."""

    def __init__(self, shape, dtype, inner_fn, cost=1):
        self.shape, self.dtype, self.inner_fn = tuple(shape), dtype, inner_fn
        self.cost = cost        # ops in the body (inlined reads included): the realisation heuristic

    def make_loader(self):
        return self.inner_fn

    # a value read by more than one consumer is stored once its body costs more than this many ops
    # (re-computing it in each reader would then cost more than the extra memory traffic)
    SHARED_COST_LIMIT = 12
    # any body this large is stored (bounds the size of generated loops)
    COST_LIMIT = 200

    def should_realize(self, num_users: int) -> bool:
        return self.cost > self.COST_LIMIT or (num_users > 1 and self.cost > self.SHARED_COST_LIMIT)


def cost_of(value) -> int:
    return value.cost if isinstance(value, Pointwise) else 1
