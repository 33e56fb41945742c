"""Derivative formulas, next to the operator table (PyTorch's derivatives.yaml), by family.

Each family module has ``FORMULAS = {"<op>.<overload>": formula}`` and may have
``NONDIFFERENTIABLE = {...}`` (ops whose outputs never need a gradient). A formula's parameter
names say what it needs (``grad``, input names, ``<input>_shape``, ``result``) and it returns
one gradient per Tensor argument, written with ember ops so that double backward works; see
ember/autograd/kernel.py. The derived in-place overload (``add_.Tensor``) uses the same formula.
"""
from __future__ import annotations

from importlib import import_module

FAMILIES = ("pointwise", "activation", "reduction", "shape", "indexing", "linalg", "conv", "nn", "losses", "misc",
            "special_functions",
            "functionalization")


def collect():
    """(formulas, nondifferentiable op names) of every family."""
    formulas, nondiff = {}, set()
    for family in FAMILIES:
        module = import_module(f"{__name__}.{family}")   # a missing family is an error, never skipped
        for name in getattr(module, "FORMULAS", {}):
            if name in formulas:
                raise RuntimeError(f"derivative of {name} is defined twice ({family})")
        formulas.update(getattr(module, "FORMULAS", {}))
        nondiff |= set(getattr(module, "NONDIFFERENTIABLE", ()))
    return formulas, nondiff
