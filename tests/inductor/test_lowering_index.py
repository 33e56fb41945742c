"""cat, constant padding, gather, index, index_select and embedding compiled to C (masked and
indirect loads), against eager ember: each input layout, 0-d and empty inputs, every C dtype, and
out-of-bounds indices raising eager's exception type."""
import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor.compile_fx import compile_fx
from test_lowering import DTYPES, check, check_many, layouts

F = ember.nn.functional


@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_each_layout_and_dim(dtype):
    xs = [x for _, x in layouts((4, 6), dtype)]
    fns = []
    for i in range(4):
        for j in range(4):
            fns += [(f"cat0[{i},{j}]", lambda *t, i=i, j=j: ember.cat([t[i], t[j]], 0)),
                    (f"cat1[{i},{j}]", lambda *t, i=i, j=j: ember.cat([t[i], t[j][:, :2], t[i]], -1))]
    fns += [("cat of computed", lambda *t: ember.cat([t[0] + t[1], t[2][1:3]], 0) * 2),
            ("stacked cats", lambda *t: ember.cat([ember.cat([t[0], t[1]], 1), t[3][:, :1]], 1)),
            ("cat with empty", lambda *t: ember.cat([t[0][:, :0], t[1]], 1))]
    check_many(fns, *xs)


def test_cat_mixed_dtypes_empty_and_legacy_empty():
    a, b = ember.randn(3, 2), ember.tensor([[1, 2], [3, 4]])
    fns = [("promote", lambda x, y: ember.cat([x, y], 0)), ("bool", lambda x, y: ember.cat([x > 0, y > 2], 0)),
           ("all empty", lambda x, y: ember.cat([x[:0], y[:0]], 0)),
           ("legacy empty 1-d", lambda x, y: ember.cat([x, ember.tensor([])], 0) + 1),
           ("1-d", lambda x, y: ember.cat([x[0], y[1], x[:, 1]]))]
    check_many(fns, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
def test_constant_pad_each_layout(dtype):
    xs = [x for _, x in layouts((3, 5), dtype)]
    value = True if dtype == "bool" else 7
    fns = []
    for i in range(4):
        fns += [(f"pad[{i}]", lambda *t, i=i: F.pad(t[i], (1, 2, 0, 3), value=value)),
                (f"crop[{i}]", lambda *t, i=i: F.pad(t[i], (-1, 2, 1, -2))),
                (f"last only[{i}]", lambda *t, i=i: F.pad(t[i], (2, 0))),
                (f"aten[{i}]", lambda *t, i=i: ember.ops.aten.constant_pad_nd.default(t[i], [0, 1, 1, 0], 2))]
    fns.append(("pad of computed", lambda *t: F.pad(t[0] * t[1], (1, 1)) + 1))
    check_many(fns, *xs)


def test_constant_pad_0d_like_and_empty():
    x, e = ember.randn(4), ember.randn(0, 3)
    check_many([("1-d", lambda a, b: F.pad(a, (2, 3), value=-1.5)), ("empty", lambda a, b: F.pad(b, (1, 1, 2, 0))),
                ("to empty", lambda a, b: F.pad(a, (-2, -2)))], x, e)


def _index_inputs(dtype):
    return [x for _, x in layouts((5, 4), dtype)]


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_index_select_index_each_layout(dtype):
    xs = _index_inputs(dtype)
    i1 = ember.tensor([4, 0, 2, 2, 1])
    g = ember.tensor([[0, 3], [1, 1], [3, 0], [2, 2], [0, 1]])
    xs += [i1, g, i1[::2], g.t(), ember.tensor(3), i1.to(ember.int32)]
    fns = []
    for i in range(4):
        fns += [(f"index_select0[{i}]", lambda *t, i=i: t[i].index_select(0, t[4])),
                (f"index_select1[{i}]", lambda *t, i=i: t[i].index_select(1, t[6] % 4)),
                (f"index_select 0-d[{i}]", lambda *t, i=i: t[i].index_select(0, t[8])),
                (f"gather1[{i}]", lambda *t, i=i: ember.gather(t[i], 1, t[5])),
                (f"gather0[{i}]", lambda *t, i=i: ember.gather(t[i], 0, t[7])),
                (f"index rows[{i}]", lambda *t, i=i: t[i][t[4]]),
                (f"index negative[{i}]", lambda *t, i=i: t[i][t[4] - 5]),
                (f"index cols[{i}]", lambda *t, i=i: t[i][:, t[5]]),
                (f"index pair[{i}]", lambda *t, i=i: t[i][t[4], t[6] % 4]),
                (f"index broadcast pair[{i}]", lambda *t, i=i: t[i][t[4][:2].unsqueeze(1), t[5][0]]),
                (f"index 0-d[{i}]", lambda *t, i=i: t[i][t[8]]),
                (f"index int32[{i}]", lambda *t, i=i: t[i][t[9]])]
    fns.append(("gather of computed", lambda *t: ember.gather(t[0] * 2, 1, t[5]) + t[1][t[4]][:, :2]))
    check_many(fns, *xs)


def test_index_with_separated_indices_moves_the_dims_first():
    x = ember.randn(3, 4, 5)
    a, b = ember.tensor([0, 2, -1]), ember.tensor([[1], [4]])
    check_many([("separated", lambda t, u, v: t[u, :, v]), ("adjacent", lambda t, u, v: t[:, u[:2], v]),
                ("transposed", lambda t, u, v: t.transpose(0, 2)[v, u]), ("empty", lambda t, u, v: t[u[:0]])],
               x, a, b)


@pytest.mark.parametrize("dtype", ("float32", "float64"))
def test_embedding(dtype):
    w = layouts((10, 3), dtype)
    ids = ember.tensor([[1, 9, 0], [3, 3, 7]])
    fns = [(f"embedding[{name}]", lambda *t, i=i: F.embedding(t[4], t[i])) for i, (name, _) in enumerate(w)]
    fns += [("0-d ids", lambda *t: F.embedding(t[5], t[0])), ("empty ids", lambda *t: F.embedding(t[4][:0], t[0])),
            ("computed weight", lambda *t: F.embedding(t[4], t[0] * 2).sum(-1))]
    check_many(fns, *[x for _, x in w], ids, ember.tensor(4))


BAD_INDEX = [
    ("gather", lambda x, i: ember.gather(x, 1, i.view(1, -1)[:, :2]), [[0, 1], [0, 4], [-1, 0]]),
    ("index_select", lambda x, i: x.index_select(1, i), [[0, 3], [4, 0], [-1, 0]]),
    ("index", lambda x, i: x[i], [[0, -5], [5, 0], [-6, 0]]),
    ("index cols", lambda x, i: x[:, i] * 2, [[0, -4], [4, 0], [-5, 0]]),
    ("embedding", lambda x, i: F.embedding(i, x), [[0, 4], [5, 0], [-1, 0]]),
]


@pytest.mark.parametrize("name,fn,cases", BAD_INDEX, ids=[b[0] for b in BAD_INDEX])
def test_out_of_bounds_index_raises_eagers_exception(name, fn, cases):
    check_bad_indices(fn, ember.randn(5, 4), cases)


def check_bad_indices(fn, x, cases):
    """cases[0] is a good index, the rest bad: the compiled graph raises eager's exception type for
    each bad one and still gives eager's values for the good one afterwards."""
    good, *bad = [ember.tensor(c) for c in cases]
    compiled = compile_fx(make_fx(fn)(x, good), [x, good])
    np.testing.assert_array_equal(compiled(x, good).numpy(), fn(x, good).numpy())
    for idx in bad:
        with pytest.raises(Exception) as eager:
            fn(x, idx)
        with pytest.raises(type(eager.value)):
            compiled(x, idx)
    np.testing.assert_array_equal(compiled(x, good).numpy(), fn(x, good).numpy())   # still usable


def test_indexing_reads_into_an_empty_dim_run_eagerly():
    x, i = ember.randn(0, 3), ember.tensor([0])
    check(lambda t, u: t[u[:0]] + 1, x, i)
    check(lambda t, u: t.index_select(0, u[:0]), x, i, lowered=False)


def test_where_with_broadcast_scalars_and_0d_condition():
    x, y, c = ember.randn(4, 3), ember.randn(3), ember.tensor(True)
    fns = [("scalar other", lambda a, b, k: ember.where(a > 0, a, 0.5)),
           ("scalar self", lambda a, b, k: ember.where(a > 0, -1.0, b)),
           ("both scalars", lambda a, b, k: ember.where(a > b, 1.0, 0.0)),
           ("0-d cond", lambda a, b, k: ember.where(k, a, b)),
           ("int scalar into float", lambda a, b, k: ember.where(b < 0, 2, b))]
    check_many(fns, x, y, c)
