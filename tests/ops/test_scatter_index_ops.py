"""Oracle tests of the scatter family (scatter, scatter_add, scatter_reduce and the reduce= form) and of
index_add / index_copy / index_fill: dtypes, shapes, reductions and errors. (Subscripts, index/index_put,
gather and the masked ops: test_indexing.py.)"""
import warnings

import numpy as np
import pytest

from oracle import ALL_DTYPES, check, lib_tensor as T, make

warnings.filterwarnings("ignore", message=".*scatter.*reduce.*")


# ---------------------------------------------------------------------------------------
# scatter family
# ---------------------------------------------------------------------------------------
SCATTER_IDX = [[0, 1, 2, 0], [2, 2, 1, 0]]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_scatter_dtypes(dtype):
    x, s = make((3, 4), dtype), make((2, 4), dtype, seed=5)
    check(lambda lib, x, s: x.scatter(0, T(lib, SCATTER_IDX), s), x, s, dtype=dtype)
    check(lambda lib, x, s: x.scatter(1, T(lib, [[3], [0]]), 1), x, s, dtype=dtype)
    check(lambda lib, x, s: x.scatter_add(0, T(lib, SCATTER_IDX), s), x, s, dtype=dtype)
    check(lambda lib, x, s: x.clone().scatter_(0, T(lib, [[0, 1, 2, 0]]), s), x, s, dtype=dtype)
    check(lambda lib, x, s: x.scatter_add_(0, T(lib, SCATTER_IDX), s), x, s, dtype=dtype)
    if dtype != "bool":
        for reduce in ("sum", "prod", "amax", "amin") + (("mean",) if dtype != "bool" else ()):
            for include_self in (True, False):
                check(lambda lib, x, s: x.scatter_reduce(0, T(lib, SCATTER_IDX), s, reduce, include_self=include_self),
                      x, s, dtype=dtype)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_reduce_kwarg(reduce):
    x, s = make((3, 4), "float32"), make((2, 4), "float32", seed=5)
    check(lambda lib, x, s: x.scatter(0, T(lib, SCATTER_IDX), s, reduce=reduce), x, s)
    check(lambda lib, x, s: x.scatter(0, T(lib, SCATTER_IDX), 2.0, reduce=reduce), x, s)
    check(lambda lib, x, s: x.scatter_(0, T(lib, SCATTER_IDX), s, reduce=reduce), x, s)
    check(lambda lib, x, s: x.scatter(0, T(lib, SCATTER_IDX), s, reduce="sum"), x, s)


def test_scatter_reduce_int_mean():
    check(lambda lib, x: x.scatter_reduce(0, T(lib, [0, 0, 1, 1]), T(lib, [1, 2, 3, -4]), "mean", include_self=False),
          np.arange(4))
    check(lambda lib, x: x.scatter_reduce(0, T(lib, [0, 0, 1, 1]), T(lib, [1, 2, 3, 4]), "mean"), np.arange(4))
    check(lambda lib, x: x.scatter_reduce(0, T(lib, [0]), T(lib, [1]), "foo"), np.arange(4))


SCATTER_ERRORS = {
    "dtype": lambda lib, x: x.scatter(0, T(lib, [[0]]), T(lib, [[1.0]], "float64")),
    "idx_dtype": lambda lib, x: x.scatter(0, T(lib, [[0]], "int32"), 1.0),
    "src_small": lambda lib, x: x.scatter(0, T(lib, [[0, 1, 2, 0]]), x[:1, :3]),
    "idx_big": lambda lib, x: x.scatter(0, T(lib, [[0, 1, 2, 0, 0]]), T(lib, [[1.0] * 5])),
    "oob": lambda lib, x: x.scatter(0, T(lib, [[7, 1, 2, 0]]), 1.0),
    "neg": lambda lib, x: x.scatter(0, T(lib, [[-1, 1, 2, 0]]), 1.0),
    "ndim": lambda lib, x: x.scatter(0, T(lib, [0, 1]), x),
    "ndim_src": lambda lib, x: x.scatter(0, T(lib, [[0, 1]]), x[0]),
    "inplace_oob": lambda lib, x: x.scatter_(0, T(lib, [[0, 1, 2, 7]]), 1.0),
    "add_oob": lambda lib, x: x.scatter_add_(0, T(lib, [[0, 1, 2, 7]]), x),
    "dim": lambda lib, x: x.scatter(2, T(lib, [[0]]), 1.0),
    "overflow": lambda lib, x: x.int().scatter(0, T(lib, [[0]]), 1e20),
}


@pytest.mark.parametrize("name", list(SCATTER_ERRORS))
def test_scatter_errors(name):
    fn = SCATTER_ERRORS[name]
    # separate buffers: a failing PyTorch op may write part of its result before raising
    check(fn, make((3, 4), "float32"), noncontig=True)
    check(lambda lib, x: fn(lib, x.clone()), make((3, 4), "float32"))


@pytest.mark.parametrize("shape,dim,index", [((), 0, 0), ((), 0, [0]), ((3, 4), 1, [[3], [0]]), ((0, 2), 0, np.zeros((1, 0), np.int64)),
                                             ((3, 4), 0, np.zeros((0, 4), np.int64))])
def test_scatter_shapes(shape, dim, index):
    x = make(shape, "float32")
    idx = lambda lib: lib.from_numpy(index) if isinstance(index, np.ndarray) else T(lib, index)  # noqa: E731
    check(lambda lib, x: x.scatter(dim, idx(lib), 5.0), x)
    check(lambda lib, x: x.scatter_add(dim, idx(lib), lib.ones_like(x) if hasattr(lib, "ones_like") else x), x)
    check(lambda lib, x: x.scatter(dim, idx(lib), x), x, noncontig=bool(shape))
    check(lambda lib, x: x.to("meta").scatter(dim, idx(lib).to("meta"), x.to("meta")), x)
    check(lambda lib, x: x.to("meta").scatter_reduce(dim, idx(lib).to("meta"), x.to("meta"), "amax"), x)


# ---------------------------------------------------------------------------------------
# index_add / index_copy / index_fill
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_add_copy_fill_dtypes(dtype):
    x, s = make((3, 4), dtype), make((3, 2), dtype, seed=7)
    check(lambda lib, x, s: x.index_add(1, T(lib, [3, 3]), s[:, :2]), x, s, dtype=dtype)
    if dtype != "bool":
        check(lambda lib, x, s: x.index_add(1, T(lib, [0, 3], "int32"), s, alpha=2), x, s, dtype=dtype)
    check(lambda lib, x, s: x.index_copy(1, T(lib, [1, 3]), s), x, s, dtype=dtype)
    check(lambda lib, x, s: x.index_fill(1, T(lib, [1, -1]), 1), x, s, dtype=dtype)
    check(lambda lib, x, s: x.index_fill_(0, T(lib, [0]), T(lib, 0, "int64")), x, s, dtype=dtype)
    check(lambda lib, x, s: x.index_add_(0, T(lib, [2, 2, 0]), x.clone()), x, s, dtype=dtype)
    check(lambda lib, x, s: x.index_copy_(1, T(lib, [0, 2]), s), x, s, dtype=dtype)


def test_index_add_alpha_and_shapes():
    x = make((3, 4), "float32")
    check(lambda lib, x: x.index_add(0, T(lib, [0, 0]), x[:2], alpha=2.5), x)
    check(lambda lib, x: x.index_add(0, T(lib, [0, 0]), x[:2]), x, noncontig=True)
    check(lambda lib, x: x.to("meta").index_add(0, T(lib, [0, 0]).to("meta"), x[:2].to("meta")), x)
    check(lambda lib, x: x.to("meta").index_copy(0, T(lib, [0, 1]).to("meta"), x[:2].to("meta")), x)
    check(lambda lib, x: x.to("meta").index_fill(0, T(lib, [0, 1]).to("meta"), 2), x)
    check(lambda lib, x: lib.index_add(x.long(), 0, T(lib, [0, 1]), x[:2].long(), alpha=2), x)
    y = make((), "float32")
    check(lambda lib, y: y.index_add(0, T(lib, [0]), y), y)
    check(lambda lib, y: y.index_copy(0, T(lib, [0]), y), y)
    check(lambda lib, y: y.index_fill(0, T(lib, [0]), -1.0), y)


INDEX_OP_ERRORS = {
    "add_dtype": lambda lib, x: x.index_add(0, T(lib, [0, 0]), x[:2].double()),
    "add_idx_float": lambda lib, x: x.index_add(0, T(lib, [0.0, 0.0]), x[:2]),
    "add_oob": lambda lib, x: x.index_add_(0, T(lib, [0, 5]), x[:2]),
    "add_neg": lambda lib, x: x.index_add(0, T(lib, [0, -1]), x[:2]),
    "add_count": lambda lib, x: x.index_add(0, T(lib, [0, 1]), x),
    "add_shape": lambda lib, x: x.index_add(0, T(lib, [0, 1]), x[:2, :3]),
    "add_2d": lambda lib, x: x.index_add(0, T(lib, [[0, 1]]), x[:2]),
    "copy_i32": lambda lib, x: x.index_copy(0, T(lib, [0, 1], "int32"), x[:2]),
    "copy_oob": lambda lib, x: x.index_copy_(0, T(lib, [0, 5]), x[:2]),
    "copy_neg": lambda lib, x: x.index_copy(0, T(lib, [0, -1]), x[:2]),
    "copy_dtype": lambda lib, x: x.index_copy(0, T(lib, [0, 1]), x[:2].double()),
    "copy_count": lambda lib, x: x.index_copy(0, T(lib, [0, 1]), x),
    "fill_i32": lambda lib, x: x.index_fill(0, T(lib, [0, 1], "int32"), 1),
    "fill_oob": lambda lib, x: x.index_fill_(0, T(lib, [0, 5]), 1),
    "fill_1d_value": lambda lib, x: x.index_fill(0, T(lib, [0, 1]), T(lib, [1.0])),
    "fill_2d": lambda lib, x: x.index_fill(0, T(lib, [[0, 1]]), 1),
    "fill_overflow": lambda lib, x: x.byte().index_fill(0, T(lib, [0]), 300),
    "fill_dim": lambda lib, x: x.index_fill(3, T(lib, [0]), 1),
}


@pytest.mark.parametrize("name", list(INDEX_OP_ERRORS))
def test_index_op_errors(name):
    fn = INDEX_OP_ERRORS[name]
    # separate buffers: a failing PyTorch op may write part of its result before raising
    check(fn, make((3, 4), "float32"), noncontig=True)
    check(lambda lib, x: fn(lib, x.clone()), make((3, 4), "float32"))
