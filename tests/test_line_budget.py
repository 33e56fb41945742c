"""Each package of ember has a line budget, tinygrad-style: growing one is a decision.

Lines are counted as non-blank lines that are not `#` comments (docstrings count: they are part
of what a reader reads). When a change needs more room, raise the cap here in the same commit and
say why in its message; when a change shrinks a package, lower the cap so the room is not
silently spent again.
"""
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "ember")

# package (a folder under ember/, or "<top>" for the modules directly in ember/) -> cap
BUDGET = {
    "ops": 15277,     # merged round of 27 Nov (each branch raised it for its own part); +2 a CUDA source read on the host goes through storage.device_to_host (device-side index errors, issue 17); +21 index_add's bounds found on the device and raised after each replay under a CUDA graph capture (issue 18); +45 issue 17 op oracle, PyTorch CUDA rules in the shared kernels: NO_CUDA_KERNEL (histogram), clamp's ignored NaN bound, half logspace, one-sample nll, cuDNN batch_norm's copied running stats, IndexError for unbroadcastable CUDA indices, resize_ on the device; +28 main at ceb8989 was already over the cap (15163); +4 nextafter stepped on the bits for every float dtype (issue 17 op oracle); +42 issue 17 host time: half-precision linear/gelu/attention backward through the native paths (float32, one rounding), linear_rule's common case off the arrays, t.to(device, dtype) unparsed, one-pass CPU casts, views' handle cache; +14 overload resolution split out of registry.py into ops/overloads.py (registry 691 -> 557 lines: the new file's docstring and imports), copy_ wrapping float into unsigned on CUDA; +55 the CUDA op oracle (issue 17): PyTorch CUDA's dtype refusals as one table and its wrapper, einsum's private sums, ON_CUDA value rules (round(decimals), hardsigmoid/hardswish, aminmax, trace of bool); +18 registry.bound_binding / codegen `bound=`: eager's binding bound to one backend kernel, the fuser's extern calls (issue 18); +86 the flash-attention operators (table rows, meta/flash.py rules and Meta kernels, derivative with its create_graph fallback; issue 17); +5 t.to(dtype) without argument parsing (issue 17 host time: autocast casts); +11 the losses' derivatives a family of their own (derivatives/losses.py: nn.py was 700 lines); +13 view's CUDA kernel loaded on first call and t.view(ints) straight to its binding (issue 17); +9 nll's common case (valid class targets, none ignored, no weights) in 3 NumPy calls; +9 add_/sub_ with alpha through the native axpy kernel (bit-equal to PyTorch's fmadd); +5 native.direct_backward/unobserved (NumPy-only shortcuts off under the profiler and EMBER_NATIVE=0); +8 native.plain_backward for CUDA kernels (issue 18: traced CUDA tensors see the formulas' ops); +14 the CUDA LayerNorm and linear backward hooks (issue 17); +147 issue 20 speed, sequence models: direct linear/matmul/embedding/sdpa backward (derivatives/nn_direct.py), sdpa's native probabilities (cpu/attention.py), native index_add and cross_entropy log_softmax; +8 eager overhead (issue 20): overloads as plain packet attributes, int lists matched without dataclasses.replace; +91 the CNN ops' native paths (relu, max pooling without bounds checks and its backward, batch norm's own backward kernel, convolutions and transposed convolutions as one GEMM per sample with F.fold/F.unfold's native col2im/im2col; issue 20 speed); +35 batch norm sums in double as ATen's (issue 20's DCGAN precision), backward in ATen's order; +230 native eager kernels (ops/native.py and the native paths of the hot ops, issue 20 speed); +25 cross_entropy's [N, C] input gradient in one NumPy pass (a training step's loss); +20 sdpa/gelu/cross-entropy backward through the CUDA kernels where the forward took them
                          # +25 eager speed: max-pool tap-offset indices and disjoint-window scatter, in-place norm affine; +790 Tensor-method breadth: special functions (kernels on NumPy, no SciPy), composite math (diff, cov, renorm, matrix_exp ...), Python-level Tensor methods, counting ops (bincount, histogram, index_reduce ...); +25 conv backward as ops under a trace (AOT); wrapped-number precision, dropout draws; Proxy in overload resolution
                          # +80 CUDA: the lazy CUDA kernel slot and in-place fast path of a row, view(dtype) on device memory, from_dlpack of device memory, pin_memory
    "jit": 7683,          # -382 folds (issue 12 close): archive format 2 (the program as the checkpoint's object), one argument binder, one modifier attribute, one callee_name, profiling passes in one module, the reference interpreter without Nested operands; +350 fusion groups (passes/fuse_groups.py, executor/fused_kernel.py, ember.jit.fuser); +40 the fusion group fast path (fused_kernel.fast_path); +1 its large outputs through wrapper.Alloc.array (reuse of a dead output)
                          # -590 folds: .code from fx's code generator, one script form of a trace, load decodes what the check admitted, script types from one factory
                          # -294 jit archives in ember.save's format (no zip reader, no .npy tensors: _archive.py deleted)
                          # -37 trace patches through make_fx.SharedPatches, parse_type through schema's _split_top, unused imports
                          # -6 the lazy-name __getattr__ from ember.fx (_lazy_exports, shared with fx.passes and _dynamo)
    "_functorch": 4464,     # +19 the partitioner saves a widening cast's narrower source (autocast's bf16 logits, not their float32 copy: issue 18 GPT-2 loss); +3 the partitioner keeps a multi-output forward op's elements in the forward (flash attention's logsumexp), +3 the flash operators kept whole (core_ops); ,; ,
    "_inductor": 6266,     # merged round of 27 Nov (each branch raised it for its own part); +10 issue 14 CPU reductions: codegen_reduction._lane_tree (lanes folded as a tree of halves) and float max/min as one simd loop; +9 main at 1fd1d47 was already over the cap (6256); +4 raise_if_error deferred under a CUDA graph capture (issue 18 reduce-overhead training); +146 issue 18 GPT-2 on the GPU: cross_entropy lowered (lowering_loss.py), independent looped reductions share one loop (_place_loop), broadcast row values stored once, a half linear's bias as an epilogue; +225 issue 14 CPU speed: aligned_alloc.py (64-byte aligned NumPy allocations with NumPy's huge-page advice, the NEP 49 handler in C) and codegen_c_exp.py (the AVX-512 table exp, its 8-lane and scalar twins, constants computed exactly); +7 a cached Triton module's tuning read once for its kernels, ir imported off the warm path (issue 18 warm start); +130 issue 18 CUDA externs: wrapper.bound_extern (extern ops without the dispatcher/autocast), extern_cublas.py and lowering_cublas.py (odd half GEMMs zero-padded, one padded buffer per source); +131 issue 18 CUDA externs: wrapper.bound_extern (extern ops without the dispatcher/autocast), extern_cublas.py and lowering_cublas.py (odd half GEMMs zero-padded, one padded buffer per source); +260 issue 18's column reductions on the GPU: codegen_triton_columns.py (programs own contiguous columns, coalesced row tiles, one loop for reductions of the same rows) and lowering_split's column split with float32 partials; +34 looped rows recompute members read only at their own element (FusedGroup.read_here) and the scheduler's look-back for split reductions (_joins_previous); +10 the inline float32 exp (codegen_c.expi_f, issue 14 speed); +80 issue 18: cubins stored beside the Triton source and launched through CuPy (a warm process imports no Triton), the Triton generator's two fuzzer fixes; +49 native kernels compiled one per library (kernel_source: a cold program compiles the kernels it uses, not all 24), the lean link (GCC only), the SGD momentum kernel; +8 native axpy (add_/sub_ with alpha as one fused multiply-add, ATen's rounding) and FMA in the fused SGD kernel; +24 the GPT-2 step on the GPU (issue 18: CPU 0-d constants as kernel literals, residual stream stored once, one kernel per identical layer); +48: the graph key from the nodes as text (compile_fx.graph_text: no codegen of the aten graph in a warm start), the wrapper's transpose view and byte-stride layout check; +28 the Triton generator for the GPT-2 step (issue 18); +33 wrapper.Alloc (reuse of a dead large output); +47 native_kernels_seq.py (index_add_rows, attn_softmax: issue 20's sequence models); +113 the CNN ops' native kernels in a file of their own (native_kernels_conv.py, issue 20 speed; the old im2col/col2im kernels moved there); +12 over the round 5000 after merging the Triton generator, native eager kernels, fused optimizers and BLAS lowerings in one round (and re-decorating the Triton helpers for the mode a process runs in)
    "_subclasses": 20,
    "_dynamo": 8088,      # +2 config.cudagraph_training gate (reduce-overhead training replay off: GPT-2 diverged); +98 issue 18 training under reduce-overhead: the AOT backends' forward and backward replayed (aot_backend), stable inputs by address, outputs aliasing inputs, warm-up per layout, the refusing function named in the log; +165: backends/distributed.py (a graph captured inside DDP cut at its gradient buckets, each piece compiled alone: torch's DDPOptimizer), the backend choice for it, one no-aliasing id set per guard row; +4: a source's hash computed once; +85: graph inputs read through pinned modules kept while no module changed (module_guards.graph_call_through_cache: the 12-layer GPT's entry 620 -> 38 us); +175: backends/cudagraphs.py (mode="reduce-overhead": warm-up, record, replay per input signature; fallbacks)
                          # +350: module_guards.py (module-tree guards behind a state version), IMPORT_NAME
                          # +40: source._record (Source records without dataclass processing: a third of
                          # dynamo's import, paid by every process's first ember.compile)
                          # (+30: backends/common.py, aot_autograd, nop: torch._dynamo.backends.common)
                          # +30: EmberOperatorVariable (calls of ember.ops.<ns>.<op> objects: library / C++ ops)
    "fx": 3840,            # +2 ember.fx._lazy_exports (one lazy-name __getattr__ for fx, fx.passes, jit, _dynamo); +38: lazily recompiled GraphModules (lazy_recompile=True), one walk copying node arguments and collecting their nodes, codegen without prim/blocks for graphs with no prim ops
    "nn": 5944,          # +5 F.scaled_dot_product_attention takes the flash operator on CUDA; +24 DDP runs eagerly around its compiled module (ember.compile(ddp)) and marks its forward for the graph cut; +30 clip_grad_norm_ on the gradients' arrays (one pass each, torch's foreach path); +105 _lstm_native.py (an LSTM layer as one native autograd node) and max_pool2d computing its indices once under autograd (issue 20 speed); +750 recurrent layers; +110 Transformer, DataParallel, PixelShuffle; +30 module state version (guards)
                          # +80 DistributedDataParallel (the module; its reducer lives in distributed/)
                          # +1820 API breadth (issue 20): 52 module classes and 48 F functions, each a composition
                          # of existing ops in a lazily loaded family file (functional_pool/_margin_losses/_ctc/
                          # _sampling/_misc, modules/padding, pooling_extra, loss_extra, spatial, ...)
    "_core": 1770,     # merged round of 27 Nov (each branch raised it for its own part); +25 CuPy storage size for as_strided bounds (cuda_storage_nbytes), repeat_interleave(CUDA, CPU repeats) device error (GPU op oracle); +17 storage.device_to_host / report_device_errors: errors found by device-side index checks raised where the host reads device memory (issue 17 host syncs); +97 device_rules.py: PyTorch CUDA's per-op device rules (native_functions.yaml's ExactSame wrappers, indexing, copies) as one table (issue 17 op oracle); +3 the per-op live-key mask: redispatch finds a call's kernel in one step (issue 17 host time); +5 cached CUDA device objects (Tensor.device: issue 17 host time); +5 OperatorHandle.call answers {CUDA} (issue 17, CUDA launch overhead); +3 float()/complex() warn on a tensor that requires grad (PyTorch 2.13); +60 CUDA: mixing devices in one call (0-d CPU scalars, CPU index tensors), CuPy views, default factory device
    "_cuda": 2667,     # merged round of 27 Nov (each branch raised it for its own part); +15 device-side checks inside CUDA graphs (kept messages, a replay marks the flag to be read); +10 blas.gemm: 2-D operands skip broadcasting, a linear backward pads its gradient once for dx and dw (zero_padded memo); +238 issue 17 host time: foreach Adam/AdamW (one launch per group, dtype and step count), device_checks.py (index checks without a host sync, reported at the next sync), embedding.py (forward checked on the device, backward as one scatter-add); +19 graphs.defer_check (checks run after each replay: kernel error flags, index_add bounds); +97 replay_outputs.py (issue 18: outputs of a CUDA-graph replay still held at the next replay moved to a copy); +8 CUDA where selects bfloat16 as its bits (CuPy has no bfloat16 where); +19 ufunc.at of products, maxima and minima in rounds of distinct targets (array_module._at_in_rounds: CuPy has no scatter product; issue 17 op oracle); +4 flash attention's strided [B, H, L, D] tile pointers as one helper (_tile) instead of 13 spelled-out sums; +47 issue 18: odd half GEMMs zero-padded in eager (gemm_padding.py rule, blas.zero_padded/_padded_gemm), blas.gemm writing row-strided outputs; +255 flash attention (issue 17): the FlashAttention-2 Triton kernels (flash_attention.py) and the operators' CUDA kernels (flash_ops.py); +120 issue 17 host time: launch.py (cuLaunchKernel from Python values for the fused kernels, RawKernel calls and Adam; elementwise keeps its fixed-arity launches), Adam's direct kernel, float16/bfloat16 direct elementwise kernels; +260 CUDA launch overhead (issue 17): elementwise.py (direct launches of same-shape contiguous ufuncs, relu, small sums), blas.mm2d, views.py; +160 fused LayerNorm kernels, +90 leading-dim sum kernels, +20 linear backward, +25 float32<->half casts (issue 17, GPT-2 step); the CUDA backend: kernel variants of the CPU files, the CuPy namespace, CUDA-only rules
                          # +240: half GEMMs on cuBLAS (blas.py: CuPy sends batched bfloat16 to an integer kernel),
                          # attention and linear in half (attention.py), cuRAND draws (random.py), one-kernel Adam (optim.py),
                          # GELU and cross-entropy kernels (fused.py): one pass where the CPU source takes ten to thirty
                          # +190 graphs.py: CUDA graphs (CUDAGraph, graph, pools, refusals of host draws and host
                          # optimizer state) and cuBLAS GEMMs under capture through ctypes (CuPy refuses cuBLAS there)
                          # +115 graphed_callables.py: make_graphed_callables (forward and backward graphs)
    "amp": 265,     # ember.autocast (the Autocast key's kernels, PyTorch's op lists) and GradScaler; +5 casts test the autocast device by backend key, not a device object per argument (issue 17 host time); ember.autocast (the Autocast key's kernels, PyTorch's op lists) and GradScaler; +20 the weight-cast cache (issue 17)
    "autograd": 1492,     # +17 issue 17 host time: the Autograd kernel checks only tensor positions and builds edges/metadata inline, formulas' wants read once; +5 AccumulateGrad keeps a sole CUDA gradient (issue 17); +70 eager overhead (issue 20): the Autograd kernel's per-op recording plan, hook containers made on first use, the engine's one-gradient fast paths
    "optim": 2034,     # +15 Optimizer.foreach_update and Adam's hook (the CUDA foreach update, issue 17); +33 SGD momentum's for-loop update as one native kernel per parameter (checks written out: it runs per parameter per step); +25 Adam/AdamW update as one native kernel (issue 20 speed); +40 fused=True for SGD, Adam, AdamW (the kernels live in _inductor/fused_optim.py); +1 Adam's one-kernel CUDA update; +5 a captured optimizer step refuses host state (ember/_cuda/graphs.py says why)
                          # +365 Adafactor, SparseAdam, Muon, CyclicLR, swa_utils (AveragedModel, SWALR, update_bn); +265 Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD (one small file each); +215 LBFGS (strong-Wolfe line search)
    "utils": 990,         # +280: cpp_extension.py (load_inline/load) and _cpp_header_gen.py (the C++ header from the op table)
                          # +60: data/distributed.py (DistributedSampler)
    "profiler": 645,      # +45 CUDA device times from events (ProfilerActivity.CUDA) and the table's CUDA columns
    "backends": 100,
    "distributed": 1592,  # +52 Work.wait_stream (NCCL: the stream waits, the host does not; DDP settles at its next forward), the reducer packing buckets at the array level; process groups, MPI and NCCL transports, collectives, object collectives, DDP's
                          # reducer, the launcher; +140 DDP communication hooks (GradBucket, default_hooks:
                          # allreduce / fp16 / bf16 compress) and gradient_as_bucket_view
    "<top>": 1617,        # +4 ember.cuda.synchronize / Stream / Event report device-side index errors; +8: _logging.lazy_logger (the stdlib logging imported on the first message, not by a warm start); +18: serialization.write/read serve ember.jit.save/load too (JIT_MAGIC; jit's own zip reader, 294 lines, is gone)
                          # +16: ember.cuda's CUDA-graph names (lazy) and graph pools in memory_allocated/reserved; the cudagraphs log artifact; +10 ember.manual_seed seeds the CUDA generator (cuda._seed_from_cpu)
                          # +40: library.register_autograd (a derivative formula from setup_context/backward)
                          # +165 ember/cuda.py (devices, streams, events, seeding, memory of the CUDA backend), default device, matmul precision
                          # +50 ember/futures.py (the Future that DDP communication hooks return)
}


def count_lines(path):
    with open(path, encoding="utf-8") as f:
        return sum(1 for line in f if line.strip() and not line.lstrip().startswith("#"))


def package_lines():
    """{package: lines} over every .py file under ember/, grouped by the first folder."""
    totals = {}
    for dirpath, _dirs, files in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        package = "<top>" if rel == "." else rel.split(os.sep)[0]
        if package == "__pycache__":
            continue
        for name in files:
            if name.endswith(".py"):
                totals[package] = totals.get(package, 0) + count_lines(os.path.join(dirpath, name))
    return totals


def test_every_package_has_a_budget():
    missing = sorted(set(package_lines()) - set(BUDGET))
    assert not missing, f"packages without a line budget in tests/test_line_budget.py: {missing}"


@pytest.mark.parametrize("package", sorted(BUDGET))
def test_package_within_budget(package):
    lines = package_lines().get(package, 0)
    assert lines <= BUDGET[package], (
        f"ember/{package} has {lines} lines, over its budget of {BUDGET[package]}: fold repetition "
        f"(`duplicates --repo ember/{package}`) or raise the cap in tests/test_line_budget.py, saying why")


def test_counter_skips_blank_and_comment_lines(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("# a comment\n\nx = 1  # trailing comment counts\n    # indented comment\n'''doc'''\n")
    assert count_lines(p) == 2
