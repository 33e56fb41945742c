"""ember._inductor: the fuser (seed 000's six parts; PyTorch's torch._inductor).

    from ember._inductor.codecache import load_c
    lib = load_c(c_source)            # compiled (or fetched from the cache) and loaded; lib.<kernel>(...)

Being built (issue 14): lowering table -> loop IR -> scheduler -> C codegen -> wrapper -> compile_fx.
Nothing here is imported by `import ember`; the compiler stack imports it when a graph is compiled.
"""
