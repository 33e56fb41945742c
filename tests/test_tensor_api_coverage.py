"""How much of PyTorch's public Tensor and optimizer API ember has (issue 20's breadth goal): public
``torch.Tensor`` names (sparse, quantized, MKL-DNN and nested-tensor layouts excluded: ember has
none of those layouts) at least 90% present on ``ember.Tensor``, every new op also a top-level
function where torch has one, and every optimizer and LR scheduler present."""
import torch

import ember

# layouts ember does not have: their methods are out of scope for the dense-tensor API
EXCLUDED_TENSOR_NAMES = frozenset("""
    ccol_indices coalesce col_indices crow_indices dense_dim indices is_coalesced resize_as_sparse_ row_indices smm
    sparse_dim sparse_mask sparse_resize_ sparse_resize_and_clear_ sspaddmm to_dense to_sparse to_sparse_bsc
    to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr values is_sparse is_sparse_csr
    dequantize int_repr q_per_channel_axis q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point
    qscheme is_quantized to_mkldnn is_mkldnn to_padded_tensor is_nested""".split())


def tensor_coverage():
    """(present, total, missing names) over torch.Tensor's public names minus the excluded layouts."""
    theirs = {n for n in dir(torch.Tensor) if not n.startswith("_")} - EXCLUDED_TENSOR_NAMES
    ours = {n for n in dir(ember.Tensor) if not n.startswith("_")}
    return len(theirs & ours), len(theirs), sorted(theirs - ours)


def test_tensor_methods_at_least_90_percent():
    present, total, missing = tensor_coverage()
    print(f"Tensor methods: {present}/{total} = {present / total:.1%}; missing: {' '.join(missing)}")
    assert present / total >= 0.90, missing


def test_excluded_names_are_torch_names():
    """The exclusion list names only what torch has (a renamed method must not hide in it)."""
    assert EXCLUDED_TENSOR_NAMES <= set(dir(torch.Tensor))


NEW_FUNCTIONS = """lgamma digamma polygamma mvlgamma i0 sinc logit igamma igammac gcd lcm heaviside nextafter ldexp
    frexp diff cov corrcoef dist renorm narrow_copy unsafe_chunk unsafe_split unsafe_split_with_sizes absolute
    resolve_neg is_neg is_same_size is_nonzero matrix_exp cholesky_inverse cholesky_solve bincount histogram
    nonzero_static index_reduce select_scatter slice_scatter diagonal_scatter as_strided_scatter""".split()


def test_new_ops_are_top_level_functions_where_torch_has_them():
    missing = [n for n in NEW_FUNCTIONS if hasattr(torch, n) and not hasattr(ember, n)]
    assert not missing, missing
    assert ember.linalg.matrix_exp is not None and ember.special.logit is not None


def test_every_optimizer_and_scheduler_is_present():
    optimizers = {n for n in dir(torch.optim) if isinstance(getattr(torch.optim, n), type)
                  and issubclass(getattr(torch.optim, n), torch.optim.Optimizer)}
    assert sorted(n for n in optimizers if not hasattr(ember.optim, n)) == []
    sched = torch.optim.lr_scheduler
    schedulers = {n for n in dir(sched) if isinstance(getattr(sched, n), type)
                  and (issubclass(getattr(sched, n), sched.LRScheduler) or n == "ReduceLROnPlateau")}
    assert sorted(n for n in schedulers if not hasattr(ember.optim.lr_scheduler, n)) == []
    swa = [n for n in torch.optim.swa_utils.__all__ if not hasattr(ember.optim.swa_utils, n)]
    assert swa == []
