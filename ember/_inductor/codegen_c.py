"""C code generation: a FusedGroup -> one C function (Inductor's codegen/cpp.py, in plain C).

    source, args, checks_errors = generate_kernel(group, "ember_k0", threads=1)

Loops: the group's outer loop nest, then each member's inner loops; adjacent loops merge into one
when every index in the kernel allows it (`merge_loops`), so a contiguous chain is one flat loop.
The outermost loop is `#pragma omp parallel for` when config.threads > 1 and the work is large
enough; innermost loops are `#pragma omp simd` (reductions with a reduction clause: the SIMD lanes
are the several accumulators), and libmvec gives vector expf/tanhf/logf...
float32 sums add 4096-element blocks in float and the blocks in double. max/min propagate NaN.
Integer arithmetic wraps (done in unsigned); integer division by zero sets the kernel's return
code, which the wrapper turns into eager's RuntimeError("ZeroDivisionError").
"""
from __future__ import annotations

import math
import re

from .._core import dtype as _dt
from . import codegen_c_exp, ir

# -- the prelude (the libmvec prototypes come from machine.vector_math_prelude(): one list) --------
_MVEC_1 = ("exp", "log", "sin", "cos", "tan", "tanh", "erf", "erfc", "log1p", "expm1", "log2", "log10",
           "exp2", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh")

_INT_HELPERS = "\n".join(
    f"static inline {t} floordiv_{t}({t} a, {t} b) {{ if (b == 0) return 0; if (b == ({t})-1) return ({t})(0 - ({u})a);"
    f" {t} q = a / b; if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1; return q; }}\n"
    f"static inline {t} remainder_{t}({t} a, {t} b) {{ if (b == 0 || b == ({t})-1) return 0;"
    f" {t} r = a % b; if (r != 0 && ((r < 0) != (b < 0))) r += b; return r; }}\n"
    f"static inline {t} fmod_{t}({t} a, {t} b) {{ return (b == 0 || b == ({t})-1) ? 0 : a % b; }}\n"
    f"static inline {t} truncdiv_{t}({t} a, {t} b) {{ return b == 0 ? 0 : (b == ({t})-1 ? ({t})(0 - ({u})a) : a / b); }}"
    for t, u in (("int64_t", "uint64_t"), ("int32_t", "uint32_t"), ("int16_t", "uint16_t"),
                 ("int8_t", "uint8_t"), ("uint8_t", "uint8_t")))

# Selects are bit operations, not `?:`: GCC 12 does not if-convert a loop that also calls a
# (libmvec) function, so one `?:` next to an expf would keep the whole loop scalar.
_SELECT = "\n".join(
    f"static inline {t} sel_{n}(int c, {t} a, {t} b) {{ union {{ {t} f; {u} u; }} x = {{a}}, y = {{b}};"
    f" {u} m = ({u})0 - ({u})(c != 0); x.u = (x.u & m) | (y.u & ~m); return x.f; }}"
    for t, n, u in (("float", "f", "uint32_t"), ("double", "d", "uint64_t"), ("int64_t", "int64_t", "uint64_t"),
                    ("int32_t", "int32_t", "uint32_t"), ("int16_t", "int16_t", "uint16_t"),
                    ("int8_t", "int8_t", "uint8_t"), ("uint8_t", "uint8_t", "uint8_t"), ("_Bool", "_Bool", "uint8_t")))

_FLOAT_HELPERS = "\n".join(
    f"static inline {t} nanmax_{s or 'd'}({t} a, {t} b) {{ return sel_{s or 'd'}((a != a) | (a > b), a, b); }}\n"
    f"static inline {t} nanmin_{s or 'd'}({t} a, {t} b) {{ return sel_{s or 'd'}((a != a) | (a < b), a, b); }}\n"
    f"#pragma omp declare reduction(nanmax_{s or 'd'}: {t}: omp_out = nanmax_{s or 'd'}(omp_out, omp_in)) "
    f"initializer(omp_priv = -INFINITY)\n"
    f"#pragma omp declare reduction(nanmin_{s or 'd'}: {t}: omp_out = nanmin_{s or 'd'}(omp_out, omp_in)) "
    f"initializer(omp_priv = INFINITY)\n"
    # Python's (and NumPy's) float floor division and remainder, as eager computes them
    f"static inline {t} floordiv_{s or 'd'}({t} a, {t} b) {{ if (b == 0) return a / b; {t} mod = fmod{s}(a, b);"
    f" {t} div = (a - mod) / b; if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1; if (div == 0)"
    f" return copysign{s}(0, a / b); {t} fl = floor{s}(div); if (div - fl > 0.5) fl += 1; return fl; }}\n"
    f"static inline {t} remainder_{s or 'd'}({t} a, {t} b) {{ {t} mod = fmod{s}(a, b); if (b == 0) return mod;"
    f" if (mod != 0) {{ if ((b < 0) != (mod < 0)) mod += b; }} else mod = copysign{s}(0, b); return mod; }}"
    for t, s in (("float", "f"), ("double", "")))

# a loop multiplies by 1/b instead of dividing by b only where both b and 1/b are normal numbers
# (generic: a float or a double argument)
_RECIP_OK = "#define recip_ok(b) (fabs((double)(b)) > 0x1p-125 && fabs((double)(b)) < 0x1p125)"

# exp through libmvec (double's; float32 sigmoid/silu/gelu_tanh's where codegen_c_exp has no vector
# exp), with arguments whose result is exactly 0 (-inf: a causal mask) kept off the vector expf: it
# sends a whole vector with one such lane to scalar code (5x slower).
_EXP = "\n".join(
    f"static inline {t} exp_{n}({t} x) {{ int under = x < {limit}; return sel_{n}(under, 0, exp{s}(sel_{n}(under, 0, x))); }}"
    for t, n, s, limit in (("float", "f", "f", "-105.0f"), ("double", "d", "", "-746.0")))

# 16-bit floats: loaded from their bits into float, stored back rounded to nearest even (NaN stays
# NaN); bf16 is the top half of a float32, f16 goes through the compiler's _Float16
_HALF_HELPERS = """\
static inline float bf16_load(uint16_t h) { union { uint32_t u; float f; } x = { (uint32_t)h << 16 }; return x.f; }
static inline uint16_t bf16_store(float f) { union { float f; uint32_t u; } x = { f };
    if (f != f) return (uint16_t)((x.u >> 16) | 0x40);
    return (uint16_t)((x.u + 0x7FFFu + ((x.u >> 16) & 1u)) >> 16); }
static inline float f16_load(uint16_t h) { union { uint16_t u; _Float16 f; } x = { h }; return (float)x.f; }
static inline uint16_t f16_store(float f) { union { _Float16 f; uint16_t u; } x = { (_Float16)f }; return x.u; }
"""

# Philox-4x32-10 (Salmon et al., SC'11): counter = the element's offset, key = the seed; the top 24
# bits of the first word give a float in [0, 1)
_PHILOX = """\
static inline float philox_uniform(int64_t seed, int64_t offset) {
    uint32_t c0 = (uint32_t)offset, c1 = (uint32_t)((uint64_t)offset >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)((uint64_t)seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1; c3 = (uint32_t)p0; c0 = n0; c2 = n2;
        k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
    }
    return (float)(c0 >> 8) * (1.0f / 16777216.0f);
}
"""

# float32 exp inline, for the exp op where codegen_c_exp has no vector exp (no AVX-512): no call, so nothing is
# spilled around one and no -inf guard is needed (exp_f's call spilled the guard's mask and every
# live vector: a softmax row's exp loop ran 10-27% slower through it). n = round(x / ln 2) by the
# 1.5 * 2^23 trick, r = x - n ln 2 in two parts (Cody-Waite), e^r by a degree-6 polynomial (relative
# error 2e-9 on [-ln2/2, ln2/2]), then 2^n as two halves so that subnormal results and overflow to
# inf come out right. x is clamped to [-104, 89] first (e^-104 rounds to 0, e^89 overflows; NaN
# passes through). At most 1.05 ulp from the correctly rounded value over [-110, 90].
_EXP_INLINE = """\
static inline float expi_f(float x) { x = sel_f(x < -104.0f, -104.0f, x); x = sel_f(x > 89.0f, 89.0f, x);
    const float t = fmaf(x, 1.44269504088896341f, 12582912.0f), n = t - 12582912.0f;
    const float r = fmaf(n, -1.428606765330187045e-06f, fmaf(n, -0.693145751953125f, x));
    float p = fmaf(fmaf(fmaf(0.001384609960950911f, r, 0.008374159224331379f), r, 0.041667964309453964f), r,
                   0.16666431725025177f);
    p = fmaf(fmaf(fmaf(p, r, 0.4999999403953552f), r, 1.0f), r, 1.0f);
    union { float f; int32_t i; } bits = { t }, lo, hi; const int32_t e = bits.i - 0x4B400000, half = e >> 1;
    lo.i = (half + 127) << 23; hi.i = (e - half + 127) << 23; return p * lo.f * hi.f; }
"""

HELPERS = (_SELECT + "\n" + _RECIP_OK + "\n" + _EXP + "\n" + _EXP_INLINE + codegen_c_exp.AVX512 + _FLOAT_HELPERS + "\n" + _INT_HELPERS + "\n" + _HALF_HELPERS
           + _PHILOX)


def prelude() -> str:
    """What every kernel source starts with: headers, libmvec's vector prototypes, the helpers."""
    from .machine import vector_math_prelude
    return ("#include <math.h>\n#include <stdint.h>\n" + vector_math_prelude() + "\n" + HELPERS
            + codegen_c_vec.PRELUDE)

# -- C text of each op ---------------------------------------------------------------------------
UNSIGNED = {"int64_t": "uint64_t", "int32_t": "uint32_t", "int16_t": "uint16_t", "int8_t": "uint8_t",
            "uint8_t": "uint8_t", "_Bool": "_Bool"}
_FLOAT_UNARY = {
    "neg": "(-{x})", "abs": "fabs{s}({x})", "rsqrt": "({one} / sqrt{s}({x}))", "reciprocal": "({one} / {x})",
    "sigmoid": "({one} / ({one} + expa_{n}(-{x})))", "silu": "({x} / ({one} + expa_{n}(-{x})))",
    "round": "nearbyint{s}({x})", "relu": "sel_{n}({x} < 0, 0, {x})", "frac": "({x} - trunc{s}({x}))",
    "square": "({x} * {x})", "sign": "sel_{n}({x} > 0, {one}, sel_{n}({x} < 0, -{one}, {x}))",
    "gelu": "({half} * {x} * ({one} + erf{s}({x} * ({one} / sqrt{s}(2 * {one})))))",
    # 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)): libmvec's exp is ~1.3x faster than its tanh; and
    # -2z = x (c1 + c2 x^2) with one fma: 2 vector ops fewer than c1 (x + 0.044715 x^3), 8% at 1e5 here
    "gelu_tanh": "({x} / ({one} + expa_{n}({x} * fma{s}({x} * {x}, -0.07135481627260025{s}, "
                 "-1.5957691216057308{s}))))",
    "isnan": "({x} != {x})", "isinf": "(isinf({x}) != 0)", "isfinite": "(isfinite({x}) != 0)",
    "logical_not": "(!{x})"}
for _f in _MVEC_1 + ("sqrt", "floor", "ceil", "trunc"):
    _FLOAT_UNARY[_f] = _f + "{s}({x})"
_FLOAT_UNARY["exp"] = "expv_{n}({x})"       # expv_f/expa_f/expv_d/expa_d: codegen_c_exp.py
_INT_UNARY = {
    "neg": "(({t})(0 - ({u}){x}))", "abs": "sel_{t}({x} < 0, ({t})(0 - ({u}){x}), {x})", "floor": "{x}",
    "ceil": "{x}", "trunc": "{x}", "round": "{x}", "relu": "sel_{t}({x} < 0, 0, {x})",
    "square": "(({t})(({u}){x} * ({u}){x}))", "sign": "(({x} > 0) - ({x} < 0))", "bitwise_not": "(({t})~{x})",
    "logical_not": "(!{x})", "isnan": "0", "isinf": "0", "isfinite": "1"}
_BOOL_UNARY = dict(_INT_UNARY, neg="(!{x})", bitwise_not="(!{x})", abs="{x}")
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_FLOAT_BINARY = {
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})", "truediv": "({a} / {b})",
    "maximum": "nanmax_{n}({a}, {b})", "minimum": "nanmin_{n}({a}, {b})", "pow": "pow{s}({a}, {b})",
    "atan2": "atan2{s}({a}, {b})", "copysign": "copysign{s}({a}, {b})", "fmod": "fmod{s}({a}, {b})",
    "floordiv": "floordiv_{n}({a}, {b})", "remainder": "remainder_{n}({a}, {b})",
    "truncdiv": "trunc{s}({a} / {b})", "clamp_min": "sel_{n}({a} < {b}, {b}, {a})",
    "clamp_max": "sel_{n}({a} > {b}, {b}, {a})"}
_INT_BINARY = {
    "add": "(({t})(({u}){a} + ({u}){b}))", "sub": "(({t})(({u}){a} - ({u}){b}))",
    "mul": "(({t})(({u}){a} * ({u}){b}))", "maximum": "sel_{t}({a} > {b}, {a}, {b})",
    "minimum": "sel_{t}({a} < {b}, {a}, {b})", "bitwise_and": "({a} & {b})", "bitwise_or": "({a} | {b})",
    "bitwise_xor": "({a} ^ {b})", "floordiv": "floordiv_{t}({a}, {b})", "remainder": "remainder_{t}({a}, {b})",
    "fmod": "fmod_{t}({a}, {b})", "truncdiv": "truncdiv_{t}({a}, {b})",
    "clamp_min": "sel_{t}({a} < {b}, {b}, {a})", "clamp_max": "sel_{t}({a} > {b}, {b}, {a})"}
_BOOL_BINARY = {"add": "({a} | {b})", "mul": "({a} & {b})", "maximum": "({a} | {b})", "minimum": "({a} & {b})",
                "bitwise_and": "({a} & {b})", "bitwise_or": "({a} | {b})", "bitwise_xor": "({a} ^ {b})"}
_LOGICAL = {"logical_and": "({a} && {b})", "logical_or": "({a} || {b})", "logical_xor": "((!{a}) != (!{b}))"}
_DIVISIONS = ("floordiv", "remainder", "fmod", "truncdiv")

# the kernel's return code is an OR of these bits; the wrapper raises eager's exception for the
# lowest bit set (the data-dependent checks eager makes: integer division by zero, index bounds)
KERNEL_ERRORS = {1: (RuntimeError, "ZeroDivisionError"),
                 2: (IndexError, "embedding(): index out of range in self"),
                 4: (IndexError, "index(): an index is out of bounds for its dimension"),
                 8: (RuntimeError, "gather(): index out of bounds for dimension"),
                 16: (RuntimeError, "index_select(): INDICES element is out of DATA bounds"),
                 32: (RuntimeError, "scatter_add(): index out of bounds for dimension"),
                 64: (IndexError, "index_put(): an index is out of bounds for its dimension"),
                 128: (IndexError, "cross_entropy(): a target is out of bounds (not in [0, classes))")}
ERROR_BIT = {"division": 1, "embedding": 2, "index": 4, "gather": 8, "index_select": 16, "scatter_add": 32,
             "index_put": 64, "cross_entropy": 128}


HALF = {_dt.float16: "f16", _dt.bfloat16: "bf16"}


def ctype(dtype) -> str:
    """The C type a value of `dtype` is computed in (16-bit floats: float)."""
    return "float" if dtype in HALF else ir.C_TYPES[dtype]


def from_memory(dtype, text) -> str:
    return f"{HALF[dtype]}_load({text})" if dtype in HALF else text


def to_memory(dtype, text) -> str:
    return f"{HALF[dtype]}_store({text})" if dtype in HALF else text


def literal(value, dtype) -> str:
    t = ctype(dtype)
    if dtype.is_floating_point:
        value = float(value)
        if math.isnan(value):
            return "NAN"
        if math.isinf(value):
            return "INFINITY" if value > 0 else "-INFINITY"
        return f"{value!r}f" if t == "float" else repr(value)
    if t == "_Bool":
        return "1" if value else "0"
    value = int(value)
    if t == "int64_t":
        return "INT64_MIN" if value == -2 ** 63 else f"INT64_C({value})"
    return f"(({t}){value})"


class CEmitter:
    """The ops handler that writes C: each op is one `type tN = expr;` line (common ones shared)."""

    def __init__(self, kernel, lines, rename, locals_, in_loop=False):
        self.kernel, self.lines, self.rename, self.locals = kernel, lines, rename, locals_
        self.in_loop = in_loop                  # emitting the body of a member's inner loop
        self.divisors = set()                   # loop invariants divided by (as a multiply)
        self.cse = {}
        self.row_arrays = kernel.row_arrays     # name -> index rename that drops the outer loops

    def _emit(self, t, expr):
        key = (t, expr)
        if key not in self.cse:
            name = self.kernel.temp()
            self.lines.append(f"{t} {name} = {expr};")
            self.cse[key] = name
        return self.cse[key]

    def load(self, buf, index):
        if buf.name in self.locals:
            return self.locals[buf.name]
        if buf.name in self.row_arrays:
            return self._emit(ctype(buf.dtype), f"{buf.name}[{index.render({**self.rename, **self.row_arrays[buf.name]})}]")
        self.kernel.use(buf)
        if buf.dtype == _dt.bool_:      # GCC has no vector type for a _Bool load: read its byte
            return self._emit("_Bool", f"(((const uint8_t*){buf.name})[{index.render(self.rename)}] != 0)")
        return self._emit(ctype(buf.dtype), from_memory(buf.dtype, f"{buf.name}[{index.render(self.rename)}]"))

    def constant(self, value, dtype):
        return literal(value, dtype)

    def index_expr(self, expr, dtype):
        return self._emit(ctype(dtype), f"(({ctype(dtype)})({expr.render(self.rename)}))")

    def rand(self, seed, offset, dtype):
        """A uniform [0, 1) draw for element `offset` (an Expr) under `seed` (an int64 value)."""
        return self._emit(ctype(dtype), f"(({ctype(dtype)})philox_uniform({seed}, {offset.render(self.rename)}))")

    def masked(self, mask, body, other, dtype):
        """body() only where `mask` holds (its loads may be out of bounds elsewhere), else `other`."""
        res = self.kernel.temp()
        self.lines.append(f"{ctype(dtype)} {res} = {literal(other, dtype)};")
        outer_lines, outer_cse = self.lines, dict(self.cse)
        self.lines = inner = []
        value = body()
        self.lines, self.cse = outer_lines, outer_cse      # values made inside are not visible outside
        self.lines.append(f"if ({mask}) {{")
        self.lines.extend("    " + ln for ln in inner)
        self.lines.append(f"    {res} = {value};")
        self.lines.append("}")
        return res

    def check_index(self, index, size, wrap, op):
        """An index loaded from data: wrapped when `wrap` (negative counts from the end), checked
        against [0, size) (the kernel returns ERROR_BIT[op] if not); an in-bounds index is returned."""
        self.kernel.checks_errors = True
        i = self._emit("int64_t", f"((int64_t){index})")
        if wrap:
            i = self._emit("int64_t", f"sel_int64_t({i} < 0, {i} + {size}, {i})")
        bad = self._emit("_Bool", f"(({i} < 0) | ({i} >= INT64_C({size})))")
        self.lines.append(f"err |= {bad} * {ERROR_BIT[op]};")
        return self._emit("int64_t", f"sel_int64_t({bad}, 0, {i})")

    def load_indirect(self, buf, base, indirect):
        """buf[base + sum(stride * index)]: indirect is [(checked index, stride)]."""
        self.kernel.use(buf)
        terms = [base.render(self.rename)] + [f"{stride}*{i}" for i, stride in indirect if stride]
        return self._emit(ctype(buf.dtype), from_memory(buf.dtype, f"{buf.name}[{' + '.join(terms)}]"))

    def to_dtype(self, x, src, dst):
        if dst == _dt.bool_:
            return self._emit("_Bool", f"({x} != 0)")
        if dst in HALF:                     # a cast to a 16-bit float rounds like storing it
            return self._emit("float", from_memory(dst, to_memory(dst, f"((float){x})")))
        return self._emit(ctype(dst), f"(({ctype(dst)}){x})")

    def where(self, c, a, b, dtype):
        t = ctype(dtype)
        return self._emit(t, f"sel_{ {'float': 'f', 'double': 'd'}.get(t, t)}({c}, {a}, {b})")

    def unary(self, name, x, dtype):
        t = ctype(dtype)
        if dtype.is_floating_point:
            s = "f" if t == "float" else ""
            text = _FLOAT_UNARY[name].format(x=x, s=s, n=s or "d", one="1.0" + s, half="0.5" + s)
        else:
            table = _BOOL_UNARY if t == "_Bool" else _INT_UNARY
            text = table[name].format(x=x, t=t, u=UNSIGNED[t])
        out = "_Bool" if name in ("isnan", "isinf", "isfinite", "logical_not") else t
        return self._emit(out, text)

    def binary(self, name, a, b, dtype):
        t = ctype(dtype)
        if name in _COMPARE:
            return self._emit("_Bool", f"({a} {_COMPARE[name]} {b})")
        if name in _LOGICAL:
            return self._emit("_Bool", _LOGICAL[name].format(a=a, b=b))
        if dtype.is_floating_point:
            s = "f" if t == "float" else ""
            if name == "truediv" and self.in_loop and b in self.kernel.invariants:
                # a divisor fixed for the whole inner loop (softmax's row sum): one division per
                # row and a multiply per element (a divide costs ~10x a multiply; torch's softmax
                # does the same; within an ulp of the quotient). The caller runs this loop only
                # where recip_ok(b) (1/b neither overflows nor underflows), else the dividing one.
                self.divisors.add(b)
                return self._emit(t, f"({a} * (1.0{s} / {b}))")
            return self._emit(t, _FLOAT_BINARY[name].format(a=a, b=b, s=s, n=s or "d"))
        if name in _DIVISIONS:
            self.kernel.checks_errors = True
            self.lines.append(f"err |= ({b} == 0) * {ERROR_BIT['division']};")
        table = _BOOL_BINARY if t == "_Bool" else _INT_BINARY
        return self._emit(t, table[name].format(a=a, b=b, t=t, u=UNSIGNED[t]))

# -- kernels -------------------------------------------------------------------------------------


def merge_loops(variables, ranges, exprs):
    """([(var, range)] after merging adjacent loops, rename): two loops merge when every index
    expression uses them as one (coeff(outer) == coeff(inner) * range(inner)); size-1 loops vanish."""
    rename, loops = {}, []
    head, hrange = None, 1
    for v, r in zip(reversed(variables), reversed(ranges)):
        if r == 1:
            rename[v] = None
        elif head is None:
            head, hrange = v, r
        elif all(e.coeff(v) == e.coeff(head) * hrange for e in exprs):
            rename[v], hrange = None, hrange * r
        else:
            loops.append((head, hrange))
            head, hrange = v, r
    if head is not None:
        loops.append((head, hrange))
    return loops[::-1], rename


class Kernel:
    def __init__(self, name):
        self.name, self.args, self._temps, self.checks_errors = name, {}, 0, False
        self.written = set()
        self.row_arrays = {}
        self.invariants = set()     # C names of values computed once per outer iteration
        self.row_var = None         # a row kernel's innermost outer variable (loads prefetch the next row)
        self.may_stream = False     # single-threaded: large outputs may take streaming stores
        self.streams = False        # it did: the kernel ends with an sfence

    def temp(self):
        self._temps += 1
        return f"t{self._temps - 1}"

    def use(self, buf):
        self.args.setdefault(buf.name, buf)


def _loop_open(loops, lines, simd=None, parallel=None):
    """Open `loops`; `simd`: the innermost loop's clause ("" for none) or None for no simd pragma;
    `parallel`: the outermost loop's `parallel for` pragma or None. Each pragma ends with ERR,
    replaced by the error-flag reduction clause when the kernel has one. Returns the braces to close."""
    for n, (v, r) in enumerate(loops):
        innermost, outermost = n == len(loops) - 1, n == 0
        if outermost and parallel and innermost and simd is not None:
            clause = "" if simd and simd in parallel else f" {simd}"       # a clause is given once
            lines.append(parallel.replace("parallel for", "parallel for simd") + f"{clause} ERR")
        elif outermost and parallel:
            lines.append(parallel + " ERR")
        elif innermost and simd is not None:
            lines.append(f"#pragma omp simd {simd} ERR")
        lines.append(f"for (int64_t {v} = 0; {v} < {r}; {v}++) {{")
    return len(loops)


def generate_scatter_kernel(b, name):
    """A ScatterBody: the copy of the base, then the updates in one serial loop (no pragmas)."""
    k, body = Kernel(name), b.body
    ovars, rvars = b.canonical_vars()
    k.use(b)
    k.written.add(b.name)
    copy, update = [], []
    with ir.set_handler(CEmitter(k, copy, {}, {})):
        value = body.base_fn([ir.Expr.var(v) for v in ovars])
    store = ir.strided_index([ir.Expr.var(v) for v in ovars], b.strides)
    copy.append(f"{b.name}[{store.render()}] = {to_memory(b.dtype, value)};")
    em = CEmitter(k, update, {}, {})
    with ir.set_handler(em):
        ridx = [ir.Expr.var(v) for v in rvars]
        terms, base = [], ir.Expr()
        for d, p in enumerate(body.positions(ridx)):
            if isinstance(p, ir.Expr):
                base = base + p * b.strides[d]
            else:
                terms.append(f"{b.strides[d]}*{em.check_index(p, b.shape[d], body.wrap, body.op)}")
        new = body.value_fn(ridx)
        dest = " + ".join([base.render()] + terms)
        if body.accumulate:
            cur = em._emit(ctype(b.dtype), from_memory(b.dtype, f"{b.name}[{dest}]"))
            new = em.binary("add", cur, new, b.dtype)
        update.append(f"{b.name}[{dest}] = {to_memory(b.dtype, new)};")
    lines = []
    for part, variables, ranges in ((copy, ovars, body.ranges), (update, rvars, body.update_ranges)):
        lines.append("{")
        n = _loop_open(list(zip(variables, ranges)), lines)
        lines.extend("    " + ln for ln in part)
        lines.append("}" * n + "}")
    return kernel_source(name, list(k.args.values()), k, lines), list(k.args.values()), k.checks_errors


def kernel_source(name, args, k, lines) -> str:
    """The C function: launch.py's calling convention, the buffers unpacked by position; a kernel
    that checks errors gets one more buffer, an int32 the error bits (KERNEL_ERRORS) are or-ed into."""
    unpack = "".join(f"    {'' if a.name in k.written else 'const '}{ir.C_TYPES[a.dtype]}* {a.name} = "
                     f"({ir.C_TYPES[a.dtype]}*)bufs[{i}];\n" for i, a in enumerate(args))
    report = f"    if (err) *(int32_t*)bufs[{len(args)}] |= err;\n" if k.checks_errors else ""
    return (f"void {name}(void *const *bufs, const int64_t *ints, const double *floats) {{\n{unpack}"
            f"    int err = 0;\n" + "\n".join("    " + ln for ln in lines) + f"\n{report}}}\n")


def generate_kernel(group, name, reads, threads=1):
    """C source of one kernel computing `group`; returns (function source, [buffers], checks_errors)."""
    if isinstance(group.members[0].body, ir.ScatterBody):
        return generate_scatter_kernel(group.members[0], name)
    k = Kernel(name)
    outer = group.outer
    nk = len(outer)
    exprs, member_exprs, stores = [], {}, {}
    for b in group.members:
        ovars, rvars = b.canonical_vars()
        own = [e for p, e in reads[b.name]]
        if isinstance(b.body, ir.ReductionBody):
            stores[b.name] = ir.strided_index([ir.Expr.var(v) for v in ovars], b.strides)
            if b.body.reduction_type.startswith("arg"):
                own.append(ir.strided_index([ir.Expr.var(v) for v in rvars],
                                            ir.contiguous_strides(b.body.reduction_ranges)))
        else:
            stores[b.name] = ir.strided_index([ir.Expr.var(v) for v in ovars], b.strides)
        own.append(stores[b.name])
        member_exprs[b.name] = own
        exprs += own
    outer_loops, rename = merge_loops([f"i{d}" for d in range(nk)], outer, exprs)
    work = max(b.numel * max(1, math.prod(getattr(b.body, "reduction_ranges", ()))) for b in group.members)
    parallel = threads > 1 and work >= 32768
    err_clause = " reduction(|:err)"
    omp_par = f"#pragma omp parallel for num_threads({threads}) schedule(static)" if parallel else None
    if codegen_columns.worth_interchanging(group, reads, outer_loops):
        out = codegen_columns.emit(k, group, outer_loops, rename, member_exprs, stores, omp_par)
        return _finish_kernel(name, k, out, err_clause)
    body, locals_ = [], {}
    k.may_stream = not parallel
    k.row_var = f"i{nk - 1}" if nk else None
    flat = all(not group.inner_ranges(b) or math.prod(group.inner_ranges(b)) == 1 for b in group.members)
    w = codegen_c_vec.lanes()
    if flat and w:                  # one vector loop for the whole group (codegen_c_vec.py)
        try:
            kv = Kernel(name)
            kv.may_stream = not parallel
            out = codegen_c_vec.flat_body(kv, group, outer_loops, rename, stores, omp_par, w)
            return _finish_kernel(name, kv, out, err_clause)
        except codegen_c_vec.Unsupported:
            pass
    shared = CEmitter(k, body, rename, locals_)
    for b in group.members:
        inner = list(group.inner_ranges(b))
        ovars, rvars = b.canonical_vars()
        inner_vars = (rvars if isinstance(b.body, ir.ReductionBody) else ovars[nk:])
        loops, irename = merge_loops(inner_vars, inner, member_exprs[b.name])
        full_rename = dict(rename, **irename)
        par_here = parallel and not outer_loops
        if isinstance(b.body, ir.ReductionBody):
            emit_reduction(k, b, group, loops, full_rename, locals_, body, stores[b.name], threads, par_here)
        elif not loops:
            shared.rename = full_rename
            with ir.set_handler(shared):
                value = b.body.run((ovars, []))
            if b.name in group.row_local:          # one element per row: a register
                locals_[b.name] = value
                k.invariants.add(value)
                continue
            body.append(f"{b.name}[{stores[b.name].render(full_rename)}] = {to_memory(b.dtype, value)};")
            k.use(b)
            k.written.add(b.name)
        else:
            if b.name in group.row_local:          # a row of scratch, written and read in this row
                drop = {f"i{d}": None for d in range(nk)}
                k.row_arrays[b.name] = drop
                body.append(f"{ctype(b.dtype)} {b.name}[{math.prod(inner)}];")
                target = (b.name, stores[b.name], {**full_rename, **drop})
            else:
                target = (b.name, stores[b.name], full_rename)
                k.use(b)
                k.written.add(b.name)
            pragma = omp_par if par_here else None
            fast, divisors = _member_loop(k, b, ovars, loops, full_rename, locals_, target, pragma, True)
            if divisors:        # the reciprocal only where it is finite and exact enough; else divide
                exact, _ = _member_loop(k, b, ovars, loops, full_rename, locals_, target, pragma, False)
                body.append(f"if ({' && '.join(f'recip_ok({d})' for d in sorted(divisors))}) {{")
                body.extend(fast + ["} else {"] + exact + ["}"])
            else:
                body.extend(fast)
    out = []
    n = _loop_open(outer_loops, out, "" if flat else None, omp_par)
    out.extend("    " + ln for ln in body)
    out.append("}" * n)
    return _finish_kernel(name, k, out, err_clause)


def _finish_kernel(name, k, out, err_clause):
    if k.streams:               # streaming stores are weakly ordered: visible before the kernel returns
        out = out + ["__builtin_ia32_sfence();"]
    text = "\n".join(out).replace("ERR", err_clause if k.checks_errors else "")
    args = list(k.args.values())
    return kernel_source(name, args, k, text.split("\n")), args, k.checks_errors


_DECL = re.compile(r"^(?:const )?[A-Za-z_][\w ]* (t\d+) = (.*);$")
_WORD = re.compile(r"[A-Za-z_]\w*")
_ASSIGNED = re.compile(r"\b(t\d+(?:_\w+)?)\s*(?:[-+*/|&^]?=)(?!=)")


def hoist_invariants(lines, loops):
    """(lines computed once before `loops`, the rest): the `T tN = expr;` lines of a loop body that
    read no loop variable and no value that varies (a row's mean and 1/sqrt(var + eps) in layer_norm's
    normalising loop, a broadcast load): GCC does not hoist a load past the loop's stores (the
    buffers may alias as far as it knows), so layer_norm at 1024x256 ran 10x slower with them inside.
    Only plain declarations at the body's top level move; a temp assigned anywhere else (a masked
    load's result, an accumulator) varies; nothing moves out of a loop that may run zero times."""
    if not loops or any(r <= 0 for _, r in loops):
        return [], lines
    varying = {v for v, _ in loops}
    for ln in lines:
        if not _DECL.match(ln):
            varying.update(_ASSIGNED.findall(ln))
    hoisted, rest = [], []
    for ln in lines:
        m = _DECL.match(ln)
        if m and m.group(1) not in varying and not varying.intersection(_WORD.findall(m.group(2))):
            hoisted.append(ln)
        else:
            if m:
                varying.add(m.group(1))
            rest.append(ln)
    return hoisted, rest


def _member_loop(k, b, ovars, loops, rename, locals_, target, pragma, hoist_division):
    """C lines of a pointwise member's inner loops, storing into `target` = (buffer name, store
    index, its rename), and the divisors replaced by a hoisted reciprocal (only when
    `hoist_division`); vector-typed C (codegen_c_vec.py) where it covers the loop."""
    w = codegen_c_vec.lanes()
    if w:
        try:
            return codegen_c_vec.member_loop(k, b, ovars, loops, rename, locals_, target, pragma, hoist_division, w)
        except codegen_c_vec.Unsupported:
            pass
    lines = []
    emitter = CEmitter(k, lines, rename, locals_, in_loop=hoist_division)
    with ir.set_handler(emitter):
        value = b.body.run((ovars, []))
    name, index, store_rename = target
    lines.append(f"{name}[{index.render(store_rename)}] = "
                 f"{value if name in k.row_arrays else to_memory(b.dtype, value)};")
    hoisted, lines = hoist_invariants(lines, loops)
    out = ["{"] + hoisted
    n = _loop_open(loops, out, "", pragma)
    out.extend("    " + ln for ln in lines)
    return out + ["}" * n, "}"], emitter.divisors


from .codegen_reduction import emit_reduction  # noqa: E402  (these import CEmitter from here)
from . import codegen_columns, codegen_c_vec  # noqa: E402
