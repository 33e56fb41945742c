"""Native eager kernels of sequence models (token embeddings, attention, per-row norms and losses):
C bodies appended to native_kernels.py's translation unit, so they compile, cache and launch as
its kernels do (`native_kernels.kernel("index_add_rows", dtype)`); read that module's docstring
for the conventions (T, K(name), bufs/ints/floats, C-contiguous arrays of one dtype).
"""
from __future__ import annotations

BODIES = r"""
/* out[o, idx[i], :] += src[o, i, :] over out (outer, n_out, inner) and src (outer, n_src, inner),
   each index in order (repeated indices accumulate as NumPy's add.at does); indices are checked
   by the caller. index_add along any dim, and embedding's backward. */
K(index_add_rows) {
    T *out = bufs[0]; const T *src = bufs[1]; const int64_t *idx = bufs[2];
    int64_t outer = ints[0], n_out = ints[1], n_src = ints[2], inner = ints[3];
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < n_src; i++) {
            T *dst = out + (o * n_out + idx[i]) * inner;
            const T *s = src + (o * n_src + i) * inner;
            #pragma omp simd
            for (int64_t j = 0; j < inner; j++) dst[j] += s[j];
        }
    }
}

/* Attention probabilities in place over s (rows of S scores, L query rows per batch-head): each
   score times `scale`, then softmax over the keys the row sees (all, or j <= i for query i with
   `causal`, as tril(ones(L, S))), zeros past them; the math path's rounding (exp(x - max) in T,
   summed in double). A row of NaN stays NaN. */
K(attn_softmax) {
    T *s = bufs[0]; int64_t rows = ints[0], L = ints[1], S = ints[2], causal = ints[3];
    T scale = (T)floats[0];
    for (int64_t r = 0; r < rows; r++) {
        T *sr = s + r * S;
        int64_t n = causal ? (r %% L + 1 < S ? r %% L + 1 : S) : S;
        #pragma omp simd
        for (int64_t j = 0; j < n; j++) sr[j] *= scale;
        T mx = row_max(sr, n);
        double sum = 0;
        #pragma omp simd reduction(+:sum)
        for (int64_t j = 0; j < n; j++) { T e = EXP(sr[j] - mx); sr[j] = e; sum += e; }
        T total = (T)sum;
        #pragma omp simd
        for (int64_t j = 0; j < n; j++) sr[j] = sr[j] / total;
        for (int64_t j = n; j < S; j++) sr[j] = 0;
    }
}
"""
