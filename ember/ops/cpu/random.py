"""Random kernels (CPU and Meta): rand/randn/randint/randperm, normal, bernoulli, multinomial and
the in-place samplers (uniform_, normal_, exponential_, random_ ...).

Each kernel checks its arguments first (same errors on every device), then returns a meta tensor
when the output lives on the meta device, else draws from the `ember.Generator` given (or the
default one). Values cannot match PyTorch's Mersenne Twister; ranges, dtypes and distributions do.
Floats are drawn as PyTorch does: ``k * 2**-digits`` with k uniform over the dtype's mantissa
digits, so rand() is in [0, 1) in every dtype (no rounding up to 1 in float16).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..._core import dtype as _dt
from ..._core.random import rng
from ..._core.storage import MetaArray
from ..._core.tensor import Tensor, wrap, wrap_meta
from ..meta import creation as rules

_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _on_meta(device, like=None) -> bool:
    if device is not None:
        return device.type == "meta"
    return like is not None and isinstance(like._data, MetaArray)


def _new(shape, dt, device, like=None, strides=None, sample=None):
    """The output: a meta tensor, or `sample(shape)` (a float64/int64 ndarray) cast to `dt` and laid
    out with `strides` when given (the *_like ops preserve their input's layout)."""
    if _on_meta(device, like):
        return wrap_meta(shape, dt, strides)
    arr = sample(shape)
    if arr.dtype != dt.np:
        arr = arr.astype(dt.np)
    if strides is not None:
        from .creation import _strided_zeros
        out = _strided_zeros(shape, strides, dt.np)
        out[...] = arr
        arr = out
    return wrap(arr)


def _real(dt):
    return dt.to_real()


def uniform01(gen, shape, dt) -> np.ndarray:
    """Uniform [0, 1) values exactly representable in `dt` (float64 array)."""
    bits = _DIGITS[_real(dt).name]
    k = gen.integers(0, 1 << bits, size=shape, dtype=np.uint64)
    return k.astype(np.float64) * (2.0 ** -bits)


def _uniform(gen, shape, dt, lo=0.0, hi=1.0):
    if dt.category == _dt.COMPLEX:
        re = lo + (hi - lo) * uniform01(gen, shape, dt)
        im = lo + (hi - lo) * uniform01(gen, shape, dt)
        return re + 1j * im
    return lo + (hi - lo) * uniform01(gen, shape, dt)


def _normal(gen, shape, dt, mean=0.0, std=1.0):
    if dt.category == _dt.COMPLEX:  # each part N(mean, std^2 / 2): variance std^2 in all
        s = std / math.sqrt(2.0)
        return (mean + s * gen.standard_normal(shape)) + 1j * (mean + s * gen.standard_normal(shape))
    return mean + std * gen.standard_normal(shape)


def _check_float(dt, kernel):
    if dt.category not in (_dt.FLOAT, _dt.COMPLEX):
        raise rules.not_implemented_for(kernel, dt)


def _check_real_float(dt, what):
    if dt.category != _dt.FLOAT:
        name = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                "uint8": "unsigned char", "bool": "bool"}.get(dt.name, dt.c10_name)
        raise RuntimeError(f"{what} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {name}")


# ---------------------------------------------------------------------------------------
# factories
# ---------------------------------------------------------------------------------------
def rand(size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_size(size, "rand")
    dt = rules.factory_dtype(dtype)
    _check_float(dt, "check_uniform_bounds")
    return _new(size, dt, device, sample=lambda s: _uniform(rng(generator), s, dt))


def randn(size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_size(size, "randn")
    dt = rules.factory_dtype(dtype)
    if math.prod(size):  # like PyTorch, the dtype check lives in the kernel, which empty outputs skip
        _check_float(dt, "normal_kernel_cpu")
    return _new(size, dt, device, sample=lambda s: _normal(rng(generator), s, dt))


def rand_nogen(size, dtype=None, layout=None, device=None, pin_memory=None):
    return rand(size, None, dtype, layout, device, pin_memory)


def randn_nogen(size, dtype=None, layout=None, device=None, pin_memory=None):
    return randn(size, None, dtype, layout, device, pin_memory)


def check_random_bounds(low, high, dt):
    """ATen's check_from_to: from < to, and both representable in the output dtype."""
    if not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    _check_in_range(low, high - 1, dt)


def _check_in_range(low, top, dt):
    if dt.category == _dt.FLOAT:
        digits = _DIGITS[dt.name]
        lim = 1 << digits
        for v, name in ((low, "from"), (top, "to - 1")):
            if not -lim <= v <= lim:
                warnings.warn(f"{name} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                              f"{dt.name} can support discrete uniform distribution only within this range.")
        return
    if dt.category not in (_dt.INT, _dt.BOOL):
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    lo, hi = (0, 1) if dt is _dt.bool_ else (int(np.iinfo(dt.np).min), int(np.iinfo(dt.np).max))
    for v, name in ((low, "from"), (top, "to - 1")):
        if not lo <= v <= hi:
            raise RuntimeError(f"{name} is out of bounds for {dt.cpp_type}")


def _integers(gen, low, high_inclusive, shape):
    if low > np.iinfo(np.int64).max or high_inclusive > np.iinfo(np.int64).max:
        vals = gen.integers(0, high_inclusive - low, size=shape, dtype=np.uint64, endpoint=True)
        return (vals + np.uint64(low)) if low >= 0 else vals.astype(np.int64) + low
    return gen.integers(low, high_inclusive, size=shape, dtype=np.int64, endpoint=True)


def randint_low(low, high, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_size(size, "randint")
    dt = _dt.int64 if dtype is None else _dt.check_supported(dtype)
    check_random_bounds(low, high, dt)
    return _new(size, dt, device, sample=lambda s: _integers(rng(generator), low, high - 1, s))


def randint(high, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low(0, high, size, generator, dtype, layout, device, pin_memory)


def randint_nogen(high, size, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low(0, high, size, None, dtype, layout, device, pin_memory)


def randint_low_nogen(low, high, size, dtype=None, layout=None, device=None, pin_memory=None):
    return randint_low(low, high, size, None, dtype, layout, device, pin_memory)


def randperm(n, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    dt = _dt.int64 if dtype is None else _dt.check_supported(dtype)
    if dt.category not in (_dt.INT, _dt.FLOAT):
        raise rules.not_implemented_for("randperm", dt)
    rules.check_size((n,), "randperm")
    if dt is _dt.float16:
        limit = (1 << _DIGITS[dt.name]) + 1
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {limit} for {dt.c10_name} type.")
    elif dt.category == _dt.INT and n - 1 > np.iinfo(dt.np).max:
        raise RuntimeError(f"value cannot be converted to type {dt.c_type} without overflow")
    return _new((n,), dt, device, sample=lambda s: rng(generator).permutation(n))


def randperm_nogen(n, dtype=None, layout=None, device=None, pin_memory=None):
    return randperm(n, None, dtype, layout, device, pin_memory)


def normal_float_float(mean, std, size, generator=None, dtype=None, layout=None, device=None, pin_memory=None):
    rules.check_size(size, "normal")
    dt = rules.factory_dtype(dtype)
    _check_std(std)
    _check_float(dt, "normal_kernel_cpu")
    return _new(size, dt, device, sample=lambda s: _normal(rng(generator), s, dt, mean, std))


def _check_std(std):
    if not std >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {_num(std)}")


def _num(v):
    return int(v) if isinstance(v, float) and v.is_integer() else v


def _values(t: Tensor) -> np.ndarray:
    arr = t._data
    return arr.astype(np.float32) if arr.dtype == _dt.bfloat16.np else arr


def normal_tensor_float(mean, std=1.0, generator=None):
    _check_float(mean.dtype, "normal_kernel_cpu")
    _check_std(std)
    dt = mean.dtype
    return _new(tuple(mean.shape), dt, None, mean,
                sample=lambda s: _values(mean) + _normal(rng(generator), s, dt, 0.0, std))


def normal_float_tensor(mean, std, generator=None):
    _check_float(std.dtype, "normal_kernel_cpu")
    dt = std.dtype
    if not isinstance(std._data, MetaArray) and std.numel() and not (_values(std) >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    return _new(tuple(std.shape), dt, None, std,
                sample=lambda s: mean + _values(std) * _normal(rng(generator), s, dt))


def normal_tensor_tensor(mean, std, generator=None):
    from .. import rules as _rules
    _check_float(mean.dtype, "normal_kernel_cpu")
    _check_float(std.dtype, "normal_kernel_cpu")
    shape = _rules.broadcast_shapes(tuple(mean.shape), tuple(std.shape), op="normal")
    dt = _rules.common_dtype(mean, std)
    if not isinstance(std._data, MetaArray) and std.numel() and not (_values(std) >= 0).all():
        raise RuntimeError("normal expects all elements of std >= 0.0")
    return _new(shape, dt, None, mean,
                sample=lambda s: _values(mean) + _values(std) * _normal(rng(generator), s, dt))


# ---------------------------------------------------------------------------------------
# *_like
# ---------------------------------------------------------------------------------------
def _like(self, dtype, device, memory_format, kernel, sample):
    dt = dtype or self.dtype
    if kernel:
        _check_float(dt, kernel)
    return _new(tuple(self.shape), dt, device, self, rules.like_strides(self, memory_format), sample=sample)


def rand_like(self, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    dt = dtype or self.dtype
    return _like(self, dtype, device, memory_format, "check_uniform_bounds",
                 lambda s: _uniform(rng(generator), s, dt))


def randn_like(self, generator=None, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    dt = dtype or self.dtype
    return _like(self, dtype, device, memory_format, "normal_kernel_cpu",
                 lambda s: _normal(rng(generator), s, dt))


def rand_like_nogen(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return rand_like(self, None, dtype, layout, device, pin_memory, memory_format)


def randn_like_nogen(self, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return randn_like(self, None, dtype, layout, device, pin_memory, memory_format)


def randint_like_low(self, low, high, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
                     memory_format=None):
    check_random_bounds(low, high, dtype or self.dtype)
    return _like(self, dtype, device, memory_format, None, lambda s: _integers(rng(generator), low, high - 1, s))


def randint_like(self, high, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
    return randint_like_low(self, 0, high, None, dtype, layout, device, pin_memory, memory_format)


def randint_like_low_nogen(self, low, high, dtype=None, layout=None, device=None, pin_memory=None,
                           memory_format=None):
    return randint_like_low(self, low, high, None, dtype, layout, device, pin_memory, memory_format)


def randint_like_gen(self, high, generator=None, dtype=None, layout=None, device=None, pin_memory=None,
                     memory_format=None):
    return randint_like_low(self, 0, high, generator, dtype, layout, device, pin_memory, memory_format)


# ---------------------------------------------------------------------------------------
# in-place samplers: check, then (on CPU) write into self
# ---------------------------------------------------------------------------------------
def _write(self, values):
    if isinstance(self._data, MetaArray):
        return self
    arr = self._data
    if arr.dtype.kind != "c" and np.iscomplexobj(values):
        values = values.real
    if arr.dtype.kind in "iu" and values.dtype.kind == "f":
        values = np.trunc(values)
    np.copyto(arr, values, casting="unsafe")
    return self


def _shape(self):
    return tuple(self.shape)


def uniform_(self, from_=0.0, to=1.0, generator=None):
    dt = self.dtype
    _check_float(dt, "check_uniform_bounds")
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={_num(from_)} > "
                           f"to={_num(to)}")
    limit = float(_dt.finfo(dt).max)
    for v, name in ((from_, "from"), (to, "to")):
        if not -limit <= v <= limit:
            raise RuntimeError(f"{name} is out of bounds for {_real(dt).cpp_type}")
    if to - from_ > limit:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{_real(dt).cpp_type}>"
                           f"::max(), but found to={to} and from={from_} which result in to-from to exceed the limit")
    if isinstance(self._data, MetaArray):
        return self
    return _write(self, _uniform(rng(generator), _shape(self), dt, from_, to))


def normal_(self, mean=0.0, std=1.0, generator=None):
    _check_float(self.dtype, "normal_kernel_cpu")
    _check_std(std)
    if isinstance(self._data, MetaArray):
        return self
    return _write(self, _normal(rng(generator), _shape(self), self.dtype, mean, std))


def _check_p(p, op="bernoulli_"):
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={_num(p)}")


def bernoulli(self, generator=None):
    """Draws 1 with probability `self` (a float tensor of probabilities), in self's dtype."""
    _check_float_p(self.dtype)
    if not isinstance(self._data, MetaArray) and self.numel():
        p = _values(self)
        if not ((p >= 0) & (p <= 1)).all():
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return _new(_shape(self), self.dtype, None, self, rules.like_strides(self, None),
                sample=lambda s: (uniform01(rng(generator), s, _dt.float64) < _values(self)).astype(np.float64))


def _check_float_p(dt):
    if dt.category != _dt.FLOAT:
        raise rules.not_implemented_for("bernoulli_tensor_cpu_p_", dt)


def bernoulli_p(self, p, generator=None):
    _check_p(p)
    _check_float_or_int(self.dtype, "bernoulli_scalar_cpu_")
    return _new(_shape(self), self.dtype, None, self, rules.like_strides(self, None),
                sample=lambda s: (uniform01(rng(generator), s, _dt.float64) < p).astype(np.float64))


def _check_float_or_int(dt, kernel):
    if dt.category == _dt.COMPLEX:
        raise rules.not_implemented_for(kernel, dt)


def bernoulli_float_(self, p=0.5, generator=None):
    _check_p(p)
    _check_float_or_int(self.dtype, "bernoulli_scalar_cpu_")
    if isinstance(self._data, MetaArray):
        return self
    return _write(self, uniform01(rng(generator), _shape(self), _dt.float64) < p)


def bernoulli_tensor_(self, p, generator=None):
    _check_float_p(p.dtype)
    _check_float_or_int(self.dtype, "bernoulli_tensor_cpu_self_")
    _expand_check(tuple(p.shape), _shape(self))
    if isinstance(self._data, MetaArray):
        return self
    pv = _values(p)
    if pv.size and not ((pv >= 0) & (pv <= 1)).all():
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return _write(self, uniform01(rng(generator), _shape(self), _dt.float64) < pv)


def _expand_check(src, target):
    if len(src) > len(target):
        raise RuntimeError(f"expand: the number of sizes provided ({len(target)}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({len(src)})")
    for i, s in enumerate(reversed(src)):
        t = target[len(target) - 1 - i]
        if s != 1 and s != t:
            raise RuntimeError(f"The expanded size of the tensor ({t}) must match the existing size ({s}) at "
                               f"non-singleton dimension {len(target) - 1 - i}.  Target sizes: {list(target)}.  "
                               f"Tensor sizes: {list(src)}")


def exponential_(self, lambd=1.0, generator=None):
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_num(lambd)}")
    _check_real_float(self.dtype, "Exponential")
    if isinstance(self._data, MetaArray):
        return self
    return _write(self, rng(generator).standard_exponential(_shape(self)) / lambd)


def geometric_(self, p, generator=None):
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(p)}")
    if self.dtype.category in (_dt.COMPLEX, _dt.BOOL):
        raise rules.not_implemented_for("geometric_cpu", self.dtype)
    if isinstance(self._data, MetaArray):
        return self
    return _write(self, rng(generator).geometric(p, _shape(self)).astype(np.float64))


def log_normal_(self, mean=1.0, std=2.0, generator=None):
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(std)}")
    if self.dtype.category != _dt.FLOAT:
        raise rules.not_implemented_for("log_normal_cpu", self.dtype)
    if isinstance(self._data, MetaArray):
        return self
    return _write(self, np.exp(_normal(rng(generator), _shape(self), _dt.float64, mean, std)))


def cauchy_(self, median=0.0, sigma=1.0, generator=None):
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(sigma)}")
    _check_real_float(self.dtype, "Cauchy")
    if isinstance(self._data, MetaArray):
        return self
    return _write(self, median + sigma * rng(generator).standard_cauchy(_shape(self)))


def _random_default_range(dt):
    if dt is _dt.bool_:
        return 0, 1
    if dt.category == _dt.FLOAT:
        return 0, 1 << _DIGITS[dt.name]
    if dt.category == _dt.INT:
        return 0, int(np.iinfo(dt.np).max)
    raise rules.not_implemented_for("random_kernel_cpu", dt)


def random_(self, generator=None):
    """Integers in [0, 2**digits] for floats, [0, max] for integers."""
    lo, hi = _random_default_range(self.dtype)
    if isinstance(self._data, MetaArray):
        return self
    return _write(self, _integers(rng(generator), lo, hi, _shape(self)))


def random_from(self, from_, to=None, generator=None):
    dt = self.dtype
    if to is None:
        _, hi = _random_default_range(dt)
        if from_ > hi:
            raise RuntimeError(f"random_ expects 'from' casted to dtype to be less than or equal to 'to', but got "
                               f"from={from_} > to={hi}")
        _check_in_range(from_, hi, dt)
    else:
        if dt.category == _dt.COMPLEX:
            raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
        check_random_bounds(from_, to, dt)
        hi = to - 1
    if isinstance(self._data, MetaArray):
        return self
    return _write(self, _integers(rng(generator), from_, hi, _shape(self)))


def random_to(self, to, generator=None):
    return random_from(self, 0, to, generator)


# ---------------------------------------------------------------------------------------
# multinomial
# ---------------------------------------------------------------------------------------
def multinomial(self, num_samples, replacement=False, generator=None):
    """Category indices drawn by weight. Without replacement: PyTorch's algorithm (the top
    `num_samples` of p / Exp(1) noise); with replacement: inverse-CDF sampling."""
    dt = self.dtype
    if dt.category != _dt.FLOAT:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {dt.c10_name}")
    if self.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    n_cat = self.shape[-1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    out_shape = (num_samples,) if self.ndim == 1 else (self.shape[0], num_samples)
    if isinstance(self._data, MetaArray):
        return wrap_meta(out_shape, _dt.int64)
    p = _values(self).astype(np.float64).reshape(-1, n_cat)
    if p.size:
        if not (np.isfinite(p) & (p >= 0)).all():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if not (p.sum(axis=1) > 0).all():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    gen = rng(generator)
    if not replacement:
        q = gen.standard_exponential(p.shape)
        keys = p / q
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    else:
        cdf = np.cumsum(p, axis=1)
        u = gen.random((p.shape[0], num_samples)) * cdf[:, -1:]
        out = np.empty((p.shape[0], num_samples), np.int64)
        for r in range(p.shape[0]):
            idx = np.searchsorted(cdf[r], u[r], side="right")
            last = int(np.flatnonzero(p[r])[-1])  # rounding at the top must not pick a zero weight
            out[r] = np.minimum(idx, last)
    return wrap(out.astype(np.int64).reshape(out_shape))
