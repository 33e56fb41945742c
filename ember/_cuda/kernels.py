"""CUDA kernels made from the CPU kernel files, not copied from them.

A *device variant* of a module under ``ember/ops/cpu`` or ``ember/ops/table`` is its own source,
compiled once more with a private ``__import__`` that binds ``numpy`` to `array_module.xp` (CuPy),
the other kernel and table modules to their variants, and ``wrap`` (array -> tensor) to `wrap_cuda`.
Every other import (rules, meta, registry, _core) is the real, shared module. So the CUDA kernel
of a table row is the *same row* of the variant table module: its ``cpu=`` kernel, running on
CuPy arrays (rows that name a ``cuda=`` kernel of their own keep it). The source stays one file
per family; a fix to a CPU kernel is a fix to its CUDA kernel.

Where CuPy computes something differently or not at all, `OVERRIDES` replaces one module-level
name of one variant (erf through CuPy's special functions, PyTorch CUDA's dtype refusals ...).
"""
from __future__ import annotations

import importlib
import importlib.util
import builtins
import types

import cupy
import numpy

from .._core.dispatch import CUDA_BIT
from .._core.tensor import Tensor
from . import array_module

_VARIANT_PACKAGES = ("ember.ops.cpu", "ember.ops.table", "ember.ops.derivatives")
_variants: dict = {}        # real module name -> its CUDA variant
_cupy_ndarray = cupy.ndarray


def wrap_cuda(arr) -> Tensor:
    """A CUDA tensor around a CuPy array; a host value a kernel computed (a NumPy scalar of a
    reduction, an array drawn by the CPU generator) is copied to the device first."""
    if arr.__class__ is not _cupy_ndarray:
        arr = cupy.asarray(arr)
    t = object.__new__(Tensor)
    t._data = arr
    t._keys = CUDA_BIT
    return t


class _Namespace(types.SimpleNamespace):
    """What ``from <package> import a, b`` sees: the variants of the kernel modules named."""


def _module_view(name):
    """What a variant sees of a shared module that makes arrays: its names, with the CUDA forms of
    ``wrap`` (array -> tensor) and ``rng`` (the generator random kernels draw from)."""
    from . import random as device_random
    real = importlib.import_module(name)
    view = types.ModuleType(name)
    view.__dict__.update(vars(real))
    view.__dict__.update({"ember._core.tensor": {"wrap": wrap_cuda},
                          "ember._core.random": {"rng": device_random.rng}}[name])
    return view


_VIEWED = ("ember._core.tensor", "ember._core.random")
_NO_NATIVE = types.SimpleNamespace(kernel=lambda name, dtype: None, plain_backward=lambda *tensors: False,
                                   pointwise_backward=lambda name, grad, x: None)
_module_views: dict = {}


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    absolute = importlib.util.resolve_name("." * level + name, globals["__package__"]) if level else name
    if absolute == "numpy" or absolute.startswith("numpy."):
        if absolute == "numpy" or not fromlist:
            return array_module.xp
        return importlib.import_module("cupy" + absolute[len("numpy"):])   # numpy.lib.stride_tricks
    if fromlist and absolute.startswith(_VARIANT_PACKAGES) and absolute not in _VARIANT_PACKAGES:
        return variant(absolute)
    if fromlist and absolute in _VARIANT_PACKAGES:
        package = importlib.import_module(absolute)
        return _Namespace(**{n: variant(f"{absolute}.{n}") if importlib.util.find_spec(f"{absolute}.{n}")
                             else getattr(package, n) for n in fromlist})
    if fromlist and absolute == "ember.ops" and "native" in fromlist:
        # the native eager kernels are C loops over host memory: a variant never takes them
        package = importlib.import_module(absolute)
        return _Namespace(**{n: _NO_NATIVE if n == "native" else getattr(package, n) for n in fromlist})
    if fromlist and absolute in _VIEWED:
        view = _module_views.get(absolute)
        if view is None:
            view = _module_views[absolute] = _module_view(absolute)
        return view
    return builtins.__import__(name, globals, locals, fromlist, level)


_BUILTINS = dict(vars(builtins), __import__=_import)


def variant(module_name: str) -> types.ModuleType:
    """The CUDA variant of ``ember.ops.{cpu,table,derivatives}.<x>`` (made once)."""
    mod = _variants.get(module_name)
    if mod is not None:
        return mod
    real = importlib.import_module(module_name)
    package = module_name.rpartition(".")[0]
    mod = types.ModuleType("ember._cuda.variant." + module_name[len("ember.ops."):])
    mod.__dict__.update(__package__=package, __file__=real.__file__, __builtins__=_BUILTINS, __doc__=real.__doc__)
    _variants[module_name] = mod   # before running it: the kernel modules import one another
    with open(real.__file__) as f:
        code = compile(f.read(), real.__file__, "exec")
    exec(code, mod.__dict__)
    from .overrides import OVERRIDES, Around
    for name, value in OVERRIDES.get(module_name, {}).items():
        mod.__dict__[name] = value.make(mod.__dict__[name]) if isinstance(value, Around) else value
    return mod


def on_device(fn):
    """`fn`, a function (or closure) of a module that has a variant, with its module's names
    resolved in the variant: the same code, on CuPy (the NumPy-computed conv gradients)."""
    module = variant(fn.__module__)
    return types.FunctionType(fn.__code__, module.__dict__, fn.__name__, fn.__defaults__, fn.__closure__)


# ---------------------------------------------------------------------------------------
# the CUDA kernel of a table row
# ---------------------------------------------------------------------------------------
_row_index: dict = {}     # id(Op row) -> (table module name, position in its OPS)


def _index_rows():
    from ..ops import table
    for family in table.FAMILIES:
        name = f"ember.ops.table.{family}"
        for i, row in enumerate(importlib.import_module(name).OPS):
            _row_index[id(row)] = (name, i)


def kernel_for(row, kind: str = "functional"):
    """The CUDA kernel of operator table row `row`: its variant row's CPU kernel."""
    if not _row_index:
        _index_rows()
    where = _row_index.get(id(row))
    if where is None:
        return None
    module_name, i = where
    return variant(module_name).OPS[i].cpu


# in-place ops whose tensor-operand, alpha-1 form is one elementwise launch (`elementwise.inplace`)
_DIRECT_INPLACE = {"add_": "add", "sub_": "subtract", "mul_": "multiply", "div_": "true_divide"}


def inplace_fast_path(op_name):
    """cpu/inplace.py's direct in-place update for `op_name` (``add_``, ``mul_``, ``addcmul_`` ...)
    on CuPy: the variant's update table and operand rule, with CuPy's ``out=``; None (so the
    derived compute-and-copy kernel runs) wherever the CPU rule says so."""
    module = variant("ember.ops.cpu.inplace")
    n_operands, update = module.FAST[op_name]
    operand = module._operand
    from . import elementwise
    launch = elementwise.inplace(_DIRECT_INPLACE[op_name]) if op_name in _DIRECT_INPLACE else None

    def run(self, *args):
        x = self._data
        if x.__class__ is not _cupy_ndarray or x.dtype.kind not in "fc" or x.itemsize == 2:  # (halves: derived)
            return None
        if launch is not None and (len(args) == 1 or args[1] == 1) and args[0].__class__ is Tensor \
                and launch(x, args[0]._data):
            return self          # x op= y of one shape and dtype: one launch (alpha 1 only)
        operands = []
        for v in args[:n_operands]:
            d = operand(v, x.dtype)
            if d is None:
                return None
            operands.append(d)
        scalars = args[n_operands:]
        for s in scalars:
            if s.__class__ is not int and s.__class__ is not float:
                return None
        try:
            update(x, *operands, *scalars)
        except (ValueError, TypeError):
            return None
        return self
    return run
