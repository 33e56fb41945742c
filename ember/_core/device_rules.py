"""Which tensors of another backend an op takes on the GPU, as PyTorch's CUDA kernels do.

Read by dispatch._mixed_devices, only for calls whose tensors are on two backends (off the hot
path); not imported by ``import ember``. PyTorch has three behaviours, and an op gets one of them:

- ``COPIES``: the op moves data between devices (copy_), or takes a CPU tensor of indices by
  design (tensor_split's): every mix is accepted.
- ``INDEXING``: advanced indexing (index.Tensor, index_put_): index tensors anywhere, which are
  copied to the device; any other CPU tensor only 0-d (the TensorIterator rule below).
- ``WRAPPER_CHECKED``: native_functions.yaml's ``device_check: ExactSame`` (the default) on an op
  with a CUDA kernel: the generated wrapper compares every tensor argument's device with the
  first one's before the kernel runs, so a CPU tensor is refused even 0-d, and the message names
  the argument and the wrapper (`wrapper_error`).
- any other op (``device_check: NoCheck``, TensorIterator kernels: add, where, lerp ...): a 0-d
  CPU tensor is a scalar and is copied to the device; any other mix is refused.
tests/core/test_device_rules.py checks these sets against the installed PyTorch's
native_functions.yaml.
"""
from __future__ import annotations

COPIES = frozenset({"aten::copy_", "aten::tensor_split.tensor_indices_or_sections"})
INDEXING = frozenset({"aten::index.Tensor", "aten::index_put_", "aten::index_put", "aten::_index_put_impl_"})

# device_check ExactSame with a CUDA kernel, ops of at least two tensor arguments; the wrapper's name
# is "wrapper_CUDA_<name>_<overload>" for structured kernels, "wrapper_CUDA_<overload>_<name>" for others
_STRUCTURED = (
    "acosh.out", "addmm", "addmm.out", "addmm_", "addmv", "addmv.out", "addmv_", "amax.out", "amin.out",
    "argmax.out", "argmin.out", "asinh.out", "atanh.out", "baddbmm", "baddbmm.out", "baddbmm_", "bmm", "bmm.out",
    "cat", "cat.out", "clamp.Tensor", "clamp_.Tensor", "clamp_max.Tensor", "clamp_max_.Tensor", "clamp_min.Tensor",
    "clamp_min_.Tensor", "exp2.out", "gather", "gather.out", "gcd", "gcd.out", "gcd_", "i0.out", "igamma",
    "igamma.out", "igamma_", "igammac", "igammac.out", "igammac_", "index_add", "index_add_", "index_copy",
    "index_copy_", "index_reduce", "index_reduce.out", "index_reduce_", "isneginf.out", "isposinf.out", "lcm",
    "lcm.out", "lcm_", "linalg_cross", "logaddexp", "logaddexp.out", "logaddexp2", "logaddexp2.out", "mish.out",
    "mm", "mm.out", "nextafter", "nextafter.out", "nextafter_", "scatter.reduce", "scatter.src", "scatter.value",
    "scatter.value_reduce", "scatter_.reduce", "scatter_.src", "scatter_.value", "scatter_.value_reduce",
    "scatter_add", "scatter_add_", "scatter_reduce.two", "scatter_reduce_.two", "sgn.out", "signbit.out",
    "silu.out", "sinc.out", "sort.values_stable", "topk.values", "triangular_solve", "tril.out", "triu.out",
)
_UNSTRUCTURED = (
    "_scaled_dot_product_flash_attention", "addbmm", "addbmm.out", "addbmm_", "addr", "addr.out", "bincount",
    "cholesky_inverse.out", "complex.out", "conj_physical.out", "dot", "embedding_renorm_", "equal", "histc.out",
    "huber_loss", "index_select", "index_select.out", "kthvalue.values", "logit.out", "masked_scatter_",
    "masked_select", "masked_select.out", "median.dim_values", "mvlgamma.out", "nan_to_num.out",
    "nanmedian.dim_values", "nansum.out", "nonzero.out", "normal.Tensor_Tensor", "polar.out", "put_", "take",
    "take.out", "vdot",
)


def _wrapper(name: str, structured: bool) -> str:
    base, _, overload = name.partition(".")
    return f"wrapper_CUDA_{base}_{overload}" if structured and overload else \
        f"wrapper_CUDA_{base}" if structured else f"wrapper_CUDA_{overload}_{base}"


# op -> (the wrapper that checks, {ember argument: PyTorch's name for it}); composite ops that PyTorch
# decomposes into a checked op are checked as that op (with the decomposition's argument names)
WRAPPER_CHECKED = {f"aten::{n}": (_wrapper(n, True), {}) for n in _STRUCTURED}
WRAPPER_CHECKED.update({f"aten::{n}": (_wrapper(n, False), {}) for n in _UNSTRUCTURED})
WRAPPER_CHECKED.update({
    "aten::put": (_wrapper("put_", False), {}),
    "aten::masked_scatter": (_wrapper("masked_scatter_", False), {}),
    "aten::take_along_dim": (_wrapper("gather", True), {"indices": "index"}),
    "aten::repeat_interleave.self_Tensor": (_wrapper("index_select", False), {"repeats": "index"}),
    "aten::embedding": (_wrapper("index_select", False), {"weight": "self", "indices": "index"}),
    "aten::nll_loss_nd": (_wrapper("nll_loss_forward", True), {}),
})


def wrapper_error(op, args, tensor_type):
    """PyTorch's error for `op` (in WRAPPER_CHECKED) called with `args` on two devices: the first
    tensor argument in schema order fixes the device, the first one elsewhere is named."""
    wrapper, renamed = WRAPPER_CHECKED[op.name]
    names = [a.name for a in op.schema.arguments]
    first = None
    for i, a in enumerate(args):
        for t in (a if isinstance(a, (list, tuple)) else (a,)):
            if not isinstance(t, tensor_type):
                continue
            if first is None:
                first = t.device
            elif t.device != first:
                name = names[i] if i < len(names) else "tensor"
                return RuntimeError(
                    f"Expected all tensors to be on the same device, but got {renamed.get(name, name)} is on "
                    f"{t.device}, different from other tensors on {first} (when checking argument in method "
                    f"{wrapper})")
    return None
