"""Column reductions on the GPU: programs own a block of contiguous columns and loop over the rows
(codegen_triton.generate_kernel asks `column_kernel` before writing a row kernel).

A bias or LayerNorm-weight gradient sums the rows of a row-major [N, C] gradient. The row kernel
gives each output element (a column) a program that reads one element per row, C elements apart:
every load is a separate 32-byte sector, and GPT-2's [8192, 768] bf16 bias gradient took ~100 us
instead of ~5. Here each program owns XBLOCK adjacent columns (the last outer loop) and walks the
rows in [RBLOCK, XBLOCK] tiles, so a warp reads whole rows of its block (coalesced):

    x = block * XBLOCK + arange(XBLOCK)[None, :]                   # the program's columns
    acc = full([RBLOCK, XBLOCK], identity, float32)                # one accumulator per tile lane
    for r_off in range(0, N, RBLOCK):
        r = r_off + arange(RBLOCK)[:, None]
        acc = acc + where(r < N & x < C, value(r, x), 0)
    out[x] = sum(acc, axis=0)                                      # then the pointwise members

16-bit floats accumulate in float32 (compute_tl). Other outer loops (a split's chunk index) are one
per program. When the columns alone give too few programs, lowering_split divides the rows into
chunks first (partial sums per chunk, then a second small column reduction over the chunks).
"""
from __future__ import annotations

import math

from .._core import dtype as _dt
from . import ir
from .codegen_c import merge_loops
from .codegen_triton import TritonEmitter, Unsupported, _decompose, _store_expr, _to_memory, compute_tl

COLUMN_XBLOCK = 64              # columns per program: 128 bytes of a bf16 row, 256 of a float32 one
COLUMN_TILE = 4096              # elements of a [RBLOCK, XBLOCK] tile (one loop iteration)
COLUMN_WARPS = 4
_KINDS = ("sum", "prod", "max", "min", "any", "all", "welford_mean", "welford_m2")


def reads_columns(member_reads, lane, rvars) -> bool:
    """Does a reduction read some buffer contiguously along output variable `lane` and with a
    larger stride along its reduction (a column of a row-major matrix)?"""
    return any(buf is not ir.INDEX_ONLY and e.coeff(lane) == 1 and any(e.coeff(r) not in (0, 1) for r in rvars)
               for buf, e in member_reads)


def column_kernel(group, name, reads, k, outer_loops, rename, big):
    """(lines, grid, warps) of `group` as a column kernel, or None when it is not one: the last
    merged outer loop is read contiguously by a reduction that strides along its rows, and every
    member is a reduction of _KINDS or a pointwise member with no inner loops."""
    if not outer_loops:
        return None
    lane, ncols = outer_loops[-1]
    strided = False
    for b in group.members:
        if isinstance(b.body, ir.ReductionBody):
            if b.body.reduction_type not in _KINDS or not b.body.reduction_ranges:
                return None
            strided |= reads_columns(reads[b.name], lane, b.canonical_vars()[1])
        elif isinstance(b.body, ir.PointwiseBody):
            if math.prod(group.inner_ranges(b)) != 1:
                return None
        else:
            return None
    if not strided:
        return None
    xblock = min(COLUMN_XBLOCK, _pow2(ncols))
    blocks = -(-ncols // xblock)
    rest = outer_loops[:-1]
    pid = "tl.program_id(0).to(tl.int64)" if big else "tl.program_id(0)"
    lines = [f"pid = {pid}", f"xindex = (pid % {blocks}) * {xblock} + tl.arange(0, {xblock})[None, :]",
             f"xmask = xindex < {ncols}", f"{lane} = xindex"]
    if rest:
        lines.append(f"prow = pid // {blocks}")
        _decompose(rest, "prow", lines)
    x_lane = ("xmask", "xindex", {"xindex", lane})
    locals_, cse = {}, {}
    nk = len(group.outer)
    loop = None         # the open row loop: reductions over the same rows share it (and its loads)
    for b in group.members:
        ovars, rvars = b.canonical_vars()
        store, store_rename = _store_expr(b, ovars), rename
        if isinstance(b.body, ir.ReductionBody):
            if loop is None or not loop.takes(b, reads):
                loop = RowLoop(k, b, reads, rename, locals_, x_lane, xblock)
            value = loop.add(b, lines)
            locals_[b.name] = value
            if b.name in group.local:
                continue
        else:
            loop = None     # its inner loops are all of size 1: their variables index nothing
            store_rename = dict(rename, **{v: None for v in ovars[nk:]})
            em = ColumnEmitter(k, lines, store_rename, locals_, [x_lane], cse)
            with ir.set_handler(em):
                value = b.body.run((ovars, []))
            locals_[b.name] = value
            if b.name in group.row_local:
                continue
        k.use(b)
        k.written.add(b.name)
        em = ColumnEmitter(k, lines, store_rename, locals_, [x_lane], cse)
        lines.append(f"tl.store({em.address(b.name, store)}, {_to_memory(b.dtype, value)}, mask=xmask)")
        if loop is not None:
            loop.tail.append(lines[-1])
    if not k.args and not k.written:
        raise Unsupported("a kernel that writes nothing")
    return lines, blocks * math.prod(r for _, r in rest), COLUMN_WARPS


def _pow2(n) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


class ColumnEmitter(TritonEmitter):
    """TritonEmitter over a 2-D tile: `lanes` [(mask, index name, names derived from it)] are the
    tile's axes (columns [1, XBLOCK], rows [RBLOCK, 1]). A load is masked by the lanes its index
    uses and has their shape (a row's value is read once per row, not once per tile element);
    inside ops.masked the mask covers the whole tile, so the address is broadcast to it."""

    def __init__(self, kernel, lines, rename, locals_, lanes, cse=None):
        super().__init__(kernel, lines, rename, locals_, " & ".join(m for m, _, _ in lanes), cse)
        self.lanes, self.lane_mask = lanes, self.mask

    def _used(self, index):
        names = {self.rename.get(v, v) for v in index.terms}
        return [(m, i) for m, i, derived in self.lanes if names & derived]

    def address(self, base, index, used=None):
        text = f"{base} + ({index.render(self.rename)})"
        used = self._used(index) if used is None else used
        return text + "".join(f" + 0 * {i}" for m, i, _ in self.lanes if (m, i) not in used)

    def _address_and_mask(self, base, index):
        if self.mask != self.lane_mask:            # inside ops.masked: the tile's shape
            return self.address(base, index, used=[]), self.mask
        used = self._used(index)
        text = f"{base} + ({index.render(self.rename)})"
        return text, " & ".join(m for m, _ in used) or None

    def load(self, buf, index):
        if buf.name in self.locals:
            return self.locals[buf.name]
        self.kernel.use(buf)
        address, mask = self._address_and_mask(buf.name, index)
        text = f"tl.load({address}" + (f", mask={mask}, other=0)" if mask else ")")
        if buf.dtype in (_dt.float16, _dt.bfloat16):
            text += ".to(tl.float32)"
        return self._emit(text)

    def load_indirect(self, buf, base, indirect):
        raise Unsupported("an indirect load in a column kernel")      # the row kernel handles it


class RowLoop:
    """One loop over the rows in [RBLOCK, XBLOCK] tiles. Reductions over the same rows that do not
    read each other share it: a LayerNorm's weight and bias gradients read the gradient once.
    Each reduction keeps a tile of accumulators, reduced over the rows after the loop."""

    def __init__(self, k, b, reads, rename, locals_, x_lane, xblock):
        ovars, rvars = b.canonical_vars()
        self.k, self.ranges, self.names, self.xblock = k, tuple(b.body.reduction_ranges), set(), xblock
        loops, rrename = merge_loops(rvars, b.body.reduction_ranges, [e for _, e in reads[b.name]])
        self.nrows = math.prod(r for _, r in loops)
        self.rblock = max(1, min(COLUMN_TILE // xblock, _pow2(self.nrows)))
        self.tag = tag = k.temp().replace("t", "r")
        self.body = [f"{tag} = {tag}_off + tl.arange(0, {self.rblock})[:, None]", f"{tag}_mask = {tag} < {self.nrows}"]
        self.sub = dict(rename, **rrename)
        if len(loops) == 1:
            self.sub[loops[0][0]] = tag
        else:
            names = [(f"{tag}_{d}", r) for d, (_, r) in enumerate(loops)]
            _decompose(names, tag, self.body)
            self.sub.update({v: n for (v, _), (n, _) in zip(loops, names)})
        self.rvars = rvars
        r_lane = (f"{tag}_mask", tag, {tag} | {self.sub[v] for v, _ in loops})
        self.em = ColumnEmitter(k, self.body, self.sub, locals_, [r_lane, x_lane])
        self.start = None       # where the loop's lines begin in the kernel (inits go before it)
        self.tail = []          # lines after the loop (its members' stores)

    def takes(self, b, reads) -> bool:
        return (tuple(b.body.reduction_ranges) == self.ranges and b.canonical_vars()[1] == self.rvars
                and not any(p.name in self.names for p, _ in reads[b.name]))

    def add(self, b, lines) -> str:
        """Emit reduction `b` into the loop (re-writing the loop's lines at the end of `lines`);
        returns the name of its [1, XBLOCK] result."""
        k, tag, body = self.k, self.tag, self.body
        if self.start is not None:
            del lines[self.start:]
        self.names.add(b.name)
        rt, src = b.body.reduction_type, b.body.src_dtype
        with ir.set_handler(self.em):
            value = b.body.run(b.canonical_vars())
        t = compute_tl(src)
        tile, mask = f"[{self.rblock}, {self.xblock}]", f"{tag}_mask & xmask"
        acc = k.temp()
        inits = []
        if rt.startswith("welford"):
            t = t if t in ("tl.float32", "tl.float64") else "tl.float32"
            inits += [f"{acc}_mean = tl.zeros({tile}, {t})", f"{acc}_m2 = tl.zeros({tile}, {t})",
                      f"{acc}_n = tl.zeros({tile}, {t})"]
            body += [f"{acc}_x = ({value}).to({t})", f"{acc}_n = {acc}_n + tl.where({mask}, 1.0, 0.0)",
                     f"{acc}_d = tl.where({mask}, {acc}_x - {acc}_mean, 0.0)",
                     f"{acc}_mean = {acc}_mean + div_rn({acc}_d, tl.maximum({acc}_n, 1.0))",
                     f"{acc}_m2 = {acc}_m2 + tl.where({mask}, {acc}_d * ({acc}_x - {acc}_mean), 0.0)"]
            index = 0 if rt == "welford_mean" else 1
            res = f"tl.reduce(({acc}_mean, {acc}_m2, {acc}_n), 0, welford, keep_dims=True)[{index}]"
        else:
            if rt in ("any", "all"):
                value, t = self.em._emit(f"({value} != 0).to(tl.int8)"), "tl.int8"
            from .codegen_triton_reduction import combine_forms
            init, final, step = combine_forms(rt, t, keep_dims=True)
            inits.append(f"{acc} = tl.full({tile}, {init}, {t})")
            body.append(f"{acc} = {step.format(acc, f'tl.where({mask}, {value}, {init})')}")
            res = final.format(acc)
        if self.start is None:
            self.start = len(lines)
            self.inits, self.results = [], []
        self.inits += inits
        out = k.temp()
        self.results.append(f"{out} = {res} != 0" if b.dtype == _dt.bool_ else
                            f"{out} = ({res}).to({compute_tl(b.dtype)})")
        lines += self.inits + [f"for {tag}_off in range(0, {self.nrows}, {self.rblock}):"]
        lines += ["    " + ln for ln in body] + self.results + self.tail
        return out
