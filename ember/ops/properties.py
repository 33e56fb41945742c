"""What the compiler may assume about an operation: one row of facts per op, derived from the op table.

    of(ember.ops.aten.add_.Tensor)     # OpProperties(mutates=('self',), is_pointwise=True, ...)
    of(ember.rand).is_random            # True: a binding is looked up through its operator (__ember_op__)
    of(operator.setitem).mutates        # (0,): the first argument
    of_method("append", "other")        # a list method: mutates its receiver
    of(prim.Print).side_effects         # True: prim ops carry their row (ember.fx.prim)

Every graph pass asks here (through ``ember.fx.passes.purity``, which adds what only a node knows:
``out=`` and ``inplace=True`` arguments, the receiver of a method, call_module). The columns:

| column           | meaning                                                        | where the fact comes from            |
|------------------|----------------------------------------------------------------|--------------------------------------|
| is_random        | draws from the random generator (two calls differ, its state advances) | the row's ``nondeterministic=True`` |
| nondeterministic | equal inputs may give different values (random, uninitialised memory, global state) | is_random, UNINITIALIZED, the Python table |
| mutates          | the arguments written in place: names (schema) or positions (Python) | the schema's ``Tensor(a!)``     |
| is_view          | the result shares memory with an argument                      | the schema's ``-> Tensor(a)``         |
| aliases_args     | the result may be (part of) an argument: views, in-place results, Python code without a schema | derived |
| is_pointwise     | elementwise with broadcasting (``torch.Tag.pointwise``)        | POINTWISE                             |
| is_reduction     | reduces over dimensions (``torch.Tag.reduction``)              | REDUCTION                             |
| data_dependent_output | the result is a Python value read from the data (``equal``): no fake tensor can give it | DATA_DEPENDENT_OUTPUT |
| dynamic_output_shape | the result's shape may depend on the data (``nonzero``; ``index.Tensor`` with a boolean mask) | DYNAMIC_OUTPUT_SHAPE |
| side_effects     | acts on state outside its arguments: I/O, RNG seeding, global settings, raising | the Python table, prim rows |
| grad_mode_switch | turns autograd recording on or off                             | the Python table, prim rows           |
| cse_safe         | two calls with equal arguments may share one result: pure, deterministic, no fresh mutable container | derived |
| pure (property)  | an unused result may be deleted: not random, mutating or side-effecting | derived                     |

POINTWISE and REDUCTION name the rows (schema name and overload) as PyTorch tags the same overloads;
a row's derived in-place and out= overloads share its facts. Functions that are not operators are
described by the tables at the end: ember's Python-level functions (by public name), Tensor
methods without an operator, and Python's ``operator``/``builtins``; anything unknown is pure and
deterministic (torch.fx's convention: declare side effects with ``ember.fx.has_side_effect``).
"""
from __future__ import annotations

import builtins
import dataclasses
import operator

from .._core.dispatch import OperatorHandle
from . import registry


@dataclasses.dataclass(frozen=True)
class OpProperties:
    """One row of facts (see the module docstring). ``cse_safe`` is and-ed with what it implies."""
    is_random: bool = False
    nondeterministic: bool = False
    mutates: tuple = ()            # "*": anything the call can reach
    is_view: bool = False
    aliases_args: bool = False
    is_pointwise: bool = False
    is_reduction: bool = False
    data_dependent_output: bool = False
    dynamic_output_shape: bool = False
    side_effects: bool = False
    grad_mode_switch: bool = False
    cse_safe: bool = True

    def __post_init__(self):
        object.__setattr__(self, "nondeterministic", self.nondeterministic or self.is_random)
        object.__setattr__(self, "aliases_args", self.aliases_args or self.is_view or bool(self.mutates))
        object.__setattr__(self, "cse_safe", self.cse_safe and self.pure and not self.nondeterministic
                           and not self.grad_mode_switch)

    @property
    def pure(self) -> bool:
        """An unused result may be deleted."""
        return not (self.is_random or self.mutates or self.side_effects)


def combine(rows) -> OpProperties:
    """The facts that hold whichever of `rows` runs (a function choosing among overloads)."""
    rows = list(rows)
    return OpProperties(
        is_random=any(r.is_random for r in rows), nondeterministic=any(r.nondeterministic for r in rows),
        mutates=tuple(dict.fromkeys(m for r in rows for m in r.mutates)), is_view=any(r.is_view for r in rows),
        aliases_args=any(r.aliases_args for r in rows), is_pointwise=all(r.is_pointwise for r in rows),
        is_reduction=all(r.is_reduction for r in rows),
        data_dependent_output=any(r.data_dependent_output for r in rows),
        dynamic_output_shape=any(r.dynamic_output_shape for r in rows), side_effects=any(r.side_effects for r in rows),
        grad_mode_switch=any(r.grad_mode_switch for r in rows), cse_safe=all(r.cse_safe for r in rows))


PURE = OpProperties()
UNKNOWN = OpProperties(aliases_args=True)                   # Python code: pure, but may return an argument
RANDOM = OpProperties(is_random=True, aliases_args=True)
READS_STATE = OpProperties(nondeterministic=True)           # global state that may change between runs
GLOBAL_STATE = OpProperties(side_effects=True)              # changes process-wide state or does I/O
GRAD_SWITCH = OpProperties(side_effects=True, grad_mode_switch=True)
WRITES_FIRST = OpProperties(mutates=(0,))
FRESH_CONTAINER = OpProperties(cse_safe=False)              # a new list/dict: two calls, two objects

# rows (schema name.overload) PyTorch tags pointwise / reduction
POINTWISE = frozenset("""
    abs acos acosh add.Tensor addcdiv addcmul angle asin asinh atan atan2 atanh bitwise_and.Tensor
    bitwise_left_shift.Tensor bitwise_not bitwise_or.Tensor bitwise_right_shift.Tensor bitwise_xor.Tensor ceil
    celu clamp clamp.Tensor clamp_max clamp_max.Tensor clamp_min clamp_min.Tensor clip clip.Tensor clone
    conj_physical copysign.Tensor cos cosh deg2rad div.Tensor div.Tensor_mode elu eq.Tensor equal erf erfc erfinv
    exp exp2 expm1 float_power.Scalar float_power.Tensor_Tensor float_power_.Tensor floor fmax fmin fmod.Tensor
    frac ge.Tensor gelu gt.Tensor hardshrink hardsigmoid hardtanh hypot isfinite isinf isnan isneginf isposinf
    le.Tensor leaky_relu lerp.Scalar lerp.Tensor log log10 log1p log2 logaddexp logaddexp2 logical_and
    logical_not logical_or logical_xor lt.Tensor masked_fill.Scalar max.other maximum min.other minimum mish
    mul.Tensor nan_to_num ne.Tensor neg positive pow.Scalar pow.Tensor_Tensor rad2deg reciprocal relu relu6
    remainder.Scalar_Tensor remainder.Tensor round round.decimals rsqrt selu sgn sigmoid sign signbit silu sin
    sinh softplus softshrink sqrt square sub.Tensor tan tanh threshold true_divide.Tensor trunc where.self
    xlogy.Scalar_Self xlogy.Tensor
    digamma frexp.Tensor gcd heaviside i0 igamma igammac lcm ldexp.Tensor lgamma logit mvlgamma nextafter
    polygamma sinc""".split())
REDUCTION = frozenset("""
    all all.dim all.dims amax amin aminmax any any.dim any.dims argmax argmin count_nonzero
    count_nonzero.dim_IntList linalg_vector_norm logsumexp max max.dim mean mean.dim min min.dim nansum
    norm.Scalar norm.ScalarOpt_dim norm.ScalarOpt_dim_dtype norm.ScalarOpt_dtype prod prod.dim_int std
    std.correction std.dim std_mean std_mean.correction std_mean.dim sum sum.dim_IntList var var.correction
    var.dim var_mean var_mean.correction var_mean.dim""".split())
# rows PyTorch tags data_dependent_output / dynamic_output_shape (torch.Tag), which fake tensors
# refuse (ember/_functorch/fake_tensor.py); ``repeat_interleave.self_Tensor`` and ``nonzero_numpy``
# are ember rows whose PyTorch counterparts are composites of tagged ops. The shape of some of the
# dynamic ones is known from their arguments (a size given, no boolean index): fake_tensor.py says when.
DATA_DEPENDENT_OUTPUT = frozenset({"equal", "allclose"})
DYNAMIC_OUTPUT_SHAPE = frozenset("""
    _unique2 unique_consecutive unique_dim repeat_interleave.Tensor repeat_interleave.self_Tensor index.Tensor
    masked_select nonzero nonzero_numpy argwhere one_hot bincount""".split())
# ops whose result is uninitialised memory: deterministic in effect, not in value
UNINITIALIZED = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided"})

_BY_OP: dict = {}   # operator name -> OpProperties, filled on first use


def of_op(op: OperatorHandle) -> OpProperties:
    """The facts of one operator overload, from its schema and its table row."""
    props = _BY_OP.get(op.name)
    if props is None:
        schema = op.schema
        row = getattr(op, "row", None)
        row_name = row.schema.split("(", 1)[0] if row is not None else None
        props = _BY_OP[op.name] = OpProperties(
            is_random=bool(getattr(op, "nondeterministic", False)),
            nondeterministic=schema.name.rstrip("_") in UNINITIALIZED,
            mutates=tuple(a.name for a in schema.arguments if a.is_write),
            is_view=any(r.alias is not None and not r.is_write for r in schema.returns),
            is_pointwise=row_name in POINTWISE, is_reduction=row_name in REDUCTION,
            data_dependent_output=row_name in DATA_DEPENDENT_OUTPUT,
            dynamic_output_shape=row_name in DYNAMIC_OUTPUT_SHAPE)
    return props


def of(target) -> OpProperties:
    """The facts of a call_function target: an operator, a binding or resolver (through its
    operators), a prim op (its row), a declared function, ember's Python-level functions, or
    Python's ``operator`` / ``builtins`` / ``math`` / random functions."""
    if isinstance(target, OperatorHandle):
        return of_op(target)
    row = getattr(target, "properties", None)
    if isinstance(row, OpProperties):                  # prim ops
        return row
    declared = _lookup(_declared(), target)
    if declared is not None:
        return declared
    ops = registry.ops_of(target)
    if ops:
        return of_op(ops[0]) if len(ops) == 1 else combine(of_op(op) for op in ops)
    if isinstance(getattr(target, "_overloads", None), dict):      # ember.ops.aten.add: any overload
        return combine(of_op(op) for op in target._overloads.values())
    name = registry.public_name(target)
    if name is not None:
        return _python_level(name)
    module = getattr(target, "__module__", None) or ""
    if module in ("random", "secrets") or module.startswith("numpy.random"):
        return RANDOM                                  # Python's and NumPy's own generators
    return PURE if module in ("math", "_operator", "operator") else UNKNOWN


def _lookup(table: dict, key):
    try:
        return table.get(key)
    except TypeError:      # an unhashable callable object: not in any table
        return None


def _python_level(name: str) -> OpProperties:
    props = PYTHON_FUNCTIONS.get(name)
    if props is not None:
        return props
    short = name.rsplit(".", 1)[1]
    if short.endswith("_") and not short.endswith("__"):      # PyTorch's convention: in place on `input`
        return dataclasses.replace(PYTHON_FUNCTIONS.get(name[:-1], UNKNOWN), mutates=(0,))
    return UNKNOWN


def of_method(name: str, receiver: str | None) -> OpProperties:
    """The facts of ``receiver.<name>(...)`` where receiver is "tensor", "other" (a list, dict, ...)
    or None (unknown: whatever either would do)."""
    if receiver is None:
        return combine((of_method(name, "tensor"), of_method(name, "other")))
    if name in MUTATING_DUNDERS:
        return WRITES_FIRST
    if receiver == "other":
        if name in CONTAINER_MUTATORS:
            return WRITES_FIRST
        return UNKNOWN
    fn = registry.METHODS.get(name)
    if fn is not None and callable(fn):
        ops = registry.ops_of(fn)
        if ops:
            return of_op(ops[0]) if len(ops) == 1 else combine(of_op(op) for op in ops)
    props = TENSOR_METHODS.get(name)
    if props is not None:
        return props
    if name.endswith("_") and not name.endswith("__"):
        return WRITES_FIRST
    return UNKNOWN


_DECLARED: dict = {
    operator.setitem: WRITES_FIRST, operator.delitem: WRITES_FIRST, builtins.setattr: WRITES_FIRST,
    builtins.delattr: WRITES_FIRST,
    **{getattr(operator, "i" + op): WRITES_FIRST for op in ("add", "sub", "mul", "truediv", "floordiv", "mod",
                                                             "pow", "and", "or", "xor", "lshift", "rshift",
                                                             "matmul", "concat")},
    operator.getitem: UNKNOWN,                                    # a view of a tensor, an element of a list
    builtins.print: GLOBAL_STATE, builtins.input: GLOBAL_STATE, builtins.exec: GLOBAL_STATE,
    builtins.eval: GLOBAL_STATE, builtins.open: GLOBAL_STATE,
    builtins.list: FRESH_CONTAINER, builtins.dict: FRESH_CONTAINER, builtins.set: FRESH_CONTAINER,
    builtins.sorted: FRESH_CONTAINER, builtins.iter: FRESH_CONTAINER, builtins.next: WRITES_FIRST,
}


def _declared() -> dict:
    if not _DECLARED_GRAD_MODE:     # autograd sits above the op table: its switches join on first use
        from ..autograd import grad_mode
        for fn in (grad_mode._set_grad_enabled, grad_mode._enter_inference_mode, grad_mode._exit_inference_mode):
            _DECLARED.setdefault(fn, GRAD_SWITCH)
        _DECLARED_GRAD_MODE.append(True)
    return _DECLARED


_DECLARED_GRAD_MODE: list = []


def declare(fn, props: OpProperties) -> None:
    """Record the facts of a function the table cannot know (``ember.fx.has_side_effect`` uses it)."""
    _declared()[fn] = props


# ember's Python-level functions (no schema), by public name; the rest are UNKNOWN, and names
# ending in "_" write their first argument (with the facts of the name without "_")
PYTHON_FUNCTIONS = {
    **{f"ember.{n}": RANDOM for n in ("rand", "randn", "rrelu")},
    **{f"ember.nn.functional.{n}": RANDOM for n in ("rrelu", "dropout", "alpha_dropout", "feature_alpha_dropout",
                                                   "dropout1d", "dropout2d", "dropout3d",
                                                   "scaled_dot_product_attention")},
    **{f"ember.{n}": GLOBAL_STATE for n in ("manual_seed", "seed", "set_rng_state", "set_printoptions",
                                            "set_default_dtype", "save", "load")},
    **{f"ember.{n}": READS_STATE for n in ("initial_seed", "get_rng_state", "get_printoptions", "get_default_dtype",
                                           "is_grad_enabled", "is_inference_mode_enabled")},
    # always a new tensor, never an argument (no `inplace=` flag): the jit fuser may return them fused
    **{f"ember.nn.functional.{n}": PURE for n in ("layer_norm", "softmax", "log_softmax", "sigmoid", "tanh",
                                                 "embedding")},
    "ember.where": PURE, "ember.cat": PURE,
}
# methods of Tensor that are not operators
TENSOR_METHODS = {
    "backward": GLOBAL_STATE, "register_hook": GLOBAL_STATE, "retain_grad": GLOBAL_STATE,
    "requires_grad_": WRITES_FIRST, "detach_": WRITES_FIRST, "numpy": UNKNOWN, "data_ptr": READS_STATE,
}
# methods that change their receiver, whatever it is
MUTATING_DUNDERS = frozenset({"__setitem__", "__delitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
                              "__ifloordiv__", "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__",
                              "__ilshift__", "__irshift__", "__imatmul__"})
# list / dict / set methods that change their receiver
CONTAINER_MUTATORS = frozenset({"append", "pop", "insert", "extend", "clear", "remove", "sort", "reverse",
                                "update", "setdefault", "popitem"})
