"""Oracle tests of the indexing family: subscripts (get/set), index/index_put, index_select,
gather, masked_*, take/take_along_dim/put, nonzero/argwhere."""
import warnings

import numpy as np
import pytest

import ember
from oracle import ALL_DTYPES, check, lib_tensor as T, make

warnings.filterwarnings("ignore", message=".*non-tuple sequence.*")
warnings.filterwarnings("ignore", message=".*uint8 is now deprecated.*")

MASK34 = make((3, 4), "bool", seed=1)


# ---------------------------------------------------------------------------------------
# __getitem__
# ---------------------------------------------------------------------------------------
BASIC = {  # views: compared with strides and storage offsets
    "int": lambda lib: 1, "neg_int": lambda lib: -1, "slice": lambda lib: slice(1, 3),
    "slice_step": lambda lib: slice(None, None, 2), "slice_empty": lambda lib: slice(5, 10),
    "slice_rev_empty": lambda lib: slice(2, 1), "slice_step_big": lambda lib: slice(1, 2, 5),
    "none": lambda lib: None, "none_none": lambda lib: (None, None), "none_slice": lambda lib: (None, slice(1, 2)),
    "ellipsis": lambda lib: Ellipsis, "empty_tuple": lambda lib: (), "ell_none": lambda lib: (Ellipsis, None),
    "int_int": lambda lib: (1, 2), "slice_int": lambda lib: (slice(None), 0), "int_none_slice": lambda lib: (0, None, slice(1, None)),
    "ell_int": lambda lib: (Ellipsis, 1), "int_ell": lambda lib: (1, Ellipsis), "np_int": lambda lib: np.int64(1),
    "tensor0d": lambda lib: T(lib, 1), "tensor0d_i16": lambda lib: T(lib, 1, "int16"),
    "np0d": lambda lib: np.array(1), "slice_neg": lambda lib: slice(-3, -1), "double_ell": lambda lib: (0, ..., ...),
}
ADVANCED = {  # copies
    "list": lambda lib: [0, 2], "empty_list": lambda lib: [], "bool_list": lambda lib: [True, False, True],
    "tensor": lambda lib: T(lib, [2, 0, 2]), "tensor_i32": lambda lib: T(lib, [1, 0], "int32"),
    "tensor_neg": lambda lib: T(lib, [-1, 0]), "tensor_2d": lambda lib: T(lib, [[0, 1], [2, 2]]),
    "mask": lambda lib: T(lib, MASK34.tolist()), "mask_1d": lambda lib: T(lib, [True, False, True]),
    "mask_u8": lambda lib: T(lib, [1, 0, 1], "uint8"), "true": lambda lib: True, "false": lambda lib: False,
    "t_true": lambda lib: T(lib, True), "t_false": lambda lib: T(lib, False), "np_arr": lambda lib: np.array([0, 1]),
    "np_mask": lambda lib: np.array([True, False, True]),
    "adjacent": lambda lib: (slice(None), [0, 1], [1, 2]), "separated": lambda lib: ([0, 1], slice(None), [1, 2]),
    "int_then_list": lambda lib: (0, slice(None), [1, 2]), "list_then_int": lambda lib: ([0, 1], 1),
    "sep_none": lambda lib: (None, [0, 1], None, [1, 2]), "bcast": lambda lib: (T(lib, [[0], [1]]), T(lib, [1, 2, 3])),
    "ell_list": lambda lib: (Ellipsis, [0, 1]), "ell_list_none": lambda lib: (Ellipsis, [0, 1], None),
    "mask_int": lambda lib: (T(lib, MASK34.tolist()), 0), "mask_ell_int": lambda lib: (T(lib, MASK34.tolist()), ..., 0),
    "int_mask": lambda lib: (0, T(lib, [True, False, True, True])), "int_true": lambda lib: (0, True),
    "true_int": lambda lib: (T(lib, True), 0), "nested_list": lambda lib: [[0, 1], [1, 0]],
    "list_tensor_mix": lambda lib: [0, [1]], "slice_list": lambda lib: (slice(1, None), [0, 3]),
}


@pytest.mark.parametrize("name", list(BASIC))
def test_getitem_basic_view(name):
    idx = BASIC[name]
    x = make((3, 4, 5), "float32")

    def run(lib, x):
        v = x[idx(lib)]
        # (PyTorch reports data_ptr 0 for empty tensors)
        return v, v.stride(), v.storage_offset(), v.data_ptr() - x.data_ptr() if v.numel() else 0, v.is_contiguous()
    check(run, x, check_stride=True)
    check(run, x, noncontig=True, check_stride=True)
    if name != "np0d":  # PyTorch makes the NumPy index a meta tensor and fails on .item()
        check(lambda lib, x: x.to("meta")[idx(lib)], x, check_stride=True)


@pytest.mark.parametrize("name", list(BASIC))
def test_getitem_basic_aliases(name):
    idx = BASIC[name]

    def run(lib, x):
        v = x[idx(lib)]
        v.mul_(0)  # writes through the view, bumps the shared version counter
        return x, x._version, v._version
    check(run, make((3, 4, 5), "float32"))


@pytest.mark.parametrize("name", list(ADVANCED))
def test_getitem_advanced(name):
    idx = ADVANCED[name]
    x = make((3, 4, 5), "float32")
    check(lambda lib, x: x[idx(lib)], x)
    check(lambda lib, x: x[idx(lib)], x, noncontig=True)

    def copy(lib, x):  # advanced indexing copies
        r = x[idx(lib)]
        r.mul_(0)
        return x
    check(copy, x)
    if "mask" not in name and name not in ("bool_list", "np_mask") and "true" not in name and name != "false":
        check(lambda lib, x: x.to("meta")[idx(lib)], x)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_getitem_dtypes(dtype):
    x = make((3, 4), dtype)
    check(lambda lib, x: (x[1], x[:, 1:3], x[[0, 2]], x[x != x[0, 0]], x[None, 0]), x, dtype=dtype)


@pytest.mark.parametrize("shape", [(), (0,), (4,), (0, 3), (2, 0, 3)])
def test_getitem_shapes(shape):
    x = make(shape, "float32")
    for idx in (Ellipsis, (), None, True, False, (Ellipsis, None)):
        check(lambda lib, x: x[idx], x)
    check(lambda lib, x: x[x > 0], x)
    if shape:
        check(lambda lib, x: x[-1] if shape[0] else x[1:], x)
        check(lambda lib, x: x[T(lib, np.zeros(0, np.int64))], x)
        check(lambda lib, x: x[0:0], x)


def test_getitem_fast_paths():
    x = make((4,), "float32")
    check(lambda lib, x: (x[0], x[1:3], x[x > 0], x[T(lib, [3, 1])], x[0].storage_offset()), x)
    check(lambda lib, x: (x[-4], x[:, ], x[1:2, ...]), x)


GETITEM_ERRORS = {
    "int_oob": lambda lib: 5, "neg_oob": lambda lib: -4, "tuple_oob": lambda lib: (0, 7),
    "step_neg": lambda lib: slice(None, None, -1), "step_zero": lambda lib: slice(None, None, 0),
    "too_many": lambda lib: (0, 0, 0), "float": lambda lib: 1.5, "str": lambda lib: "a",
    "float_tensor": lambda lib: T(lib, [0.0]), "i16_tensor": lambda lib: T(lib, [0, 1], "int16"),
    "tensor_oob": lambda lib: T(lib, [7]), "tensor_neg_oob": lambda lib: T(lib, [-4]),
    "mask_shape": lambda lib: T(lib, [True, False]), "bcast_fail": lambda lib: (T(lib, [0, 1]), T(lib, [0, 1, 2])),
    "float_tensor_0d": lambda lib: T(lib, 1.0), "list_oob": lambda lib: [0, 3], "float_list": lambda lib: [0.5],
    "tuple_list_oob": lambda lib: (slice(None), [4]),
}


@pytest.mark.parametrize("name", list(GETITEM_ERRORS))
def test_getitem_errors(name):
    idx = GETITEM_ERRORS[name]
    check(lambda lib, x: x[idx(lib)], make((3, 4), "float32"))


def test_getitem_0d_errors():
    x = make((), "float32")
    for idx in (0, slice(1, 2), (0,), [0]):
        check(lambda lib, x: x[idx], x)
    check(lambda lib, x: x[T(lib, 0)], x)


def test_getitem_messages():
    x = ember.zeros(3) if hasattr(ember, "zeros") else ember.tensor([0.0, 0.0, 0.0])
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 3"):
        x[ember.tensor([7])]


def test_getitem_requires_grad_path():
    # a non-plain tensor goes through the operators (no fast path); same results
    check(lambda lib, x: (x.requires_grad_()[1:3, 0].detach(), x[[0, 1], 1:].detach(), x[0].detach()),
          make((3, 4), "float32"))


# ---------------------------------------------------------------------------------------
# __setitem__
# ---------------------------------------------------------------------------------------
def _set(x, idx, v):
    x[idx] = v
    return x, x._version


SET_CASES = {
    "int_scalar": (lambda lib: 0, lambda lib: 1.5), "tuple_scalar": (lambda lib: (0, 1), lambda lib: 2),
    "slice_scalar": (lambda lib: slice(1, None), lambda lib: -1), "ell": (lambda lib: Ellipsis, lambda lib: 3),
    "none": (lambda lib: None, lambda lib: 3), "true": (lambda lib: True, lambda lib: 3),
    "false": (lambda lib: False, lambda lib: 3), "bool_val": (lambda lib: 0, lambda lib: True),
    "np_scalar": (lambda lib: 0, lambda lib: np.float64(2.5)),
    "list_scalar": (lambda lib: [0, 2], lambda lib: 1), "mask_scalar": (lambda lib: T(lib, MASK34.tolist()), lambda lib: 9),
    "row_tensor": (lambda lib: 1, lambda lib: T(lib, [1.0, 2.0, 3.0, 4.0])),
    "bcast_tensor": (lambda lib: slice(None), lambda lib: T(lib, [1.0, 2.0, 3.0, 4.0])),
    "leading_ones": (lambda lib: 0, lambda lib: T(lib, [[[1.0, 2.0, 3.0, 4.0]]])),
    "cast_basic": (lambda lib: 0, lambda lib: T(lib, [1, 2, 3, 4])),
    "adv_tensor": (lambda lib: [0, 1], lambda lib: T(lib, [1.0, 2.0, 3.0, 4.0])),
    "adv_leading_ones": (lambda lib: [0, 1], lambda lib: T(lib, [[[1.0, 2.0, 3.0, 4.0]]])),
    "adv_2d": (lambda lib: (slice(None), [0, 3]), lambda lib: T(lib, [[1.0, 2.0]] * 3)),
    "mask_tensor": (lambda lib: T(lib, [True, False, True]), lambda lib: T(lib, [5.0, 6.0, 7.0, 8.0])),
    "adv_dup": (lambda lib: [0, 0], lambda lib: T(lib, [[1.0] * 4, [2.0] * 4])),
    "0d_tensor_val": (lambda lib: [1], lambda lib: T(lib, 4.0)),
    # errors
    "oob": (lambda lib: 3, lambda lib: 1), "step": (lambda lib: slice(None, None, -1), lambda lib: 1),
    "bad_shape": (lambda lib: 0, lambda lib: T(lib, [1.0, 2.0, 3.0])),
    "bad_shape2": (lambda lib: 0, lambda lib: T(lib, [[1.0] * 4] * 2)),
    "adv_bad_shape": (lambda lib: [0, 1], lambda lib: T(lib, [1.0, 2.0, 3.0])),
    "adv_dtype": (lambda lib: [0, 1], lambda lib: T(lib, [1.0] * 4, "float64")),
    "complex_val": (lambda lib: 0, lambda lib: 1 + 2j), "str_val": (lambda lib: 0, lambda lib: "a"),
    "list_val": (lambda lib: 0, lambda lib: [1, 2, 3, 4]), "adv_oob": (lambda lib: [5], lambda lib: 1),
}


@pytest.mark.parametrize("name", list(SET_CASES))
def test_setitem(name):
    idx, val = SET_CASES[name]
    check(lambda lib, x: _set(x, idx(lib), val(lib)), make((3, 4), "float32"))
    check(lambda lib, x: _set(x, idx(lib), val(lib)), make((3, 4), "float32"), noncontig=True)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("value", [0, 1, -1, 2.7, True, 300, 1e20])
def test_setitem_scalar_cast(dtype, value):
    check(lambda lib, x: _set(x, 1, value), make((3, 2), dtype), dtype=dtype)
    check(lambda lib, x: _set(x, [0, 2], value), make((3, 2), dtype), dtype=dtype)


def test_setitem_through_view_and_meta():
    def run(lib, x):
        v = x[1:]
        v[0, [1, 2]] = 7.0
        v[:, 0] = v[:, 1]
        return x, x._version, v._version
    check(run, make((3, 4), "float32"))
    check(lambda lib, x: _set(x.to("meta"), [0, 1], 1.0)[0], make((3, 4), "float32"))
    check(lambda lib, x: _set(x.to("meta"), 0, 1.0)[0], make((3, 4), "float32"))


# ---------------------------------------------------------------------------------------
# index / index_put
# ---------------------------------------------------------------------------------------
def _idx_list(lib, kind):
    return {
        "one": [T(lib, [2, 0])], "two": [T(lib, [2, 0]), T(lib, [1, 1])], "none_first": [None, T(lib, [3, 0, 3])],
        "sep": [T(lib, [0, 1]), None, T(lib, [1, 0])], "mask": [T(lib, MASK34.tolist())],
        "i32": [T(lib, [1], "int32")], "0d": [T(lib, 1)],
    }[kind]


@pytest.mark.parametrize("kind", ["one", "two", "none_first", "sep", "mask", "i32", "0d"])
def test_index_op(kind):
    x = make((3, 4, 2), "float32")
    check(lambda lib, x: lib.ops.aten.index.Tensor(x, _idx_list(lib, kind)), x)
    check(lambda lib, x: lib.ops.aten.index.Tensor(x, _idx_list(lib, kind)), x, noncontig=True)
    if kind != "mask":
        check(lambda lib, x: lib.ops.aten.index.Tensor(x.to("meta"), [t.to("meta") for t in _idx_list(lib, kind)
                                                                     if t is not None] if kind != "none_first" and
                                                       kind != "sep" else [None if t is None else t.to("meta")
                                                                           for t in _idx_list(lib, kind)]), x)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(dtype, accumulate):
    x, v = make((3, 4), dtype), make((3, 4), dtype, seed=3)
    check(lambda lib, x, v: x.index_put_((T(lib, [0, 0, 2]),), v[:3] if False else v[0], accumulate=accumulate), x, v,
          dtype=dtype)
    check(lambda lib, x, v: x.index_put((T(lib, [0, 0, 2]), T(lib, [1, 1, 3])), v[0, :3], accumulate), x, v,
          dtype=dtype)
    check(lambda lib, x, v: lib.index_put(x, (T(lib, MASK34.tolist()),), v[0, 0], accumulate), x, v, dtype=dtype)


def test_index_put_accumulate_duplicates_and_errors():
    x = make((5,), "float64")
    check(lambda lib, x: x.index_put_((T(lib, [1, 1, 1, 4]),), T(lib, [1.0, 2.0, 3.0, 4.0], "float64"), True), x)
    check(lambda lib, x: x.index_put_((T(lib, [1, 7]),), T(lib, [1.0, 2.0], "float64")), x, noncontig=True)
    check(lambda lib, x: x.index_put_((T(lib, [1, 2]),), T(lib, [1.0, 2.0])), x)
    check(lambda lib, x: x.index_put_((T(lib, [1, 2]),), T(lib, [1.0, 2.0, 3.0], "float64")), x)
    check(lambda lib, x: x.index_put_((T(lib, [1.0]),), T(lib, 1.0, "float64")), x)
    check(lambda lib, x: x.to("meta").index_put_((T(lib, [1, 2]).to("meta"),), T(lib, 1.0, "float64").to("meta")), x)
    check(lambda lib, x: (x.index_put_((T(lib, [0]),), T(lib, 3.0, "float64")), x._version)[1], x)


# ---------------------------------------------------------------------------------------
# index_select / gather / take / take_along_dim
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_select_gather_take_dtypes(dtype):
    x = make((3, 4), dtype)
    check(lambda lib, x: x.index_select(1, T(lib, [3, 0, 0])), x, dtype=dtype)
    check(lambda lib, x: lib.gather(x, 0, T(lib, [[0, 2, 1, 1], [2, 2, 0, 0]])), x, dtype=dtype)
    check(lambda lib, x: lib.take(x, T(lib, [[0, -1], [5, 11]])), x, dtype=dtype)
    check(lambda lib, x: lib.take_along_dim(x, T(lib, [[0, -1]]), 1), x, dtype=dtype)


@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((3, 4), -1), ((), 0), ((5,), 0), ((0, 3), 1), ((2, 3, 4), 1)])
def test_index_select_shapes(shape, dim):
    x = make(shape, "float32")
    n = shape[dim] if shape else 1
    for idx in ([0] * min(n, 1), [n - 1, 0] if n else [], 0 if n else None):
        if idx is None:
            continue
        check(lambda lib, x: lib.index_select(x, dim, T(lib, idx)), x)
        check(lambda lib, x: lib.index_select(x, dim, T(lib, idx)), x, noncontig=True)
        if shape or np.size(idx) == 1:  # PyTorch's meta kernel skips the scalar check
            check(lambda lib, x: lib.index_select(x.to("meta"), dim, T(lib, idx).to("meta")), x)
    check(lambda lib, x: lib.index_select(x, dim, T(lib, [n])), x)
    check(lambda lib, x: lib.index_select(x, dim, T(lib, [-1])), x)
    check(lambda lib, x: lib.index_select(x, dim, T(lib, [0.0])), x)
    check(lambda lib, x: lib.index_select(x, dim, T(lib, [[0]])), x)
    check(lambda lib, x: lib.index_select(x, dim, T(lib, [0], "int32")), x)
    check(lambda lib, x: lib.index_select(x, 5, T(lib, [0])), x)


GATHER_CASES = [  # (self shape, dim, index)
    ((3, 4), 0, [[0, 1, 2, 0]]), ((3, 4), 1, [[0, 1, 1, 1, 1]]), ((3, 4), 0, [[0, 1]] * 4), ((3, 4), 1, [[3], [0]]),
    ((), 0, 0), ((), 0, [0, 0]), ((3,), 0, 0), ((3, 4), 0, [[0, -1]]), ((3, 4), 0, [[0, 7]]), ((3, 4), 0, [0, 1]),
    ((2, 3, 4), 2, [[[3, 0]], [[1, 1]]]), ((3, 4), 0, np.zeros((0, 4), np.int64)),
]


@pytest.mark.parametrize("shape,dim,index", GATHER_CASES)
def test_gather(shape, dim, index):
    x = make(shape, "float32")
    idx = lambda lib: lib.from_numpy(index) if isinstance(index, np.ndarray) else T(lib, index)  # noqa: E731
    check(lambda lib, x: lib.gather(x, dim, idx(lib)), x)
    if shape:
        check(lambda lib, x: x.gather(dim, idx(lib)), x, noncontig=True)
    check(lambda lib, x: x.to("meta").gather(dim, idx(lib).to("meta")), x)
    check(lambda lib, x: x.gather(dim, idx(lib).int()), x)


@pytest.mark.parametrize("shape", [(), (0,), (6,), (2, 3)])
def test_take(shape):
    x = make(shape, "float32")
    n = int(np.prod(shape))
    for idx in ([0, -1] if n else [], [[n - 1]] if n else [[]], [n], [-n - 1]):
        check(lambda lib, x: lib.take(x, T(lib, idx, "int64")), x)
        check(lambda lib, x: x.take(T(lib, idx, "int64")), x, noncontig=True)
        check(lambda lib, x: x.to("meta").take(T(lib, idx, "int64").to("meta")), x)
    check(lambda lib, x: lib.take(x, T(lib, [0], "int32")), x)


TAKE_ALONG = [((3, 4), [[0, -1]], 1), ((3, 4), [[0, 1]], None), ((3, 4), [0, 1], None), ((3, 4), [[0], [1]], 0),
              ((3, 4), [[[0]], [[1]]], 0), ((3, 4), [0, 1], 0), ((3, 4), [[0, 3]], 0), ((3, 4), [0, 12], None),
              ((3, 4), [0, -1], None),
              ((2, 1, 4), [[[0], [1], [0]]], 2), ((3, 4), [[0, 1]], -1)]


@pytest.mark.parametrize("shape,index,dim", TAKE_ALONG)
def test_take_along_dim(shape, index, dim):
    x = make(shape, "float32")
    check(lambda lib, x: lib.take_along_dim(x, T(lib, index), dim), x)
    check(lambda lib, x: x.take_along_dim(T(lib, index), dim=dim), x, noncontig=True)
    check(lambda lib, x: lib.take_along_dim(x.to("meta"), T(lib, index).to("meta"), dim), x)
    check(lambda lib, x: lib.take_along_dim(x, T(lib, index).int(), dim), x)


# ---------------------------------------------------------------------------------------
# masked_fill / masked_select / masked_scatter
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_masked_dtypes(dtype):
    x, m = make((3, 4), dtype), make((3, 4), "bool", seed=2)
    check(lambda lib, x, m: x.masked_fill(m, 1), x, m, dtype=dtype)
    check(lambda lib, x, m: x.masked_fill(m, T(lib, 0)), x, m, dtype=dtype)
    check(lambda lib, x, m: x.masked_fill_(m[0], True), x, m, dtype=dtype)
    check(lambda lib, x, m: lib.masked_select(x, m), x, m, dtype=dtype)
    check(lambda lib, x, m: x.masked_scatter(m, x.flip(0) if hasattr(x, "flip") else x * 1), x, m, dtype=dtype)
    check(lambda lib, x, m, s: x.masked_scatter_(m[1], s), x, m, make((12,), dtype, seed=9), dtype=dtype)


@pytest.mark.parametrize("xs,ms", [((3, 4), (4,)), ((4,), (3, 4)), ((), (2,)), ((2, 0), (2, 1)), ((3, 1), (1, 4)),
                                   ((), ())])
def test_masked_broadcast(xs, ms):
    x, m = make(xs, "float32"), make(ms, "bool", seed=4)
    n = int(np.prod(np.broadcast_shapes(xs, ms)))
    src = make((n + 1,), "float32", seed=6)
    check(lambda lib, x, m: x.masked_fill(m, -2.5), x, m)
    check(lambda lib, x, m: lib.masked_select(x, m), x, m)
    check(lambda lib, x, m, s: x.masked_scatter(m, s), x, m, src)
    check(lambda lib, x, m: x.masked_fill_(m, 0.5), x, m)
    check(lambda lib, x, m, s: x.masked_scatter_(m, s), x, m, src)
    check(lambda lib, x, m: x.masked_fill(m, 1.0), x, m, noncontig=True)
    check(lambda lib, x, m: lib.masked_select(x, m), x, m, noncontig=True)
    check(lambda lib, x, m: x.to("meta").masked_fill(m.to("meta"), 1.0), x, m)
    check(lambda lib, x, m, s: x.to("meta").masked_scatter(m.to("meta"), s.to("meta")), x, m, src)


MASKED_ERRORS = {
    "fill_float_mask": lambda lib, x: x.masked_fill(x > 0 if False else x * 0, 1.0),
    "fill_u8_mask": lambda lib, x: x.masked_fill(T(lib, [1, 0, 1, 0], "uint8"), 1.0),
    "fill_1d_value": lambda lib, x: x.masked_fill(T(lib, [True] * 4), T(lib, [1.0])),
    "fill_overflow": lambda lib, x: x.byte().masked_fill(T(lib, [True] * 4), 300),
    "fill_complex": lambda lib, x: x.masked_fill(T(lib, [True] * 4), 1 + 2j),
    "fill_inplace_grow": lambda lib, x: x.masked_fill_(T(lib, [[[True] * 4] * 3] * 2), 1.0),
    "fill_bad_bcast": lambda lib, x: x.masked_fill(T(lib, [True] * 3), 1.0),
    "select_float_mask": lambda lib, x: x.masked_select(x),
    "scatter_few": lambda lib, x: x.masked_scatter(T(lib, [True] * 4), x[0]),
    "scatter_dtype": lambda lib, x: x.masked_scatter(T(lib, [True] * 4), x.double()),
    "scatter_float_mask": lambda lib, x: x.masked_scatter(x, x),
    "scatter_inplace_grow": lambda lib, x: x.masked_scatter_(T(lib, [[[True] * 4] * 3] * 2), x.repeat(2, 1)
                                                             if hasattr(x, "repeat") else x),
    "select_meta": lambda lib, x: x.to("meta").masked_select(T(lib, [True] * 4).to("meta")),
}


@pytest.mark.parametrize("name", list(MASKED_ERRORS))
def test_masked_errors(name):
    fn = MASKED_ERRORS[name]
    # separate buffers: a failing PyTorch op may write part of its result before raising
    check(fn, make((3, 4), "float32"), noncontig=True)
    check(lambda lib, x: fn(lib, x.clone()), make((3, 4), "float32"))


def test_masked_fill_value_cast():
    check(lambda lib, x: x.int().masked_fill(T(lib, [True, False, True, True]), 2.5), make((3, 4)))
    check(lambda lib, x: x.int().masked_fill(T(lib, [True, False, True, True]), T(lib, 2.5)), make((3, 4)))
    check(lambda lib, x: x.masked_fill(T(lib, [True, False, True, True]), T(lib, 2, "float64")), make((3, 4)))
    check(lambda lib, x: x.bool().masked_fill(T(lib, [True, False, True, True]), 5), make((3, 4)))
    check(lambda lib, x: x.byte().masked_fill(T(lib, [True, False, True, True]), -1), make((3, 4)))


# ---------------------------------------------------------------------------------------
# put / nonzero / argwhere
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_put_dtypes(dtype):
    x, s = make((3, 4), dtype), make((3,), dtype, seed=8)
    check(lambda lib, x, s: x.put_(T(lib, [0, -1, 5]), s), x, s, dtype=dtype)
    check(lambda lib, x, s: x.put(T(lib, [1, 1, 1]), s, accumulate=dtype != "bool"), x, s, dtype=dtype)
    check(lambda lib, x, s: x.t().put_(T(lib, [0, 1, 2]), s), x, s, dtype=dtype)


PUT_ERRORS = {
    "oob": lambda lib, x: x.put_(T(lib, [0, 12]), x[0, :2]),
    "neg_oob": lambda lib, x: x.put_(T(lib, [0, -13]), x[0, :2]),
    "count": lambda lib, x: x.put_(T(lib, [0, 1]), x[0, :3]),
    "dtype": lambda lib, x: x.put_(T(lib, [0, 1]), x[0, :2].double()),
    "i32": lambda lib, x: x.put_(T(lib, [0, 1], "int32"), x[0, :2]),
    "meta": lambda lib, x: x.to("meta").put(T(lib, [0, 1]).to("meta"), x[0, :2].to("meta")),
}


@pytest.mark.parametrize("name", list(PUT_ERRORS))
def test_put_errors(name):
    fn = PUT_ERRORS[name]
    # separate buffers: a failing PyTorch op may write part of its result before raising
    check(fn, make((3, 4), "float32"), noncontig=True)
    check(lambda lib, x: fn(lib, x.clone()), make((3, 4), "float32"))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 2)])
def test_nonzero(dtype, shape):
    x = make(shape, dtype, low=-1, high=1)
    check(lambda lib, x: lib.nonzero(x), x, dtype=dtype)
    check(lambda lib, x: x.nonzero(as_tuple=True), x, dtype=dtype)
    check(lambda lib, x: lib.nonzero(x, as_tuple=True), x, dtype=dtype)
    check(lambda lib, x: lib.argwhere(x), x, dtype=dtype, noncontig=bool(shape))
    check(lambda lib, x: x.to("meta").nonzero(), x, dtype=dtype)
    check(lambda lib, x: x.to("meta").argwhere(), x, dtype=dtype)


def test_nonzero_scalar_values():
    check(lambda lib: (lib.nonzero(T(lib, 5)), lib.nonzero(T(lib, 0)), lib.nonzero(T(lib, 5), as_tuple=True)))


# ---------------------------------------------------------------------------------------
# out= variants
# ---------------------------------------------------------------------------------------
def test_out_variants():
    x = make((3, 4), "float32")
    check(lambda lib, x: lib.index_select(x, 0, T(lib, [1]), out=T(lib, [0.0]).clone()), x)
    check(lambda lib, x: lib.gather(x, 1, T(lib, [[0], [1], [2]]), out=x[:, :1].clone()), x)
    check(lambda lib, x: lib.masked_select(x, x > 0, out=T(lib, [1.0]).clone()), x)
    check(lambda lib, x: lib.take(x, T(lib, [1, 2]), out=T(lib, [1.0, 2.0]).clone()), x)
    check(lambda lib, x: lib.nonzero(x > 0, out=T(lib, [[1]]).clone()), x)


# ---------------------------------------------------------------------------------------
# random subscripts (fixed seeds): every mix of ints, slices, None, Ellipsis, bools, lists,
# index tensors and masks, read and written
# ---------------------------------------------------------------------------------------
def _random_index(rng, shape):
    items, dims, used_ellipsis = [], list(shape), False
    for _ in range(rng.integers(1, 5)):
        kind = rng.choice(["int", "slice", "none", "ellipsis", "list", "tensor", "bool", "mask"])
        if kind == "none":
            items.append(("none",))
        elif kind == "bool":
            items.append(("bool", bool(rng.integers(2))))
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            items.append(("ellipsis",))
        elif dims:
            n = dims.pop(0)
            if kind == "int" and n:
                items.append(("int", int(rng.integers(-n, n))))
            elif kind in ("list", "tensor") and n:
                items.append((kind, rng.integers(-n, n, size=int(rng.integers(1, 3))).tolist()))
            elif kind == "mask":
                items.append(("mask", (rng.random(n) > 0.5).tolist()))
            else:
                a, b = sorted(rng.integers(-n - 1, n + 2, size=2).tolist())
                items.append(("slice", a, b, int(rng.integers(1, 3))))
    return items


def _build(lib, items):
    out = []
    for it in items:
        k = it[0]
        out.append({"none": lambda: None, "ellipsis": lambda: Ellipsis, "bool": lambda: it[1], "int": lambda: it[1],
                    "list": lambda: it[1], "tensor": lambda: T(lib, it[1]), "mask": lambda: T(lib, it[1], "bool"),
                    "slice": lambda: slice(*it[1:])}[k]())
    return tuple(out)


@pytest.mark.parametrize("seed", range(60))
def test_random_subscripts(seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(s) for s in rng.integers(1, 4, size=int(rng.integers(1, 4))))
    items = _random_index(rng, shape)
    x = make(shape, "float32", seed=seed)

    def get(lib, x):
        r = x[_build(lib, items)]
        # empty views: NumPy cannot place them past the end of the buffer as PyTorch does
        return r, r.stride(), r.storage_offset() if r.numel() else 0
    basic = all(it[0] in ("none", "ellipsis", "int", "slice") for it in items)
    check(get if basic else (lambda lib, x: x[_build(lib, items)]), x, check_stride=basic)
    check(lambda lib, x: x[_build(lib, items)], x, noncontig=True)
    # (a failing PyTorch write may be partly done: separate buffers for the unchanged-input check)
    check(lambda lib, x: _set(x.clone(), _build(lib, items), -7.0), x)
    check(lambda lib, x: _set(x, _build(lib, items), -7.0), x, noncontig=True)
