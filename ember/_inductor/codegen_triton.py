"""Triton code generation: a FusedGroup -> one @triton.jit kernel (Inductor's codegen/triton.py).

    text, meta = generate_kernel(group, "ember_k0", reads)     # the same scheduler output codegen_c reads

Two kernel shapes, chosen from the group's loops:

    flat   every member is pointwise over the group's outer loops (no inner loops): one program per
           XBLOCK elements of the flattened outer index (merged like the C loops, masked tail)
    row    one program per outer iteration (a row: softmax, layer_norm, a reduction's output
           element); each member with inner loops runs over a flattened `r` index. When the
           longest inner range fits one block (<= PERSISTENT_LIMIT) the row is *persistent*:
           every member shares one block of lanes, a load is CSE'd across members (layer_norm
           reads x once) and a row-local pointwise member read at its own element stays in
           registers (softmax's exp); otherwise each member is a loop over RBLOCK-sized chunks
           with a per-lane accumulator (Welford's (mean, m2, n) for var), reduced at the end.

Values are computed as codegen_c computes them: bf16/f16 loaded into float32 and rounded back
when stored, max/min propagate NaN, integer division follows Python and a zero divisor sets an
error bit; data-dependent index checks OR codegen_c.KERNEL_ERRORS bits into an int32 word (the
kernel's last argument) the wrapper reads, and a bad index is never used to read (0 instead).
The launch facts (grid, warps, block sizes) go with the source in `meta`; triton_launch runs it.
"""
from __future__ import annotations

import math

from .._core import dtype as _dt
from . import ir
from .codegen_c import ERROR_BIT, HALF, merge_loops

TL = {_dt.float32: "tl.float32", _dt.float64: "tl.float64", _dt.int64: "tl.int64", _dt.int32: "tl.int32",
      _dt.int16: "tl.int16", _dt.int8: "tl.int8", _dt.uint8: "tl.uint8", _dt.bool_: "tl.int1",
      _dt.float16: "tl.float16", _dt.bfloat16: "tl.bfloat16"}
HEADER = ("import triton\nimport triton.language as tl\n"
          "from ember._inductor.triton_helpers import (libdevice, nanmax, nanmin, prod, argmax, argmin, welford,\n"
          "    int_floordiv, int_remainder, int_fmod, int_truncdiv, float_floordiv, float_remainder, set_error,\n"
          "    div_rn, sqrt_rn)\n")
PERSISTENT_LIMIT = 8192         # elements of the longest inner range a persistent row keeps in registers
LOOP_RBLOCK = 2048              # chunk of a looped row
XBLOCK = 1024                   # elements per program of a flat kernel (the autotuner may change it)


def compute_tl(dtype) -> str:
    """The Triton type a value of `dtype` is computed in (16-bit floats: float32)."""
    return "tl.float32" if dtype in HALF else TL[dtype]


def literal(value, dtype) -> str:
    if dtype.is_floating_point:
        value = float(value)
        text = repr(value) if math.isfinite(value) else f"float('{value}')"
    elif dtype == _dt.bool_:
        text = "1" if value else "0"
    else:
        text = str(int(value))
    return f"tl.full([], {text}, {compute_tl(dtype)})"


_UNARY = {
    "neg": "(-{x})", "abs": "tl.abs({x})", "sqrt": "sqrt_rn({x})", "rsqrt": "div_rn(1.0, sqrt_rn({x}))",
    "reciprocal": "div_rn(1.0, {x})", "exp": "tl.exp({x})", "log": "tl.log({x})", "sin": "tl.sin({x})",
    "cos": "tl.cos({x})", "log2": "tl.log2({x})", "floor": "tl.floor({x})", "ceil": "tl.ceil({x})",
    "sigmoid": "div_rn(1.0, 1.0 + tl.exp(-{x}))", "silu": "div_rn({x}, 1.0 + tl.exp(-{x}))",
    "round": "libdevice.nearbyint({x})", "relu": "tl.where({x} < 0, 0, {x})", "frac": "({x} - libdevice.trunc({x}))",
    "square": "({x} * {x})", "sign": "tl.where({x} > 0, 1, tl.where({x} < 0, -1, {x})).to({x}.dtype)",
    "gelu": "(0.5 * {x} * (1.0 + libdevice.erf({x} * 0.7071067811865476)))",
    "gelu_tanh": "div_rn({x}, 1.0 + tl.exp(-1.5957691216057308 * ({x} + 0.044715 * {x} * {x} * {x})))",
    "isnan": "({x} != {x})", "isinf": "(tl.abs({x}) == float('inf'))", "isfinite": "(tl.abs({x}) < float('inf'))",
    "logical_not": "({x} == 0)", "trunc": "libdevice.trunc({x})"}
for _f in ("tanh", "erf", "erfc", "log1p", "expm1", "log10", "exp2", "tan", "asin", "acos", "atan", "sinh", "cosh",
           "asinh", "acosh", "atanh"):
    _UNARY[_f] = f"libdevice.{_f}({{x}})"
_INT_UNARY = {"neg": "(-{x})", "abs": "tl.abs({x})", "floor": "{x}", "ceil": "{x}", "trunc": "{x}", "round": "{x}",
              "relu": "tl.where({x} < 0, 0, {x}).to({x}.dtype)", "square": "({x} * {x})",
              "sign": "(({x} > 0).to(tl.int64) - ({x} < 0).to(tl.int64)).to({x}.dtype)", "bitwise_not": "(~{x})",
              "logical_not": "({x} == 0)", "isnan": "({x} != {x})", "isinf": "({x} != {x})", "isfinite": "({x} == {x})"}
_BOOL_UNARY = dict(_INT_UNARY, neg="({x} == 0)", bitwise_not="({x} == 0)", abs="{x}", square="{x}", sign="{x}",
                   relu="{x}")
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_FLOAT_BINARY = {
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "truediv": "div_rn({a}, {b})",
    "maximum": "nanmax({a}, {b})", "minimum": "nanmin({a}, {b})", "pow": "libdevice.pow({a}, {b})",
    "atan2": "libdevice.atan2({a}, {b})", "copysign": "libdevice.copysign({a}, {b})", "fmod": "libdevice.fmod({a}, {b})",
    "floordiv": "float_floordiv({a}, {b})", "remainder": "float_remainder({a}, {b})",
    "truncdiv": "libdevice.trunc(div_rn({a}, {b}))", "clamp_min": "tl.where({a} < {b}, {b}, {a})",
    "clamp_max": "tl.where({a} > {b}, {b}, {a})"}
_INT_BINARY = {
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "maximum": "tl.maximum({a}, {b})",
    "minimum": "tl.minimum({a}, {b})", "bitwise_and": "({a} & {b})", "bitwise_or": "({a} | {b})",
    "bitwise_xor": "({a} ^ {b})", "floordiv": "int_floordiv({a}, {b})", "remainder": "int_remainder({a}, {b})",
    "fmod": "int_fmod({a}, {b})", "truncdiv": "int_truncdiv({a}, {b})",
    "clamp_min": "tl.where({a} < {b}, {b}, {a})", "clamp_max": "tl.where({a} > {b}, {b}, {a})"}
_BOOL_BINARY = {"add": "({a} | {b})", "mul": "({a} & {b})", "maximum": "({a} | {b})", "minimum": "({a} & {b})",
                "bitwise_and": "({a} & {b})", "bitwise_or": "({a} | {b})", "bitwise_xor": "({a} ^ {b})"}
_LOGICAL = {"logical_and": "(({a} != 0) & ({b} != 0))", "logical_or": "(({a} != 0) | ({b} != 0))",
            "logical_xor": "(({a} != 0) != ({b} != 0))"}


class Unsupported(Exception):
    """The Triton generator cannot express this group (the graph then runs its ops eagerly)."""


class TritonEmitter:
    """The ops handler that writes Triton: one `tN = expr` line per op (common ones shared)."""

    def __init__(self, kernel, lines, rename, locals_, mask, cse=None):
        self.kernel, self.lines, self.rename, self.locals, self.mask = kernel, lines, rename, locals_, mask
        self.cse = {} if cse is None else cse

    def _emit(self, expr):
        if expr not in self.cse:
            name = self.kernel.temp()
            self.lines.append(f"{name} = {expr}")
            self.cse[expr] = name
        return self.cse[expr]

    def _mask_arg(self):
        return f", mask={self.mask}, other=0" if self.mask else ""

    def _address(self, base, index):
        """`base + index`, made a block of the lanes' shape when a masked load's index has no lane
        variable (a row's value broadcast along it): Triton wants pointer and mask of one shape."""
        text = f"{base} + ({index.render(self.rename)})"
        lane, names = self.kernel.lane
        if lane and self.mask and not any(self.rename.get(v, v) in names for v in index.terms):
            text += f" + 0 * {lane}"
        return text

    def load(self, buf, index):
        if buf.name in self.locals:
            return self.locals[buf.name]
        if buf.name in self.kernel.recompute:
            member, rename = self.kernel.recompute[buf.name]
            outer_rename, self.rename = self.rename, rename
            try:
                return member.body.run((member.canonical_vars()[0], []))
            finally:
                self.rename = outer_rename
        reg = self.kernel.registers.get(buf.name)
        if reg is not None and reg[0] == index.render(self.rename):
            return reg[1]
        self.kernel.use(buf)
        text = f"tl.load({self._address(buf.name, index)}{self._mask_arg()})"
        if buf.dtype in HALF:
            text += ".to(tl.float32)"
        return self._emit(text)

    def constant(self, value, dtype):
        return literal(value, dtype)

    def index_expr(self, expr, dtype):
        text = expr.render(self.rename)
        if not expr.terms or text.lstrip("-").isdigit():    # renamed to a constant (a range of one lane)
            return literal(int(text) if expr.terms else expr.const, dtype)
        return self._emit(f"({text}).to({compute_tl(dtype)})")

    def rand(self, seed, offset, dtype):
        raise Unsupported("in-kernel random numbers (config.fallback_random is off)")

    def masked(self, mask, body, other, dtype):
        outer_lines, outer_cse, outer_mask = self.lines, self.cse, self.mask
        self.mask = f"({outer_mask}) & ({mask})" if outer_mask else mask
        self.cse = dict(outer_cse)         # values made inside are not visible outside
        try:
            value = body()
        finally:
            self.cse, self.mask = outer_cse, outer_mask
        return self._emit(f"tl.where({mask}, {value}, {literal(other, dtype)})")

    def _error_where(self, bad, op):
        self.kernel.checks_errors = True
        cond = f"({bad}) & ({self.mask})" if self.mask else bad
        self.lines.append(f"set_error(err_flag, {cond}, {ERROR_BIT[op]})")

    def check_index(self, index, size, wrap, op):
        i = self._emit(f"({index}).to(tl.int64)")
        if wrap:
            i = self._emit(f"tl.where({i} < 0, {i} + {size}, {i})")
        bad = self._emit(f"(({i} < 0) | ({i} >= {size}))")
        self._error_where(bad, op)
        return self._emit(f"tl.where({bad}, 0, {i})")

    def load_indirect(self, buf, base, indirect):
        self.kernel.use(buf)
        terms = [f"({base.render(self.rename)})"] + [f"{stride} * {i}" for i, stride in indirect if stride]
        text = f"tl.load({buf.name} + {' + '.join(terms)}{self._mask_arg()})"
        return self._emit(text + ".to(tl.float32)" if buf.dtype in HALF else text)

    def to_dtype(self, x, src, dst):
        if dst == _dt.bool_:
            return self._emit(f"({x} != 0)")
        if dst in HALF:                     # a cast to a 16-bit float rounds like storing it
            return self._emit(f"({x}).to({TL[dst]}).to(tl.float32)")
        return self._emit(f"({x}).to({TL[dst]})")

    def where(self, c, a, b, dtype):
        return self._emit(f"tl.where({c}, {a}, {b})")

    def unary(self, name, x, dtype):
        if dtype.is_floating_point:
            table = _UNARY
        else:
            table = _BOOL_UNARY if dtype == _dt.bool_ else _INT_UNARY
        return self._emit(table[name].format(x=x))

    def binary(self, name, a, b, dtype):
        if name in _COMPARE:
            return self._emit(f"({a} {_COMPARE[name]} {b})")
        if name in _LOGICAL:
            return self._emit(_LOGICAL[name].format(a=a, b=b))
        if dtype.is_floating_point:
            text = _FLOAT_BINARY[name].format(a=a, b=b)
        else:
            if name in ("floordiv", "remainder", "fmod", "truncdiv"):
                self._error_where(f"({b} == 0)", "division")
            text = (_BOOL_BINARY if dtype == _dt.bool_ else _INT_BINARY)[name].format(a=a, b=b)
        return self._emit(f"({text}).to({compute_tl(dtype)})")


class Kernel:
    def __init__(self, name):
        self.name, self.args, self._temps, self.checks_errors = name, {}, 0, False
        self.registers = {}     # row-local buffer -> (fn(load Expr) -> bool: is it this lane's element, value)
        self.recompute = {}     # row-local buffer of a looped row -> (its member, its index rename)
        self.written = set()
        self.lane = ("xindex", set())      # the current lane index and the variables derived from it
        self.open_loop = None              # (first, end) line of the last looped reduction (_place_loop)

    def temp(self):
        self._temps += 1
        return f"t{self._temps - 1}"

    def use(self, buf):
        self.args.setdefault(buf.name, buf)


def _decompose(loops, flat, lines):
    """Lines defining each loop variable of `loops` [(var, range)] from the flat index `flat`."""
    inner = 1
    for n, (v, r) in enumerate(reversed(loops)):
        div = f"({flat} // {inner})" if inner != 1 else flat
        # the outermost needs no modulo (lanes past the end are masked)
        lines.append(f"{v} = {div}" if n == len(loops) - 1 else f"{v} = {div} % {r}")
        inner *= r


def _store_expr(b, ovars):
    return ir.strided_index([ir.Expr.var(v) for v in ovars], b.strides)


def generate_kernel(group, name, reads):
    """(source of one @triton.jit function computing `group`, launch meta); raises Unsupported."""
    if isinstance(group.members[0].body, ir.ScatterBody):
        raise Unsupported("scatter (a serial loop of updates)")
    k = Kernel(name)
    nk = len(group.outer)
    exprs = []
    for b in group.members:
        ovars, rvars = b.canonical_vars()
        exprs += [e for _, e in reads[b.name]] + [_store_expr(b, ovars)]
    outer_loops, rename = merge_loops([f"i{d}" for d in range(nk)], group.outer, exprs)
    rows = math.prod(group.outer)
    flat = all(math.prod(group.inner_ranges(b)) == 1 and isinstance(b.body, ir.PointwiseBody)
               for b in group.members)
    big = max([b.numel for b in group.members] + [buf.numel for b in group.members for buf, _ in reads[b.name]
                                                   if buf is not ir.INDEX_ONLY]) >= 2 ** 31
    if not flat:
        from .codegen_triton_columns import column_kernel
        try:
            column = column_kernel(group, name, reads, k, outer_loops, rename, big)
        except Unsupported:             # (an indirect load): the row kernel below
            column, k = None, Kernel(name)
        if column is not None:
            return _finish(k, name, column[0], {"grid": column[1], "flat": False, "num_warps": column[2],
                                                "numel": rows})
    lines = []
    if flat:
        pid = "tl.program_id(0).to(tl.int64)" if big else "tl.program_id(0)"
        lines += [f"xindex = {pid} * XBLOCK + tl.arange(0, XBLOCK)", f"xmask = xindex < {max(rows, 1)}"]
        _decompose(outer_loops, "xindex", lines)
        k.lane = ("xindex", {v for v, _ in outer_loops} | {"xindex"})
        mask = "xmask"
    else:
        lines.append("row = tl.program_id(0).to(tl.int64)" if big else "row = tl.program_id(0)")
        _decompose(outer_loops, "row", lines)
        k.lane = (None, set())             # a row's scalar values: no lanes to broadcast along
        mask = None
    longest = max([math.prod(group.inner_ranges(b)) for b in group.members] + [1])
    persistent = longest <= PERSISTENT_LIMIT
    locals_, cse = {}, {}
    shared, outer_lane = TritonEmitter(k, lines, rename, locals_, mask, cse), k.lane
    memory_reads = _rows_read_from_memory(group, reads, rename)
    for n, b in enumerate(group.members):
        ovars, rvars = b.canonical_vars()
        inner = tuple(group.inner_ranges(b))
        inner_vars = rvars if isinstance(b.body, ir.ReductionBody) else ovars[nk:]
        store = _store_expr(b, ovars)
        if isinstance(b.body, ir.ReductionBody):
            value = _reduction(k, b, inner, inner_vars, rename, locals_, lines, cse, persistent, mask)
            locals_[b.name] = value
            if b.name not in group.local:
                k.use(b)
                k.written.add(b.name)
                lines.append(f"tl.store({b.name} + ({store.render(rename)}), {_to_memory(b.dtype, value)})")
            continue
        if math.prod(inner) == 1:
            k.lane = outer_lane            # not the lanes of the reduction before it
            sub = dict(rename, **{v: None for v in inner_vars})
            shared.rename = sub
            with ir.set_handler(shared):
                value = b.body.run((ovars, []))
            shared.rename = rename
            locals_[b.name] = value
            if b.name not in group.row_local:
                k.use(b)
                k.written.add(b.name)
                shared.rename = sub
                lines.append(f"tl.store({shared._address(b.name, store)}, {_to_memory(b.dtype, value)}"
                             + (f", mask={mask})" if mask else ")"))
                shared.rename = rename
            continue
        if not persistent and b.name in group.row_local | group.read_here and b.name not in memory_reads:
            # a looped row's member read only at its own element: recomputed in each reader's loop
            # instead of stored and read back (GPT-2's one-hot loss gradient, a row of 50257 floats)
            k.recompute[b.name] = (b, dict(rename, **_inner_names(inner_vars, inner)))
            continue
        body, rmask, sub, emitter_cse = _open_inner(k, inner, inner_vars, b, rename, lines, cse, persistent)
        em = TritonEmitter(k, body, sub, locals_, rmask, emitter_cse)
        with ir.set_handler(em):
            value = b.body.run((ovars, []))
        in_memory = b.name not in group.row_local or b.name in memory_reads or not persistent
        if b.name in group.row_local and persistent and b.name not in memory_reads:
            k.registers[b.name] = (store.render(sub), value)
        if in_memory:
            k.use(b)
            k.written.add(b.name)
            body.append(f"tl.store({em._address(b.name, store)}, {_to_memory(b.dtype, value)}, mask={rmask})")
            if any(b.name in {p.name for p, _ in reads[c.name]} for c in group.members[n + 1:]):
                body.append("tl.debug_barrier()")      # later members read it through memory
        if not persistent:
            lines.append(body[0])
            lines.extend("    " + ln for ln in body[1:])
    if not k.args and not k.written:
        raise Unsupported("a kernel that writes nothing")
    rblock = _pow2(min(longest, PERSISTENT_LIMIT if persistent else LOOP_RBLOCK))
    warps = 4 if flat else min(16, max(2, rblock // 256))
    meta = {"grid": -(-rows // XBLOCK) if flat else rows, "flat": flat, "num_warps": warps, "numel": rows}
    if not flat:
        meta["rblock"] = rblock         # a row's lanes: bounds the warps the launcher's tuner tries
    return _finish(k, name, lines, meta)


def _finish(k, name, lines, meta):
    """(source, argument buffers, checks errors, launch meta) of kernel `k` whose body is `lines`."""
    args = list(k.args.values())
    params = [a.name for a in args] + (["err_flag"] if k.checks_errors else [])
    if meta["flat"]:
        params.append("XBLOCK: tl.constexpr")
    src = f"@triton.jit\ndef {name}({', '.join(params)}):\n" + "\n".join("    " + ln for ln in lines) + "\n"
    return src, args, k.checks_errors, meta


def _pow2(n) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _to_memory(dtype, value) -> str:
    return f"({value}).to({TL[dtype]})"


def _lane_tag(inner) -> str:
    """The name of the flat lane index over inner ranges `inner` (shared by members of the same ranges)."""
    return "r" + "_".join(str(r) for r in inner if r != 1) if any(r != 1 for r in inner) else "r1"


def _inner_names(inner_vars, inner):
    """Member's inner variable -> its positional name under the lane tag (None: a size-1 loop), so
    that members over the same inner ranges index with the same text (loads CSE, registers match)."""
    tag = _lane_tag(inner)
    real = [v for v, r in zip(inner_vars, inner) if r != 1]
    names = {v: None for v, r in zip(inner_vars, inner) if r == 1}
    for d, v in enumerate(real):
        names[v] = tag if len(real) == 1 else f"{tag}_{d}"
    return names


def _member_inner(group, b):
    nk = len(group.outer)
    ovars, rvars = b.canonical_vars()
    inner = tuple(group.inner_ranges(b))
    return inner, (rvars if isinstance(b.body, ir.ReductionBody) else ovars[nk:])


def _rows_read_from_memory(group, reads, rename):
    """Row-local pointwise members with inner loops that some member reads at an element other
    than its own lane (those are stored and read back; the others stay in registers)."""
    out = set()
    by_name = {b.name: b for b in group.members}
    for c in group.members:
        c_inner, c_vars = _member_inner(group, c)
        c_rename = dict(rename, **_inner_names(c_vars, c_inner))
        for producer, expr in reads[c.name]:
            p = by_name.get(producer.name)
            if p is None or p.name not in group.row_local | group.read_here or math.prod(group.inner_ranges(p)) == 1:
                continue
            p_inner, p_vars = _member_inner(group, p)
            p_rename = dict(rename, **_inner_names(p_vars, p_inner))
            if p_inner != c_inner or expr.render(c_rename) != _store_expr(p, p.canonical_vars()[0]).render(p_rename):
                out.add(p.name)
    return out


def _open_inner(k, inner, inner_vars, b, rename, lines, cse, persistent):
    """(the list the member's body goes into, its lane mask, the index rename, the CSE scope)."""
    numel = math.prod(inner)
    sub = dict(rename, **_inner_names(inner_vars, inner))
    block = _pow2(numel) if persistent else min(LOOP_RBLOCK, _pow2(numel))
    tag = _lane_tag(inner)
    real = [(n, r) for n, r in zip([sub[v] for v in inner_vars], inner) if r != 1]
    k.lane = tag, {n for n, _ in real} | {tag}
    if persistent:
        body, own_cse = lines, cse
        if f"{tag}_index" in cse:
            return body, f"{tag}_mask", sub, own_cse
        cse[f"{tag}_index"] = True
        head = [f"{tag} = tl.arange(0, {block})"]
    else:      # the caller writes body[0] (the loop) after its accumulators, then the rest indented
        body, own_cse = [f"for {tag}_off in range(0, {numel}, {block}):"], dict(cse)
        head = [f"{tag} = {tag}_off + tl.arange(0, {block})"]
    body += head + [f"{tag}_mask = {tag} < {numel}"]
    if len(real) > 1:
        _decompose(real, tag, body)
    return body, f"{tag}_mask", sub, own_cse


from .codegen_triton_reduction import _reduction  # noqa: E402  (it imports the emitter from here)
