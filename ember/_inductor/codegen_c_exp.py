"""The C kernels' exp: which function each op calls, and the C text of each (codegen_c's prelude).

    expv_f(x)   the exp op on float32 (softmax, log_softmax, logsumexp, a user's exp)
    expa_f(x)   the exp inside float32 sigmoid, silu and gelu_tanh
    expv_d / expa_d: float64, both libmvec's exp behind the -inf guard (exp_d)

Where GCC targets AVX-512 (`__AVX512F__`, `__AVX512VL__`), both float names are one function
declared `#pragma omp declare simd` whose vector variants are written here: a `#pragma omp simd`
loop calls the 16-lane one (`_ZGVeN16v_expv_f`, and the 8-lane one in an epilogue), which computes
e^x = 2^(k/16) e^r with k = round(16 x / ln 2) and r = x - k ln2/16 (|r| <= ln2/32):
  - 2^(j/16), j = k mod 16, is a 16-entry table held in one vector register and read with one
    vpermps (the low 4 bits of each lane's index; the scalar form of a table read is a gather,
    which measured 2x slower than the polynomial it saves);
  - e^r - 1 = r + r^2 (1/2 + r/6) (truncation error r^4/24 < 1e-8 relative); the table is stored as
    a float plus a float correction (hi + lo), result = hi + (hi q + lo), so the table's own rounding
    does not add half an ulp;
  - 2^floor(k/16) is applied by vscalefps (which takes the floor of its exponent operand itself),
    overflows to inf and rounds subnormal results (no two-half scaling as in expi_f), after x is
    clamped to [-104, 89] (NaN passes: vmaxps/vminps return their second operand on NaN; one
    vrangeps would clamp |x| in one op but returns the bound for a quiet NaN).
15 vector operations (and constant loads) for 16 lanes against ~28, at most 1 ulp from the correctly
rounded exp (tests/inductor/test_codegen_exp.py). It is a call (GCC vectorises no intrinsics inside
a loop it vectorises itself): 0.23 ns an element in an L1 loop, where the same steps inlined take
0.16 and expi_f 0.28; libmvec's expf is a call too and costs 0.30. The builtins are GCC's own
(its <immintrin.h> costs ~100 ms of compile time a kernel).
Measured and not kept (C harness, CPU time): sigmoid as one vector function with rcp14 and a
Newton step instead of the division (the 6-op chain's loop 446-467 vs 413-422 us at 1M elements:
the division hides under the memory traffic), and a fast path that sets the exponent bits with an
integer add when no lane is near under/overflow (no faster than vscalefps: 0.99 vs 0.96 us).

Elsewhere expv_f is codegen_c's inline polynomial (expi_f) and expa_f libmvec's expf behind the
-inf guard (exp_f), as measured best there (README, fused CPU section).
"""
from __future__ import annotations

import struct
from decimal import Decimal, getcontext


def _f32(v) -> float:
    return struct.unpack("f", struct.pack("f", float(v)))[0]


def _constants() -> dict:
    """C literals (hex floats, exact) of the table 2^(j/16) as hi + lo and of ln2/16 in two parts."""
    getcontext().prec = 40
    hi, lo = [], []
    for j in range(16):
        exact = Decimal(2) ** (Decimal(j) / 16)
        h = _f32(exact)
        hi.append(h.hex() + "f")
        lo.append(_f32(exact - Decimal(h)).hex() + "f")
    ln2_16 = Decimal(2).ln() / 16
    c1 = _f32(ln2_16)                                   # x - k c1 is exact (fma) for |k| <= 2400
    c2 = _f32(ln2_16 - Decimal(c1))
    return {"hi": ", ".join(hi), "lo": ", ".join(lo), "neg_c1": (-c1).hex() + "f", "neg_c2": (-c2).hex() + "f",
            "inv": _f32(16 / Decimal(2).ln()).hex() + "f", "sixth": _f32(Decimal(1) / 6).hex() + "f"}


AVX512 = r"""
#if defined(__AVX512F__) && defined(__AVX512VL__) && defined(__GNUC__) && !defined(__clang__)
typedef float ev16 __attribute__((vector_size(64)));
typedef int ei16 __attribute__((vector_size(64)));
typedef float ev8 __attribute__((vector_size(32)));
#define S16(c) ((ev16){c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c})
#define FMA16(a, b, c) __builtin_ia32_vfmaddps512_mask((a), (b), (c), (unsigned short)-1, 4)
static const float expv_hi[16] __attribute__((aligned(64))) = {%(hi)s};
static const float expv_lo[16] __attribute__((aligned(64))) = {%(lo)s};
#pragma omp declare simd notinbranch simdlen(16)
#pragma omp declare simd notinbranch simdlen(8)
float expv_f(float x);
static inline __attribute__((always_inline)) ev16 expv16_inline(ev16 x) {  /* codegen_c_vec's vf_exp */
    const ev16 hi = *(const ev16 *)expv_hi, lo = *(const ev16 *)expv_lo;    /* one register each */
    x = __builtin_ia32_maxps512_mask(S16(-104.0f), x, x, (unsigned short)-1, 4);   /* NaN: the 2nd */
    x = __builtin_ia32_minps512_mask(S16(89.0f), x, x, (unsigned short)-1, 4);
    const ev16 t = FMA16(x, S16(%(inv)s), S16(12582912.0f));     /* 1.5 * 2^23 + k, k = round(16 x / ln2) */
    const ev16 k = t - S16(12582912.0f);
    const ev16 r = FMA16(k, S16(%(neg_c2)s), FMA16(k, S16(%(neg_c1)s), x));
    const ev16 q = FMA16(FMA16(S16(%(sixth)s), r, S16(0.5f)), r * r, r);          /* e^r - 1 */
    const ei16 j = (ei16)t;                                                      /* low 4 bits: k mod 16 */
    const ev16 h = __builtin_ia32_permvarsf512_mask(hi, j, hi, (unsigned short)-1);
    const ev16 l = __builtin_ia32_permvarsf512_mask(lo, j, lo, (unsigned short)-1);
    const ev16 m = k * S16(0.0625f);                           /* k / 16: vscalefps floors it itself */
    const ev16 s = FMA16(h, q, l) + h;
    return __builtin_ia32_scalefps512_mask(s, m, s, (unsigned short)-1, 4);
}
__attribute__((visibility("hidden"))) ev16 _ZGVeN16v_expv_f(ev16 x) { return expv16_inline(x); }
__attribute__((visibility("hidden"))) ev8 _ZGVeN8v_expv_f(ev8 x) {   /* an epilogue's 8 lanes */
    const ev16 w = _ZGVeN16v_expv_f(__builtin_shufflevector(x, x, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7));
    return __builtin_shufflevector(w, w, 0, 1, 2, 3, 4, 5, 6, 7);
}
/* the scalar twin (loop tails, loops left scalar), bit for bit the same steps (scalbnf rounds as
   vscalefps does); defined apart from the declaration so GCC derives no vector variant from it */
__attribute__((visibility("hidden"))) float ember_expv_scalar(float x) __asm__("expv_f");
float ember_expv_scalar(float x) {
    if (x != x) return x + x;
    x = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
    const float t = fmaf(x, %(inv)s, 12582912.0f), k = t - 12582912.0f;
    const float r = fmaf(k, %(neg_c2)s, fmaf(k, %(neg_c1)s, x));
    const float q = fmaf(fmaf(%(sixth)s, r, 0.5f), r * r, r);
    union { float f; int32_t i; } bits = { t }; const int j = bits.i & 15;
    return scalbnf(fmaf(expv_hi[j], q, expv_lo[j]) + expv_hi[j], (int)floorf(k * 0.0625f));
}
#define expa_f expv_f
#else
static inline float expv_f(float x) { return expi_f(x); }
static inline float expa_f(float x) { return exp_f(x); }
#endif
#define expv_d exp_d
#define expa_d exp_d
""" % _constants()
