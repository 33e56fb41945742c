"""scatter_add and index_put compiled as a serial update loop after a copy (ir.ScatterBody), against
eager ember: each layout and C dtype, duplicate indices (accumulated, or the last write winning as
in eager's loop), negative and out-of-bounds indices, threads, 0-d values and empty updates."""
import numpy as np
import pytest

import ember
from ember._functorch import make_fx
from ember._inductor import config
from ember._inductor.compile_fx import compile_fx
from test_lowering_index import check_bad_indices
from test_lowering import DTYPES, check_many, layouts

IDX = ember.tensor([[0, 1, 1], [2, 2, 2], [3, 0, 3], [1, 1, 0], [0, 3, 2]])     # duplicates per row


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_add_each_layout_with_duplicates(dtype):
    xs = [x for _, x in layouts((5, 4), dtype)] + [IDX, IDX.t()[:, :3] % 4]
    fns = []
    for i in range(4):
        for j in range(4):
            fns += [(f"dim1[{i},{j}]", lambda *t, i=i, j=j: t[i].scatter_add(1, t[4], t[j])),
                    (f"dim0[{i},{j}]", lambda *t, i=i, j=j: t[i].scatter_add(0, t[5], t[j]))]
    fns.append(("computed", lambda *t: (t[0] * 2).scatter_add(1, t[4], t[1] + t[2]) + 1))
    check_many(fns, *xs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_put_accumulate_and_overwrite(dtype):
    xs = [x for _, x in layouts((5, 4), dtype)]
    rows, cols = ember.tensor([1, -1, 1, 3]), ember.tensor([0, 2, 0, -4])
    xs += [rows, cols]
    fns = []
    for i in range(4):
        for acc in (True, False):
            fns += [(f"rows[{i},{acc}]", lambda *t, i=i, a=acc: t[i].index_put((t[4],), t[(i + 1) % 4][:4], accumulate=a)),
                    (f"points[{i},{acc}]", lambda *t, i=i, a=acc: t[i].index_put((t[4], t[5]), t[1][0], accumulate=a)),
                    (f"cols[{i},{acc}]", lambda *t, i=i, a=acc: t[i].index_put((None, t[5] % 4), t[2][:, :1], accumulate=a)),
                    (f"0-d value[{i},{acc}]", lambda *t, i=i, a=acc: t[i].index_put((t[4],), t[3][0, 0], accumulate=a))]
    check_many(fns, *xs)


def test_empty_updates_and_0d_index():
    x, i = ember.randn(4, 3), ember.tensor([2, 0])
    check_many([("no updates", lambda a, b: a.index_put((b[:0],), ember.tensor(1.0), accumulate=True)),
                ("0-d index", lambda a, b: a.index_put((b[0],), a[1] * 2, accumulate=True)),
                ("empty src", lambda a, b: a.scatter_add(1, b.view(2, 1)[:0], a[:0, :1]))], x, i)


BAD = [("scatter_add", lambda x, i: x.scatter_add(1, i.view(1, -1), x[:1, :2]), [[0, 2], [0, 3], [-1, 0]]),
       ("index_put", lambda x, i: x.index_put((i,), ember.tensor(1.0), accumulate=True), [[0, -5], [5, 0], [-6, 1]]),
       ("index_put overwrite", lambda x, i: x.index_put((i,), ember.tensor(1.0)), [[4, 0], [0, 5], [-6, 0]])]


@pytest.mark.parametrize("name,fn,cases", BAD, ids=[b[0] for b in BAD])
def test_out_of_bounds_raises_eagers_exception(name, fn, cases):
    check_bad_indices(fn, ember.randn(5, 3), cases)


def test_two_threads_give_eagers_values(monkeypatch):
    monkeypatch.setattr(config, "threads", 2)
    x = ember.randn(300, 200)
    idx = ember.from_numpy(np.random.default_rng(0).integers(0, 200, size=(300, 400)))
    src = ember.randn(300, 400)
    fn = lambda a, i, s: a.scatter_add(1, i, s * 2)        # noqa: E731
    compiled = compile_fx(make_fx(fn)(x, idx, src), [x, idx, src])
    np.testing.assert_allclose(compiled(x, idx, src).numpy(), fn(x, idx, src).numpy(), rtol=1e-5, atol=1e-5)
