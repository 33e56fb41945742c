"""ember.utils.data against torch.utils.data: the same programs, batch by batch."""
from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.utils.data as edata

Point = collections.namedtuple("Point", ["x", "y"])


def to_np(x):
    return x.detach().numpy() if isinstance(x, torch.Tensor) else np.asarray(x.detach().numpy(force=True))


def assert_same(e, t):
    """Structures equal: same container types, tensors with equal shape, dtype and values."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), type(e)
        assert tuple(e.shape) == tuple(t.shape)
        assert e.dtype.name == str(t.dtype).replace("torch.", "")
        np.testing.assert_array_equal(to_np(e), to_np(t))
    elif isinstance(t, dict):
        assert type(e) is type(t) and list(e) == list(t)
        for k in t:
            assert_same(e[k], t[k])
    elif isinstance(t, (list, tuple)):
        assert type(e) is type(t) and len(e) == len(t), (type(e), type(t))
        for a, b in zip(e, t):
            assert_same(a, b)
    else:
        assert type(e) is type(t) and e == t


def both(arr):
    return ember.tensor(arr), torch.tensor(arr)


# -- default_collate --------------------------------------------------------------------------
def _structures():
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal((4, 3)).astype(np.float32)
    return [
        lambda T: [T(f32[i]) for i in range(4)],
        lambda T: [T(f32[i, 0]) for i in range(4)],  # 0-d tensors
        lambda T: [T(np.arange(3, dtype=np.int32) + i) for i in range(2)],
        lambda T: [T(np.array([True, False]))] * 3,
        lambda T: [0, 1, 2, 3],
        lambda T: [True, False],
        lambda T: [0.5, 1.5, -2.0],
        lambda T: ["a", "b"],
        lambda T: [b"a", b"b"],
        lambda T: [np.float32(1.5), np.float32(2.5)],
        lambda T: [np.int16(1), np.int16(7)],
        lambda T: [np.float64(1.0), np.float64(3.0)],
        lambda T: [f32[i] for i in range(4)],  # numpy arrays
        lambda T: [np.arange(4, dtype=np.uint8)] * 2,
        lambda T: [(T(f32[i]), i) for i in range(4)],  # tuples -> list
        lambda T: [[T(f32[i]), float(i)] for i in range(3)],
        lambda T: [{"x": T(f32[i]), "y": i, "name": "s"} for i in range(3)],
        lambda T: [collections.OrderedDict(a=i, b=[i, 2 * i]) for i in range(3)],
        lambda T: [Point(T(f32[i]), i) for i in range(4)],
        lambda T: [{"pair": (i, float(i)), "nested": {"deep": [T(f32[i])]}} for i in range(2)],
    ]


@pytest.mark.parametrize("make", _structures())
def test_default_collate_matches_torch(make):
    out_e = edata.default_collate(make(lambda a: ember.as_tensor(np.array(a))))
    out_t = tdata.default_collate(make(lambda a: torch.as_tensor(np.array(a))))
    assert_same(out_e, out_t)


@pytest.mark.parametrize("batch", [
    [object(), object()],
    [np.array(["a", "b"]), np.array(["c", "d"])],
    [[1, 2], [3]],
])
def test_default_collate_errors_match_torch(batch):
    with pytest.raises(Exception) as te:
        tdata.default_collate(batch)
    with pytest.raises(type(te.value)) as ee:
        edata.default_collate(batch)
    assert str(ee.value).split("'")[0] == str(te.value).split("'")[0]


def test_default_collate_shape_mismatch_raises():
    with pytest.raises(RuntimeError):
        edata.default_collate([ember.zeros(2), ember.zeros(3)])


def test_default_convert_matches_torch():
    for data in ([np.arange(3), np.ones(2)], (np.int64(3), "s"), {"a": np.zeros(2)}, Point(np.array(1), 2), 7):
        assert_same(edata.default_convert(data), tdata.default_convert(data))


# -- datasets ---------------------------------------------------------------------------------
def test_tensor_dataset_and_errors():
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    y = np.arange(10)
    de, dt = edata.TensorDataset(*both(x)[:1], both(y)[0]), tdata.TensorDataset(torch.tensor(x), torch.tensor(y))
    assert len(de) == len(dt) == 10
    for i in (0, 3, -1):
        assert_same(de[i], dt[i])
    assert_same(de[2:5], dt[2:5])
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        edata.TensorDataset(ember.zeros(3), ember.zeros(4))
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        tdata.TensorDataset(torch.zeros(3), torch.zeros(4))


def test_concat_subset_stack_datasets():
    a, b = list(range(5)), list(range(10, 13))

    class L(edata.Dataset):
        def __init__(self, xs):
            self.xs = xs

        def __getitem__(self, i):
            return self.xs[i]

        def __len__(self):
            return len(self.xs)

    c = L(a) + L(b)
    assert isinstance(c, edata.ConcatDataset)
    tc = tdata.ConcatDataset([a, b])
    assert len(c) == len(tc) and [c[i] for i in range(-8, 8)] == [tc[i] for i in range(-8, 8)]
    assert c.cumulative_sizes == tc.cumulative_sizes
    with pytest.raises(ValueError, match="absolute value of index"):
        c[-9]
    with pytest.raises(AssertionError, match="should not be an empty iterable"):
        edata.ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        edata.ConcatDataset([edata.IterableDataset()])
    s, ts = edata.Subset(a, [4, 0, 2]), tdata.Subset(a, [4, 0, 2])
    assert len(s) == 3 and [s[i] for i in range(3)] == [ts[i] for i in range(3)]
    assert s.__getitems__([2, 1]) == ts.__getitems__([2, 1])
    st, tst = edata.StackDataset(a, [x * 2 for x in a]), tdata.StackDataset(a, [x * 2 for x in a])
    assert st[3] == tst[3] and len(st) == len(tst)
    assert edata.StackDataset(p=a, q=a)[1] == tdata.StackDataset(p=a, q=a)[1]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        edata.StackDataset(a, b)
    with pytest.raises(NotImplementedError):
        edata.Dataset()[0]


def test_random_split_sizes_disjoint_and_reproducible():
    for lengths in ([3, 7], [0.3, 0.3, 0.4], [0.5, 0.5], [1.0], [0.25, 0.25, 0.25, 0.25]):
        n = 11 if isinstance(lengths[0], float) else 10
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            parts = edata.random_split(range(n), lengths, generator=ember.Generator().manual_seed(1))
            tparts = tdata.random_split(range(n), lengths, generator=torch.Generator().manual_seed(1))
        assert [len(p) for p in parts] == [len(p) for p in tparts]
        flat = [x for p in parts for x in (p[i] for i in range(len(p)))]
        assert sorted(flat) == list(range(n))
        again = edata.random_split(range(n), lengths, generator=ember.Generator().manual_seed(1))
        assert [list(p.indices) for p in parts] == [list(p.indices) for p in again]
    ember.manual_seed(5)
    a = [p.indices for p in edata.random_split(range(20), [10, 10])]
    ember.manual_seed(5)
    assert a == [p.indices for p in edata.random_split(range(20), [10, 10])]


@pytest.mark.parametrize("lengths", [[3, 3], [0.5, 0.6], [1.2, -0.2], [5, 6]])
def test_random_split_errors_match_torch(lengths):
    with pytest.raises(Exception) as te:
        tdata.random_split(range(10), lengths)
    with pytest.raises(type(te.value), match=str(te.value).replace("!", ".")):
        edata.random_split(range(10), lengths)


def test_random_split_zero_length_warns():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        edata.random_split(range(2), [0.9, 0.05, 0.05])
    assert [str(w.message) for w in got] == [f"Length of split at index {i} is 0. This might result in an "
                                             "empty dataset." for i in (1, 2)]


# -- samplers ---------------------------------------------------------------------------------
def test_samplers_basic():
    assert list(edata.SequentialSampler(range(5))) == list(tdata.SequentialSampler(range(5)))
    g = ember.Generator().manual_seed(3)
    perm = list(edata.RandomSampler(range(7), generator=g))
    assert sorted(perm) == list(range(7))
    for n in (3, 7, 16, 40):
        s = edata.RandomSampler(range(7), num_samples=n, generator=g)
        out = list(s)
        assert len(out) == len(s) == n and all(0 <= i < 7 for i in out)
        assert sorted(out[: (n // 7) * 7]) == sorted(list(range(7)) * (n // 7))
        r = list(edata.RandomSampler(range(7), replacement=True, num_samples=n, generator=g))
        assert len(r) == n and all(0 <= i < 7 for i in r)
    sub = list(edata.SubsetRandomSampler([10, 20, 30], generator=g))
    assert sorted(sub) == [10, 20, 30]
    w = list(edata.WeightedRandomSampler([0.0, 1.0, 0.0, 2.0], 50, generator=g))
    assert len(w) == 50 and set(w) <= {1, 3}
    w = list(edata.WeightedRandomSampler([1.0, 1.0, 1.0], 3, replacement=False, generator=g))
    assert sorted(w) == [0, 1, 2]
    for drop in (False, True):
        e = edata.BatchSampler(edata.SequentialSampler(range(10)), 3, drop)
        t = tdata.BatchSampler(tdata.SequentialSampler(range(10)), 3, drop)
        assert list(e) == list(t) and len(e) == len(t)


@pytest.mark.parametrize("make", [
    lambda m: m.RandomSampler(range(3), replacement=1),
    lambda m: m.RandomSampler(range(3), num_samples=0),
    lambda m: m.RandomSampler([], num_samples=None),
    lambda m: m.BatchSampler(range(3), 0, False),
    lambda m: m.BatchSampler(range(3), True, False),
    lambda m: m.BatchSampler(range(3), 2, 1),
    lambda m: m.WeightedRandomSampler([1.0], 0),
    lambda m: m.WeightedRandomSampler([1.0], 2, replacement=0),
    lambda m: m.WeightedRandomSampler([[1.0]], 2),
])
def test_sampler_errors_match_torch(make):
    with pytest.raises(Exception) as te:
        make(tdata)
    with pytest.raises(type(te.value)) as ee:
        make(edata)
    assert str(ee.value) == str(te.value)


# -- DataLoader -------------------------------------------------------------------------------
def _data(n=10):
    x = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n) % 3
    return (edata.TensorDataset(ember.tensor(x), ember.tensor(y)),
            tdata.TensorDataset(torch.tensor(x), torch.tensor(y)))


@pytest.mark.parametrize("kwargs", [dict(), dict(batch_size=4), dict(batch_size=4, drop_last=True),
                                    dict(batch_size=10), dict(batch_size=20), dict(batch_size=None),
                                    dict(batch_size=3, collate_fn=lambda b: len(b))])
def test_loader_sequential_matches_torch(kwargs):
    de, dt = _data()
    le, lt = edata.DataLoader(de, **kwargs), tdata.DataLoader(dt, **kwargs)
    assert len(le) == len(lt)
    for _ in range(2):  # iterating twice gives the same batches
        be, bt = list(le), list(lt)
        assert len(be) == len(bt)
        for a, b in zip(be, bt):
            assert_same(a, b)


def test_loader_dict_samples_and_custom_samplers():
    data = [{"x": np.full(2, i, np.float32), "label": i, "w": i / 2} for i in range(7)]
    for kw in (dict(batch_size=3), dict(batch_sampler=[[0, 2], [6, 5, 4]]), dict(sampler=[6, 0, 3], batch_size=2)):
        for a, b in zip(edata.DataLoader(data, **kw), tdata.DataLoader(data, **kw)):
            assert_same(a, b)
    assert len(edata.DataLoader(data, batch_sampler=[[0, 2], [6, 5, 4]])) == 2


def test_loader_shuffle_is_permutation_and_reproducible():
    de, _ = _data(23)

    def epochs(**kw):
        loader = edata.DataLoader(de, batch_size=5, shuffle=True, **kw)
        return [[int(v) for b in loader for v in b[0][:, 0] // 3] for _ in range(3)]

    ember.manual_seed(0)
    a = epochs()
    ember.manual_seed(0)
    assert epochs() == a
    for ep in a:
        assert sorted(ep) == list(range(23))
    assert a[0] != a[1]  # reshuffled every epoch
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    assert epochs(generator=g1) == epochs(generator=g2)
    loader = edata.DataLoader(de, batch_size=5, shuffle=True, drop_last=True)
    assert len(loader) == 4 and [len(b[0]) for b in loader] == [5] * 4


class _Stream(edata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


class _TStream(tdata.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


@pytest.mark.parametrize("kwargs", [dict(), dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                    dict(batch_size=None)])
def test_loader_iterable_dataset(kwargs):
    le, lt = edata.DataLoader(_Stream(8), **kwargs), tdata.DataLoader(_TStream(8), **kwargs)
    assert len(le) == len(lt)
    be, bt = list(le), list(lt)
    assert len(be) == len(bt)
    for a, b in zip(be, bt):
        assert_same(a, b)
    chained = _Stream(2) + _Stream(3)
    assert list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5


@pytest.mark.parametrize("kw", [dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
                                dict(persistent_workers=True), dict(sampler=[0], shuffle=True),
                                dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], shuffle=True),
                                dict(batch_size=None, drop_last=True)])
def test_loader_errors_match_torch(kw):
    de, dt = _data()
    with pytest.raises(Exception) as te:
        tdata.DataLoader(dt, **kw)
    with pytest.raises(type(te.value)) as ee:
        edata.DataLoader(de, **kw)
    assert str(ee.value) == str(te.value)


@pytest.mark.parametrize("kw", [dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])])
def test_loader_iterable_errors_match_torch(kw):
    with pytest.raises(ValueError, match="DataLoader with IterableDataset: expected unspecified"):
        edata.DataLoader(_Stream(3), **kw)


def test_loader_frozen_attributes_and_workers():
    de, _ = _data()
    loader = edata.DataLoader(de, batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 3
    loader.collate_fn = edata.default_collate  # not frozen, as in PyTorch
    lw = edata.DataLoader(de, batch_size=4, num_workers=2)
    with pytest.warns(UserWarning, match="num_workers=2 is not supported"):
        got = list(lw)
    for a, b in zip(got, edata.DataLoader(de, batch_size=4)):
        np.testing.assert_array_equal(a[0].numpy(), b[0].numpy())
    assert edata.get_worker_info() is None


def test_loader_trains_with_autograd_tensors():
    """Batches collated from requires-grad tensors stay differentiable."""
    w = ember.ones(4, 2, requires_grad=True)
    ds = edata.TensorDataset(w)
    (batch,) = next(iter(edata.DataLoader(ds, batch_size=4)))
    batch.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((4, 2), np.float32))


class _Batched:
    """A dataset that reads whole batches itself (``__getitems__``)."""

    def __init__(self, xs):
        self.xs = xs

    def __getitem__(self, i):
        return self.xs[i]

    def __getitems__(self, indices):
        return [self.xs[i] * 10 for i in indices]

    def __len__(self):
        return len(self.xs)


def test_stack_dataset_getitems_and_loader_match_torch():
    a, b = list(range(6)), [float(x) / 2 for x in range(6)]
    for args, kwargs in (((a, _Batched(b)), {}), ((), dict(p=_Batched(a), q=b))):
        e, t = edata.StackDataset(*args, **kwargs), tdata.StackDataset(*args, **kwargs)
        assert e.__getitems__([4, 1]) == t.__getitems__([4, 1])
        assert e[2] == t[2]
        for x, y in zip(edata.DataLoader(e, batch_size=4), tdata.DataLoader(t, batch_size=4)):
            assert_same(x, y)

    class Short:
        def __len__(self):
            return 6

        def __getitems__(self, indices):
            return indices[:1]

    for lib in (edata, tdata):
        with pytest.raises(ValueError, match="Nested dataset's output size mismatch. Expected 2, got 1"):
            lib.StackDataset(a, Short()).__getitems__([0, 1])


def test_collate_keeps_mapping_types_and_custom_maps_like_torch():
    class Box:
        def __init__(self, v):
            self.v = v

    def collate_box(batch, *, collate_fn_map=None):
        return sum(b.v for b in batch)

    samples = [collections.defaultdict(list, a=i, b=(i, 2.0)) for i in range(3)]
    out_e, out_t = edata.default_collate(samples), tdata.default_collate(samples)
    assert type(out_e) is type(out_t) and out_e.default_factory is out_t.default_factory
    assert_same(dict(out_e), dict(out_t))
    from ember.utils.data._utils.collate import collate as e_collate, default_collate_fn_map as e_map
    from torch.utils.data._utils.collate import collate as t_collate, default_collate_fn_map as t_map
    batch = [{"box": Box(i), "x": [i, i + 1]} for i in range(4)]
    assert_same(e_collate(batch, collate_fn_map={**e_map, Box: collate_box}),
                t_collate(batch, collate_fn_map={**t_map, Box: collate_box}))
    with pytest.raises(TypeError) as te:
        t_collate(batch, collate_fn_map=t_map)
    with pytest.raises(TypeError) as ee:
        e_collate(batch, collate_fn_map=e_map)
    assert str(ee.value).split("'")[0] == str(te.value).split("'")[0]


def test_loader_with_getitems_dataset_and_iterable_without_batching():
    data = _Batched(list(range(7)))
    for kw in (dict(batch_size=3), dict(batch_size=None), dict(batch_size=2, drop_last=True)):
        be, bt = list(edata.DataLoader(data, **kw)), list(tdata.DataLoader(data, **kw))
        assert len(be) == len(bt)
        for x, y in zip(be, bt):
            assert_same(x, y)
    le = edata.DataLoader(_Stream(5), batch_size=None, collate_fn=lambda x: x * 2)
    lt = tdata.DataLoader(_TStream(5), batch_size=None, collate_fn=lambda x: x * 2)
    assert list(le) == list(lt) and len(le) == len(lt)
