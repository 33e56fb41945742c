"""Every operator of the table under FakeTensorMode, against eager ember.

For each op a call is synthesised from its schema (a few input shapes are tried until eager ember
accepts one). The same call on fakes of the same inputs must either give results whose shape,
significant strides, dtype and device equal eager's, or refuse by raising NotImplementedError or a
DataDependentOutputException that names the op — never another error, never other metadata.
`test_coverage_report` prints the fraction (run pytest with -s to see it) and holds it above a floor.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember._core.dispatch import DispatchKey
from ember._functorch.fake_tensor import FakeTensorMode, DataDependentOutputException, is_fake
from ember.ops import registry

from node_vals import significant_strides

SHAPES = [(3, 4), (2, 3, 4), (4,), (2, 3, 4, 4), (4, 4), (2, 3, 4, 4, 4), ()]
INT_NAMES = ("index", "indices", "target", "offsets", "repeats", "bins", "counts", "tensor_indices_or_sections")


def _tensor(name, shape, rng, dtype):
    if name == "mask" or name == "condition":
        return ember.from_numpy(np.asarray(rng.random(shape) > 0.5))
    if any(k in name for k in INT_NAMES):
        return ember.from_numpy(np.asarray(rng.integers(0, 2, size=shape if name != "repeats" else shape[-1:]), "int64"))
    if dtype == "int64":
        return ember.from_numpy(np.asarray(rng.integers(0, 4, size=shape), "int64"))
    return ember.from_numpy(np.asarray(rng.uniform(0.25, 0.75, size=shape), "float32"))


def _value(arg, shape, rng, dtype):
    t, name = arg.type, arg.name
    if t == "Tensor":
        if arg.is_list:
            return [_tensor(name if arg.elem_optional else "", shape, rng, dtype)
                    for _ in range(1 if arg.elem_optional else 2)]
        return _tensor(name, shape, rng, dtype)
    if t in ("int", "SymInt"):
        if arg.is_list:
            if name in ("size", "shape", "sizes"):
                return list(shape) if shape else [1]
            return [0] if "dim" in name else [2] * (arg.list_size or 2)
        return {"dim": 0, "dim0": 0, "dim1": 1, "num_classes": 3, "n": 3, "steps": 3, "groups": 1}.get(name, 2)
    if t == "float":
        return [1.0] * (arg.list_size or 1) if arg.is_list else 0.5
    if t == "Scalar":
        return 2
    if t == "bool":
        return False
    if t == "ScalarType":
        return ember.float32
    if t == "str":
        return {"reduce": "sum", "approximate": "none", "padding_mode": "zeros", "mode": "constant",
                "rounding_mode": "floor", "side": "left", "ord": "fro"}.get(name, "sum")
    return None


def _call_args(op, shape, seed, dtype):
    """(positional, keyword) arguments for `op` on inputs of `shape`; arguments with defaults are left out."""
    rng = np.random.default_rng(seed)
    pos, kw, defaulted = [], {}, False
    for i, arg in enumerate(op.schema.arguments):
        if (arg.has_default and not arg.is_write) or (defaulted and not arg.kwarg_only):
            defaulted = defaulted or not arg.kwarg_only   # later positional ones take their defaults too
            continue
        value = _value(arg, shape, rng, dtype)
        if arg.kwarg_only:
            kw["input" if arg.name == "self" and i == 0 else arg.name] = value
        else:
            pos.append(value)
    return pos, kw


def _flat(value):
    if isinstance(value, ember.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat(v)]
    return []


def _meta(t):
    return tuple(t.shape), significant_strides(t), t.dtype, t.device.type


def _map_tensors(value, fn):
    if isinstance(value, ember.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map_tensors(v, fn) for v in value)
    return value


def _try(op):
    """("no sample" | "ok" | "refused" | "error: ..." | "mismatch: ...", detail)"""
    for shape, dtype in [(s, d) for d in ("float32", "int64") for s in SHAPES]:
        pos, kw = _call_args(op, shape, 0, dtype)
        try:
            eager = op(*pos, **kw)
        except Exception:  # noqa: BLE001 - a synthesised call eager rejects: try the next shape
            continue
        if not _flat(eager) and not isinstance(eager, (bool, int, float)):
            return "no sample", "no tensor result"
        pos, kw = _call_args(op, shape, 0, dtype)      # fresh inputs (in-place ops wrote the first ones)
        mode = FakeTensorMode()
        pos, kw = _map_tensors(pos, mode.from_tensor), {k: _map_tensors(v, mode.from_tensor) for k, v in kw.items()}
        try:
            with mode:
                fake = op(*pos, **kw)
        except (NotImplementedError, DataDependentOutputException) as e:
            # named: the op, or the value read inside it (tensor_split reads its split points, as in torch)
            named = op.name.split("::")[1].split(".")[0] in str(e) or str(e).startswith("aten::_local_scalar_dense")
            return ("refused", str(e)) if named else ("error: refusal does not name the op", str(e))
        except Exception as e:  # noqa: BLE001 - reported, and the test fails on it
            return f"error: {type(e).__name__}", str(e)
        ours, theirs = _flat(fake), _flat(eager)
        if not all(is_fake(t) for t in ours):
            return "mismatch: a result is not fake", repr(fake)
        if [_meta(t) for t in ours] != [_meta(t) for t in theirs]:
            return "mismatch", f"{[_meta(t) for t in ours]} vs eager {[_meta(t) for t in theirs]}"
        return "ok", ""
    return "no sample", ""


OPS = sorted(registry.OPERATORS.values(), key=lambda op: op.name)
# eager ember's CPU kernels lay these results out differently from their Meta kernels (which follow
# PyTorch's TensorIterator); fake results follow the Meta kernels: see tests/ops/test_meta_pointwise_strides.py
STRIDE_DIFFERENCES = set()


@pytest.fixture(scope="module")
def results():
    ember.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # out= resizes of the synthesised calls
        return {op.name: _try(op) for op in OPS}


def test_no_op_gives_an_error_or_other_metadata_under_fake_mode(results):
    bad = {name: r for name, r in results.items()
           if r[0].startswith(("error", "mismatch")) and name not in STRIDE_DIFFERENCES}
    assert not bad, "\n".join(f"{k}: {v}" for k, v in sorted(bad.items()))


def test_coverage_report(results):
    counts = {}
    for kind, _ in results.values():
        counts[kind] = counts.get(kind, 0) + 1
    tried = len(results) - counts.get("no sample", 0)
    print(f"\nfake mode over {len(results)} operators: {counts}; "
          f"{counts.get('ok', 0)}/{tried} of those with a synthesised call run with eager's metadata")
    assert counts.get("ok", 0) >= 0.9 * tried and tried >= 0.6 * len(results)


def test_every_op_has_a_meta_kernel_or_a_composite():
    assert all(DispatchKey.Meta in op.kernels or op.composite is not None for op in OPS)
