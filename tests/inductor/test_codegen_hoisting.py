"""Loop-invariant values computed once per row (codegen_c.hoist_invariants): the rule on C lines, and
compiled programs whose inner loops read row values, masked values, accumulators and zero-trip loops,
checked against eager."""
import numpy as np
import pytest

import ember
from ember._inductor.codegen_c import hoist_invariants

from test_lowering import check, check_many

F = ember.nn.functional


# -- the rule on C lines ---------------------------------------------------------------------------

def test_row_values_move_and_per_element_values_stay():
    lines = ["float t0 = arg0[256*i1 + i2];",
             "float t1 = buf1[i1];",
             "float t2 = (1.0f / sqrtf(t1));",
             "float t3 = (t0 * t2);",
             "buf4[256*i1 + i2] = t3;"]
    hoisted, rest = hoist_invariants(lines, [("i2", 256)])
    assert hoisted == lines[1:3]
    assert rest == [lines[0], lines[3], lines[4]]


def test_a_masked_result_and_its_block_stay_in_the_loop():
    # masked(): the result is declared with its default, then assigned in a block that may not run
    lines = ["_Bool t0 = (i1 < 4);",
             "float t1 = 0.0f;",
             "if (t0) {",
             "    float t2 = arg0[i1];",
             "    t1 = t2;",
             "}",
             "float t3 = (t1 + 1.0f);",
             "out[i2] = t3;"]
    hoisted, rest = hoist_invariants(lines, [("i2", 8)])
    # t0 reads only the outer index: it moves; t1 is assigned inside the block: it and t3 stay
    assert hoisted == ["_Bool t0 = (i1 < 4);"]
    assert rest == lines[1:]


def test_accumulators_and_their_readers_stay():
    lines = ["float t0 = 0;", "t0 += arg0[i2];", "float t1 = (t0 * 2.0f);", "out[i1] = t1;"]
    hoisted, rest = hoist_invariants(lines, [("i2", 8)])
    assert hoisted == [] and rest == lines


def test_nothing_moves_out_of_a_loop_that_may_not_run():
    lines = ["float t0 = buf1[i1];", "out[i2] = t0;"]
    assert hoist_invariants(lines, [("i2", 0)]) == ([], lines)
    assert hoist_invariants(lines, []) == ([], lines)


def test_a_value_that_reads_a_varying_value_stays_even_if_declared_later():
    lines = ["int64_t t0 = ((int64_t)(i2));", "float t1 = buf[i1];", "float t2 = (t1 + (float)t0);", "o[i2] = t2;"]
    hoisted, rest = hoist_invariants(lines, [("i2", 4)])
    assert hoisted == ["float t1 = buf[i1];"]


# -- compiled programs vs eager ---------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(7, 256), (3, 5, 33), (1, 1), (4, 1)])
def test_normalisations_over_rows_match_eager(shape):
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal(shape).astype(np.float32) * 3 + 1)
    w = ember.from_numpy(rng.standard_normal(shape[-1:]).astype(np.float32))
    b = ember.from_numpy(rng.standard_normal(shape[-1:]).astype(np.float32))
    check_many([
        ("layer_norm", lambda x, w, b: F.layer_norm(x, shape[-1:], w, b)),
        ("softmax", lambda x, w, b: F.softmax(x, -1)),
        ("centre_scale", lambda x, w, b: (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1) * w + b),
        ("row_max_shift", lambda x, w, b: ember.exp(x - x.amax(-1, keepdim=True)).sum(-1)),
    ], x, w, b)


def test_masked_row_values_in_a_broadcast_match_eager():
    # constant_pad and cat read with masks; the masks depend on the inner index, the row value not
    rng = np.random.default_rng(1)
    x = ember.from_numpy(rng.standard_normal((6, 10)).astype(np.float32))
    r = ember.from_numpy(rng.standard_normal((6, 1)).astype(np.float32))
    check_many([
        ("pad_times_row", lambda x, r: F.pad(x, (2, 3)) * r),
        ("cat_rows", lambda x, r: ember.cat([x, r.expand(6, 4), x * r], 1)),
        ("pad_the_row", lambda x, r: F.pad(r, (1, 1)) + x[:, :3]),
    ], x, r)


def test_empty_inner_dims_and_zero_rows_match_eager():
    x = ember.zeros(4, 0)
    check(lambda x: x - x.sum(-1, keepdim=True), x)
    y = ember.zeros(0, 5)
    check(lambda y: F.softmax(y, -1), y)


def test_integer_division_by_a_row_value_still_raises_like_eager():
    a = ember.tensor([[4, 6, 8], [1, 2, 3]])
    d = ember.tensor([[2], [0]])
    with pytest.raises(RuntimeError):
        a // d
    check(lambda a, d: a // d, a, d)     # eager raises: the compiled graph raises the same type


def test_the_normalising_loop_reads_the_row_values_before_it(capsys, monkeypatch):
    # the generated C: 1/sqrt(var + eps) is computed once per row, outside the element loop
    from ember._inductor import codegen_c
    sources = []
    real = codegen_c.generate_kernel

    def spy(*a, **k):
        out = real(*a, **k)
        sources.append(out[0])
        return out
    monkeypatch.setattr(codegen_c, "generate_kernel", spy)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(__import__("tempfile").mkdtemp()))
    x = ember.from_numpy(np.random.default_rng(2).standard_normal((5, 64)).astype(np.float32))
    check(lambda x: F.layer_norm(x, (64,)), x)
    src = "\n".join(sources)
    assert "sqrtf" in src
    for line_no, line in enumerate(src.splitlines()):
        if "sqrtf" in line:
            following = src.splitlines()[line_no:]
            # the element loop opens after it with no element read in between: a simd pragma, or
            # codegen_c_vec's vector loop (after the row values' broadcasts)
            opens = next(n for n, ln in enumerate(following)
                         if "#pragma omp simd" in ln or ln.strip().startswith("for ("))
            assert opens < 8 and not any("[" in ln for ln in following[:opens]), src
