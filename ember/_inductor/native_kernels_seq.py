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
"""
