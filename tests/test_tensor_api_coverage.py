"""How much of PyTorch's public Tensor and optimizer API ember has (issue 20's breadth goal): public
``torch.Tensor`` names (sparse, quantized, MKL-DNN and nested-tensor layouts excluded: ember has
none of those layouts) at least 90% present on ``ember.Tensor``, every new op also a top-level
function where torch has one, and every optimizer and LR scheduler present."""
import os
import sys

import torch

import ember

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import api_coverage  # noqa: E402


def test_tensor_methods_at_least_90_percent():
    present, total, missing = api_coverage.coverage()["Tensor methods"]
    print(f"Tensor methods: {present}/{total} = {present / total:.1%}; missing: {' '.join(missing)}")
    assert present / total >= 0.90, missing


def test_excluded_names_are_torch_names():
    """The exclusion list names only what torch has (a renamed method must not hide in it)."""
    assert api_coverage.TENSOR_EXCLUDED_NAMES <= set(dir(torch.Tensor))


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
