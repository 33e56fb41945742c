"""Creation and random operators (table rows), and the Python-level constructors that only parse
arguments (``tensor``, ``as_tensor``, ``asarray``, ``from_dlpack``, ``rand(*size)``, ``new_tensor``)
plus the generator API (``manual_seed``, ``Generator`` ...)."""
from __future__ import annotations

import numpy as np

from ..._core import dispatch as _dispatch
from ..._core import dtype as _dt
from ..._core import random as _random
from ..._core import tensor_str as _tensor_str
from ..._core.device import device as _device
from ..._core.tensor import Tensor, wrap, created
from ..registry import Op, aten
from ..argparse import optional_dtype
from ..cpu import creation as cpu
from ..cpu import random as rnd
from ..meta import creation as meta

_F = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"
_FL = _F + ", MemoryFormat? memory_format=None"
FN = dict(variants="function")
RAND = dict(nondeterministic=True)

OPS = [
    # -- filled factories ------------------------------------------------------------------
    Op(f"zeros(SymInt[] size, *, {_F}) -> Tensor", cpu=cpu.zeros, meta=meta.filled, varargs=True, **FN),
    Op(f"ones(SymInt[] size, *, {_F}) -> Tensor", cpu=cpu.ones, meta=meta.filled, varargs=True, **FN),
    Op(f"empty.memory_format(SymInt[] size, *, {_FL}) -> Tensor", cpu=cpu.empty, meta=meta.filled,
       varargs=True, **FN),
    Op(f"full(SymInt[] size, Scalar fill_value, *, {_F}) -> Tensor", cpu=cpu.full, meta=meta.full, **FN),
    Op(f"empty_strided(SymInt[] size, SymInt[] stride, *, {_F}) -> Tensor", cpu=cpu.empty_strided,
       meta=meta.empty_strided, **FN),
    Op(f"scalar_tensor(Scalar s, *, {_F}) -> Tensor", cpu=cpu.scalar_tensor, meta=meta.scalar_tensor, **FN),
    Op(f"zeros_like(Tensor self, *, {_FL}) -> Tensor", cpu=cpu.zeros_like, meta=meta.like, **FN),
    Op(f"ones_like(Tensor self, *, {_FL}) -> Tensor", cpu=cpu.ones_like, meta=meta.like, **FN),
    Op(f"empty_like(Tensor self, *, {_FL}) -> Tensor", cpu=cpu.empty_like, meta=meta.like, **FN),
    Op(f"full_like(Tensor self, Scalar fill_value, *, {_FL}) -> Tensor", cpu=cpu.full_like, meta=meta.full_like,
       **FN),
    Op(f"new_zeros(Tensor self, SymInt[] size, *, {_F}) -> Tensor", cpu=cpu.new_zeros, meta=meta.new_filled,
       variants="method", varargs=True),
    Op(f"new_ones(Tensor self, SymInt[] size, *, {_F}) -> Tensor", cpu=cpu.new_ones, meta=meta.new_filled,
       variants="method", varargs=True),
    Op(f"new_empty(Tensor self, SymInt[] size, *, {_F}) -> Tensor", cpu=cpu.new_empty, meta=meta.new_filled,
       variants="method", varargs=True),
    Op(f"new_full(Tensor self, SymInt[] size, Scalar fill_value, *, {_F}) -> Tensor", cpu=cpu.new_full,
       meta=meta.new_full, variants="method"),
    Op(f"new_empty_strided(Tensor self, SymInt[] size, SymInt[] stride, *, {_F}) -> Tensor",
       cpu=cpu.new_empty_strided, meta=meta.new_empty_strided, variants="method"),
    Op("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)", cpu=cpu.fill_, meta=meta.fill_),
    Op("fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)", cpu=cpu.fill_tensor_, meta=meta.fill_tensor_),
    Op("zero_(Tensor(a!) self) -> Tensor(a!)", cpu=cpu.zero_, meta=meta.inplace_same),
    # -- ranges and structured -------------------------------------------------------------
    Op(f"arange(Scalar end, *, {_F}) -> Tensor", cpu=cpu.arange, meta=meta.arange, **FN),
    Op(f"arange.start(Scalar start, Scalar end, *, {_F}) -> Tensor", cpu=cpu.arange_start,
       meta=meta.arange_start, **FN),
    Op(f"arange.start_step(Scalar start, Scalar end, Scalar step=1, *, {_F}) -> Tensor", cpu=cpu.arange_step,
       meta=meta.arange_step, **FN),
    Op(f"linspace(Scalar start, Scalar end, int steps, *, {_F}) -> Tensor", cpu=cpu.linspace, meta=meta.linspace,
       **FN),
    Op(f"linspace.Tensor_Scalar(Tensor start, Scalar end, int steps, *, {_F}) -> Tensor", cpu=cpu.linspace,
       meta=meta.linspace, **FN),
    Op(f"linspace.Scalar_Tensor(Scalar start, Tensor end, int steps, *, {_F}) -> Tensor", cpu=cpu.linspace,
       meta=meta.linspace, **FN),
    Op(f"linspace.Tensor_Tensor(Tensor start, Tensor end, int steps, *, {_F}) -> Tensor", cpu=cpu.linspace,
       meta=meta.linspace, **FN),
    Op(f"logspace(Scalar start, Scalar end, int steps, float base=10., *, {_F}) -> Tensor", cpu=cpu.logspace,
       meta=meta.logspace, **FN),
    Op(f"logspace.Tensor_Scalar(Tensor start, Scalar end, int steps, float base=10., *, {_F}) -> Tensor",
       cpu=cpu.logspace, meta=meta.logspace, **FN),
    Op(f"logspace.Scalar_Tensor(Scalar start, Tensor end, int steps, float base=10., *, {_F}) -> Tensor",
       cpu=cpu.logspace, meta=meta.logspace, **FN),
    Op(f"logspace.Tensor_Tensor(Tensor start, Tensor end, int steps, float base=10., *, {_F}) -> Tensor",
       cpu=cpu.logspace, meta=meta.logspace, **FN),
    Op(f"eye(SymInt n, *, {_F}) -> Tensor", cpu=cpu.eye, meta=meta.eye, **FN),
    Op(f"eye.m(SymInt n, SymInt m, *, {_F}) -> Tensor", cpu=cpu.eye_m, meta=meta.eye_m, **FN),
    Op("tril_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None) -> Tensor", cpu=cpu.tril_indices, meta=meta.tril_indices, **FN),
    Op("triu_indices(int row, int col, int offset=0, *, ScalarType? dtype=4, Layout? layout=None, "
       "Device? device=None, bool? pin_memory=None) -> Tensor", cpu=cpu.triu_indices, meta=meta.triu_indices, **FN),
    Op("complex(Tensor real, Tensor imag) -> Tensor", cpu=cpu.complex_, meta=meta.complex_, out=True, **FN),
    Op("polar(Tensor abs, Tensor angle) -> Tensor", cpu=cpu.polar, meta=meta.polar, out=True, **FN),
]


def _rand_rows(name, schema, kernel, **kw):
    return Op(schema, cpu=kernel, meta=kernel, **RAND, **kw)


OPS += [
    # -- random factories (the same kernel serves CPU and Meta: it checks, then samples or not) --
    _rand_rows("rand", f"rand(SymInt[] size, *, {_F}) -> Tensor", rnd.rand_nogen, **FN),
    _rand_rows("rand", f"rand.generator(SymInt[] size, *, Generator? generator, {_F}) -> Tensor", rnd.rand, **FN),
    _rand_rows("randn", f"randn(SymInt[] size, *, {_F}) -> Tensor", rnd.randn_nogen, **FN),
    _rand_rows("randn", f"randn.generator(SymInt[] size, *, Generator? generator, {_F}) -> Tensor", rnd.randn,
               **FN),
    _rand_rows("randint", "randint(SymInt high, SymInt[] size, *, ScalarType? dtype=4, Layout? layout=None, "
               "Device? device=None, bool? pin_memory=None) -> Tensor", rnd.randint_nogen, **FN),
    _rand_rows("randint", "randint.generator(SymInt high, SymInt[] size, *, Generator? generator, "
               "ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
               rnd.randint, **FN),
    _rand_rows("randint", "randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=4, "
               "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
               rnd.randint_low_nogen, **FN),
    _rand_rows("randint", "randint.low_generator(SymInt low, SymInt high, SymInt[] size, *, "
               "Generator? generator, ScalarType? dtype=4, Layout? layout=None, Device? device=None, "
               "bool? pin_memory=None) -> Tensor", rnd.randint_low, **FN),
    _rand_rows("randperm", "randperm(SymInt n, *, ScalarType? dtype=4, Layout? layout=None, Device? device=None, "
               "bool? pin_memory=None) -> Tensor", rnd.randperm_nogen, **FN),
    _rand_rows("randperm", "randperm.generator(SymInt n, *, Generator? generator, ScalarType? dtype=4, "
               "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", rnd.randperm, **FN),
    _rand_rows("rand_like", f"rand_like(Tensor self, *, {_FL}) -> Tensor", rnd.rand_like_nogen, **FN),
    _rand_rows("rand_like", f"rand_like.generator(Tensor self, *, Generator? generator, {_FL}) -> Tensor",
               rnd.rand_like, **FN),
    _rand_rows("randn_like", f"randn_like(Tensor self, *, {_FL}) -> Tensor", rnd.randn_like_nogen, **FN),
    _rand_rows("randn_like", f"randn_like.generator(Tensor self, *, Generator? generator, {_FL}) -> Tensor",
               rnd.randn_like, **FN),
    _rand_rows("randint_like", f"randint_like(Tensor self, SymInt high, *, {_FL}) -> Tensor", rnd.randint_like,
               **FN),
    _rand_rows("randint_like", f"randint_like.low_dtype(Tensor self, SymInt low, SymInt high, *, {_FL}) -> Tensor",
               rnd.randint_like_low_nogen, **FN),
    _rand_rows("randint_like", f"randint_like.generator(Tensor self, SymInt high, *, Generator? generator, "
               f"{_FL}) -> Tensor", rnd.randint_like_gen, **FN),
    _rand_rows("randint_like", f"randint_like.low_generator_dtype(Tensor self, SymInt low, SymInt high, *, "
               f"Generator? generator, {_FL}) -> Tensor", rnd.randint_like_low, **FN),
    _rand_rows("normal", "normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor",
               rnd.normal_tensor_float, **FN),
    _rand_rows("normal", "normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor",
               rnd.normal_float_tensor, **FN),
    _rand_rows("normal", "normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor",
               rnd.normal_tensor_tensor, **FN),
    _rand_rows("normal", "normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, "
               f"{_F}) -> Tensor", rnd.normal_float_float, **FN),
    _rand_rows("bernoulli", "bernoulli(Tensor self, *, Generator? generator=None) -> Tensor", rnd.bernoulli),
    _rand_rows("bernoulli", "bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor",
               rnd.bernoulli_p),
    _rand_rows("multinomial", "multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, "
               "Generator? generator=None) -> Tensor", rnd.multinomial),
    # -- in-place samplers ---------------------------------------------------------------------
    _rand_rows("uniform_", "uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) "
               "-> Tensor(a!)", rnd.uniform_, variants="method"),
    _rand_rows("normal_", "normal_(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) "
               "-> Tensor(a!)", rnd.normal_, variants="method"),
    _rand_rows("bernoulli_", "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) "
               "-> Tensor(a!)", rnd.bernoulli_float_, variants="method"),
    _rand_rows("bernoulli_", "bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator=None) "
               "-> Tensor(a!)", rnd.bernoulli_tensor_, variants="method"),
    _rand_rows("exponential_", "exponential_(Tensor(a!) self, float lambd=1., *, Generator? generator=None) "
               "-> Tensor(a!)", rnd.exponential_, variants="method"),
    _rand_rows("geometric_", "geometric_(Tensor(a!) self, float p, *, Generator? generator=None) -> Tensor(a!)",
               rnd.geometric_, variants="method"),
    _rand_rows("log_normal_", "log_normal_(Tensor(a!) self, float mean=1., float std=2., *, "
               "Generator? generator=None) -> Tensor(a!)", rnd.log_normal_, variants="method"),
    _rand_rows("cauchy_", "cauchy_(Tensor(a!) self, float median=0., float sigma=1., *, Generator? generator=None) "
               "-> Tensor(a!)", rnd.cauchy_, variants="method"),
    _rand_rows("random_", "random_.from(Tensor(a!) self, int from, int? to, *, Generator? generator=None) "
               "-> Tensor(a!)", rnd.random_from, variants="method"),
    _rand_rows("random_", "random_.to(Tensor(a!) self, int to, *, Generator? generator=None) -> Tensor(a!)",
               rnd.random_to, variants="method"),
    _rand_rows("random_", "random_(Tensor(a!) self, *, Generator? generator=None) -> Tensor(a!)", rnd.random_,
               variants="method"),
]


_TRACER_BIT = 1 << _dispatch.DispatchKey.Tracer
# Called by ember.tensor while a trace records (its result becomes a constant of the trace):
# ember.jit.trace registers its TracerWarning here, so this layer never imports the tracer.
TENSOR_CONSTANT_HOOKS: list = []


# ---------------------------------------------------------------------------------------
# Python-level constructors
# ---------------------------------------------------------------------------------------
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new tensor holding a copy of `data` (nested lists, numbers, arrays, tensors)."""
    if _dispatch.tls.include & _TRACER_BIT and not _dispatch.tls.exclude & _TRACER_BIT:
        for hook in TENSOR_CONSTANT_HOOKS:
            hook()
    t = created(cpu.tensor_from_data(data, optional_dtype(dtype, "tensor")))
    if device is None:
        device = _dispatch.default_factory_backend[1]
    if device is not None and str(device) != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(ndarray):
    """A tensor sharing `ndarray`'s memory (writes through either are seen by both)."""
    return created(cpu.from_numpy(ndarray))


def as_tensor(data, dtype=None, device=None):
    """`data` as a tensor, sharing memory with a tensor or NumPy array when dtype and device allow."""
    dtype = optional_dtype(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype) if (dtype or device) else data
    if isinstance(data, np.ndarray) and data.dtype in _dt._FROM_NP and (device is None or str(device) == "cpu"):
        if dtype is None or dtype.np == data.dtype:
            if all(s >= 0 for s in data.strides):
                return created(wrap(data))
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """PyTorch's asarray: shares memory with tensors, arrays and DLPack/buffer objects unless
    `copy=True` or a dtype/device change forces a copy (an error when ``copy=False``)."""
    dtype = optional_dtype(dtype, "asarray")
    if isinstance(obj, Tensor) or isinstance(obj, np.ndarray) or hasattr(obj, "__dlpack__") or \
            _is_buffer(obj):
        src = obj if isinstance(obj, Tensor) else (
            from_dlpack(obj) if not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__")
            else as_tensor(np.asarray(obj) if not isinstance(obj, np.ndarray) else obj))
        needs_copy = (dtype is not None and dtype is not src.dtype) or (
            device is not None and _device(device) != src.device)
        if copy is False and needs_copy:
            raise ValueError("can't alias tensor with a different dtype or device when copy=False")
        out = src
        if needs_copy:
            out = src.to(device=device, dtype=dtype)
        elif copy:
            out = src.clone()
    else:
        if copy is False:
            raise ValueError("can't alias a Python sequence (copy=False)")
        out = tensor(obj, dtype=dtype, device=device)
    if requires_grad:
        out = out.detach().requires_grad_(True) if out is obj else out.requires_grad_(True)
    return out


def _is_buffer(obj):
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def from_dlpack(ext):
    """A tensor sharing the memory of any object with ``__dlpack__`` (NumPy, PyTorch, ...)."""
    if isinstance(ext, Tensor):
        return ext
    if not hasattr(ext, "__dlpack__"):
        raise TypeError(f"from_dlpack(): expected an object with __dlpack__, got {type(ext).__name__}")
    _check_dlpack_dtype(ext)
    if ext.__dlpack_device__()[0] == _KDL_CUDA:   # device memory: a CUDA tensor over it (CuPy takes it)
        import cupy
        from ..._cuda.kernels import wrap_cuda
        return created(wrap_cuda(cupy.from_dlpack(ext)))
    return created(wrap(np.from_dlpack(ext)))


_KDL_CUDA = 2   # DLPack's kDLCUDA device type


def _check_dlpack_dtype(ext):
    dt = getattr(ext, "dtype", None)
    if dt is not None and "bfloat16" in str(dt):
        raise NotImplementedError("from_dlpack: bfloat16 cannot be exchanged through NumPy's DLPack")


def new_tensor(self, data, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A copy of `data` with self's dtype and device unless given."""
    t = created(cpu.tensor_from_data(data, optional_dtype(dtype, "new_tensor") or self.dtype))
    dev = device if device is not None else self.device
    if str(dev) != "cpu":
        t = t.to(dev)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _size_args(name, args, size):
    """rand(2, 3) / rand((2, 3)) / rand(size=(2, 3)) -> (2, 3)."""
    if args:
        if size is not None:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        return args[0] if len(args) == 1 and not isinstance(args[0], int) else args
    if size is None:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    return size


def _random_factory(name):
    bindings = []  # (plain, with generator): looked up on first call, after the rows are registered

    def factory(*size_args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
        size = _size_args(name, size_args, size)
        if not bindings:
            bindings.extend((getattr(aten, name).default.entry, getattr(aten, name).generator.entry))
        plain, with_gen = bindings
        if out is not None:  # PyTorch's rand(size, out=o): o resized to size, then filled in its dtype
            if dtype is not None and dtype is not out.dtype:
                raise RuntimeError(f"{name}(): dtype {dtype} does not match the dtype of out= ({out.dtype})")
            dtype, device = out.dtype, out.device
        if generator is not None:
            r = with_gen(size, generator=generator, dtype=dtype, layout=layout, device=device,
                         requires_grad=requires_grad)
        else:
            r = plain(size, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)
        if out is not None:
            if tuple(out.shape) == tuple(r.shape):
                from ..overlap import assert_no_internal_overlap
                assert_no_internal_overlap(name, out)
                out.copy_(r)  # (copy_'s binding refuses an inference out and bumps the version)
            else:
                from ..registry import _copy_result
                _copy_result(name, out, r, resize=True)  # resized (a warning when it had elements)
                out._bump_version()
            return out
        return r
    factory.__name__ = name
    factory.__doc__ = f"``ember.{name}(*size, generator=None, dtype=None, device=None, requires_grad=False)``"
    return factory


PYTHON_FUNCTIONS = {"": {
    "tensor": tensor, "from_numpy": from_numpy, "as_tensor": as_tensor, "asarray": asarray,
    "from_dlpack": from_dlpack,
    "Generator": _random.Generator, "default_generator": _random.default_generator,
    "manual_seed": _random.manual_seed, "seed": _random.seed, "initial_seed": _random.initial_seed,
    "get_rng_state": _random.get_rng_state, "set_rng_state": _random.set_rng_state, "random": _random,
    "preserve_format": "preserve_format", "contiguous_format": "contiguous_format",
    "rand": _random_factory("rand"), "randn": _random_factory("randn"),
    "set_printoptions": _tensor_str.set_printoptions, "get_printoptions": _tensor_str.get_printoptions,
    "printoptions": _tensor_str.printoptions,
}}
PYTHON_METHODS = {"new_tensor": new_tensor}
