"""What the passes need to know about a node's target: is it random, does it write to memory.

    >>> is_random(node)        # rand/randn/dropout/bernoulli/... : never merged, never folded, never dropped
    >>> writes_memory(node)    # in-place/out=/setitem/side-effecting: a barrier for CSE and folding

Random ops are found from the op table (rows marked ``nondeterministic``), from schemas with a
``Generator`` argument, and from a list of names (for functions that are not table rows, such as
ember's random factories, and for Tensor methods like ``uniform_``).
"""
from __future__ import annotations

import inspect
import operator

__all__ = ["is_random", "writes_memory", "RANDOM_NAMES"]

# Names of random functions / Tensor methods (ember's and torch's spelling are the same).
RANDOM_NAMES = frozenset({
    "rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal",
    "bernoulli", "multinomial", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d",
    "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "rrelu", "gumbel_softmax",
    "native_dropout", "bernoulli_", "normal_", "uniform_", "random_", "exponential_", "geometric_",
    "cauchy_", "log_normal_", "dropout_", "alpha_dropout_", "feature_alpha_dropout_", "rrelu_",
})
# Python's own random sources
_RANDOM_MODULES = ("random", "numpy.random", "secrets")
# Tensor methods whose name ends in "_" but that do not write to self
_PURE_UNDERSCORE_METHODS = frozenset({"requires_grad_"})


def _schema_of(target):
    schema = getattr(target, "schema", None)
    return schema if schema is not None and hasattr(schema, "arguments") else None


def _overloads(target):
    """The OperatorHandles behind `target` (an OperatorHandle or an overload packet)."""
    if _schema_of(target) is not None:
        return [target]
    overloads = getattr(target, "_overloads", None)
    return list(overloads.values()) if isinstance(overloads, dict) else []


def _function_name(fn) -> str | None:
    fn = getattr(fn, "__wrapped__", fn)
    return getattr(fn, "__name__", None)


def _is_ember_function(fn) -> bool:
    module = getattr(getattr(fn, "__wrapped__", fn), "__module__", None) or ""
    return module == "ember" or module.startswith("ember.") or module.startswith("<ember")


def _has_generator_parameter(fn) -> bool:
    try:
        return "generator" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def is_random(node) -> bool:
    """True if running `node` draws random numbers (so two runs differ and the RNG state advances).

    >>> is_random(g.call_function(ember.rand, ((2,),)))    # True
    >>> is_random(g.call_method("uniform_", (x,)))          # True
    """
    if node.op == "call_method":
        return node.target in RANDOM_NAMES
    if node.op == "call_module":
        module = _owning_submodule(node)
        return type(module).__name__.lower().find("dropout") >= 0 if module is not None else False
    if node.op != "call_function":
        return False
    target = node.target
    for handle in _overloads(target):
        if getattr(handle, "nondeterministic", False):
            return True
        if any(a.type == "Generator" for a in handle.schema.arguments):
            return True
    if _overloads(target):
        return False
    module = getattr(getattr(target, "__wrapped__", target), "__module__", None) or ""
    if module in _RANDOM_MODULES or module.startswith("numpy.random"):
        return True
    name = _function_name(target)
    if name in RANDOM_NAMES and _is_ember_function(target):
        return True
    return _is_ember_function(target) and _has_generator_parameter(target)


def _owning_submodule(node):
    root = getattr(node.graph, "owning_module", None)
    if root is None or not isinstance(node.target, str):
        return None
    value = root
    for atom in node.target.split("."):
        value = getattr(value, atom, None)
        if value is None:
            return None
    return value


def writes_memory(node) -> bool:
    """True if `node` mutates something (an input, an attribute, global state) or is side-effecting.

    >>> writes_memory(g.call_method("add_", (x, 1)))   # True
    >>> writes_memory(g.call_method("add", (x, 1)))    # False
    """
    if node.op in ("placeholder", "output"):
        return node.op == "output"
    if node.op == "call_module":
        return bool(node.kwargs.get("inplace")) or _impure(node)
    if node.op == "call_method":
        name = node.target
        if name.endswith("_") and not name.endswith("__") and name not in _PURE_UNDERSCORE_METHODS:
            return True
        return name in ("__setitem__", "__delitem__") or "out" in node.kwargs or _impure(node)
    if node.op != "call_function":
        return False
    target = node.target
    if target in (operator.setitem, operator.delitem) or getattr(target, "__name__", "") in (
            "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand", "ior", "ixor",
            "ilshift", "irshift", "imatmul"):
        return True
    for handle in _overloads(target):
        if handle.schema.is_mutable:
            return True
    name = _function_name(target) or ""
    if _is_ember_function(target) and name.endswith("_") and not name.endswith("__"):
        return True
    if "out" in node.kwargs or node.kwargs.get("inplace") is True:
        return True
    return _impure(node)


def _impure(node) -> bool:
    try:
        return bool(node.is_impure())
    except Exception:          # a call_module whose target is missing: treat as side-effecting
        return True
