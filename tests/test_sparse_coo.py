"""Basic sparse COO tensors (what graph networks use) against PyTorch 2.13: construction, coalesce,
to_dense / to_sparse, sparse @ dense with gradients, errors, and a pygcn-style training loop."""
import numpy as np
import pytest
import torch

import ember
from oracle import as_numpy, make

INDICES = np.array([[0, 2, 1, 0, 2], [1, 0, 2, 1, 2]], dtype=np.int64)   # (0, 1) twice: uncoalesced
VALUES = np.array([1.5, -2.0, 3.0, 0.5, 4.0], dtype=np.float32)


def both(fn):
    return fn(ember), fn(torch)


def coo(lib, size=(3, 3), **kw):
    return lib.sparse_coo_tensor(lib.from_numpy(INDICES.copy()), lib.from_numpy(VALUES.copy()), size, **kw)


def test_construction_and_metadata():
    e, t = both(coo)
    assert (e.is_sparse, tuple(e.shape), e._nnz(), e.is_coalesced(), e.dim()) == \
           (t.is_sparse, tuple(t.shape), t._nnz(), t.is_coalesced(), t.dim())
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_array_equal(as_numpy(e.to_dense()), as_numpy(t.to_dense()))
    np.testing.assert_array_equal(as_numpy(e._indices()), as_numpy(t._indices()))


def test_coalesce_sorts_and_sums_duplicates():
    e, t = both(lambda lib: coo(lib).coalesce())
    assert e.is_coalesced() and t.is_coalesced()
    np.testing.assert_array_equal(as_numpy(e.indices()), as_numpy(t.indices()))
    np.testing.assert_allclose(as_numpy(e.values()), as_numpy(t.values()))


def test_size_is_inferred_and_legacy_constructor():
    e, t = both(lambda lib: lib.sparse_coo_tensor(lib.from_numpy(INDICES.copy()), lib.from_numpy(VALUES.copy())))
    assert tuple(e.shape) == tuple(t.shape)
    e, t = both(lambda lib: lib.sparse.FloatTensor(lib.from_numpy(INDICES.copy()),
                                                    lib.from_numpy(VALUES.copy()), lib.Size([3, 4])))
    assert tuple(e.shape) == tuple(t.shape) and e.dtype == ember.float32
    np.testing.assert_array_equal(as_numpy(e.to_dense()), as_numpy(t.to_dense()))


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2), (5,)])
def test_to_sparse_round_trips(shape):
    x = make(shape)
    x[x > 1] = 0
    e, t = ember.from_numpy(x).to_sparse(), torch.from_numpy(x).to_sparse()
    assert e._nnz() == t._nnz() and e.is_coalesced() == t.is_coalesced()
    np.testing.assert_array_equal(as_numpy(e.indices()), as_numpy(t.indices()))
    np.testing.assert_array_equal(as_numpy(e.to_dense()), x)


def test_uncoalesced_indices_need_coalesce():
    for lib in (ember, torch):
        with pytest.raises(RuntimeError, match="coalesce"):
            coo(lib).indices()


@pytest.mark.parametrize("mm", ["mm", "spmm", "sparse.mm", "matmul", "@"])
def test_sparse_times_dense_and_gradients(mm):
    dense = make((3, 4))
    results = []
    for lib in (ember, torch):
        values = lib.tensor(VALUES.copy(), requires_grad=True)
        s = lib.sparse_coo_tensor(lib.from_numpy(INDICES.copy()), values, (3, 3))
        d = lib.tensor(dense, requires_grad=True)
        fn = {"mm": lib.mm, "spmm": lib.spmm, "sparse.mm": lib.sparse.mm, "matmul": lib.matmul,
              "@": lambda a, b: a @ b}[mm]
        out = fn(s, d)
        (out * out).sum().backward()
        results.append((as_numpy(out), as_numpy(d.grad), as_numpy(values.grad)))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", ["index out of range", "size rank", "mm shapes", "negative index"])
def test_errors_match_torch(case):
    # ember always checks the indices against the size; PyTorch does when asked (check_invariants=True),
    # and without it reads out of bounds
    def run(lib):
        checked = {"check_invariants": True}
        if case == "index out of range":
            return lib.sparse_coo_tensor(lib.tensor([[0], [5]]), lib.tensor([1.0]), (2, 3), **checked)
        if case == "negative index":
            return lib.sparse_coo_tensor(lib.tensor([[0], [-1]]), lib.tensor([1.0]), (2, 3), **checked)
        if case == "size rank":
            return lib.sparse_coo_tensor(lib.tensor([[0, 1]]), lib.tensor([1.0, 2.0]), (2, 3))
        return lib.sparse.mm(coo(lib), lib.ones(4, 2))
    with pytest.raises(RuntimeError):
        run(ember)
    with pytest.raises(RuntimeError):
        run(torch)


def test_unsupported_operator_names_itself():
    with pytest.raises(NotImplementedError, match="sparse COO"):
        ember.add(coo(ember), 1)


GCN = '''
class GraphConvolution(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(in_features, out_features))
        self.bias = torch.nn.Parameter(torch.empty(out_features))

    def forward(self, x, adj):
        return torch.spmm(adj, torch.mm(x, self.weight)) + self.bias


class GCN(torch.nn.Module):
    def __init__(self, nfeat, nhid, nclass):
        super().__init__()
        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)

    def forward(self, x, adj):
        x = torch.relu(self.gc1(x, adj))
        return torch.nn.functional.log_softmax(self.gc2(x, adj), dim=1)
'''


def test_pygcn_style_training_matches_torch():
    rng = np.random.default_rng(0)
    n, nfeat = 12, 6
    edges = rng.integers(0, n, size=(2, 30))
    edges = np.concatenate([edges, np.arange(n)[None].repeat(2, 0)], axis=1)
    values = (1.0 / np.bincount(edges[0], minlength=n)[edges[0]]).astype(np.float32)
    features, labels = rng.standard_normal((n, nfeat)).astype(np.float32), rng.integers(0, 3, size=n)
    init = {"gc1.weight": rng.uniform(-0.4, 0.4, (nfeat, 8)), "gc1.bias": rng.uniform(-0.4, 0.4, 8),
            "gc2.weight": rng.uniform(-0.4, 0.4, (8, 3)), "gc2.bias": rng.uniform(-0.4, 0.4, 3)}
    losses = []
    for lib in (ember, torch):
        namespace = {"torch": lib}
        exec(compile(GCN, "<gcn>", "exec"), namespace)
        model = namespace["GCN"](nfeat, 8, 3)
        model.load_state_dict({k: lib.from_numpy(v.astype(np.float32)) for k, v in init.items()})
        adj = lib.sparse_coo_tensor(lib.from_numpy(edges.astype(np.int64)), lib.from_numpy(values), (n, n))
        opt = lib.optim.Adam(model.parameters(), lr=0.05, weight_decay=5e-4)
        x, y = lib.from_numpy(features), lib.from_numpy(labels.astype(np.int64))
        steps = []
        for _ in range(5):
            opt.zero_grad()
            loss = lib.nn.functional.nll_loss(model(x, adj), y)
            loss.backward()
            opt.step()
            steps.append(loss.item())
        losses.append(steps)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5)
