"""The CUDA backend: tensors whose ``_data`` is a CuPy array (CuPy's memory pool is the caching
allocator), and CUDA kernels made from the CPU kernel files.

Nothing here is imported by ``import ember``: the CUDA dispatch-key slot of every operator holds
a small stub (`ember.ops.registry`) that imports `ember._cuda.kernels` on its first call.
"""
