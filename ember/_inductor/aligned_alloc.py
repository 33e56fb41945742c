"""64-byte aligned NumPy allocations, as PyTorch's CPU allocator aligns its tensors.

NumPy's default allocator is malloc, and glibc's malloc returns addresses 16 bytes past a 64-byte
line (large blocks: 16 bytes past a page). A generated kernel's 64-byte vector loads then each
straddle two cache lines: layer_norm, softmax and the 6-op chain ran 8-14% slower on such inputs
than on aligned ones (README, fused CPU section). NumPy lets a program replace its data allocator
(NEP 49, `PyDataMem_SetHandler`); `install()` sets one that returns 64-byte aligned blocks, so
every array NumPy allocates afterwards in this context is aligned: ember's tensors, the compiled
graphs' outputs, and the caller's own arrays alike. Nothing is copied and nothing about an existing
array changes: NumPy records each array's allocator in the array and frees it with that one, so the
arrays made before install() keep working (from_numpy still shares the caller's array as it is).

When: the first time the fuser launches a CPU kernel (launch.launcher()), not at `import ember`
(it loads a compiled library; config.align_allocations = False turns it off). NumPy keeps the
handler in a context variable: threads started later begin with NumPy's default allocator
(their arrays are correct, only not aligned), so install() may be called in such a thread too.

The allocator: malloc/calloc/realloc of size + 64 bytes, the block handed out at the first 64-byte
boundary at least 8 bytes in, and the distance back to malloc's pointer stored in the 8 bytes just
before it (calloc keeps the kernel's lazily zeroed pages for large np.zeros); blocks of 4 MiB and
more get madvise(MADV_HUGEPAGE) as NumPy's own allocator gives them (without it the kernels at 1e7
elements ran up to 2x slower: 4 KiB page faults and TLB misses).
"""
from __future__ import annotations

import ctypes
import threading

HANDLER_NAME = "ember_aligned_64"
ALIGNMENT = 64

SOURCE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ALIGN %(align)d
typedef struct {
    void *ctx;
    void *(*malloc)(void *ctx, size_t size);
    void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
    void *(*realloc)(void *ctx, void *ptr, size_t new_size);
    void (*free)(void *ctx, void *ptr, size_t size);
} ember_allocator;                                  /* NumPy's PyDataMemAllocator, version 1 */
typedef struct { char name[127]; uint8_t version; ember_allocator allocator; } ember_handler;

/* malloc's pointer is 16-byte aligned, so the aligned block starts 16..64 bytes into the raw one */
static size_t aligned_offset(const char *raw) {
    return (size_t)((((uintptr_t)raw + sizeof(size_t) + ALIGN - 1) & ~(uintptr_t)(ALIGN - 1)) - (uintptr_t)raw);
}
/* NumPy's own allocator asks for transparent huge pages on blocks of 4 MiB and more; without that a
   40 MB array takes 4 KiB page faults and TLB misses (the kernels at 1e7 elements ran up to 2x slower) */
static void ask_huge_pages(char *raw, size_t size) {
#ifdef MADV_HUGEPAGE
    if (size >= ((size_t)1 << 22)) {
        size_t to_page = 4096 - (uintptr_t)raw %% 4096;
        madvise(raw + to_page, size - to_page, MADV_HUGEPAGE);   /* advice only: an old kernel may refuse */
    }
#endif
}
static void *hand_out(char *raw, size_t size) {
    if (raw == NULL) return NULL;
    ask_huge_pages(raw, size);
    size_t off = aligned_offset(raw);
    ((size_t *)(raw + off))[-1] = off;
    return raw + off;
}
static char *raw_of(void *p) { return (char *)p - ((size_t *)p)[-1]; }

static void *a_malloc(void *ctx, size_t size) {
    (void)ctx;
    return size > SIZE_MAX - ALIGN ? NULL : hand_out(malloc(size + ALIGN), size + ALIGN);
}
static void *a_calloc(void *ctx, size_t nelem, size_t elsize) {
    (void)ctx;
    if (elsize != 0 && nelem > (SIZE_MAX - ALIGN) / elsize) return NULL;
    return hand_out(calloc(nelem * elsize + ALIGN, 1), nelem * elsize + ALIGN);
}
static void *a_realloc(void *ctx, void *ptr, size_t new_size) {
    if (ptr == NULL) return a_malloc(ctx, new_size);
    if (new_size > SIZE_MAX - ALIGN) return NULL;
    size_t old_off = ((size_t *)ptr)[-1];
    char *raw = realloc(raw_of(ptr), new_size + ALIGN);
    if (raw == NULL) return NULL;                   /* the old block is still valid, as realloc's */
    ask_huge_pages(raw, new_size + ALIGN);
    size_t off = aligned_offset(raw);
    if (off != old_off) memmove(raw + off, raw + old_off, new_size);  /* both within the new block */
    ((size_t *)(raw + off))[-1] = off;
    return raw + off;
}
static void a_free(void *ctx, void *ptr, size_t size) {
    (void)ctx; (void)size;
    if (ptr != NULL) free(raw_of(ptr));
}

ember_handler ember_aligned_handler = {"%(name)s", 1, {NULL, a_malloc, a_calloc, a_realloc, a_free}};
"""

_CAPSULE_NAME = b"mem_handler"      # NumPy's name for a handler capsule; kept alive with the module
_lock = threading.Lock()
_capsule = None                     # one capsule per process, set in every context that installs
_library: list = []                 # the allocator's library, held while its functions are in use


def _numpy_api_table():
    """NumPy's C-API function table (the `_ARRAY_API` capsule extension modules import)."""
    try:
        from numpy._core import _multiarray_umath
    except ImportError:             # NumPy 1.x
        from numpy.core import _multiarray_umath
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, (ctypes.py_object, ctypes.c_char_p)
    return ctypes.cast(get_pointer(_multiarray_umath._ARRAY_API, None), ctypes.POINTER(ctypes.c_void_p))


def _handler_capsule():
    global _capsule
    if _capsule is None:
        from . import codecache
        lib = codecache.load_c(SOURCE % {"align": ALIGNMENT, "name": HANDLER_NAME}, name="ember_aligned_alloc")
        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype, new_capsule.argtypes = ctypes.py_object, (ctypes.c_void_p, ctypes.c_char_p,
                                                                         ctypes.c_void_p)
        handler = ctypes.addressof(ctypes.c_char.in_dll(lib, "ember_aligned_handler"))
        _capsule, _library[:] = new_capsule(handler, _CAPSULE_NAME, None), [lib]
    return _capsule


def install() -> None:
    """Make NumPy allocate 64-byte aligned blocks from now on in this context (idempotent).
    Raises codecache.CompilerUnavailable / CCompileError when the allocator cannot be built."""
    if current_handler_name() == HANDLER_NAME:
        return
    with _lock:
        capsule = _handler_capsule()
        # PyDataMem_SetHandler is slot 304 of NumPy's C-API table since NumPy 1.22 (the table only grows)
        set_handler = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.py_object)(_numpy_api_table()[304])
        set_handler(capsule)        # returns the previous handler: dropped


def current_handler_name(array=None) -> str:
    """The allocator NumPy uses now in this context (or the one that allocated `array`)."""
    import numpy as np
    multiarray = np._core.multiarray if hasattr(np, "_core") else np.core.multiarray
    return multiarray.get_handler_name() if array is None else multiarray.get_handler_name(array)
