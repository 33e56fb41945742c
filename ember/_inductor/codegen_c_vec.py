"""Vector-typed C for the fuser's innermost contiguous float32 loops (issue 14, the CPU fuser's speed).

    try:
        lines, divisors = codegen_c_vec.member_loop(k, b, ovars, loops, rename, locals_, target, pragma, hoist)
    except codegen_c_vec.Unsupported:
        ...                                  # today's scalar C (`#pragma omp simd` loops)

Where GCC targets AVX-512 (16 lanes) or AVX2 + FMA (8 lanes), the loop over the innermost variable
is written with GCC's vector types (`vf`: W floats) instead of `#pragma omp simd` scalar C, so that
  - exp is inline vector code, not a call (AVX-512: codegen_c_exp's table exp, `expv16_inline`; AVX2:
    the steps of codegen_c.expi_f on 8 lanes, bit for bit), and nothing is spilled around a call;
  - relu / clamp are one vmaxps / vminps (operands ordered so that NaN and -0.0 come out as the
    scalar `sel_f` does: relu(NaN) = NaN, relu(-0.0) = -0.0), maximum/minimum one max plus a NaN
    blend, and a select one mask blend (GCC writes compare + blend for `sel_f`'s bit operations);
  - the tail (fewer than W elements) is one masked step (AVX-512 masked loads/stores; AVX2
    vmaskmovps), whose masked-out lanes neither fault nor are stored.
Each op computes what the scalar C computes (-ffp-contract=off: no FMA is formed in either; the same
exp steps), so a kernel's results do not change except through exp on AVX2 (see `PRELUDE`).
Anything else raises Unsupported and the caller writes today's scalar C: other dtypes, loads whose
index moves by other than 1 along the loop (transposed, strided, indirect), masked loads, random
numbers, libm functions without a vector form here (erf, tanh, log, pow...), integer and bool data.
Values invariant along the vector loop stay scalar C (the CEmitter's) and are broadcast once
(hoisted before the loop).
Float sums keep codegen_reduction's order (64 float lanes = 64/W vectors, the same tree, the same
scalar tail), so they are bit-equal to the scalar kernels; float max/min keep its NaN flag.
Memory: a row kernel's pointwise pass prefetches the next row of each large input (`load`), and a
single-threaded kernel streams outputs larger than the last-level cache past it (`store_line`).
"""
from __future__ import annotations

import math
import os

from .._core import dtype as _dt
from . import config, ir
from .codegen_c import CEmitter, _loop_open, hoist_invariants

F32 = _dt.float32


class Unsupported(Exception):
    """The vector emitter does not cover this loop (the caller writes scalar C)."""


def lanes() -> int:
    """16 with AVX-512 (F + VL), 8 with AVX2 + FMA, 0 where the vector emitter is off: another ISA,
    clang (the prelude uses GCC's builtins), a -march in config.cflags other than native /
    x86-64-v3 / x86-64-v4, or config.vector_c = False. Kernels assert it (_Static_assert)."""
    from . import machine
    if not config.vector_c:
        return 0
    facts = machine.probe()
    if not facts or "clang" in facts["cc_version"].lower():
        return 0
    march = next((f.split("=", 1)[1] for f in config.cflags if f.startswith("-march=")), None)
    if march != "native":
        return {"x86-64-v3": 8, "x86-64-v4": 16}.get(march, 0)
    flags = set(facts["isa"]["flags"])
    if {"avx512f", "avx512vl"} <= flags:
        return 16
    return 8 if {"avx2", "fma"} <= flags else 0


_S16 = ", ".join(["c"] * 16)
_S8 = ", ".join(["c"] * 8)
# The ISA's half of each helper; `vf_max(a, b)` is `a > b ? a : b` (NaN or equal: b), as MAXPS.
PRELUDE = r"""
#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__GNUC__) && !defined(__clang__)
typedef ev16 vf; typedef ei16 vi; typedef unsigned short vm;
typedef float vfu __attribute__((vector_size(64), aligned(4), may_alias));
static inline vf vf_splat(float c) { return (vf){%(s16)s}; }
static inline vm vm_from(int c) { return (vm)(c ? 0xFFFF : 0); }
static inline vf vf_ldn(const float *p, int64_t n) {
    return __builtin_ia32_loadups512_mask(p, vf_splat(0.0f), (vm)((1u << n) - 1u)); }
static inline void vf_stn(float *p, int64_t n, vf v) { __builtin_ia32_storeups512_mask(p, v, (vm)((1u << n) - 1u)); }
static inline vf vf_max(vf a, vf b) { return __builtin_ia32_maxps512_mask(a, b, a, (vm)-1, 4); }
static inline vf vf_min(vf a, vf b) { return __builtin_ia32_minps512_mask(a, b, a, (vm)-1, 4); }
#define VF_CMP(a, b, p) ((vm)__builtin_ia32_cmpps512_mask((a), (b), (p), (vm)-1, 4))
static inline vf vf_sel(vm m, vf a, vf b) { return __builtin_ia32_blendmps_512_mask(b, a, m); }
static inline vf vf_sqrt(vf x) { return __builtin_ia32_sqrtps512_mask(x, x, (vm)-1, 4); }
static inline vf vf_fma(vf a, vf b, vf c) { return __builtin_ia32_vfmaddps512_mask(a, b, c, (vm)-1, 4); }
#define vf_exp expv16_inline
#define VF_NT(p, v) __builtin_ia32_movntps512((p), (v))
#define vm_bits(m) (m)
#define EMBER_VW 16
#elif defined(__AVX2__) && defined(__FMA__) && defined(__GNUC__) && !defined(__clang__)
typedef float vf __attribute__((vector_size(32)));
typedef int vi __attribute__((vector_size(32)));
typedef vi vm;
typedef float vfu __attribute__((vector_size(32), aligned(4), may_alias));
static inline vf vf_splat(float c) { return (vf){%(s8)s}; }
static inline vm vm_from(int c) { int m = c ? -1 : 0; return (vm){m, m, m, m, m, m, m, m}; }
static inline vm vm_first(int64_t n) { return (vi){0, 1, 2, 3, 4, 5, 6, 7} < (vi){0} + (int)n; }
static inline vf vf_ldn(const float *p, int64_t n) { return __builtin_ia32_maskloadps256((const vf *)p, vm_first(n)); }
static inline void vf_stn(float *p, int64_t n, vf v) { __builtin_ia32_maskstoreps256((vf *)p, vm_first(n), v); }
static inline vf vf_max(vf a, vf b) { return __builtin_ia32_maxps256(a, b); }
static inline vf vf_min(vf a, vf b) { return __builtin_ia32_minps256(a, b); }
#define VF_CMP(a, b, p) ((vm)__builtin_ia32_cmpps256((a), (b), (p)))
static inline vf vf_sel(vm m, vf a, vf b) { return __builtin_ia32_blendvps256(b, a, (vf)m); }
static inline vf vf_sqrt(vf x) { return __builtin_ia32_sqrtps256(x); }
/* codegen_c.expi_f's steps on 8 lanes (the same bits as expi_f; here it replaces libmvec's expf
   in sigmoid/silu/gelu_tanh too: at most 1.05 ulp from the correctly rounded exp, no call) */
#define FMA8(a, b, c) __builtin_ia32_vfmaddps256((a), (b), (c))
static inline vf vf_fma(vf a, vf b, vf c) { return FMA8(a, b, c); }
static inline vf vf_exp_poly(vf x, vf *t) {           /* e^(x - k ln2) and t = 1.5 * 2^23 + k */
    *t = FMA8(x, vf_splat(1.44269504088896341f), vf_splat(12582912.0f));
    const vf n = *t - 12582912.0f;
    const vf r = FMA8(n, vf_splat(-1.428606765330187045e-06f), FMA8(n, vf_splat(-0.693145751953125f), x));
    vf p = FMA8(FMA8(FMA8(vf_splat(0.001384609960950911f), r, vf_splat(0.008374159224331379f)), r,
                     vf_splat(0.041667964309453964f)), r, vf_splat(0.16666431725025177f));
    return FMA8(FMA8(FMA8(p, r, vf_splat(0.4999999403953552f)), r, vf_splat(1.0f)), r, vf_splat(1.0f));
}
static inline vf vf_exp_edges(vf x) {                        /* clamped, 2^k in two halves: subnormal, inf */
    vf t;
    x = vf_max(vf_splat(-104.0f), x); x = vf_min(vf_splat(89.0f), x);      /* NaN passes (2nd operand) */
    const vf p = vf_exp_poly(x, &t);
    const vi e = (vi)t - 0x4B400000, half = e >> 1;
    return p * (vf)((half + 127) << 23) * (vf)((e - half + 127) << 23);
}
/* where every lane has |x| <= 87, e^x and 2^k are normal (|k| <= 126), so 2^k is applied by adding
   k to p's exponent bits: the same bits as the two halves (checked on every float in [-88, 88]),
   9 fewer vector ops and no clamps: an exp in an L1 loop 26%% faster on an AVX2 EPYC */
static inline vf vf_exp(vf x) {
    const vm edge = VF_CMP((vf)((vi)x & 0x7FFFFFFF), vf_splat(87.0f), 0x16);   /* !(|x| <= 87): NaN too */
    if (__builtin_expect(__builtin_ia32_movmskps256((vf)edge) != 0, 0))
        return vf_exp_edges(x);
    vf t;
    const vf p = vf_exp_poly(x, &t);
    return (vf)((vi)p + (((vi)t - 0x4B400000) << 23));
}
#define vm_bits(m) __builtin_ia32_movmskps256((vf)(m))
#define VF_NT(p, v) __builtin_ia32_movntps256((p), (v))
#define EMBER_VW 8
#endif
#ifdef EMBER_VW
static inline vf vf_ld(const float *p) { return *(const vfu *)p; }
static inline void vf_st(float *p, vf v) { *(vfu *)p = v; }
/* a streaming store where p is aligned to the vector (the kernel ends with an sfence) */
static inline void vf_stream(float *p, vf v) { if ((uintptr_t)p & (sizeof(vf) - 1)) vf_st(p, v); else VF_NT(p, v); }
static inline vf vf_abs(vf x) { return (vf)((vi)x & 0x7FFFFFFF); }
static inline int vm_any(vm m) { return vm_bits(m) != 0; }
#define VLDN(p) vf_ldn((p), vtail_n)          /* a tail step's loads and stores: its first vtail_n lanes */
#define VSTN(p, v) vf_stn((p), vtail_n, (v))
#endif
""" % {"s16": _S16, "s8": _S8}

# compare predicates (quiet): NaN is unordered, so only `!=` holds for it, as in C
_CMP = {"eq": 0x00, "lt": 0x11, "le": 0x12, "ne": 0x04, "gt": 0x1E, "ge": 0x1D}
_UNARY = {
    "neg": "(-{x})", "abs": "vf_abs({x})", "square": "({x} * {x})", "reciprocal": "(1.0f / {x})",
    "relu": "vf_max(vf_splat(0.0f), {x})",         # (0 > x) ? 0 : x: NaN and -0.0 stay, as sel_f
    "sqrt": "vf_sqrt({x})", "rsqrt": "(1.0f / vf_sqrt({x}))", "exp": "vf_exp({x})",
    "sigmoid": "(1.0f / (1.0f + vf_exp(-{x})))", "silu": "({x} / (1.0f + vf_exp(-{x})))",
    "gelu_tanh": "({x} / (1.0f + vf_exp({x} * vf_fma({x} * {x}, vf_splat(-0.07135481627260025f), "
                 "vf_splat(-1.5957691216057308f)))))",
    "sign": "vf_sel(VF_CMP({x}, vf_splat(0.0f), 0x1E), vf_splat(1.0f), "
            "vf_sel(VF_CMP({x}, vf_splat(0.0f), 0x11), vf_splat(-1.0f), {x}))"}
_BINARY = {
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "truediv": "({a} / {b})",
    "clamp_min": "vf_max({b}, {a})", "clamp_max": "vf_min({b}, {a})",          # sel(a < b, b, a)...
    "maximum": "vf_sel(VF_CMP({a}, {a}, 3), {a}, vf_max({a}, {b}))",            # NaN in a: a; in b: b
    "minimum": "vf_sel(VF_CMP({a}, {a}, 3), {a}, vf_min({a}, {b}))"}
_MASK_BINARY = {"logical_and": "&", "logical_or": "|", "logical_xor": "^", "bitwise_and": "&",
                "bitwise_or": "|", "bitwise_xor": "^", "mul": "&", "add": "|", "maximum": "|", "minimum": "&"}


class VecEmitter:
    """The ops handler for one vector loop over `var`: values are vectors (`vf`), masks (`vm`, from
    comparisons) or scalar C from the CEmitter `scalar` (invariant along `var`). Loads/stores are
    written VLD(p)/VST(p, v) and become full or tail (masked) accesses when the loop is written."""

    def __init__(self, k, lines, rename, locals_, var, in_loop=False, kinds=None, prefetch=False):
        self.k, self.lines, self.rename, self.var = k, lines, rename, var
        self.scalar = CEmitter(k, lines, rename, locals_, in_loop=in_loop)
        self.locals = locals_
        self.kinds = kinds if kinds is not None else {}     # C name -> "v" | "m" (else scalar)
        self.prefetch = prefetch and k.row_var is not None     # a row kernel's pointwise pass
        self.prefetched = set()
        self.consts, self.scaled = {}, {}      # finite float literals; x * 2^k temps -> (x, 2^k)

    def __getattr__(self, name):            # masked, rand, load_indirect, check_index, ...
        raise Unsupported(name)

    def _emit(self, kind, expr):
        """A vector ("v") or mask ("m") temp: the scalar emitter's declaration and CSE, typed vf / vm."""
        name = self.scalar._emit("vf" if kind == "v" else "vm", expr)
        self.kinds[name] = kind
        return name

    def kind(self, x):
        return self.kinds.get(x, "s")

    def vec(self, x):
        """x as a vector: a scalar float is broadcast (the line is loop-invariant: hoisted)."""
        k = self.kind(x)
        if k == "m":
            raise Unsupported("mask used as a value")
        return x if k == "v" else self._emit("v", f"vf_splat({x})")

    def mask(self, x):
        k = self.kind(x)
        if k == "v":
            raise Unsupported("float used as a mask")
        return x if k == "m" else self._emit("m", f"vm_from({x})")

    def _step(self, index):
        c = index.coeff(self.var)
        if c not in (0, 1) or ir.INDIRECT.terms.keys() & index.terms.keys():
            raise Unsupported(f"index {index.render()} moves by {c}")
        return c

    def load(self, buf, index):
        if buf.name in self.locals:
            return self.locals[buf.name]
        if self._step(index) == 0:
            return self.scalar.load(buf, index)
        if buf.dtype != F32:
            raise Unsupported(f"load of {buf.dtype}")
        if buf.name in self.k.row_arrays:
            text = index.render({**self.rename, **self.k.row_arrays[buf.name]})
        else:
            self.k.use(buf)
            text = index.render(self.rename)
            step = index.coeff(self.k.row_var) if self.prefetch else 0
            if step and buf.name not in self.prefetched and 4 * buf.numel >= PREFETCH_MIN_BYTES:
                # the next row's line while this row computes: a row pass after the first reads
                # this row from L1, so the memory would idle (softmax over 1e7 floats: 25% faster)
                self.prefetched.add(buf.name)
                self.lines.append(f"__builtin_prefetch(&{buf.name}[{text} + {step}]);")
        return self._emit("v", f"VLD(&{buf.name}[{text}])")

    def store_line(self, name, index, rename, value, numel=0):
        """The C statement storing `value` at name[index] (a float32 buffer or row array): streaming
        (VSTS) for an output of `numel` floats past stream_store_min_bytes in a single-threaded kernel
        whose loop computes no exp. A loop that does stores a line's two halves ~100 cycles apart, and
        the write-combining buffer flushes half lines: gelu over 1e7 floats 9-11 -> 17.5 ms streamed,
        where softmax's normalising pass went 8.8 -> 5.8 ms (AVX2 EPYC)."""
        if index.coeff(self.var) != 1:
            raise Unsupported("store not contiguous along the vector loop")
        store = "VST"
        light = not any("vf_exp(" in ln for ln in self.lines)
        if self.k.may_stream and light and name not in self.k.row_arrays and 4 * numel >= stream_threshold() > 0:
            store, self.k.streams = "VSTS", True
        return f"{store}(&{name}[{index.render(rename)}], {self.vec(value)});"

    def constant(self, value, dtype):
        text = self.scalar.constant(value, dtype)
        if dtype == F32 and isinstance(value, (int, float)) and math.isfinite(value):
            self.consts[text] = float(value)
        return text

    def index_expr(self, expr, dtype):
        if expr.coeff(self.var):
            raise Unsupported("index_expr along the vector loop")
        return self.scalar.index_expr(expr, dtype)

    def to_dtype(self, x, src, dst):
        if self.kind(x) == "s":
            return self.scalar.to_dtype(x, src, dst)
        if src == dst == F32 or (src == dst == _dt.bool_ and self.kind(x) == "m"):
            return x
        if self.kind(x) == "m" and dst == F32:          # a mask as 1.0 / 0.0, as (float)_Bool
            return self._emit("v", f"vf_sel({x}, vf_splat(1.0f), vf_splat(0.0f))")
        raise Unsupported(f"to_dtype {src} -> {dst}")

    def where(self, c, a, b, dtype):
        if all(self.kind(x) == "s" for x in (c, a, b)):
            return self.scalar.where(c, a, b, dtype)
        if dtype != F32:
            raise Unsupported(f"where of {dtype}")
        return self._emit("v", f"vf_sel({self.mask(c)}, {self.vec(a)}, {self.vec(b)})")

    def unary(self, name, x, dtype):
        if self.kind(x) == "s":
            return self.scalar.unary(name, x, dtype)
        if self.kind(x) == "m" and name == "logical_not":
            return self._emit("m", f"(vm)~{x}")
        if dtype == F32 and name == "isnan":
            return self._emit("m", f"VF_CMP({x}, {x}, 3)")
        if dtype != F32 or name not in _UNARY:
            raise Unsupported(f"{name} on {dtype}")
        return self._emit("v", _UNARY[name].format(x=x))

    def binary(self, name, a, b, dtype):
        ka, kb = self.kind(a), self.kind(b)
        if ka == kb == "s":
            return self.scalar.binary(name, a, b, dtype)
        if dtype == _dt.bool_ and name in _MASK_BINARY:
            return self._emit("m", f"(vm)({self.mask(a)} {_MASK_BINARY[name]} {self.mask(b)})")
        if dtype != F32:
            raise Unsupported(f"{name} on {dtype}")
        if name in _CMP:
            return self._emit("m", f"VF_CMP({self.vec(a)}, {self.vec(b)}, {_CMP[name]:#x})")
        if name not in _BINARY:
            raise Unsupported(name)
        if name in ("add", "sub") and a in self.scaled and abs(self.consts.get(b, 2.0 ** 100)) < 2.0 ** 100:
            # x * 2^k + c as one fma: the product is exact (k >= 0: no subnormal loses a bit), so it
            # rounds once as the add does; an overflowing product (>= 2^128) stays inf only while
            # |c| < 2^103, so c is bounded: gelu(x*2+1) 6% faster
            x, m = self.scaled[a]
            c = b if name == "add" else f"(-({b}))"          # b may be a negative literal
            return self._emit("v", f"vf_fma({x}, {self.vec(m)}, {self.vec(c)})")
        if name == "mul" and (ka == "v") != (kb == "v"):
            x, m = (a, b) if ka == "v" else (b, a)
            if abs(self.consts.get(m, 0.0)) >= 1 and abs(math.frexp(self.consts[m])[0]) == 0.5:
                out = self._emit("v", _BINARY[name].format(a=self.vec(a), b=self.vec(b)))
                self.scaled[out] = (x, m)
                return out
        if name == "truediv" and kb == "s" and self.scalar.in_loop and b in self.k.invariants:
            # softmax's row sum: one reciprocal a row, as the scalar C (codegen_c.CEmitter.binary)
            self.scalar.divisors.add(b)
            return self._emit("v", f"({a} * {self.vec(self.scalar._emit('float', f'(1.0f / {b})'))})")
        return self._emit("v", _BINARY[name].format(a=self.vec(a), b=self.vec(b)))


def _accesses(lines, full):
    """The body's VLD/VST/VSTS as whole-vector accesses or as the tail's (VLDN/VSTN, `vtail_n` lanes)."""
    a, b, c = ("vf_ld(", "vf_st(", "vf_stream(") if full else ("VLDN(", "VSTN(", "VSTN(")
    return [ln.replace("VLD(", a).replace("VSTS(", c).replace("VST(", b) for ln in lines]


PREFETCH_MIN_BYTES = 1 << 20        # smaller inputs stay in the caches between calls: no prefetch
_threshold: list = []


def stream_threshold() -> int:
    """config.stream_store_min_bytes, None resolved to the last-level cache's size (32 MB unknown)."""
    if config.stream_store_min_bytes is not None:
        return config.stream_store_min_bytes
    if not _threshold:
        size = 0
        try:
            size = os.sysconf("SC_LEVEL3_CACHE_SIZE") or os.sysconf("SC_LEVEL2_CACHE_SIZE")
        except (ValueError, OSError, AttributeError):
            pass
        _threshold.append(size if size > 0 else 32 << 20)
    return _threshold[0]


def vector_loop(loops, body, pragma, w, scalar_tail=None):
    """C lines: `loops`' outer ones as plain for loops (the first with `pragma`, a `parallel for`,
    if given), the innermost as whole vectors of `w` then one tail step (or `scalar_tail`'s lines
    one element at a time)."""
    (var, r), out = loops[-1], []
    # the lanes Python stepped by are the prelude's (a kernel built for another -march fails to compile)
    out.append(f'_Static_assert(sizeof(vf) == {4 * w}, "codegen_c_vec.lanes() does not match this target");')
    n = _loop_open(loops[:-1], out, None, pragma)
    if not loops[:-1] and pragma and r // w > 1:
        out.append(pragma + " ERR")
    if r // w:
        out.append(f"for (int64_t {var}_b = 0; {var}_b < {r // w}; {var}_b++) {{")
        out.append(f"    const int64_t {var} = {var}_b * {w};")
        out.extend("    " + ln for ln in _accesses(body, True))
        out.append("}")
    if r % w and scalar_tail is not None:
        out.append(f"for (int64_t {var} = {r - r % w}; {var} < {r}; {var}++) {{")
        out.extend("    " + ln for ln in scalar_tail)
        out.append("}")
    elif r % w:
        out.append(f"{{ const int64_t {var} = {r - r % w}, vtail_n = {r % w};")
        out.extend("    " + ln for ln in _accesses(body, False))
        out.append("}")
    return out + ["}" * n] if n else out


def member_loop(k, b, ovars, loops, rename, locals_, target, pragma, hoist_division, w):
    """Vector C lines of a pointwise member's inner loops and the divisors made reciprocals;
    target = (buffer name, store index Expr, its rename). Raises Unsupported."""
    if b.dtype != F32 or not loops:
        raise Unsupported("not a float32 loop")
    lines = []
    em = VecEmitter(k, lines, rename, locals_, loops[-1][0], in_loop=hoist_division, prefetch=True)
    with ir.set_handler(em):
        value = b.body.run((ovars, []))
    name, index, store_rename = target
    lines.append(em.store_line(name, index, store_rename, value, b.numel))
    hoisted, lines = hoist_invariants(lines, loops)
    return ["{"] + hoisted + vector_loop(loops, lines, pragma, w) + ["}"], em.scalar.divisors


def flat_body(k, group, outer_loops, rename, stores, pragma, w):
    """The lines of a kernel whose members all run at the group's own loop (gelu, the 6-op chain):
    one vector loop over the innermost of `outer_loops`. Raises Unsupported."""
    if not outer_loops:
        raise Unsupported("no loop")
    locals_, lines = {}, []
    em = VecEmitter(k, lines, rename, locals_, outer_loops[-1][0])
    for b in group.members:
        if isinstance(b.body, ir.ReductionBody) or b.dtype != F32:
            raise Unsupported("flat member not a float32 pointwise")
        ovars, _ = b.canonical_vars()
        # its own inner loops all have one iteration: their variables are 0 (dropped, as merge_loops does)
        em.rename = em.scalar.rename = dict(rename, **{v: None for v in ovars[len(group.outer):]})
        with ir.set_handler(em):
            value = b.body.run((ovars, []))
        if b.name in group.row_local:
            locals_[b.name] = value
            continue
        k.use(b)
        k.written.add(b.name)
        lines.append(em.store_line(b.name, stores[b.name], em.rename, value, b.numel))
    hoisted, lines = hoist_invariants(lines, outer_loops)
    return hoisted + vector_loop(outer_loops, lines, pragma, w)


def reduction(k, b, loops, rename, locals_, scalar_lines, scalar_value, acc, rt, combine, merge_step, w):
    """(lines, result) of a float32 sum / max / min over `loops` with vector accumulators; the tail
    (fewer than a block) runs the scalar lines with `combine`, as codegen_reduction's loops do.
    A sum keeps codegen_reduction's 64 lanes (64 / w vectors), blocks and tree, so its result is
    the scalar kernel's to the bit; max/min keep one vector and a NaN mask. Raises Unsupported."""
    from .codegen_reduction import STREAM_BLOCK, STREAM_LEN, SUM_BLOCK, SUM_STREAMS, _lane_tree, lanes_of
    v, r = loops[-1]
    vlines = []
    em = VecEmitter(k, vlines, rename, locals_, v, in_loop=True)
    ovars, rvars = b.canonical_vars()
    with ir.set_handler(em):
        value = em.vec(b.body.run((ovars, rvars)))
    hoisted, vlines = hoist_invariants(vlines, loops)
    vlines = _accesses(vlines, True)
    tail = scalar_lines + [combine(acc, scalar_value)]
    if rt in ("max", "min"):
        if r < w:
            raise Unsupported(f"{rt} over {r} < {w} lanes")
        init = "-INFINITY" if rt == "max" else "INFINITY"
        out = hoisted + [f"float {acc} = {init}; int {acc}_nan = 0;",
                         f"vf {acc}_a = vf_splat({init}); vm {acc}_m = vm_from(0);"]
        body = vlines + [f"{acc}_a = vf_{rt}({value}, {acc}_a);",       # value > acc ? value : acc
                         f"{acc}_m = (vm)({acc}_m | VF_CMP({value}, {value}, 3));"]
        out += vector_loop(loops, body, None, w, tail)
        out += [f"{acc}_nan |= vm_any({acc}_m); {{ float {acc}_v[{w}]; vf_st({acc}_v, {acc}_a);",
                f"for (int {acc}_j = 0; {acc}_j < {w}; {acc}_j++) {merge_step(acc, f'{acc}_v[{acc}_j]')} }}"]
        return out, f"({acc}_nan ? NAN : {acc})"
    lanes = lanes_of("float")
    if rt != "sum" or r < 2 * lanes:
        raise Unsupported(f"{rt} over {r}")
    nvec = lanes // w
    blocked = r > SUM_BLOCK
    lo, hi = (f"{v}_b", f"{v}_e") if blocked else ("0", str(r))
    out = hoisted + ([f"double {acc}_d = 0;"] if blocked else [])
    decl = [f"float {acc} = 0;"] + [f"vf {acc}_a{q} = vf_splat(0.0f);" for q in range(nvec)]
    if not blocked:
        out += decl
    n = _loop_open(loops[:-1], out)
    fold = []
    half = nvec // 2
    while half:                     # the scalar kernels' tree: lanes j += j + width, halving
        fold += [f"{acc}_a{q} += {acc}_a{q + half};" for q in range(half)]
        half //= 2
    fold += [f"{{ float {acc}_v[{w}]; vf_st({acc}_v, {acc}_a0);"] + _lane_tree(acc, w, merge_step) + ["}"]
    whole = r // STREAM_BLOCK * STREAM_BLOCK if blocked else 0
    per = lanes // SUM_STREAMS
    if whole and per % w:
        raise Unsupported(f"a streamed sum's {per} lanes a stream in vectors of {w}")
    if whole:                       # the scalar kernels' streams: lane p*w + i reads part (p*w + i) // per
        out += [f"for (int64_t {v}_b = 0; {v}_b < {whole}; {v}_b += {STREAM_BLOCK}) {{"] + decl
        out += [f"for (int64_t {v}_k = {v}_b; {v}_k < {v}_b + {STREAM_LEN}; {v}_k += {per}) {{"]
        for q in range(nvec):
            out += [f"    {{ const int64_t {v} = {v}_k + {q * w // per * STREAM_LEN + q * w % per};"]
            out += ["        " + ln for ln in vlines] + [f"        {acc}_a{q} += {value}; }}"]
        out += ["}"] + fold + [f"{acc}_d += {acc}; }}"]
    if blocked:
        out += [f"for (int64_t {v}_b = {whole}; {v}_b < {r}; {v}_b += {SUM_BLOCK}) {{",
                f"const int64_t {v}_e = {v}_b + {SUM_BLOCK} < {r} ? {v}_b + {SUM_BLOCK} : {r};"] + decl
    out += [f"{{ int64_t {v}_k = {lo};", f"for (; {v}_k + {lanes} <= {hi}; {v}_k += {lanes}) {{"]
    for q in range(nvec):           # vector q holds lanes q*w .. q*w + w - 1 of the 64
        out += [f"    {{ const int64_t {v} = {v}_k + {q * w};"] + ["        " + ln for ln in vlines]
        out += [f"        {acc}_a{q} += {value}; }}"]
    out += ["}", f"for (int64_t {v} = {v}_k; {v} < {hi}; {v}++) {{"] + ["    " + ln for ln in tail] + ["}}"]
    if blocked:
        out += fold + [f"{acc}_d += {acc}; }}" + "}" * n]
        return out, f"{acc}_d"
    out += ["}" * n] + fold
    return out, acc
