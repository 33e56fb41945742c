"""Oracle tests of the nn family (linear, embedding, dropout, norms, pad, one_hot, interpolate,
distances, attention) against PyTorch. Losses are in test_loss.py."""

import numpy as np
import pytest

import ember
from oracle import check, make, ALL_DTYPES, FLOAT_DTYPES, as_numpy

HALF_TOL = {"float16": dict(rtol=5e-3, atol=5e-3), "bfloat16": dict(rtol=3e-2, atol=3e-2)}


def F(lib):
    return lib.nn.functional


def tol(dtype):
    return HALF_TOL.get(dtype, {})


# ---------------------------------------------------------------------------------------
# linear / bilinear
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_linear_dtypes(dtype):
    check(lambda lib, x, w, b: F(lib).linear(x, w, b), make((2, 3), dtype), make((4, 3), dtype), make((4,), dtype),
          **tol(dtype))


@pytest.mark.parametrize("xs,ws,bs", [((3,), (4, 3), (4,)), ((2, 5, 3), (4, 3), (4,)), ((0, 3), (4, 3), (4,)),
                                      ((2, 0), (4, 0), (4,)), ((2, 3), (3,), None), ((3,), (3,), None),
                                      ((2, 3), (4, 3), None), ((2, 3), (4, 3), (1,)), ((2, 2, 3), (4, 3), (2, 4))])
def test_linear_shapes(xs, ws, bs):
    args = [make(xs), make(ws)] + ([make(bs)] if bs else [])
    check(lambda lib, x, w, *b: F(lib).linear(x, w, *b), *args, dtype="float64")
    check(lambda lib, x, w, *b: F(lib).linear(x, w, *b), *args, noncontig=True)
    check(lambda lib, x, w, *b: F(lib).linear(x.to("meta"), w.to("meta"), *[t.to("meta") for t in b]), *args)


@pytest.mark.parametrize("xs,ws,bs,dts", [((2, 3), (4, 5), (4,), None), ((), (4, 3), None, None),
                                          ((2, 3), (4, 3, 1), None, None), ((2, 3), (4, 3), (5,), None),
                                          ((2, 3), (4, 3), None, ("float32", "float64"))])
def test_linear_errors(xs, ws, bs, dts):
    x, w = make(xs), make(ws)
    if dts:
        x, w = x.astype(dts[0]), w.astype(dts[1])
    args = [x, w] + ([make(bs)] if bs else [])
    check(lambda lib, x, w, *b: F(lib).linear(x, w, *b), *args)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_bilinear(dtype):
    args = make((2, 3), dtype), make((2, 5), dtype), make((4, 3, 5), dtype), make((4,), dtype)
    check(lambda lib, a, b, w, bias: F(lib).bilinear(a, b, w, bias), *args, **tol(dtype))
    check(lambda lib, a, b, w, bias: lib.bilinear(a, b, w, bias), *args, **tol(dtype))


def test_bilinear_shapes_and_errors():
    check(lambda lib, a, b, w: F(lib).bilinear(a, b, w), make((2, 6, 3)), make((2, 6, 5)), make((4, 3, 5)),
          noncontig=True, atol=1e-4)
    check(lambda lib, a, b, w: F(lib).bilinear(a.to("meta"), b.to("meta"), w.to("meta")), make((2, 3)),
          make((2, 5)), make((4, 3, 5)))
    check(lambda lib, a, b, w: F(lib).bilinear(a, b, w), make((2, 3)), make((3, 5)), make((4, 3, 5)))
    check(lambda lib, a, b, w: F(lib).bilinear(a, b, w), make((2, 3)), make((2, 5)), make((4, 2, 5)))
    check(lambda lib, a, b, w, bias: F(lib).bilinear(a, b, w, bias), make((2, 3)), make((2, 5)), make((4, 3, 5)),
          make((3,)))


# ---------------------------------------------------------------------------------------
# embedding
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_embedding_weight_dtypes(dtype):
    check(lambda lib, i, w: F(lib).embedding(i, w), np.array([[0, 2], [1, 1]]), make((3, 4), dtype))


@pytest.mark.parametrize("idx_dtype", ALL_DTYPES)
def test_embedding_index_dtypes(idx_dtype):
    check(lambda lib, i, w: F(lib).embedding(i.to(getattr(lib, idx_dtype)), w), np.array([0, 2, 1]), make((3, 4)))


@pytest.mark.parametrize("shape", [(), (0,), (5,), (2, 3), (2, 0, 3)])
def test_embedding_shapes(shape):
    idx = np.random.default_rng(1).integers(0, 6, size=shape)
    check(lambda lib, i, w: F(lib).embedding(i, w, padding_idx=1), idx, make((6, 3)), noncontig=True)
    check(lambda lib, i, w: lib.embedding(w, i), idx.astype(np.int32), make((6, 3)))
    check(lambda lib, i, w: F(lib).embedding(i.to("meta"), w.to("meta")), idx, make((6, 3)))


def test_embedding_errors():
    check(lambda lib, i, w: F(lib).embedding(i, w), np.array([0, 6]), make((6, 3)))
    check(lambda lib, i, w: F(lib).embedding(i, w), np.array([-1]), make((6, 3)))
    check(lambda lib, i, w: F(lib).embedding(i, w), np.array([0]), make((6,)))
    check(lambda lib, i, w: F(lib).embedding(i, w, padding_idx=6), np.array([0]), make((6, 3)))
    check(lambda lib, i, w: F(lib).embedding(i, w, padding_idx=-7), np.array([0]), make((6, 3)))
    check(lambda lib, i, w: F(lib).embedding(i, w, padding_idx=-2), np.array([0, 4]), make((6, 3)))


@pytest.mark.parametrize("norm_type", [1.0, 2.0, 3.0])
def test_embedding_max_norm_renormalises_weight(norm_type):
    def f(lib, i, w):
        out = F(lib).embedding(i, w, max_norm=1.5, norm_type=norm_type)
        return out, w  # weight rows looked up are renormalised in place
    check(f, np.array([[0, 2], [2, 4]]), make((6, 3)), dtype="float64")


# ---------------------------------------------------------------------------------------
# dropout
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_dropout_eval_and_edges(dtype):
    check(lambda lib, x: F(lib).dropout(x, 0.5, training=False), make((3, 4), dtype))
    check(lambda lib, x: F(lib).dropout(x, 0.0), make((3, 4), dtype))
    check(lambda lib, x: F(lib).dropout(x, 1.0), make((3, 4), dtype))
    check(lambda lib, x: lib.dropout(x, 0.3, True).shape, make((3, 4), dtype))  # ints/complex raise
    check(lambda lib, x: F(lib).dropout(x, 0.5, training=False) is x, make((3, 4), dtype))


def test_dropout_errors_and_meta():
    check(lambda lib, x: F(lib).dropout(x, 1.5), make((3,)))
    check(lambda lib, x: F(lib).dropout(x, -0.1), make((3,)))
    check(lambda lib, x: F(lib).dropout(x.to("meta"), 0.5), make((3, 4)))
    check(lambda lib, x: F(lib).dropout(x, 0.5, inplace=True).shape, make((3, 4), "int64"))
    check(lambda lib, x: F(lib).dropout(x, 0.5).shape, make((0, 4)))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
@pytest.mark.parametrize("p", [0.2, 0.5, 0.9])
def test_dropout_statistics(dtype, p):
    x = ember.from_numpy(np.ones((200, 100), np.float32)).to(getattr(ember, dtype))
    y = as_numpy(ember.nn.functional.dropout(x, p))
    assert y.dtype == as_numpy(x).dtype or dtype == "bfloat16"
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=1e-2)
    assert abs(kept.mean() - (1 - p)) < 0.02


def test_dropout_inplace_and_seed():
    x = ember.from_numpy(np.ones((50, 40), np.float32))
    before = x._version
    out = ember.nn.functional.dropout(x, 0.5, inplace=True)
    assert out is x and x._version > before
    assert set(np.unique(as_numpy(x))) <= {0.0, 2.0}
    ember.manual_seed(3)
    a = as_numpy(ember.nn.functional.dropout(ember.from_numpy(np.ones(64, np.float32)), 0.5))
    ember.manual_seed(3)
    b = as_numpy(ember.nn.functional.dropout(ember.from_numpy(np.ones(64, np.float32)), 0.5))
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("fn,shape", [("dropout1d", (4, 6, 5)), ("dropout1d", (6, 5)), ("dropout2d", (4, 6, 3, 3)),
                                      ("dropout3d", (2, 6, 2, 2, 2)), ("dropout3d", (6, 2, 2, 2))])
def test_feature_dropout_zeroes_whole_channels(fn, shape):
    x = ember.from_numpy(np.ones(shape, np.float32))
    y = as_numpy(getattr(ember.nn.functional, fn)(x, 0.5))
    assert y.shape == shape
    batched = len(shape) in (3, 4, 5) and not (fn == "dropout3d" and len(shape) == 4) and not (
        fn == "dropout1d" and len(shape) == 2)
    flat = y.reshape(shape[:2] + (-1,)) if batched else y.reshape(shape[:1] + (-1,))
    for ch in flat.reshape(-1, flat.shape[-1]):
        assert np.all(ch == 0) or np.all(ch == 2)
    check(lambda lib, x: getattr(F(lib), fn)(x, 0.5, training=False), make(shape))


def test_dropout1d_rejects_4d_and_alpha_dropout():
    check(lambda lib, x: F(lib).dropout1d(x, 0.5), make((2, 3, 4, 5)))
    check(lambda lib, x: F(lib).alpha_dropout(x, 0.5, training=False), make((3, 4)))
    check(lambda lib, x: F(lib).alpha_dropout(x, 1.0, training=True), make((3, 4)))
    y = as_numpy(ember.nn.functional.alpha_dropout(ember.from_numpy(np.random.randn(400, 250)), 0.3, True))
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05  # alpha dropout keeps mean 0, std 1


# ---------------------------------------------------------------------------------------
# normalisation
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_layer_norm_dtypes(dtype):
    check(lambda lib, x, w, b: F(lib).layer_norm(x, (4,), w, b), make((3, 4), dtype), make((4,), dtype),
          make((4,), dtype), **tol(dtype))


@pytest.mark.parametrize("shape,ns", [((3, 4), (4,)), ((2, 3, 4), (3, 4)), ((4,), (4,)), ((0, 4), (4,)),
                                      ((2, 5, 1), (1,))])
def test_layer_norm_shapes(shape, ns):
    check(lambda lib, x: F(lib).layer_norm(x, ns), make(shape), noncontig=True)
    check(lambda lib, x, w, b: lib.layer_norm(x, ns, w, b, 1e-3), make(shape), make(ns), make(ns), dtype="float64")
    check(lambda lib, x: F(lib).layer_norm(x.to("meta"), ns), make(shape))


def test_layer_norm_errors():
    check(lambda lib, x: F(lib).layer_norm(x, (5,)), make((3, 4)))
    check(lambda lib, x, w: F(lib).layer_norm(x, (4,), w), make((3, 4)), make((3,)))
    check(lambda lib, x: F(lib).layer_norm(x, (2, 3, 4)), make((3, 4)))
    check(lambda lib, x: F(lib).layer_norm(x, ()), make((3, 4)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_rms_norm(dtype):
    check(lambda lib, x, w: F(lib).rms_norm(x, (4,), w), make((3, 4), dtype), make((4,), dtype), **tol(dtype))


@pytest.mark.parametrize("shape,ns", [((3, 4), (4,)), ((2, 3, 4), (3, 4)), ((0, 4), (4,))])
def test_rms_norm_shapes(shape, ns):
    check(lambda lib, x: F(lib).rms_norm(x, ns, eps=1e-3), make(shape), noncontig=True)
    check(lambda lib, x, w: lib.rms_norm(x, ns, w), make(shape, "float16"), make(ns))  # mixed: promotes
    check(lambda lib, x: F(lib).rms_norm(x.to("meta"), ns), make(shape))
    check(lambda lib, x: F(lib).rms_norm(x, (7,)), make(shape))


def _bn(training, momentum=0.1, affine=True):
    def f(lib, x, rm, rv, w, b):
        out = F(lib).batch_norm(x, rm, rv, w if affine else None, b if affine else None, training=training,
                                momentum=momentum)
        return out, rm, rv
    return f


@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 6), (2, 3, 4, 5), (2, 3, 2, 2, 2)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(shape, training):
    c = shape[1]
    args = make(shape), make((c,)), make((c,), low=0.5), make((c,)), make((c,))
    check(_bn(training, 0.3), *args, dtype="float64")
    check(_bn(training), *args, noncontig=True)
    check(_bn(training, affine=False), *args)
    check(lambda lib, x, rm, rv: lib.batch_norm(x.to("meta"), None, None, rm.to("meta"), rv.to("meta"), training,
                                                0.1, 1e-5, False), *args[:3])


def test_batch_norm_no_running_stats_and_version():
    check(lambda lib, x: F(lib).batch_norm(x, None, None, training=True), make((4, 3)))
    check(lambda lib, x: F(lib).batch_norm(x, None, None, training=False), make((4, 3)))
    rm = ember.from_numpy(np.zeros(3, np.float32))
    v = rm._version
    ember.nn.functional.batch_norm(ember.from_numpy(make((4, 3))), rm, ember.from_numpy(np.ones(3, np.float32)),
                                   training=True)
    assert rm._version > v


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_batch_norm_dtypes(dtype):
    check(_bn(True), make((4, 3), dtype), make((3,), dtype), make((3,), dtype, low=1), make((3,), dtype),
          make((3,), dtype), **tol(dtype))


def test_batch_norm_half_with_float_stats():
    def f(lib, x, rm, rv):
        return F(lib).batch_norm(x.to(lib.float16), rm, rv, training=True), rm, rv
    check(f, make((4, 3)), make((3,)), make((3,), low=1), rtol=5e-3, atol=5e-3)


def test_batch_norm_errors():
    check(_bn(True), make((1, 3)), make((3,)), make((3,)), make((3,)), make((3,)))
    check(_bn(True), make((4, 3)), make((2,)), make((3,)), make((3,)), make((3,)))
    check(_bn(False), make((4, 3)), make((3,)), make((3,)), make((4,)), make((3,)))
    check(lambda lib, x: F(lib).batch_norm(x, None, None, training=True, eps=0.0), make((4, 3)))


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 2, 3), (1, 2, 4)])
def test_instance_norm(shape):
    c = shape[1]

    def f(lib, x, rm, rv, w, b):
        return F(lib).instance_norm(x, rm, rv, w, b, use_input_stats=True, momentum=0.2), rm, rv
    check(f, make(shape), make((c,)), make((c,), low=0.5), make((c,)), make((c,)), dtype="float64")
    check(lambda lib, x: F(lib).instance_norm(x), make(shape), noncontig=True)
    check(lambda lib, x, rm, rv: F(lib).instance_norm(x, rm, rv, use_input_stats=False), make(shape), make((c,)),
          make((c,), low=0.5))
    check(lambda lib, x: F(lib).instance_norm(x.to("meta")), make(shape))
    for dtype in ALL_DTYPES:
        check(lambda lib, x: F(lib).instance_norm(x), make(shape, dtype), **tol(dtype))


def test_instance_norm_errors():
    check(lambda lib, x: F(lib).instance_norm(x), make((2, 3, 1)))
    check(lambda lib, x: F(lib).instance_norm(x, use_input_stats=False), make((2, 3, 4)))


@pytest.mark.parametrize("shape,g", [((2, 4), 2), ((2, 6, 5), 3), ((3, 4, 2, 2), 1), ((2, 4, 3), 4),
                                     ((0, 4, 3), 2)])
def test_group_norm(shape, g):
    c = shape[1]
    check(lambda lib, x, w, b: F(lib).group_norm(x, g, w, b), make(shape), make((c,)), make((c,)), noncontig=True)
    check(lambda lib, x: lib.group_norm(x, g, eps=1e-3), make(shape), dtype="float64")
    check(lambda lib, x: F(lib).group_norm(x.to("meta"), g), make(shape))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_group_norm_dtypes(dtype):
    check(lambda lib, x: F(lib).group_norm(x, 2), make((2, 4, 3), dtype), **tol(dtype))


def test_group_norm_errors():
    check(lambda lib, x: F(lib).group_norm(x, 3), make((2, 4, 3)))
    check(lambda lib, x: F(lib).group_norm(x, 2), make((4,)))
    check(lambda lib, x: F(lib).group_norm(x, 2), make((1, 2)))
    check(lambda lib, x, w: F(lib).group_norm(x, 2, w), make((2, 4, 3)), make((3,)))


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), 0.5])
@pytest.mark.parametrize("dim", [1, -1, 0])
def test_normalize(p, dim):
    check(lambda lib, x: F(lib).normalize(x, p=p, dim=dim), make((3, 4)), noncontig=True)
    check(lambda lib, x: F(lib).normalize(x, p=p, dim=dim), make((2, 3, 4)), dtype="float64")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_normalize_dtypes(dtype):
    check(lambda lib, x: F(lib).normalize(x), make((3, 4), dtype), **tol(dtype))


def test_normalize_edges():
    check(lambda lib, x: F(lib).normalize(x, dim=0), np.zeros((3, 4), np.float32))
    check(lambda lib, x: F(lib).normalize(x, dim=0), make(()))
    check(lambda lib, x: F(lib).normalize(x), make((0, 4)))
    check(lambda lib, x: F(lib).normalize(x, dim=3), make((3, 4)))
    check(lambda lib, x: F(lib).normalize(x.to("meta")), make((3, 4)))


# ---------------------------------------------------------------------------------------
# distances
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("a,b,dim", [((3, 4), (3, 4), 1), ((3, 4), (4,), -1), ((2, 3, 4), (3, 1), 0),
                                     ((0, 4), (0, 4), 1), ((4,), (4,), 0)])
def test_cosine_similarity(a, b, dim):
    check(lambda lib, x, y: F(lib).cosine_similarity(x, y, dim=dim), make(a), make(b), noncontig=True)
    check(lambda lib, x, y: lib.cosine_similarity(x, y, dim, 1e-3), make(a), make(b), dtype="float64")
    check(lambda lib, x, y: F(lib).cosine_similarity(x.to("meta"), y.to("meta"), dim=dim), make(a), make(b))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_cosine_similarity_dtypes(dtype):
    check(lambda lib, x, y: F(lib).cosine_similarity(x, y), make((3, 4), dtype), make((3, 4), dtype), **tol(dtype))


def test_cosine_similarity_errors():
    check(lambda lib, x, y: F(lib).cosine_similarity(x, y), make((3, 4)), make((2, 4)))
    check(lambda lib, x, y: F(lib).cosine_similarity(x, y, dim=2), make((3, 4)), make((3, 4)))
    check(lambda lib, x, y: F(lib).cosine_similarity(x, y), np.zeros((3, 4), np.float32), make((3, 4)))


@pytest.mark.parametrize("a,b", [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 3, 4), (3, 1)), ((0, 4), (0, 4)), ((), ())])
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), 0.0])
def test_pairwise_distance(a, b, p):
    check(lambda lib, x, y: F(lib).pairwise_distance(x, y, p=p), make(a), make(b), noncontig=True)
    check(lambda lib, x, y: lib.pairwise_distance(x, y, p, 1e-3, True), make(a), make(b), dtype="float64")
    check(lambda lib, x, y: F(lib).pairwise_distance(x.to("meta"), y.to("meta"), p=p), make(a), make(b))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_pairwise_distance_dtypes(dtype):
    check(lambda lib, x, y: F(lib).pairwise_distance(x, y), make((3, 4), dtype), make((3, 4), dtype), **tol(dtype))


# ---------------------------------------------------------------------------------------
# pad, one_hot
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,pad", [((3, 4), (1, 2)), ((3, 4), (1, 1, 2, 0)), ((2, 3, 4), (-1, 2, 0, 1)),
                                       ((3, 4), (-2, -2)), ((3,), (2, 3)), ((), ()), ((0, 3), (1, 1)),
                                       ((2, 3, 4), (0, 0, 0, 0, 1, 1))])
@pytest.mark.parametrize("value", [None, 2.5])
def test_pad_constant(shape, pad, value):
    check(lambda lib, x: F(lib).pad(x, pad, value=value), make(shape), noncontig=True)
    check(lambda lib, x: lib.constant_pad_nd(x, pad, value or 0), make(shape, "int64"))
    check(lambda lib, x: F(lib).pad(x.to("meta"), pad), make(shape))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,pad", [((2, 5), (2, 1)), ((1, 3, 5), (2, 3)), ((3, 4, 5), (1, 2, 3, 0)),
                                       ((2, 3, 4, 5), (1, 1, 2, 0)), ((2, 3, 4, 4, 3), (1, 0, 1, 2, 2, 1)),
                                       ((3, 4, 4, 3), (1, 0, 1, 2, 2, 1)), ((1, 3, 5), (-1, 2))])
def test_pad_modes(mode, shape, pad):
    check(lambda lib, x: F(lib).pad(x, pad, mode=mode), make(shape), noncontig=True)
    check(lambda lib, x: F(lib).pad(x.to("meta"), pad, mode=mode), make(shape))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_pad_dtypes(mode, dtype):
    check(lambda lib, x: F(lib).pad(x, (1, 2), mode=mode), make((2, 3, 4), dtype))


@pytest.mark.parametrize("mode,shape,pad,value", [
    ("constant", (3, 4), (1,), None), ("constant", (3,), (1, 1, 1, 1), None), ("constant", (3, 4), (-3, -2), None),
    ("reflect", (1, 3, 4), (4, 0), None), ("reflect", (1, 3, 4), (1, 1), 1.0), ("circular", (1, 3, 4), (5, 0), None),
    ("reflect", (4,), (1, 1), None), ("replicate", (1, 2, 3, 4, 5, 6), (1, 1), None), ("wrap", (1, 3, 4), (1, 1), None),
    ("replicate", (1, 3, 4), (-3, -2), None), ("replicate", (0, 3, 4), (1, 1), None)])
def test_pad_errors(mode, shape, pad, value):
    check(lambda lib, x: F(lib).pad(x, pad, mode=mode, value=value), make(shape))


@pytest.mark.parametrize("shape,nc", [((5,), -1), ((2, 3), 7), ((0,), 3), ((), -1), ((2, 0), 2)])
def test_one_hot(shape, nc):
    idx = np.random.default_rng(0).integers(0, 5, size=shape)
    check(lambda lib, x: F(lib).one_hot(x, nc), idx, noncontig=True)
    if nc >= 0:
        check(lambda lib, x: F(lib).one_hot(x.to("meta"), nc), idx)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_one_hot_dtypes(dtype):
    check(lambda lib, x: F(lib).one_hot(x), make((4,), dtype, low=0))


def test_one_hot_errors():
    check(lambda lib, x: F(lib).one_hot(x, 3), np.array([0, 3]))
    check(lambda lib, x: F(lib).one_hot(x), np.array([0, -1]))
    check(lambda lib, x: F(lib).one_hot(x), np.zeros((0,), np.int64))
    check(lambda lib, x: F(lib).one_hot(x.to("meta")), np.array([0, 1]))


# ---------------------------------------------------------------------------------------
# interpolate
# ---------------------------------------------------------------------------------------
_MODES_BY_DIM = {3: ["nearest", "nearest-exact", "linear"], 4: ["nearest", "nearest-exact", "bilinear", "bicubic"],
                 5: ["nearest", "nearest-exact", "trilinear"]}
_SHAPES = {3: (2, 3, 5), 4: (1, 2, 4, 5), 5: (1, 2, 3, 4, 3)}


@pytest.mark.parametrize("nd", [3, 4, 5])
@pytest.mark.parametrize("how", [dict(scale_factor=2), dict(scale_factor=0.5), dict(scale_factor=1.7),
                                 dict(scale_factor=3.0, recompute_scale_factor=True), dict(size=7), dict(size=3),
                                 dict(scale_factor=1.0)])
@pytest.mark.parametrize("align", [None, True, False])
def test_interpolate(nd, how, align):
    for mode in _MODES_BY_DIM[nd]:
        if align is not None and "nearest" in mode:
            continue
        fn = lambda lib, x: F(lib).interpolate(x, mode=mode, align_corners=align, **how)  # noqa: E731
        check(fn, make(_SHAPES[nd]), noncontig=True, atol=1e-5)
        check(fn, make(_SHAPES[nd]), dtype="float64")
        check(lambda lib, x: F(lib).interpolate(x.to("meta"), mode=mode, align_corners=align, **how),
              make(_SHAPES[nd]))


def test_interpolate_per_dim_sizes():
    x = make((1, 2, 4, 5))
    for mode in ["nearest", "nearest-exact", "bilinear", "bicubic"]:
        check(lambda lib, x: F(lib).interpolate(x, size=(3, 9), mode=mode), x, atol=1e-5)
        check(lambda lib, x: F(lib).interpolate(x, scale_factor=(1.5, 0.7), mode=mode), x, atol=1e-5)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic"])
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_interpolate_dtypes(mode, dtype):
    if dtype == "uint8" and mode in ("bilinear", "bicubic"):
        pytest.skip("ember: uint8 linear interpolation not implemented (raises NotImplementedError)")
    check(lambda lib, x: F(lib).interpolate(x, scale_factor=2, mode=mode), make((1, 2, 3, 4), dtype), **tol(dtype))


@pytest.mark.parametrize("kw", [dict(), dict(size=4, scale_factor=2), dict(size=(2, 3), mode="linear"),
                                dict(size=4, mode="nearest", align_corners=True), dict(size=(2,)),
                                dict(scale_factor=(2, 2, 2)), dict(size=4, recompute_scale_factor=True),
                                dict(size=4, mode="bogus"), dict(size=0), dict(size=4, mode="trilinear")])
def test_interpolate_errors(kw):
    check(lambda lib, x: F(lib).interpolate(x, **kw), make((1, 2, 3, 4)))


# ---------------------------------------------------------------------------------------
# scaled_dot_product_attention
# ---------------------------------------------------------------------------------------
def sdpa(lib, *args, **kw):
    return F(lib).scaled_dot_product_attention(*args, **kw)


@pytest.mark.parametrize("qs,ks,vs", [((2, 3, 4), (2, 5, 4), (2, 5, 6)), ((2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4)),
                                      ((3, 4), (5, 4), (5, 2)), ((2, 2, 3, 4), (1, 5, 4), (1, 5, 4)),
                                      ((1, 2, 0, 4), (1, 2, 5, 4), (1, 2, 5, 4))])
@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(scale=0.3)])
def test_sdpa(qs, ks, vs, kw):
    check(lambda lib, q, k, v: sdpa(lib, q, k, v, **kw), make(qs), make(ks), make(vs), noncontig=True)
    check(lambda lib, q, k, v: sdpa(lib, q, k, v, **kw), make(qs), make(ks), make(vs), dtype="float64")
    check(lambda lib, q, k, v: sdpa(lib, q.to("meta"), k.to("meta"), v.to("meta"), **kw), make(qs), make(ks),
          make(vs))


@pytest.mark.parametrize("mask_dtype", ["bool", "float32"])
@pytest.mark.parametrize("ms", [(3, 5), (2, 1, 3, 5), (5,)])
def test_sdpa_masks(mask_dtype, ms):
    mask = make(ms, mask_dtype)
    if mask_dtype == "bool":
        mask[..., 0] = True  # no fully masked row
    check(lambda lib, q, k, v, m: sdpa(lib, q, k, v, attn_mask=m), make((2, 2, 3, 4)), make((2, 2, 5, 4)),
          make((2, 2, 5, 4)), mask)
    check(lambda lib, q, k, v, m: sdpa(lib, q, k, v, attn_mask=m), make((2, 3, 4)), make((2, 5, 4)),
          make((2, 5, 4)), mask if len(ms) != 4 else mask[0])


def test_sdpa_fully_masked_rows_and_gqa():
    mask = np.ones((3, 5), bool)
    mask[1] = False
    check(lambda lib, q, k, v, m: sdpa(lib, q, k, v, attn_mask=m), make((2, 3, 4)), make((2, 5, 4)),
          make((2, 5, 4)), mask)
    check(lambda lib, q, k, v: sdpa(lib, q, k, v, enable_gqa=True), make((1, 4, 3, 4)), make((1, 2, 5, 4)),
          make((1, 2, 5, 4)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_sdpa_dtypes(dtype):
    check(lambda lib, q, k, v: sdpa(lib, q, k, v), make((2, 3, 4), dtype), make((2, 5, 4), dtype),
          make((2, 5, 4), dtype), **tol(dtype))


def test_sdpa_errors_and_dropout():
    check(lambda lib, q, k, v: sdpa(lib, q, k, v), make((2, 3, 4)), make((2, 5, 4), "float64"), make((2, 5, 4)))
    check(lambda lib, q, k, v: sdpa(lib, q, k, v), make((4,)), make((5, 4)), make((5, 4)))
    check(lambda lib, q, k, v, m: sdpa(lib, q, k, v, attn_mask=m), make((3, 4)), make((5, 4)), make((5, 4)),
          make((3, 5), "int64"))
    check(lambda lib, q, k, v: sdpa(lib, q, k, v, dropout_p=0.5).shape, make((2, 3, 4)), make((2, 5, 4)),
          make((2, 5, 4)))
