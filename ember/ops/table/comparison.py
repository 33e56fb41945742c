"""Comparison operators (table rows): eq/ne/lt/le/gt/ge and their aliases, equal, isclose,
allclose, logical and bitwise ops, shifts, where, clamp/clip, isnan & co."""
from ..._core.tensor import Tensor
from ..registry import Op, aten
from ..cpu import comparison as cpu
from ..meta import comparison as meta

BINARY = dict(inplace=True, out=True, numbers_as_tensors=True)
BITWISE = dict(inplace=True, out=True, numbers_as_tensors="all")   # torch.bitwise_and(2, t) too
BOTH = dict(inplace=True, out=True)


def _compare_rows(name, cpu_kernel, ordered):
    return Op(f"{name}.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpu_kernel,
              meta=meta.compare(name, ordered), **BINARY)


def _clamp_rows(name, args="Scalar? min=None, Scalar? max=None", targs="Tensor? min=None, Tensor? max=None"):
    """clamp/clip/clamp_min/clamp_max: the Tensor overload's binding takes numbers too (one
    kernel; numbers promote as wrapped numbers either way), so ``ember.clamp`` needs no overload
    resolution. The Scalar overload is registered for ``ember.ops.aten`` only (variants="")."""
    kernel, meta_kernel = {"clamp_min": (cpu.clamp_min, meta.clamp_min),
                           "clamp_max": (cpu.clamp_max, meta.clamp_max)}.get(name, (cpu.clamp, meta.clamp))
    return [
        Op(f"{name}.Tensor(Tensor self, {targs}) -> Tensor", cpu=kernel, meta=meta_kernel, **BINARY),
        Op(f"{name}(Tensor self, {args}) -> Tensor", cpu=kernel, meta=meta_kernel, variants="", **BOTH),
    ]


OPS = [
    _compare_rows("eq", cpu.eq, False), _compare_rows("ne", cpu.ne, False),
    _compare_rows("lt", cpu.lt, True), _compare_rows("le", cpu.le, True),
    _compare_rows("gt", cpu.gt, True), _compare_rows("ge", cpu.ge, True),
    # aliases: their own aten operators, as in PyTorch
    _compare_rows("not_equal", cpu.ne, False), _compare_rows("less", cpu.lt, True),
    _compare_rows("less_equal", cpu.le, True), _compare_rows("greater", cpu.gt, True),
    _compare_rows("greater_equal", cpu.ge, True),
    Op("equal(Tensor self, Tensor other) -> bool", cpu=cpu.equal, meta=meta.equal),
    Op("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> Tensor",
       cpu=cpu.isclose, meta=meta.isclose),
    Op("allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, bool equal_nan=False) -> bool",
       cpu=cpu.allclose, meta=meta.allclose),

    Op("logical_and(Tensor self, Tensor other) -> Tensor", cpu=cpu.logical_and, meta=meta.logical, **BOTH),
    Op("logical_or(Tensor self, Tensor other) -> Tensor", cpu=cpu.logical_or, meta=meta.logical, **BOTH),
    Op("logical_xor(Tensor self, Tensor other) -> Tensor", cpu=cpu.logical_xor, meta=meta.logical, **BOTH),
    Op("logical_not(Tensor self) -> Tensor", cpu=cpu.logical_not, meta=meta.unary_bool, **BOTH),

    Op("bitwise_and.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpu.bitwise_and,
       meta=meta.bitwise("bitwise_and", "bitwise_and_cpu"), **BITWISE),
    Op("bitwise_or.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpu.bitwise_or,
       meta=meta.bitwise("bitwise_or", "bitwise_or_cpu"), **BITWISE),
    Op("bitwise_xor.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpu.bitwise_xor,
       meta=meta.bitwise("bitwise_xor", "bitwise_xor_cpu"), **BITWISE),
    Op("bitwise_not(Tensor self) -> Tensor", cpu=cpu.bitwise_not, meta=meta.bitwise_not, **BOTH),
    Op("bitwise_left_shift.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpu.bitwise_left_shift,
       meta=meta.bitwise("bitwise_left_shift", "lshift_cpu", allow_bool=False), **BITWISE),
    Op("bitwise_right_shift.Tensor(Tensor self, Tensor other) -> Tensor", cpu=cpu.bitwise_right_shift,
       meta=meta.bitwise("bitwise_right_shift", "rshift_cpu", allow_bool=False), **BITWISE),

    # where(condition) (one argument) and Tensor.where(condition, other) are Python functions below
    Op("where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", cpu=cpu.where, meta=meta.where,
       variants="function", out=True, numbers_as_tensors=True),
    *_clamp_rows("clamp"), *_clamp_rows("clip"),
    *_clamp_rows("clamp_min", "Scalar min", "Tensor min"), *_clamp_rows("clamp_max", "Scalar max", "Tensor max"),

    # torch.isnan/isinf take no out= (aten's .out overloads are not exposed in Python)
    Op("isnan(Tensor self) -> Tensor", cpu=cpu.isnan, meta=meta.unary_bool),
    Op("isinf(Tensor self) -> Tensor", cpu=cpu.isinf, meta=meta.unary_bool),
    Op("isfinite(Tensor self) -> Tensor", cpu=cpu.isfinite, meta=meta.unary_bool),
    Op("isposinf(Tensor self) -> Tensor", cpu=cpu.isposinf, meta=meta.isposinf, out=True),
    Op("isneginf(Tensor self) -> Tensor", cpu=cpu.isneginf, meta=meta.isneginf, out=True),
    Op("isreal(Tensor self) -> Tensor", cpu=cpu.isreal, meta=meta.unary_bool),
    Op("signbit(Tensor self) -> Tensor", cpu=cpu.signbit, meta=meta.signbit, out=True),
]


# ---------------------------------------------------------------------------------------
# Python-level API that only parses arguments
# ---------------------------------------------------------------------------------------
_NO_VALUE = object()
_ENTRIES = {}


def _entry(name, overload):
    """The generated binding of ``aten::<name>.<overload>`` (looked up once, after registration)."""
    fn = _ENTRIES.get((name, overload))
    if fn is None:
        fn = _ENTRIES[name, overload] = getattr(getattr(aten, name), overload).entry
    return fn


def where(condition, input=_NO_VALUE, other=_NO_VALUE, *, out=None):
    """``where(condition, input, other)``; ``where(condition)`` is ``nonzero(condition, as_tuple=True)``."""
    if input is _NO_VALUE and other is _NO_VALUE:
        if out is not None:
            raise TypeError("where() got an unexpected keyword argument 'out'")
        import ember
        return ember.nonzero(condition, as_tuple=True)
    if input is _NO_VALUE or other is _NO_VALUE:
        raise TypeError("where() received an invalid combination of arguments - expected (Tensor condition) or "
                        "(Tensor condition, Tensor input, Tensor other)")
    if out is not None:
        if not isinstance(input, Tensor) or not isinstance(other, Tensor):
            bad, pos = ("input", 2) if not isinstance(input, Tensor) else ("other", 3)
            raise TypeError(f"where(): argument '{bad}' (position {pos}) must be Tensor, not "
                            f"{type(input if bad == 'input' else other).__name__}")
        return _entry("where", "self_out")(condition, input, other, out=out)
    return _entry("where", "self")(condition, input, other)


def where_method(self, condition, y):
    """``x.where(condition, y)`` is ``where(condition, x, y)``."""
    return _entry("where", "self")(condition, self, y)


def invert(self):
    """``~t``: bitwise_not for bool and integer tensors; PyTorch's operator raises TypeError
    (not bitwise_not's NotImplementedError) for other dtypes."""
    if self.dtype.is_floating_point or self.dtype.is_complex:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return _entry("bitwise_not", "default")(self)


PYTHON_FUNCTIONS = {"": {"where": where}}
PYTHON_METHODS = {"where": where_method, "__invert__": invert}
