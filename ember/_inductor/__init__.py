"""ember._inductor: the fuser (seed 000's six parts; PyTorch's torch._inductor).

    from ember._inductor.codecache import load_c
    lib = load_c(c_source)            # compiled (or fetched from the cache) and loaded; lib.<kernel>(...)
    wrapper, kernels = ember._inductor.codegen_source(fn, [("cuda", ember.float32, (4, 8))])

lowering table -> loop IR -> scheduler -> C codegen (CPU) or Triton codegen (CUDA) -> wrapper -> compile_fx.
Nothing here is imported by `import ember`; the compiler stack imports it when a graph is compiled.
"""


def codegen_source(fn, specs):
    """(wrapper code, kernel source) of `fn` for inputs of `specs` [(device, dtype, shape), ...],
    traced over fake tensors: C kernels for "cpu", Triton kernels for "cuda" (no GPU needed)."""
    from .compile_triton import codegen_source as generate
    return generate(fn, specs)
