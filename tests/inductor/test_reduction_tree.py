"""How the C kernels finish a row reduction (codegen_reduction): the lanes of a sum/prod/any/all or
integer max/min folded as a tree (`_lane_tree`), and float max/min as one simd loop with a NaN flag.
Against eager ember: every lane must reach the result (one marked element per lane position), the
tree's order must not lose a sum's precision, and max/min keep eager's NaN, infinity and empty-row
answers on rows around the lane and vector widths."""
import numpy as np
import pytest

import ember
from ember._inductor import codegen_c  # noqa: F401  (imports codegen_reduction in its order)
from ember._inductor import codegen_reduction
from test_lowering import check_many

DTYPES = ["float32", "float64", "int64", "int32", "int16", "int8", "bool"]


def _lanes(dtype):
    return codegen_reduction.lanes_of({"float32": "float", "float64": "double", "bool": "_Bool"}
                                      .get(dtype, f"{dtype}_t"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_lane_reaches_the_result(dtype):
    """Row i holds one marked value at position i of the first block (lane i) and zeros elsewhere:
    a lane the tree dropped or counted twice changes that row's sum, max, any, ..."""
    lanes = _lanes(dtype)
    n = 2 * lanes + 3                                    # two whole blocks and a tail
    base = np.zeros((lanes, n), dtype=np.float64)
    base[np.arange(lanes), np.arange(lanes)] = 5
    base[np.arange(lanes), lanes + (np.arange(lanes) * 7) % lanes] = 2    # the second block, elsewhere
    x = ember.from_numpy(base.astype(dtype))
    fns = [("any", lambda t: ember.any(t, 1)), ("all", lambda t: ember.all(t == 0, 1))]
    if dtype != "bool":
        fns += [("sum", lambda t: t.sum(1)), ("amax", lambda t: t.amax(1)), ("amin", lambda t: (-t).amin(1)),
                ("prod", lambda t: (t + 1).prod(1))]
    check_many(fns, x)


def test_tree_sum_is_as_precise_as_eager():
    """Values whose float32 running sum loses bits one way round: the compiled row sums stay within
    eager's tolerance of a float64 truth."""
    rng = np.random.default_rng(4)
    base = (rng.standard_normal((6, 4097)) * np.logspace(0, 6, 4097)).astype(np.float32)
    base[1] = np.float32(0.1)
    check_many([("sum", lambda t: t.sum(1)), ("mean", lambda t: t.mean(1))], ember.from_numpy(base))
    check_many([("layer_norm", lambda t: ember.nn.functional.layer_norm(t, (4097,)))], ember.from_numpy(base[2:]))


@pytest.mark.parametrize("n", [1, 15, 16, 17, 64, 127, 128, 1024, 1031])
def test_float_max_min_special_rows(n):
    """Rows of -inf only (a fully masked row), +inf among finite values, NaN first, NaN last, all NaN,
    signed zeros only, and a row whose maximum is its last element."""
    rows = np.random.default_rng(n).uniform(-3, 3, (8, n)).astype(np.float32)
    rows[0] = -np.inf
    rows[1, n // 2] = np.inf
    rows[2, 0] = np.nan
    rows[3, -1] = np.nan
    rows[4] = np.nan
    rows[5] = np.where(np.arange(n) % 2, 0.0, -0.0)
    rows[6, -1] = 100
    fns = [("amax", lambda t: t.amax(1)), ("amin", lambda t: t.amin(1)), ("max", lambda t: t.max(1).values),
           ("softmax", lambda t: ember.softmax(t, 1)), ("logsumexp", lambda t: ember.logsumexp(t, 1))]
    for dtype in ("float32", "float64"):
        check_many(fns, ember.from_numpy(rows.astype(dtype)))
        check_many(fns[:2], ember.from_numpy(np.ascontiguousarray(rows.T).astype(dtype)).t())   # strided rows


def test_float_max_is_one_simd_loop_with_its_nan_flag(monkeypatch):
    """The generated scalar C (the vector emitter off: test_codegen_vec.py covers its max): a float
    amax is a single `reduction(max:)` loop that also ors its NaN flag, written as a C conditional
    GCC turns into vmaxps (sel_f's bit operations cost a compare and a blend); the lanes' tree is
    used by sums."""
    from ember._inductor import codegen_c_vec, codegen_source
    monkeypatch.setattr(codegen_c_vec, "lanes", lambda: 0)
    _, src = codegen_source(lambda t: (t.amax(1), t.sum(1)), [("cpu", ember.float32, (4, 1024))])
    loop = src.split("reduction(max:")[1].split("}")[0]
    assert "_nan |= (" in loop and " ? " in loop and "sel_f(" not in loop
    assert "_v[0];" in src                                          # the sum's lanes end in the tree
    x = ember.from_numpy(np.random.default_rng(0).standard_normal((4, 1024)).astype(np.float32))
    check_many([("amax", lambda t: t.amax(1)), ("sum", lambda t: t.sum(1))], x)
