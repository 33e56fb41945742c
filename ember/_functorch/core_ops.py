"""ember's core op set: the operators every graph is lowered to, and the few kept whole on purpose.

    from ember._functorch.core_ops import classify, classification
    classify(ember.ops.aten.softmax.int)      # "decomposed"
    classify(ember.ops.aten.mm.default)       # "kept whole"  (KEPT_WHOLE says why)
    classification()                          # {"aten::add.Tensor": "core", ...}: every operator of the table

Every operator of the table (ember/ops/table/*.py: 970 overloads, in-place and out= ones included)
is exactly one of (124 core + 678 decomposed + 168 kept whole):

- **core** (`CORE`, 124 overloads, listed below by family): the vocabulary a code generator
  emits, the fuser's contract: views, pointwise ops, reductions, indexing, cat/pad and factories.
  It is PyTorch's core ATen set (2.13 tags 193 overloads / 164 names ``torch.Tag.core``, as the
  issue says; prims are 126) restricted to the ops ember has, in
  ember's overload names (ember's rows take Python numbers where ATen has ``.Scalar`` overloads),
  with three differences, each a set below: `BELOW_ATEN` adds prim-level ops whose decomposition
  costs precision (``erfc = 1 - erf`` loses every digit for large x) and ``copy_``, the one
  mutating core op (in-place and ``out=`` overloads decompose into their functional op + ``copy_``;
  functionalisation turns it into the epilogue that writes a mutated input back);
  `ATEN_CORE_DECOMPOSED` (``gelu``, ``elu``, ``leaky_relu``, ``hardtanh`` into pointwise ops; the 1-d
  ``avg_pool1d`` / ``adaptive_avg_pool1d`` into their 2-d kernels) decompose; `ATEN_CORE_KEPT_WHOLE` (BLAS products, random draws, data-dependent sizes, windowed kernels,
  sorts) are kernels a generator calls rather than emits. ember has no ``native_layer_norm`` /
  ``_softmax`` / ``native_dropout`` / ``convolution``, so layer norm, softmax and dropout reach
  pointwise ops and reductions.
- **decomposed** (678): ``ember._functorch.decompositions`` has one entry for it, written
  in ember ops, whose trace reaches only core and kept-whole ops. That covers aliases (``subtract``
  -> ``sub``), composite rows (``reshape``, ``chunk`` ... their own ``composite``) and, generated
  from their row, every derived in-place (``add_``) and ``out=`` (``add.out``) overload:
  ``copy_(self, add(self, other))``.
- **kept whole** (`KEPT_WHOLE`, 168 overloads, each with its reason): matrix products, flash attention,
  convolutions, pooling and resampling kernels, sorts and order statistics, scans, LAPACK
  factorisations, data-dependent output sizes, random draws (a decomposition would change the
  values a seed gives) and complex-number ops. A backend calls their eager kernel (the fuser's
  "extern kernel").

``tests/functorch/test_core_ops.py`` enumerates the registry and checks the three sets partition
it, that the counts above are the counts of the data, that the three differences are exactly
where ember's set and the installed PyTorch's core tag differ, and that forward + backward traces
of an MLP, a CNN and a GPT block decomposed with ``core_decompositions()`` hold only core and
kept-whole ops.
"""
from __future__ import annotations

CORE = frozenset("""
    _to_copy clone copy copy_ fill.Scalar fill.Tensor select_scatter slice_scatter alias view view.dtype as_strided expand permute squeeze.dim squeeze.dims unsqueeze
    slice.Tensor select.int diagonal split_with_sizes cat repeat flip constant_pad_nd
    abs acos acosh asin asinh atan atanh ceil cos cosh erf erfc erfinv exp expm1 floor log log10 log1p log2
    neg reciprocal round rsqrt sigmoid sign signbit sin sinh sqrt tan tanh trunc bitwise_not logical_not
    isinf isnan relu
    add.Tensor sub.Tensor mul.Tensor div.Tensor div.Tensor_mode pow.Tensor_Tensor pow.Scalar remainder.Tensor
    fmod.Tensor atan2 hypot maximum minimum bitwise_and.Tensor bitwise_or.Tensor bitwise_xor.Tensor
    bitwise_left_shift.Tensor bitwise_right_shift.Tensor eq.Tensor ne.Tensor lt.Tensor le.Tensor gt.Tensor
    ge.Tensor logical_and logical_or logical_xor where.self clamp clamp.Tensor
    sum.dim_IntList mean mean.dim prod prod.dim_int amax amin max.dim min.dim argmax argmin any any.dim
    any.dims var.correction cumsum
    index.Tensor index_put index_select gather scatter.src scatter.value scatter_add scatter_reduce.two
    embedding
    full full_like empty.memory_format empty_strided scalar_tensor arange.start_step
""".split())

# the differences from ATen's core tag (op names, overloads aside)
BELOW_ATEN = frozenset({"erfc", "erfinv", "hypot", "signbit", "bitwise_left_shift", "bitwise_right_shift", "copy_"})
ATEN_CORE_DECOMPOSED = frozenset({"gelu", "elu", "leaky_relu", "hardtanh", "avg_pool1d", "adaptive_avg_pool1d"})
ATEN_CORE_KEPT_WHOLE = frozenset({"mm", "bmm", "addmm", "rand", "randn", "randperm", "nonzero", "masked_scatter",
                                  "sort", "topk", "max_pool2d_with_indices", "avg_pool2d", "adaptive_avg_pool2d",
                                  "col2im", "upsample_nearest2d", "upsample_bilinear2d"})

_MATMUL = "a matrix product: a BLAS call is its lowering, not generated code"
_CONV = "a convolution: ember has no single `convolution` op to decompose to; its kernel is the lowering"
_POOL = "a windowed kernel (pooling with indices, adaptive windows, col2im/im2col): the kernel is the lowering"
_SORT = "a sort or an order statistic: its index order among ties is the kernel's"
_SCAN = "a scan (sequential along dim): the kernel is the lowering (ATen's core keeps only cumsum)"
_LAPACK = "a LAPACK factorisation or solve"
_DATA = "its output size depends on the data"
_RANDOM = "draws from the generator in its own order: a decomposition would change the values a seed gives"
_COMPLEX = "a complex-number op: the core set is real-valued (complex tensors run their kernels)"
_BOOL = "returns a Python bool, not a tensor: data-dependent, no graph value"
_META = "changes the tensor's own shape/strides in place (metadata mutation): functionalisation replaces it"
_RESAMPLE = "a resampling kernel with its own index arithmetic"
_FACTORY = "an index factory whose values are Python-level arithmetic on its integer arguments"

# operators not decomposed on purpose, and why
KEPT_WHOLE = {
    **{name: _MATMUL for name in ("mm", "bmm", "addmm", "einsum", "tensordot")},
    **{name: _CONV for name in ("conv1d", "conv1d.padding", "conv2d", "conv2d.padding", "conv3d",
                                "conv3d.padding", "conv_transpose1d", "conv_transpose2d.input")},
    **{name: _POOL for name in ("max_pool2d_with_indices", "avg_pool2d", "adaptive_avg_pool2d", "adaptive_max_pool2d",
                                "col2im", "im2col")},
    **{name: _SORT for name in ("sort", "sort.stable", "topk", "median", "median.dim", "nanmedian",
                                "nanmedian.dim", "mode", "kthvalue", "quantile", "quantile.scalar",
                                "nanquantile", "nanquantile.scalar", "histc")},
    **{name: _SCAN for name in ("cumprod", "cummax", "cummin", "logcumsumexp")},
    **{name: _LAPACK for name in ("linalg_inv", "linalg_det", "linalg_slogdet", "linalg_solve",
                                  "linalg_cholesky", "linalg_qr", "linalg_svd", "linalg_svdvals",
                                  "linalg_eigh", "linalg_eigvalsh", "linalg_pinv.atol_rtol_float", "linalg_pinv",
                                  "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "linalg_norm",
                                  "linalg_norm.ord_str", "logdet")},
    "masked_scatter": "reads source elements at positions counted along the mask (a prefix sum over data)",
    **{name: _DATA for name in ("nonzero", "_unique2", "unique_consecutive", "unique_dim", "masked_select",
                                "repeat_interleave.self_Tensor", "repeat_interleave.Tensor")},
    **{name: _RANDOM for name in (
        "rand", "randn", "randperm", "rand.generator", "randn.generator", "randint", "randint.generator", "randint.low",
        "randint.low_generator", "randperm.generator", "randint_like", "randint_like.low_dtype",
        "randint_like.generator", "randint_like.low_generator_dtype", "rand_like.generator",
        "randn_like.generator", "normal.Tensor_float", "normal.float_Tensor", "normal.Tensor_Tensor",
        "normal.float_float", "bernoulli", "bernoulli.p", "multinomial", "uniform_", "normal_", "bernoulli_.float",
        "bernoulli_.Tensor", "exponential_", "geometric_", "log_normal_", "cauchy_", "random_.from",
        "random_.to", "random_")},
    **{name: _COMPLEX for name in ("conj", "resolve_conj", "real", "imag", "conj_physical", "complex", "polar")},
    **{name: _BOOL for name in ("equal", "allclose")},
    **{name: _META for name in ("t_", "transpose_", "squeeze_", "squeeze_.dim", "squeeze_.dims", "unsqueeze_")},
    **{name: _RESAMPLE for name in ("upsample_nearest2d.vec", "upsample_bilinear2d.vec", "upsample_nearest1d.vec",
                                    "upsample_nearest3d.vec",
                                    "_upsample_nearest_exact1d.vec", "_upsample_nearest_exact2d.vec",
                                    "_upsample_nearest_exact3d.vec", "upsample_linear1d.vec",
                                    "upsample_trilinear3d.vec", "upsample_bicubic2d.vec")},
    **{name: _FACTORY for name in ("tril_indices", "triu_indices")},
    "linspace.Tensor_Scalar": _DATA + " (start or end given as a tensor: the values are data)",
    "linspace.Scalar_Tensor": _DATA + " (start or end given as a tensor: the values are data)",
    "linspace.Tensor_Tensor": _DATA + " (start or end given as a tensor: the values are data)",
    "logspace.Tensor_Scalar": _DATA + " (start or end given as a tensor: the values are data)",
    "logspace.Scalar_Tensor": _DATA + " (start or end given as a tensor: the values are data)",
    "logspace.Tensor_Tensor": _DATA + " (start or end given as a tensor: the values are data)",
    "qr": _LAPACK, "svd": _LAPACK, "pinverse": _LAPACK,
    "one_hot": "checks its class values (data) and, with num_classes=-1, sizes its output from them",
    "binary_cross_entropy": "checks that its input values lie in [0, 1] (data), raising as eager does",
    **{name: "the flash-attention kernels (and PyTorch's kernel of the same name): their point is never "
             "materialising the seq x seq scores that a decomposition would"
       for name in ("_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_backward")},
    "embedding_renorm_": "rescales the rows the indices name, in place: data-dependent rows",
    "embedding_renorm": "rescales the rows the indices name: data-dependent rows",
    **{name: _RANDOM for name in ("uniform", "normal.functional", "bernoulli.Tensor", "exponential", "geometric",
                                  "log_normal", "cauchy", "random", "random.from", "random.to")},
    **{name: "a special function (series, recurrences, continued fractions) or a bit-level pointwise kernel "
             "(Euclid's algorithm, ulp steps, exponent split): no exact decomposition into core ops"
       for name in ("lgamma", "digamma", "polygamma", "i0", "sinc", "igamma", "igammac", "gcd", "lcm",
                    "heaviside", "nextafter", "frexp.Tensor")},
    **{name: _DATA for name in ("bincount", "histogram.bin_ct", "histogram.bins_tensor", "nonzero_static")},
    "index_reduce": "a scatter-reduce (prod/mean/amax/amin with include_self): the kernel is its lowering",
    "as_strided_": _META,
    **{name: "the inverse of a view with its own index arithmetic (functionalisation's write-back): the "
             "kernel is its lowering" for name in ("diagonal_scatter", "as_strided_scatter")},
}

CATEGORIES = ("core", "decomposed", "kept whole")


def overload_name(op) -> str:
    """``aten::add.Tensor`` -> ``add.Tensor``; ``aten::relu`` -> ``relu`` (the table's row names)."""
    return op.name.split("::", 1)[1]


def is_core(op) -> bool:
    return overload_name(op) in CORE


def classify(op, decompositions: dict | None = None) -> str:
    """"core", "decomposed" or "kept whole"; ValueError for an operator in none (a new row must
    say which it is) or in several."""
    from .decompositions import core_decompositions
    table = core_decompositions() if decompositions is None else decompositions
    name = overload_name(op)
    found = [c for c, hit in zip(CATEGORIES, (name in CORE, op in table, name in KEPT_WHOLE)) if hit]
    if len(found) != 1:
        what = " and ".join(found) if found else "neither core, decomposed nor kept whole"
        raise ValueError(f"operator {op.name} is {what}: it must be exactly one (see ember/_functorch/core_ops.py)")
    return found[0]


def classification() -> dict:
    """{operator name: category} for every operator of the table (user-defined ``ember.library``
    operators, outside the aten namespace, are left out: their author decides)."""
    from ..ops.registry import OPERATORS
    from .decompositions import core_decompositions
    table = core_decompositions()
    return {name: classify(op, table) for name, op in sorted(OPERATORS.items()) if name.startswith("aten::")}


def counts() -> dict:
    """{category: number of operators} of `classification()`."""
    result = dict.fromkeys(CATEGORIES, 0)
    for category in classification().values():
        result[category] += 1
    return result
