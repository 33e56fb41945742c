"""Memory overlap checks of in-place and out= operators, as ATen makes them (MemoryOverlap.cpp).

A write is refused, before anything is written, when
  * the written tensor has *internal overlap*: several of its elements are one memory location
    (a dim of stride 0 and size > 1, as after ``expand``) — writing would keep only one of the
    values meant for them;
  * an input and the written tensor *partially overlap*: both are dense (non-overlapping) and
    their memory ranges intersect without being the same view (``x[1:].add_(x[:-1])``,
    ``x.t().add_(x)``) — the result would depend on the order elements are written in.
    Some ops (cat, index_add_, scatter_ ...) refuse any overlap, the same view included.
Overlap that is costly to decide (non-dense views such as ``x[::2]`` vs ``x[1::2]``) is allowed,
as in PyTorch.

Which op checks what is PyTorch's choice, op by op; `RULES` records it (the default for the
in-place and out= overloads derived from a row is TensorIterator's: internal overlap of the
written tensor and partial overlap with every input). The generated binding calls the op's
checker before dispatching, so every backend and the fast path see it; ops without writes pay
nothing.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._core.storage import MetaArray, is_non_overlapping_and_dense

INTERNAL_MESSAGE = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                    "location. Please clone() the tensor before performing the operation.")
PARTIAL_MESSAGE = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                   "single memory location. Please clone() the tensor before performing the operation.")

NO, FULL, PARTIAL, TOO_HARD = "no", "full", "partial", "too_hard"
_ndarray = np.ndarray


def has_internal_overlap(arr) -> bool:
    """Some dim of size > 1 has stride 0 (ATen's MemOverlap::Yes; other cases are too hard).
    Meta tensors are not checked (PyTorch's meta kernels write nothing and do not check)."""
    strides = arr.strides
    if 0 not in strides or not arr.size or arr.__class__ is MetaArray:  # (NumPy: empty arrays have zero strides)
        return False
    return any(st == 0 and n > 1 for st, n in zip(strides, arr.shape))


def _dense(arr) -> bool:
    flags = arr.flags
    if flags.c_contiguous or flags.f_contiguous:
        return True
    item = arr.itemsize
    return all(s % item == 0 for s in arr.strides) and is_non_overlapping_and_dense(
        arr.shape, tuple(s // item for s in arr.strides))


def _address(arr):
    """The address of `arr`'s first element: NumPy's, or CuPy's device pointer; None for arrays
    without memory (meta)."""
    if arr.__class__ is _ndarray:
        return arr.__array_interface__["data"][0]
    return getattr(getattr(arr, "data", None), "ptr", None)


def overlap_status(a, b) -> str:
    """How the memory of arrays `a` and `b` overlaps (ATen's get_overlap_status)."""
    if a is b:
        return FULL
    if not a.size or not b.size or a.__class__ is MetaArray or b.__class__ is MetaArray:
        return NO  # meta arrays have no memory
    cls = a.__class__
    if cls is _ndarray and b.__class__ is _ndarray and a.base is None and b.base is None:
        return NO  # two NumPy arrays that own their memory (CuPy views made from a pointer have no base)
    if cls is not _ndarray and cls is b.__class__ and getattr(a, "_c_contiguous", False) and b._c_contiguous:
        # two C-contiguous CuPy arrays (a tiny CUDA add_): their byte ranges decide, no flags objects
        a0, b0 = a.data.ptr, b.data.ptr
        a1, b1 = a0 + a.nbytes, b0 + b.nbytes
        if a0 == b0 and a1 == b1:
            return FULL if a.strides == b.strides and a.itemsize == b.itemsize else PARTIAL
        return PARTIAL if a0 < b1 and b0 < a1 else NO
    # (memory addresses, not storage identity: NumPy arrays wrapped by from_numpy share
    # memory without sharing a base array)
    a0, b0 = _address(a), _address(b)
    if a0 is None or b0 is None or a.__class__ is not b.__class__:
        return NO  # different devices
    if not _dense(a) or not _dense(b):
        return TOO_HARD
    a1, b1 = a0 + a.nbytes, b0 + b.nbytes
    if a0 == b0 and a1 == b1:
        return FULL if a.strides == b.strides and a.itemsize == b.itemsize else PARTIAL
    return PARTIAL if a0 < b1 and b0 < a1 else NO


def assert_no_internal_overlap(op: str, t) -> None:
    if has_internal_overlap(t._data):
        raise RuntimeError(f"{op}(): {INTERNAL_MESSAGE}")


def assert_no_overlap(op: str, written, t, *, allow_full=False) -> None:
    """`t` must not share memory with `written` (allow_full: except as the very same view)."""
    status = overlap_status(written._data, t._data)
    if status == PARTIAL or (status == FULL and not allow_full):
        raise RuntimeError(f"{op}(): {PARTIAL_MESSAGE}")


# ---------------------------------------------------------------------------------------
# what each op checks
# ---------------------------------------------------------------------------------------
ALL = "*"  # every tensor argument that is not written


@dataclasses.dataclass(frozen=True)
class Rule:
    internal: bool = False      # refuse a written tensor with internal overlap
    partial: object = ()        # inputs (names or ALL) that must not partially overlap it
    disjoint: object = ()       # inputs that must not overlap it at all
    late: bool = False          # checked after the op validated its arguments (PyTorch's order:
    # index_add_'s bad index is an IndexError, not an overlap): by the derived in-place / out=
    # kernels between computing and writing, and by own kernels through `late_check`
    resize_first: bool = True   # an out= tensor of the wrong shape is resized (which drops its
    # expansion) before its internal overlap is checked; TensorIterator checks first


TENSOR_ITERATOR = Rule(internal=True, partial=ALL, resize_first=False)
NONE = Rule()
_GATHER = Rule(internal=True, disjoint=("self",), partial=("index",))
_INDEXED_WRITE = Rule(internal=True, disjoint=("index", "source", "src"), late=True)

# by the op's name (conj_physical_), else its name without the trailing "_" (add_.Tensor,
# add.out -> "add")
RULES = {
    # reductions and tril/triu never check; threshold turns the check off (its backward reuses it)
    **dict.fromkeys(("sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "argmax", "argmin", "logsumexp",
                     "tril", "triu", "threshold", "dot", "vdot"), NONE),
    "conj_physical_": NONE,  # (conj_physical.out checks)
    # matrix products: the output only; PyTorch checks some and not others
    **dict.fromkeys(("mm", "addmm", "addbmm", "addr", "matmul", "inner", "nonzero"), Rule(internal=True)),
    **dict.fromkeys(("bmm", "baddbmm", "addmv", "mv"), NONE),
    **dict.fromkeys(("cat", "stack"), Rule(internal=True, disjoint=ALL, late=True)),
    **dict.fromkeys(("kron", "cross"), Rule(internal=True, disjoint=ALL)),
    "index_select": Rule(internal=True, disjoint=("self", "index"), late=True),
    "masked_select": Rule(internal=True, disjoint=("self", "mask"), late=True),
    "take": Rule(internal=True, disjoint=("self", "index"), late=True),
    "gather": _GATHER, "take_along_dim": _GATHER,
    # in-place rows of their own
    **dict.fromkeys(("copy", "abs", "float_power"), TENSOR_ITERATOR),
    **dict.fromkeys(("uniform", "normal", "bernoulli", "exponential", "geometric", "log_normal", "cauchy", "random"),
                    TENSOR_ITERATOR),
    **dict.fromkeys(("index_add", "scatter", "scatter_add", "scatter_reduce", "put"), _INDEXED_WRITE),
    "index_copy": dataclasses.replace(_INDEXED_WRITE, late=False),
    "masked_scatter": Rule(internal=True),
    "log_sigmoid": Rule(internal=True),
    "index_put": Rule(disjoint=("values",)),  # expanded self: PyTorch only warns (deprecated)
    **dict.fromkeys(("index_fill", "masked_fill", "fill", "zero"), NONE),  # likewise
}


def rule_for(schema, derived: bool) -> Rule:
    """The checks of an op with written arguments: its RULES entry, else TensorIterator's for
    derived in-place / out= overloads and none for rows of their own (fill_, masked_fill_ ...)."""
    rule = RULES.get(schema.name) or RULES.get(schema.name.rstrip("_"))
    return rule if rule is not None else TENSOR_ITERATOR if derived else NONE


def checker(schema, derived: bool, late=False):
    """A function of the op's arguments (schema order) that raises on overlap, or None: the
    binding's (late=False) or the kernel's (late=True), as the op's rule says.

    An out= tensor's internal overlap is checked by the out= kernel once the result's shape is
    known when the rule resizes first (``registry._out_of``). The function is generated for
    the op's arguments (it runs on every in-place call: about 0.2 us when nothing overlaps)."""
    rule = rule_for(schema, derived)
    if rule.late != late:
        return None
    if schema.is_out and rule.resize_first:
        rule = dataclasses.replace(rule, internal=False)
    if not (rule.internal or rule.partial or rule.disjoint):
        return None
    args = schema.arguments
    written = [i for i, a in enumerate(args) if a.is_write and a.type == "Tensor"]
    if not written:
        return None
    lines = []  # the body, one statement per entry (indented relative to the body)
    for w in written:
        pad = ""
        lines.append(f"data = a{w}._data" if not args[w].optional else f"data = None if a{w} is None else a{w}._data")
        if args[w].optional:
            lines.append("if data is not None:")
            pad = "    "
        if rule.internal:
            lines.append(f"{pad}if 0 in data.strides: _internal(data)")
        for i, a in enumerate(args):
            if a.type != "Tensor" or a.is_write:
                continue
            for names, allow_full in ((rule.disjoint, False), (rule.partial, True)):
                if names == ALL or a.name in names:
                    # inline: the same array (fine unless disjoint) and two NumPy arrays that own
                    # their memory (which never overlap) are decided without a call (CuPy views
                    # made from a pointer have no base: always checked)
                    same = "d is not data and" if allow_full else "d is data or"
                    test = (f"if {same} (d.base is not None or data.base is not None or d.__class__ is not _ndarray): "
                            f"_check(data, d, {allow_full})")
                    if a.is_list:
                        lines += [f"{pad}for t in a{i} or ():", f"{pad}    if t is not None:",
                                  f"{pad}        d = t._data", f"{pad}        {test}"]
                    else:
                        lines += [f"{pad}t = a{i}", f"{pad}if t is not None and t.__class__ not in _NUMBERS:",
                                  f"{pad}    d = t._data", f"{pad}    {test}"]
                    break
    params = ", ".join(f"a{i}" for i in range(len(args)))
    src = f"def check({params}):\n    " + "\n    ".join(lines) + "\n"
    op = schema.name

    def _internal(data):
        if has_internal_overlap(data):
            raise RuntimeError(f"{op}(): {INTERNAL_MESSAGE}")

    def _check(data, d, allow_full):
        status = overlap_status(data, d)
        if status == PARTIAL or (status == FULL and not allow_full):
            raise RuntimeError(f"{op}(): {PARTIAL_MESSAGE}")
    namespace = {"_internal": _internal, "_check": _check, "_NUMBERS": _NUMBERS, "_ndarray": _ndarray}
    from .codegen import compile_function
    return compile_function(src, "check", f"<overlap check {op}>", namespace)


_NUMBERS = frozenset((int, float, bool, complex))


def late_check(op: str, written, **inputs) -> None:
    """For kernels of their own whose rule is late: check `written` against the named inputs
    after validating the arguments (a no-op for ops checked by their binding)."""
    op = op.split(".")[0]  # scatter_.src -> scatter_
    rule = RULES.get(op) or RULES.get(op.rstrip("_"))
    if rule is None or not rule.late:
        return
    if rule.internal:
        assert_no_internal_overlap(op, written)
    for name, t in inputs.items():
        if rule.disjoint == ALL or name in rule.disjoint:
            assert_no_overlap(op, written, t)
        elif rule.partial == ALL or name in rule.partial:
            assert_no_overlap(op, written, t, allow_full=True)
