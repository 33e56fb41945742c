"""How much of PyTorch's public API ember has: names in torch's namespaces vs ember's (issue 20).

    PYTHONPATH=. python scripts/api_coverage.py [--missing]

Prints four percentages, each "names present in ember / public names in torch 2.13":
  * nn modules     -- the classes of ``torch.nn``, without the Lazy*, quantized and sparse ones;
  * nn.functional  -- the public names of ``torch.nn.functional``, without its imports of modules,
                      typing names, documentation strings and __torch_function__ plumbing
                      (``FUNCTIONAL_NOT_API`` below says which and why);
  * Tensor methods -- the public attributes of ``torch.Tensor``, without sparse/quantized ones;
  * optim          -- ``torch.optim``'s optimizers and ``torch.optim.lr_scheduler``'s schedulers.
A name counts as present when ``hasattr`` finds it in the matching ember namespace; the oracle
tests (tests/nn/..., tests/optim/...) check that what is found behaves like torch's.
``--missing`` lists the names not yet in ember.
"""
from __future__ import annotations

import inspect
import sys
import types

# torch.nn classes outside the denominator: the Lazy modules (shape-inferring variants) and the
# quantized / sparse families (the issue excludes them).
NN_EXCLUDED_PARTS = ("Lazy", "Quantized", "quantized", "qat", "intrinsic", "quantizable", "Sparse")

# torch.nn.functional names that are not part of its API but imports its source file makes
FUNCTIONAL_NOT_API = {
    # modules imported by torch/nn/functional.py
    "dataclasses", "grad", "importlib", "math", "np", "torch", "warnings",
    # typing names and the Tensor class (annotations only)
    "BroadcastingList1", "BroadcastingList2", "BroadcastingList3", "Callable", "DType", "Optional",
    "TYPE_CHECKING", "Tensor",
    # docstring fragments
    "reproducibility_notes", "sparse_support_notes", "tf32_notes",
    # __torch_function__ dispatch helpers (torch.overrides / torch._jit_internal), not functions of F
    "boolean_dispatch", "handle_torch_function", "has_torch_function", "has_torch_function_unary",
    "has_torch_function_variadic",
}

# layouts ember does not have (sparse, quantized, MKL-DNN, nested): their methods are out of scope
# for the dense-tensor API; tests/test_tensor_api_coverage.py checks each is a torch name
TENSOR_EXCLUDED_NAMES = frozenset("""
    ccol_indices coalesce col_indices crow_indices dense_dim indices is_coalesced resize_as_sparse_ row_indices smm
    sparse_dim sparse_mask sparse_resize_ sparse_resize_and_clear_ sspaddmm to_dense to_sparse to_sparse_bsc
    to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr values is_sparse is_sparse_csr
    dequantize int_repr q_per_channel_axis q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point
    qscheme is_quantized to_mkldnn is_mkldnn to_padded_tensor is_nested""".split())


def nn_module_names(torch):
    return sorted(n for n in dir(torch.nn) if not n.startswith("_") and inspect.isclass(getattr(torch.nn, n))
                  and not any(part in n for part in NN_EXCLUDED_PARTS))


def functional_names(torch):
    F = torch.nn.functional
    return sorted(n for n in dir(F) if not n.startswith("_") and n not in FUNCTIONAL_NOT_API
                  and not isinstance(getattr(F, n), types.ModuleType))


def tensor_method_names(torch):
    return sorted(n for n in dir(torch.Tensor) if not n.startswith("_") and n not in TENSOR_EXCLUDED_NAMES)


def optim_names(torch):
    import torch.optim.lr_scheduler as sched
    optimizers = [n for n in dir(torch.optim) if not n.startswith("_") and inspect.isclass(getattr(torch.optim, n))
                  and issubclass(getattr(torch.optim, n), torch.optim.Optimizer) and n != "Optimizer"]
    schedulers = [f"lr_scheduler.{n}" for n in dir(sched) if not n.startswith("_")
                  and inspect.isclass(getattr(sched, n)) and issubclass(getattr(sched, n), sched.LRScheduler)
                  and getattr(sched, n).__module__ == sched.__name__]
    return sorted(optimizers + schedulers)


def _has(namespace, dotted):
    obj = namespace
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def coverage():
    """{area: (present, total, missing names)}."""
    import torch
    import ember
    import ember.optim.lr_scheduler  # noqa: F401
    areas = {
        "nn modules": (nn_module_names(torch), ember.nn),
        "nn.functional": (functional_names(torch), ember.nn.functional),
        "Tensor methods": (tensor_method_names(torch), ember.Tensor),
        "optimizers+lr_schedulers": (optim_names(torch), ember.optim),
    }
    result = {}
    for area, (names, namespace) in areas.items():
        missing = [n for n in names if not _has(namespace, n)]
        result[area] = (len(names) - len(missing), len(names), missing)
    return result


def main(argv):
    for area, (present, total, missing) in coverage().items():
        print(f"{area:26s} {present:4d} / {total:4d} = {100.0 * present / total:5.1f}%")
        if "--missing" in argv and missing:
            print("    missing: " + ", ".join(missing))


if __name__ == "__main__":
    main(sys.argv[1:])
