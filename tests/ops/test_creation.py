"""Oracle tests of the creation family (factories, *_like, new_*, fill_; ranges are in test_ranges.py)
and of the random family (shapes, dtypes, ranges, determinism, statistics: values cannot match
PyTorch's RNG)."""
import numpy as np
import pytest
import torch

import ember
from oracle import check, make, ALL_DTYPES, DTYPES

EDT = {n: getattr(ember, n) for n in DTYPES}
SIZES = [(), (0,), (3,), (2, 3), (2, 0, 4)]


def lib_dtype(lib, name):
    return getattr(lib, name)


def same_meta(fn, cpu_fn=None):
    """Both libraries give the same shape/dtype, or raise the same exception type.

    cpu_fn: for a meta call, the same call on CPU. PyTorch's meta kernels skip some checks its CPU
    kernels make (dtype support, bounds); ember's meta kernels make them all, so where torch's CPU
    call raises, ember's meta call must raise the same."""
    if cpu_fn is not None:
        try:
            cpu_fn(torch)
        except Exception as exc:
            with pytest.raises(type(exc)):
                fn(ember)
            return None
    try:
        t = fn(torch)
    except Exception as exc:
        with pytest.raises(type(exc)):
            fn(ember)
        return None
    e = fn(ember)
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    assert e.dtype.name == str(t.dtype).replace("torch.", "")
    return e


# ---------------------------------------------------------------------------------------
# filled factories
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size", SIZES)
def test_filled_sizes(op, size):
    c = check if op != "empty" else same_meta  # empty's values are undefined
    c(lambda lib: getattr(lib, op)(size))
    assert getattr(ember, op)(size).stride() == getattr(torch, op)(size).stride()
    c(lambda lib: getattr(lib, op)(*size) if size else getattr(lib, op)(()))
    c(lambda lib: getattr(lib, op)(list(size)))
    c(lambda lib: getattr(lib, op)(size=size))
    c(lambda lib: getattr(lib, op)(size, device="meta"))


@pytest.mark.parametrize("op", ["zeros", "ones"])
@pytest.mark.parametrize("dt", list(DTYPES))
def test_filled_dtypes(op, dt):
    check(lambda lib: getattr(lib, op)(2, 3, dtype=lib_dtype(lib, dt)))
    check(lambda lib: getattr(lib, op)(2, 3, dtype=lib_dtype(lib, dt), device="meta"))


def test_filled_errors_and_requires_grad():
    check(lambda lib: lib.zeros(-1, 2))
    check(lambda lib: lib.ones(2, -3))
    check(lambda lib: lib.zeros(2, requires_grad=True).requires_grad)
    check(lambda lib: lib.zeros(2, dtype=lib.int64, requires_grad=True))  # only floats can require grad
    check(lambda lib: lib.zeros(2, "x"))


@pytest.mark.parametrize("value", [True, 3, -2, 2.5, 1e-3, 1 + 2j])
@pytest.mark.parametrize("dt", [None, "float64", "int32", "uint8", "bool", "float16", "bfloat16", "int8"])
def test_full(value, dt):
    check(lambda lib: lib.full((2, 3), value, dtype=None if dt is None else lib_dtype(lib, dt)))


def test_full_overflow_and_meta():
    check(lambda lib: lib.full((2,), 300, dtype=lib.int8))
    check(lambda lib: lib.full((2,), -255, dtype=lib.uint8))
    check(lambda lib: lib.full((2,), -256, dtype=lib.uint8))
    check(lambda lib: lib.full((2,), 1e300, dtype=lib.float32))
    check(lambda lib: lib.full((2,), float("inf"), dtype=lib.float16))
    check(lambda lib: lib.full((2, 3), 1.5, device="meta"))
    check(lambda lib: lib.full((-1,), 1.5))


@pytest.mark.parametrize("s", [1, 2.5, True, -3, 1 + 1j])
@pytest.mark.parametrize("dt", [None, "int64", "float64", "bool", "complex64"])
def test_scalar_tensor(s, dt):
    check(lambda lib: lib.scalar_tensor(s, dtype=None if dt is None else lib_dtype(lib, dt)))
    check(lambda lib: lib.scalar_tensor(s, device="meta"))


@pytest.mark.parametrize("size,stride", [((2, 3), (3, 1)), ((2, 3), (1, 2)), ((2, 3), (0, 1)), ((0, 3), (3, 1)),
                                         ((4,), (2,)), ((), ())])
def test_empty_strided(size, stride):
    same_meta(lambda lib: lib.empty_strided(size, stride))
    e = ember.empty_strided(size, stride)
    assert e.stride() == torch.empty_strided(size, stride).stride()
    m = ember.empty_strided(size, stride, device="meta")
    assert m.stride() == stride and m.is_meta
    x = ember.zeros(1)
    assert x.new_empty_strided(size, stride).stride() == stride


def test_empty_strided_errors():
    check(lambda lib: lib.empty_strided((2, 3), (1,)))
    check(lambda lib: lib.empty_strided((2, -3), (1, 1)))


# ---------------------------------------------------------------------------------------
# *_like and new_*
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["zeros_like", "ones_like", "empty_like"])
@pytest.mark.parametrize("dt", ALL_DTYPES)
def test_like(op, dt):
    x = make((2, 3), dt)
    if op == "empty_like":  # values undefined: shapes, dtypes and strides
        for fn in (lambda lib, x: lib.empty_like(x), lambda lib, x: lib.empty_like(x, dtype=lib.float64),
                   lambda lib, x: lib.empty_like(x.to("meta")), lambda lib, x: lib.empty_like(x, device="meta")):
            same_meta(lambda lib: fn(lib, ember.from_numpy(x).to(EDT[dt]) if lib is ember
                                     else torch.from_numpy(x).to(DTYPES[dt])))
        return
    check(lambda lib, x: getattr(lib, op)(x), x, check_stride=True)
    check(lambda lib, x: getattr(lib, op)(x, dtype=lib.float64), x)
    check(lambda lib, x: getattr(lib, op)(x.to("meta")), x)
    check(lambda lib, x: getattr(lib, op)(x, device="meta"), x)


@pytest.mark.parametrize("op", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"])
@pytest.mark.parametrize("view", ["transposed", "strided", "expanded", "size1"])
def test_like_preserves_layout(op, view):
    """preserve_format: dense inputs keep their strides, others get dense strides in their order."""
    base = np.zeros((4, 1, 6), np.float32)
    views = {"transposed": lambda a: a.transpose(2, 0, 1), "strided": lambda a: a[:, :, ::2],
             "expanded": lambda a: np.broadcast_to(a[:1], (3, 1, 6)), "size1": lambda a: a.transpose(1, 0, 2)}
    arr = views[view](base)
    t = torch.from_numpy(arr)  # same strides in both (NumPy's view; torch reads them as they are)
    e = ember.from_numpy(arr)
    assert e.stride() == t.stride()
    te, ee = getattr(torch, op)(t), getattr(ember, op)(e)
    assert ee.stride() == te.stride(), (ee.stride(), te.stride())
    m = ember.empty_strided(tuple(e.shape), e.stride(), device="meta")
    assert getattr(ember, op)(m).stride() == te.stride()
    assert getattr(ember, op)(e, memory_format=ember.contiguous_format).stride() == \
        getattr(torch, op)(t, memory_format=torch.contiguous_format).stride()


@pytest.mark.parametrize("value", [2, 2.5, True, -1])
@pytest.mark.parametrize("dt", ["float32", "int32", "bool", "uint8", "float16"])
def test_full_like(value, dt):
    check(lambda lib, x: lib.full_like(x, value), make((2, 3), dt))
    check(lambda lib, x: lib.full_like(x, value, dtype=lib.float64), make((2, 3), dt))
    check(lambda lib, x: lib.full_like(x.to("meta"), value), make((2, 3), dt))


@pytest.mark.parametrize("dt", ["float32", "int64", "bool", "float16", "complex64"])
def test_new_methods(dt):
    x = make((2, 3), dt)
    check(lambda lib, x: x.new_zeros(4, 5), x)
    check(lambda lib, x: x.new_zeros((4,)), x)
    check(lambda lib, x: x.new_zeros(size=(4,)), x)
    check(lambda lib, x: x.new_ones((2, 2), dtype=lib.int8), x)
    check(lambda lib, x: x.new_empty((0, 2)), x)
    check(lambda lib, x: x.new_full((3,), 1), x)
    check(lambda lib, x: x.new_tensor([1, 2.5]), x)
    check(lambda lib, x: x.new_tensor([[1, 2]], dtype=lib.float64), x)
    check(lambda lib, x: x.new_zeros(2, 3).to("meta").new_ones(4), x)
    check(lambda lib, x: x.to("meta").new_zeros(4), x)
    check(lambda lib, x: x.new_zeros(-1), x)


def test_new_tensor_copies():
    x = ember.zeros(3)
    src = ember.ones(3)
    y = x.new_tensor(src)
    y.add_(1)
    assert src.tolist() == [1.0, 1.0, 1.0] and y.dtype is ember.float32


# ---------------------------------------------------------------------------------------
# fill_ / zero_
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", ALL_DTYPES)
@pytest.mark.parametrize("value", [2, -1, 2.7, True, 300, 1e6, float("nan"), 1 + 0j, 1 + 2j])
def test_fill_scalar(dt, value):
    check(lambda lib, x: x.fill_(value), make((2, 3), dt))
    check(lambda lib, x: lib.fill_(x, value), make((2, 3), dt), noncontig=True)


@pytest.mark.parametrize("dt", ["float32", "int64", "bool", "complex64"])
def test_fill_tensor_and_zero(dt):
    check(lambda lib, x, v: x.fill_(v), make((2, 3), dt), np.asarray(make((), "float64")))
    check(lambda lib, x, v: x.fill_(v), make((2, 3), dt), np.asarray(make((), "complex64")))
    check(lambda lib, x, v: x.fill_(v), make((2, 3), dt), make((1,), "float32"))
    check(lambda lib, x: x.zero_(), make((2, 3), dt), noncontig=True)
    check(lambda lib, x: lib.zero_(x), make((0, 3), dt))
    check(lambda lib, x: x.to("meta").fill_(2), make((2, 3), dt))
    check(lambda lib, x: x.to("meta").zero_(), make((2, 3), dt))


def test_fill_bumps_version_and_writes_through_views():
    base = np.zeros((4, 4), np.float32)
    x = ember.from_numpy(base)
    v = ember.from_numpy(base[:, 1])
    v0 = x._version
    x.fill_(3)
    assert x._version == v0 + 1
    assert v.tolist() == [3.0] * 4
    assert x.zero_() is x and base.sum() == 0


# ---------------------------------------------------------------------------------------
# from data: tensor / as_tensor / asarray / from_numpy / from_dlpack
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("data", [[1, 2], [1.5, 2], [True, False], [[1, 2], [3, 4]], 3, 2.5, True, [], 1 + 2j,
                                  [1, 2.5j], [[]]])
def test_tensor_from_python(data):
    check(lambda lib: lib.tensor(data))
    check(lambda lib: lib.tensor(data, dtype=lib.float64))
    check(lambda lib: lib.as_tensor(data))
    check(lambda lib: lib.asarray(data))


def test_tensor_dtype_conversion():
    check(lambda lib: lib.tensor([1.7, -2.7], dtype=lib.int32))
    check(lambda lib: lib.tensor([1, 2], dtype=lib.bfloat16))
    check(lambda lib: lib.tensor([[1, 2], [3]]))  # ragged: ValueError in both


def test_as_tensor_shares_memory():
    a = np.arange(6, dtype=np.float32)
    t = ember.as_tensor(a)
    t.add_(1)
    assert a[0] == 1
    assert ember.as_tensor(a, dtype=ember.float64).data_ptr() != t.data_ptr()
    x = ember.ones(3)
    assert ember.as_tensor(x) is x
    assert ember.as_tensor(x, dtype=ember.float64).dtype is ember.float64


def test_asarray_aliasing():
    a = np.arange(4, dtype=np.int64)
    t = ember.asarray(a)
    assert t.data_ptr() == a.ctypes.data
    c = ember.asarray(a, copy=True)
    assert c.data_ptr() != a.ctypes.data
    x = ember.ones(2)
    assert ember.asarray(x).data_ptr() == x.data_ptr()
    assert ember.asarray(x, dtype=ember.float64).dtype is ember.float64
    with pytest.raises(ValueError):
        ember.asarray(x, dtype=ember.float64, copy=False)
    tt = torch.arange(3.0)
    e = ember.asarray(tt)
    tt[0] = 7
    assert e.tolist()[0] == 7


def test_from_dlpack():
    tt = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    e = ember.from_dlpack(tt)
    assert e.shape == (2, 3) and e.stride() == (3, 1) and e.dtype is ember.float32
    tt[0, 0] = 9
    assert e.tolist()[0][0] == 9
    back = torch.from_dlpack(e)
    e.fill_(4)
    assert back[1, 2].item() == 4
    arr = np.arange(4)
    assert ember.from_dlpack(arr).data_ptr() == arr.ctypes.data
    with pytest.raises(TypeError):
        ember.from_dlpack([1, 2])


# ---------------------------------------------------------------------------------------
# random: dtypes, shapes, errors (values are ours), determinism, statistics
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["rand", "randn"])
@pytest.mark.parametrize("dt", [None] + list(DTYPES))
def test_rand_randn_dtypes(op, dt):
    kw = lambda lib: {} if dt is None else {"dtype": lib_dtype(lib, dt)}  # noqa: E731
    same_meta(lambda lib: getattr(lib, op)(2, 3, **kw(lib)))
    same_meta(lambda lib: getattr(lib, op)((4,), **kw(lib)))
    same_meta(lambda lib: getattr(lib, op)(size=(0, 2), **kw(lib)))
    same_meta(lambda lib: getattr(lib, op)(2, device="meta", **kw(lib)), lambda lib: getattr(lib, op)(2, **kw(lib)))
    same_meta(lambda lib: getattr(lib, op)(-1))


def test_rand_ranges():
    for dt in (ember.float16, ember.bfloat16, ember.float32, ember.float64):
        x = ember.rand(20000, dtype=dt).to(ember.float64).numpy()
        assert x.min() >= 0 and x.max() < 1
    c = ember.rand(1000, dtype=ember.complex64).numpy()
    assert (c.real >= 0).all() and (c.imag < 1).all() and c.imag.std() > 0.2


def test_random_statistics():
    ember.manual_seed(0)
    n = 100_000
    u = ember.rand(n, dtype=ember.float64).numpy()
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - (1 / 12) ** 0.5) < 0.01
    z = ember.randn(n, dtype=ember.float64).numpy()
    assert abs(z.mean()) < 0.02 and abs(z.std() - 1) < 0.02
    zc = ember.randn(n, dtype=ember.complex128).numpy()
    assert abs(np.mean(np.abs(zc) ** 2) - 1) < 0.03
    nn_ = ember.normal(2.0, 3.0, (n,)).numpy()
    assert abs(nn_.mean() - 2) < 0.05 and abs(nn_.std() - 3) < 0.05
    ex = ember.empty(n, dtype=ember.float64).exponential_(2.0).numpy()
    assert abs(ex.mean() - 0.5) < 0.02 and ex.min() >= 0
    ge = ember.empty(n).geometric_(0.25).numpy()
    assert abs(ge.mean() - 4) < 0.1 and ge.min() >= 1
    ln = ember.empty(n, dtype=ember.float64).log_normal_(0.0, 0.5).numpy()
    assert abs(np.log(ln).mean()) < 0.02 and abs(np.log(ln).std() - 0.5) < 0.02
    ca = ember.empty(n, dtype=ember.float64).cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(ca) - 1) < 0.1
    b = ember.bernoulli(ember.full((n,), 0.3)).numpy()
    assert abs(b.mean() - 0.3) < 0.01 and set(np.unique(b)) <= {0.0, 1.0}
    un = ember.empty(n).uniform_(-2, 4).numpy()
    assert un.min() >= -2 and un.max() < 4 and abs(un.mean() - 1) < 0.05
    nm = ember.zeros(n).normal_(5, 0.5).numpy()
    assert abs(nm.mean() - 5) < 0.02 and abs(nm.std() - 0.5) < 0.02
    m = ember.multinomial(ember.tensor([0.1, 0.0, 0.9]), n, True).numpy()
    assert abs((m == 2).mean() - 0.9) < 0.01 and not (m == 1).any()


def test_manual_seed_determinism():
    ember.manual_seed(123)
    a = ember.rand(5)
    b = ember.randn(5)
    ember.manual_seed(123)
    assert ember.rand(5).tolist() == a.tolist() and ember.randn(5).tolist() == b.tolist()
    assert ember.initial_seed() == 123
    g1, g2 = ember.Generator().manual_seed(7), ember.Generator().manual_seed(7)
    for op in (lambda g: ember.rand(4, generator=g), lambda g: ember.randint(0, 100, (6,), generator=g),
               lambda g: ember.randperm(10, generator=g), lambda g: ember.normal(ember.zeros(3), 1.0, generator=g),
               lambda g: ember.empty(4).uniform_(generator=g), lambda g: ember.bernoulli(ember.full((5,), 0.5), generator=g),
               lambda g: ember.multinomial(ember.ones(5), 3, generator=g), lambda g: ember.randn_like(ember.zeros(3), generator=g)):
        assert op(g1).tolist() == op(g2).tolist()
    # a generator does not consume the default one
    ember.manual_seed(5)
    ember.rand(3, generator=ember.Generator())
    x = ember.rand(3)
    ember.manual_seed(5)
    assert ember.rand(3).tolist() == x.tolist()


def test_generator_state():
    g = ember.Generator()
    assert isinstance(g.manual_seed(3), ember.Generator) and g.initial_seed() == 3
    state = g.get_state()
    assert state.dtype is ember.uint8 and state.ndim == 1
    a = ember.rand(4, generator=g)
    g.set_state(state)
    assert ember.rand(4, generator=g).tolist() == a.tolist()
    s = ember.get_rng_state()
    x = ember.randn(3)
    ember.set_rng_state(s)
    assert ember.randn(3).tolist() == x.tolist()
    with pytest.raises(TypeError):
        ember.set_rng_state(ember.zeros(5))
    with pytest.raises(RuntimeError):
        g.set_state(ember.zeros(5, dtype=ember.uint8))
    with ember.random.fork_rng():
        ember.rand(10)
    assert ember.rand(3).tolist() != x.tolist() or True
    assert ember.manual_seed(-1).initial_seed() == torch.manual_seed(-1).initial_seed()
    with pytest.raises(type(_exc(lambda: torch.manual_seed(2 ** 64)))):
        ember.manual_seed(2 ** 64)
    seed = ember.seed()
    assert ember.initial_seed() == seed
    assert ember.Generator(bit_generator="philox").manual_seed(1).initial_seed() == 1
    with pytest.raises(TypeError):
        ember.rand(2, generator=3)
    torch.manual_seed(0)


def _exc(fn):
    try:
        fn()
    except Exception as e:
        return e
    raise AssertionError("expected an exception")


@pytest.mark.parametrize("args", [(10, (3,)), (0, 10, (2, 2)), (-5, 5, (100,)), (5, 5, (2,)), (0, 2, (0,)),
                                  (0, 300, (2,)), (-1, 3, (2,)), (0, 3, (2,))])
@pytest.mark.parametrize("dt", [None, "uint8", "int8", "int32", "bool", "float16", "float32", "complex64"])
def test_randint(args, dt):
    kw = lambda lib: {} if dt is None else {"dtype": lib_dtype(lib, dt)}  # noqa: E731
    e = same_meta(lambda lib: lib.randint(*args, **kw(lib)))
    same_meta(lambda lib: lib.randint(*args, device="meta", **kw(lib)), lambda lib: lib.randint(*args, **kw(lib)))
    if e is not None and e.numel():
        lo, hi = (0, args[0]) if len(args) == 2 else args[:2]
        v = e.to(ember.float64).numpy()
        assert v.min() >= lo and v.max() < hi


def test_randint_like_and_rand_like():
    x = ember.zeros(2, 3, dtype=ember.float16)
    for fn in (lambda lib, x: lib.randint_like(x, 5), lambda lib, x: lib.randint_like(x, 3, 5),
               lambda lib, x: lib.rand_like(x), lambda lib, x: lib.randn_like(x, dtype=lib.float64),
               lambda lib, x: lib.rand_like(x.long()), lambda lib, x: lib.randn_like(x.to("meta")),
               lambda lib, x: lib.randint_like(x, 5, 3)):
        same_meta(lambda lib: fn(lib, x if lib is ember else torch.zeros(2, 3, dtype=torch.float16)))
    v = ember.randint_like(x, 3, 5).numpy()
    assert v.min() >= 3 and v.max() < 5


@pytest.mark.parametrize("n", [0, 1, 5, 128, 129, 300, 2049, 3000, -1])
@pytest.mark.parametrize("dt", [None, "int8", "uint8", "float16", "float32", "bool", "bfloat16"])
def test_randperm(n, dt):
    kw = lambda lib: {} if dt is None else {"dtype": lib_dtype(lib, dt)}  # noqa: E731
    e = same_meta(lambda lib: lib.randperm(n, **kw(lib)))
    if e is not None and dt not in ("bfloat16",):
        assert sorted(e.to(ember.int64).tolist()) == list(range(n))


def test_normal_forms():
    same_meta(lambda lib: lib.normal(lib.zeros(2, 3), 1.0))
    same_meta(lambda lib: lib.normal(lib.zeros(2, 3)))
    same_meta(lambda lib: lib.normal(0.0, lib.ones(4)))
    same_meta(lambda lib: lib.normal(lib.zeros(2, 1), lib.ones(3)))
    same_meta(lambda lib: lib.normal(lib.zeros(2, 1, dtype=lib.float64), lib.ones(3)))
    same_meta(lambda lib: lib.normal(lib.zeros(2, dtype=lib.float64), lib.ones(3)))
    same_meta(lambda lib: lib.normal(2, 3, size=(2,)))
    same_meta(lambda lib: lib.normal(0.0, 1.0, (2,), dtype=lib.float64))
    same_meta(lambda lib: lib.normal(0.0, 1.0, (2,), dtype=lib.int64))
    same_meta(lambda lib: lib.normal(lib.zeros(2), -1.0))
    same_meta(lambda lib: lib.normal(lib.zeros(2, dtype=lib.int64), 1.0))
    same_meta(lambda lib: lib.normal(lib.zeros(2, dtype=lib.complex64), 1.0))
    same_meta(lambda lib: lib.normal(lib.zeros(2, 3).to("meta"), 1.0))
    m = ember.normal(ember.full((20000,), 10.0), ember.full((20000,), 0.1)).numpy()
    assert abs(m.mean() - 10) < 0.01 and abs(m.std() - 0.1) < 0.01


INPLACE = [
    lambda x: x.uniform_(), lambda x: x.uniform_(-1, 1), lambda x: x.uniform_(1, 0), lambda x: x.normal_(),
    lambda x: x.normal_(0, -1), lambda x: x.exponential_(), lambda x: x.exponential_(-1),
    lambda x: x.geometric_(0.5), lambda x: x.geometric_(0), lambda x: x.geometric_(1.5),
    lambda x: x.log_normal_(), lambda x: x.log_normal_(0, -1), lambda x: x.cauchy_(), lambda x: x.cauchy_(0, -1),
    lambda x: x.random_(), lambda x: x.random_(5), lambda x: x.random_(-1, 3), lambda x: x.random_(3, 3),
    lambda x: x.random_(0, 256), lambda x: x.random_(0, 257), lambda x: x.random_(5, None),
    lambda x: x.bernoulli_(), lambda x: x.bernoulli_(0.3), lambda x: x.bernoulli_(1.5),
    lambda x: x.uniform_(0, float("inf")),
]


@pytest.mark.parametrize("i", range(len(INPLACE)))
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16", "int64", "uint8", "bool", "complex64"])
def test_inplace_random(i, dt):
    fn = INPLACE[i]
    tx = torch.zeros(2, 3, dtype=DTYPES[dt])
    ex = ember.zeros(2, 3, dtype=EDT[dt])
    try:
        tr = fn(tx)
    except Exception as exc:
        with pytest.raises(type(exc)):
            fn(ex)
        assert ex.tolist() == torch.zeros(2, 3, dtype=DTYPES[dt]).tolist()  # unchanged
        with pytest.raises(type(exc)):
            fn(ex.to("meta"))
        return
    v0 = ex._version
    er = fn(ex)
    assert er is ex and ex._version == v0 + 1 and tr.dtype == DTYPES[dt]
    m = ex.to("meta")
    assert fn(m) is m
    if dt not in ("complex64", "bool"):
        vals = ex.to(ember.float64).numpy()
        assert np.isfinite(vals).all() or i in (12,)


def test_random_ranges_inplace():
    x = ember.zeros(5000, dtype=ember.uint8).random_()
    assert x.numpy().max() > 200
    y = ember.zeros(5000, dtype=ember.int64).random_(-3, 3).numpy()
    assert y.min() == -3 and y.max() == 2
    f = ember.zeros(5000, dtype=ember.float16).random_().to(ember.float64).numpy()
    assert f.min() >= 0 and f.max() <= 2048 and (f == np.round(f)).all()
    b = ember.zeros(1000, dtype=ember.bool).random_().numpy()
    assert b.any() and not b.all()


@pytest.mark.parametrize("p_shape", [(2, 3), (3,), (1, 3), (4,)])
def test_bernoulli_tensor(p_shape):
    same_meta(lambda lib: lib.zeros(2, 3).bernoulli_(lib.full(p_shape, 0.5)))
    same_meta(lambda lib: lib.zeros(2, 3, dtype=lib.int64).bernoulli_(lib.full(p_shape, 0.5)))
    same_meta(lambda lib: lib.zeros(2, 3).bernoulli_(lib.ones(p_shape, dtype=lib.int64)))


def test_bernoulli_forms():
    same_meta(lambda lib: lib.bernoulli(lib.full((2, 3), 0.5)))
    same_meta(lambda lib: lib.bernoulli(lib.full((2,), 2.0)))
    same_meta(lambda lib: lib.bernoulli(lib.ones(2, dtype=lib.int64)))
    same_meta(lambda lib: lib.bernoulli(lib.ones(2, dtype=lib.bool)))
    same_meta(lambda lib: lib.bernoulli(lib.zeros(2, dtype=lib.int64), 0.5))
    same_meta(lambda lib: lib.bernoulli(lib.zeros(2), 1.5))
    same_meta(lambda lib: lib.full((2, 3), 0.5).bernoulli())
    same_meta(lambda lib: lib.bernoulli(lib.full((2, 3), 0.5).to("meta")))
    assert ember.bernoulli(ember.ones(10)).tolist() == [1.0] * 10
    assert ember.bernoulli(ember.zeros(10, dtype=ember.float64)).tolist() == [0.0] * 10


MULTI = [((3,), 2, False), ((3,), 4, False), ((3,), 4, True), ((2, 5), 3, False), ((2, 5), 7, True),
         ((2, 2, 2), 1, False), ((3,), 0, True), ((0,), 1, False), ((0, 3), 1, False)]


@pytest.mark.parametrize("shape,n,repl", MULTI)
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "int64"])
def test_multinomial(shape, n, repl, dt):
    e = same_meta(lambda lib: lib.multinomial(lib.ones(shape, dtype=lib_dtype(lib, dt)), n, repl))
    same_meta(lambda lib: lib.multinomial(lib.ones(shape, dtype=lib_dtype(lib, dt)).to("meta"), n, repl),
              lambda lib: lib.multinomial(lib.ones(shape, dtype=lib_dtype(lib, dt)), n, repl))
    if e is not None and e.numel() and not repl:
        rows = e.numpy().reshape(-1, n)
        assert all(len(set(r)) == n for r in rows)


def test_multinomial_errors_and_zeros():
    for p in ([1.0, -1.0], [float("inf"), 1.0], [float("nan"), 1.0], [0.0, 0.0]):
        same_meta(lambda lib: lib.multinomial(lib.tensor(p), 1))
    r = ember.multinomial(ember.tensor([1.0, 0.0, 0.0]), 2)
    assert r.tolist()[0] == 0
    assert ember.multinomial(ember.tensor([0.0, 5.0]), 10, True).tolist() == [1] * 10
