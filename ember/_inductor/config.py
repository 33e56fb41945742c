"""ember._inductor.config: the fuser's settings (torch._inductor.config).

    import ember._inductor.config as config
    config.cache_dir          # on-disk kernel cache ($EMBER_CACHE_DIR, default ~/.cache/ember)
    config.cc, config.cflags  # the C compiler and its flags (part of every cache key)

The cache layer reads these at each cache miss, so setting them at run time takes effect
(a test points `cache_dir` at a tmp_path, `cc` at a missing path).
"""
import os

cache_dir = os.environ.get("EMBER_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "ember")
cc = os.environ.get("CC", "cc")
# -O3 -march=native: the kernels are built for this machine (the ISA is part of the cache key);
# -fopenmp: `#pragma omp parallel for` / `simd`; -ffp-contract=off: no FMA contraction, so results
# match eager's rounding; -fno-math-errno: the kernels never read errno, so sqrtf & co are plain
# instructions GCC can vectorise and hoist out of a row's loop (layernorm's rsqrt).
# -pipe: no temporary assembly file between the compiler's stages.
cflags = ("-O3", "-march=native", "-fopenmp", "-ffp-contract=off", "-fno-math-errno", "-fPIC", "-shared", "-pipe")
ldflags = ("-lm",)
# Link glibc's libmvec when the machine probe finds it usable, so kernels that prepend
# codecache.vector_math_prelude() get vectorised expf/logf/tanhf/... (appended after ldflags).
use_libmvec = True
# innermost contiguous float32 loops as vector-typed C (codegen_c_vec.py) where GCC targets AVX2+FMA or AVX-512
vector_c = True
threads = 1              # OpenMP threads of generated kernels (ember.set_num_threads sets it)
strict = False           # True: a fallback (no compiler, compile error, unsafe cache dir) raises instead
debug = False            # keep sources and print compiler command lines
compile_workers = None   # compiler subprocesses load_many runs at once (None: os.cpu_count())
# True (default): random ops (rand, dropout) run their eager kernels inside the compiled graph, so
# compiled values equal eager's. False: they are generated in the kernel by a counter-based Philox
# RNG keyed by a seed drawn from ember's generator per call (reproducible under ember.manual_seed,
# but not eager's values; torch._inductor.config.fallback_random alike).
fallback_random = True
# Keep the forward/backward graphs AOT autograd traces for a captured program on disk (cache_dir/aot),
# so the same program in a new process skips tracing (ember/_functorch/_aot_cache.py says what the
# key covers; a program monkeypatching ember's internals at run time should turn it off).
aot_cache = True
# The kernel cache's size cap in bytes (cache_dir/kernels): past it, the least recently used
# libraries are removed after a compile (0 or None: no cap).
cache_size_limit = 1 << 30
# "c" (default): CPU graphs become C kernels. "triton": CPU graphs go through the GPU code generator
# and run under Triton's interpreter (set TRITON_INTERPRET=1 first): tests of the Triton kernels
# on a machine without a GPU (compile_triton.py). CUDA graphs always get Triton kernels.
cpu_codegen = "c"
# True: from the first CPU kernel launch on, NumPy allocates 64-byte aligned blocks, as PyTorch's CPU
# allocator does (aligned_alloc.py: unaligned inputs cost the kernels 8-14%); read once per process.
align_allocations = True
# A compiled graph's output of at least this many bytes reuses one of the last two arrays it handed
# out when no reference to it is left (wrapper.Alloc): a fresh 40 MB array costs ~3 ms of page faults
# here. The graph keeps those two arrays per output between calls. 0 or None: every output is fresh.
output_reuse_min_bytes = 1 << 20
# A single-threaded vector kernel stores an output of at least this many bytes with non-temporal
# (streaming) stores, which skip reading each line before writing it, in loops that compute no exp
# (codegen_c_vec.VecEmitter.store_line says why): softmax over 1e7 floats 8.6 -> 5.9-6.4 ms with
# next-row prefetch (AVX2 EPYC). None: the machine's last-level cache size (an output that fits in
# it is better left in the cache for its reader); 0: never.
stream_store_min_bytes = None
