"""Native eager kernels of the convolutional-network ops: relu, max pooling with its backward,
batch norm's training backward and the 2-d im2col/col2im of convolutions (in F.unfold/F.fold's
layout). C loops compiled into the same translation unit as ember/_inductor/native_kernels.py
(its `source(dtype)` appends `BODIES`, filled with the same template values: T, the dtype
suffix, the EXP/TANH macros) and called the same way, through ember/ops/native.py's
`kernel(name, dtype)`.

Why a file of their own: the kernels of one family of ops are read (and reviewed) together, and
the shared file stays the general ops'. Every kernel takes C-contiguous arrays of one dtype
(callers check, or copy) and follows native_kernels' signature.
"""

BODIES = r"""
/* relu: x < 0 ? 0 : x, so -0.0 and NaN pass through as in PyTorch (np.maximum(x, 0) gives +0.0). */
K(relu_fwd) {
    const T *x = bufs[0]; T *out = bufs[1]; int64_t n = ints[0];
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) out[i] = x[i] < (T)0 ? (T)0 : x[i];
}

/* max_pool2d where every window lies inside its plane (no padding, no dilation, no ceil_mode
   overhang): no bounds checks, and 2x2 windows of stride 2 as one vectorised loop per output row
   (selects, not branches: pooled data compare unpredictably). Values and PyTorch's flat indices
   (h * W + w) per plane; the rule is max_pool2d's: a tap replaces the running max when larger or
   NaN, so ties keep the first tap. */
#define POOL_TAP(v, off) { int take = (v) > best || (v) != (v); best = take ? (v) : best; at = take ? (off) : at; }
K(max_pool2d_inbounds) {
    const T *x = bufs[0]; T *out = bufs[1]; int64_t *idx = bufs[2];
    int64_t P = ints[0], H = ints[1], W = ints[2], OH = ints[3], OW = ints[4], KH = ints[5], KW = ints[6];
    int64_t SH = ints[7], SW = ints[8];
    int64_t two_by_two = KH == 2 && KW == 2 && SH == 2 && SW == 2;
    for (int64_t p = 0; p < P; p++) {
        const T *xp = x + p * H * W;
        T *op = out + p * OH * OW; int64_t *ip = idx + p * OH * OW;
        for (int64_t oh = 0; oh < OH; oh++) {
            if (two_by_two) {
                const T *r0 = xp + 2 * oh * W, *r1 = r0 + W;
                int64_t row = 2 * oh * W;
                #pragma omp simd
                for (int64_t ow = 0; ow < OW; ow++) {
                    T best = r0[2 * ow]; int64_t at = row + 2 * ow;
                    POOL_TAP(r0[2 * ow + 1], row + 2 * ow + 1)
                    POOL_TAP(r1[2 * ow], row + W + 2 * ow)
                    POOL_TAP(r1[2 * ow + 1], row + W + 2 * ow + 1)
                    op[oh * OW + ow] = best; ip[oh * OW + ow] = at;
                }
                continue;
            }
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t base = oh * SH * W + ow * SW;
                T best = xp[base]; int64_t at = base;
                for (int64_t i = 0; i < KH; i++)
                    for (int64_t j = 0; j < KW; j++) POOL_TAP(xp[base + i * W + j], base + i * W + j)
                op[oh * OW + ow] = best; ip[oh * OW + ow] = at;
            }
        }
    }
}
#undef POOL_TAP

/* max pooling's backward (any window geometry): grad_input (P, HW) zeroed, then each output's
   gradient added at its argmax, in output order (overlapping windows may share one). An index
   outside [0, HW) writes nothing and sets bad[0] = 1 (the caller then takes the checked path). */
K(max_pool_bwd) {
    const T *g = bufs[0]; const int64_t *idx = bufs[1]; T *gi = bufs[2]; int64_t *bad = bufs[3];
    int64_t P = ints[0], HW = ints[1], L = ints[2];
    for (int64_t i = 0; i < P * L; i++)
        if (idx[i] < 0 || idx[i] >= HW) { bad[0] = 1; return; }
    memset(gi, 0, P * HW * sizeof(T));
    for (int64_t p = 0; p < P; p++) {
        const T *gp = g + p * L; const int64_t *ipp = idx + p * L; T *gip = gi + p * HW;
        for (int64_t l = 0; l < L; l++) gip[ipp[l]] += gp[l];
    }
}

/* batch_norm's training backward over (N, C, S) (S: the spatial size): per channel k the mean
   and biased variance (two passes, in double, as the forward), then with xhat = (x - mean) * rstd
   and w the channel's weight (1 without one): db = sum(g), dw = sum(g * xhat) and
   gx = rstd * (g * w - w * db / n - xhat * w * dw / n), every sum in double (ATen's algorithm).
   Channel k is N blocks of S contiguous elements, C * S apart. gx is skipped when want_gx = 0. */
K(batch_norm_bwd) {
    const T *g = bufs[0], *x = bufs[1], *w = bufs[2]; T *gx = bufs[3]; double *dw = bufs[4], *db = bufs[5];
    int64_t N = ints[0], C = ints[1], S = ints[2], has_weight = ints[3], want_gx = ints[4];
    double eps = floats[0], count = (double)(N * S);
    for (int64_t k = 0; k < C; k++) {
        double sum = 0, sq = 0, s1 = 0, s2 = 0;
        for (int64_t b = 0; b < N; b++) {
            const T *xb = x + (b * C + k) * S;
            #pragma omp simd reduction(+:sum)
            for (int64_t j = 0; j < S; j++) sum += xb[j];
        }
        double mean = sum / count;
        for (int64_t b = 0; b < N; b++) {
            const T *xb = x + (b * C + k) * S, *gb = g + (b * C + k) * S;
            #pragma omp simd reduction(+:sq, s1, s2)
            for (int64_t j = 0; j < S; j++) {
                double d = (double)xb[j] - mean, gj = gb[j];
                sq += d * d; s1 += gj; s2 += gj * d;
            }
        }
        double rstd = 1.0 / sqrt(sq / count + eps);
        double wk = has_weight ? (double)w[k] : 1.0;
        db[k] = s1; dw[k] = s2 * rstd;
        if (!want_gx) continue;
        double m1 = wk * s1 / count, m2 = wk * s2 * rstd / count;
        for (int64_t b = 0; b < N; b++) {
            const T *xb = x + (b * C + k) * S, *gb = g + (b * C + k) * S; T *ob = gx + (b * C + k) * S;
            #pragma omp simd
            for (int64_t j = 0; j < S; j++) {
                double xh = ((double)xb[j] - mean) * rstd;
                ob[j] = (T)(rstd * ((double)gb[j] * wk - m1 - xh * m2));
            }
        }
    }
}
/* The output columns [lo, hi) of a kernel tap whose input column is ow * SW + off lie inside
   [0, W): the rest read the zero padding. */
static void tap_span(int64_t OW, int64_t W, int64_t SW, int64_t off, int64_t *lo, int64_t *hi) {
    *lo = off >= 0 ? 0 : (-off + SW - 1) / SW;
    *hi = W - off <= 0 ? 0 : (W - 1 - off) / SW + 1;
    if (*hi > OW) *hi = OW;
    if (*lo > *hi) *lo = *hi;
}

/* im2col of a 2-d convolution in F.unfold's layout: the value of input x (N, C, H, W) under tap
   (c, ki, kj) at output position l = oh * OW + ow of sample n goes to cols (N, C*KH*KW, L) at
   [n][(c * KH + ki) * KW + kj][l] (PyTorch's row order), zeros where the tap falls in the padding
   (the high padding is implied by OH/OW, so asymmetric padding works). A convolution is then one
   GEMM per sample, writing NCHW. */
K(unfold2d) {
    const T *x = bufs[0]; T *cols = bufs[1];
    int64_t N = ints[0], C = ints[1], H = ints[2], W = ints[3], KH = ints[4], KW = ints[5], OH = ints[6], OW = ints[7];
    int64_t SH = ints[8], SW = ints[9], PH = ints[10], PW = ints[11], DH = ints[12], DW = ints[13];
    int64_t L = OH * OW;
    for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
    for (int64_t ki = 0; ki < KH; ki++)
    for (int64_t kj = 0; kj < KW; kj++) {
        T *row = cols + (n * C * KH * KW + (c * KH + ki) * KW + kj) * L;
        const T *xc = x + (n * C + c) * H * W;
        int64_t off = kj * DW - PW, lo, hi;
        tap_span(OW, W, SW, off, &lo, &hi);
        for (int64_t oh = 0; oh < OH; oh++) {
            T *dst = row + oh * OW;
            int64_t h = oh * SH - PH + ki * DH;
            if (h < 0 || h >= H) { for (int64_t ow = 0; ow < OW; ow++) dst[ow] = 0; continue; }
            const T *src = xc + h * W;
            for (int64_t ow = 0; ow < lo; ow++) dst[ow] = 0;
            if (SW == 1) {
                #pragma omp simd
                for (int64_t ow = lo; ow < hi; ow++) dst[ow] = src[ow + off];
            } else for (int64_t ow = lo; ow < hi; ow++) dst[ow] = src[ow * SW + off];
            for (int64_t ow = hi; ow < OW; ow++) dst[ow] = 0;
        }
    }
}

/* col2im in F.fold's layout, unfold2d's adjoint: img (N, C, H, W) zeroed, then every value of
   cols (N, C*KH*KW, L) added at its tap's input position (taps in PyTorch's row order). */
K(fold2d) {
    const T *cols = bufs[0]; T *img = bufs[1];
    int64_t N = ints[0], C = ints[1], H = ints[2], W = ints[3], KH = ints[4], KW = ints[5], OH = ints[6], OW = ints[7];
    int64_t SH = ints[8], SW = ints[9], PH = ints[10], PW = ints[11], DH = ints[12], DW = ints[13];
    int64_t L = OH * OW;
    memset(img, 0, N * C * H * W * sizeof(T));
    for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
    for (int64_t ki = 0; ki < KH; ki++)
    for (int64_t kj = 0; kj < KW; kj++) {
        const T *row = cols + (n * C * KH * KW + (c * KH + ki) * KW + kj) * L;
        T *xc = img + (n * C + c) * H * W;
        int64_t off = kj * DW - PW, lo, hi;
        tap_span(OW, W, SW, off, &lo, &hi);
        for (int64_t oh = 0; oh < OH; oh++) {
            int64_t h = oh * SH - PH + ki * DH;
            if (h < 0 || h >= H) continue;
            const T *src = row + oh * OW; T *dst = xc + h * W;
            #pragma omp simd
            for (int64_t ow = lo; ow < hi; ow++) dst[ow * SW + off] += src[ow];
        }
    }
}
"""
