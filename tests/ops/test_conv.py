"""Oracle tests of convolutions, pooling, F.unfold/F.fold and pixel shuffle."""
import numpy as np
import pytest

import ember
from oracle import check, make, ALL_DTYPES

CONV_TOL = {"float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2), "float32": (1e-4, 1e-4), "complex64": (1e-4, 1e-4),
            "float64": (1e-10, 1e-10)}


def tol(dtype):
    r = CONV_TOL.get(dtype)
    return dict(rtol=r[0], atol=r[1]) if r else {}


def F(lib):
    return lib.nn.functional


# ---------------------------------------------------------------------------------------
# convolution
# ---------------------------------------------------------------------------------------
CONV2D = [  # input, weight, kwargs
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), dict(stride=2, padding=1)),
    ((2, 4, 8, 8), (6, 2, 3, 3), dict(groups=2, dilation=2, padding=(1, 2))),
    ((1, 4, 5, 5), (4, 1, 3, 3), dict(groups=4, padding="same")),
    ((1, 3, 6, 5), (2, 3, 4, 2), dict(padding="same", dilation=(2, 1))),
    ((1, 3, 6, 5), (2, 3, 2, 2), dict(padding="valid", stride=(1, 2))),
    ((3, 7, 6), (4, 3, 3, 3), {}),                       # unbatched
    ((0, 3, 7, 6), (4, 3, 3, 3), {}),                    # empty batch
    ((2, 3, 5, 5), (2, 3, 1, 1), {}),                    # 1x1
    ((2, 3, 5, 5), (2, 3, 5, 5), {}),                    # kernel covers the input
]


@pytest.mark.parametrize("xs,ws,kw", CONV2D)
@pytest.mark.parametrize("bias", [False, True])
def test_conv2d(xs, ws, kw, bias):
    x, w = make(xs, seed=1), make(ws, seed=2)
    b = make((ws[0],), seed=3) if bias else None
    check(lambda lib, x, w, b: F(lib).conv2d(x, w, b, **kw), x, w, b, **tol("float32"))
    check(lambda lib, x, w, b: lib.conv2d(x, w, b, **kw), x, w, b, noncontig=True, **tol("float32"))
    check(lambda lib, x, w, b: F(lib).conv2d(x.to("meta"), w.to("meta"), None if b is None else b.to("meta"), **kw),
          x, w, b)


@pytest.mark.parametrize("dtype", ALL_DTYPES + ("complex128",))
def test_conv_dtypes(dtype):
    # cpu_first=False: on the GPU, PyTorch's CUDA convolutions (cuDNN) refuse other dtypes, with another
    # error, than its CPU kernels; a convolution indexes nothing, so its CUDA run is the oracle there
    x, w, b = make((2, 3, 6, 5), dtype), make((4, 3, 3, 3), dtype, seed=1), make((4,), dtype, seed=2)
    t = dict(tol(dtype), cpu_first=False)
    check(lambda lib, x, w, b: F(lib).conv2d(x, w, b, padding=1), x, w, b, **t)
    check(lambda lib, x, w: F(lib).conv1d(x, w, stride=2), make((2, 3, 9), dtype), make((4, 3, 3), dtype), **t)
    check(lambda lib, x, w: F(lib).conv_transpose2d(x, w, stride=2), x, make((3, 2, 3, 3), dtype), **t)
    check(lambda lib, x, w: F(lib).conv_transpose1d(x, w), make((2, 3, 9), dtype), make((3, 2, 3), dtype), **t)


CONV1D = [((2, 3, 10), (4, 3, 3), {}), ((2, 3, 10), (4, 3, 3), dict(stride=3, padding=2, dilation=2)),
          ((2, 4, 10), (2, 2, 4), dict(groups=2, padding="same")), ((3, 10), (4, 3, 3), {}),
          ((2, 3, 10), (4, 3, 10), {})]


@pytest.mark.parametrize("xs,ws,kw", CONV1D)
def test_conv1d(xs, ws, kw):
    x, w, b = make(xs, seed=1), make(ws, seed=2), make((ws[0],), seed=3)
    check(lambda lib, x, w, b: F(lib).conv1d(x, w, b, **kw), x, w, b, **tol("float32"))
    check(lambda lib, x, w, b: lib.conv1d(x, w, b, **kw), x, w, b, noncontig=True, **tol("float32"))
    check(lambda lib, x, w, b: lib.conv1d(x.to("meta"), w.to("meta"), b.to("meta"), **kw), x, w, b)


@pytest.mark.parametrize("kw", [{}, dict(stride=2, padding=1), dict(groups=2, dilation=(1, 2), padding="same")])
def test_conv3d(kw):
    x, w = make((2, 4, 5, 6, 5), seed=1), make((4, 2 if "groups" in kw else 4, 3, 2, 3), seed=2)
    check(lambda lib, x, w: F(lib).conv3d(x, w, **kw), x, w, **tol("float32"))
    check(lambda lib, x, w: F(lib).conv3d(x.to("meta"), w.to("meta"), **kw), x, w)


CONV_ERRORS = [
    ((2, 3, 5), (4, 3, 3, 3), {}), ((2, 3, 5, 5), (4, 3, 3), {}), ((2, 3, 5, 5), (4, 2, 3, 3), {}),
    ((2, 4, 5, 5), (3, 2, 3, 3), dict(groups=2)), ((2, 3, 5, 5), (4, 3, 3, 3), dict(groups=0)),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(stride=0)), ((2, 3, 5, 5), (4, 3, 3, 3), dict(padding=-1)),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(dilation=0)), ((2, 3, 2, 2), (4, 3, 3, 3), {}),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(padding="foo")), ((2, 3, 5, 5), (4, 3, 3, 3), dict(padding="same", stride=2)),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(stride=(1, 1, 1))),
]


@pytest.mark.parametrize("xs,ws,kw", CONV_ERRORS)
def test_conv_errors(xs, ws, kw):
    check(lambda lib, x, w: F(lib).conv2d(x, w, **kw), make(xs), make(ws))
    if len(ws) == 4 and (not kw or "padding" in kw and kw["padding"] != -1):  # Meta errors differ for others
        check(lambda lib, x, w: F(lib).conv2d(x.to("meta"), w.to("meta"), **kw), make(xs), make(ws))


def test_conv_bias_and_dtype_errors():
    x, w = make((2, 3, 5, 5)), make((4, 3, 3, 3))
    check(lambda lib, x, w, b: F(lib).conv2d(x, w, b), x, w, make((3,)))
    check(lambda lib, x, w, b: F(lib).conv2d(x, w, b), x, w, make((4,), "float64"))
    check(lambda lib, x, w: F(lib).conv2d(x, w), x, w.astype("float64"))


CONV_T = [((2, 3, 5, 4), (3, 2, 3, 3), {}), ((2, 3, 5, 4), (3, 2, 3, 2), dict(stride=2, padding=1, output_padding=1)),
          ((2, 4, 5, 5), (4, 3, 3, 3), dict(groups=2, dilation=2, stride=(2, 3), output_padding=(1, 0))),
          ((3, 5, 4), (3, 2, 3, 3), dict(padding=(1, 0))), ((0, 3, 5, 4), (3, 2, 3, 3), {}),
          ((1, 2, 3, 3), (2, 1, 4, 4), dict(stride=2, padding=1))]


@pytest.mark.parametrize("xs,ws,kw", CONV_T)
@pytest.mark.parametrize("bias", [False, True])
def test_conv_transpose2d(xs, ws, kw, bias):
    x, w = make(xs, seed=1), make(ws, seed=2)
    b = make((ws[1] * kw.get("groups", 1),), seed=3) if bias else None
    check(lambda lib, x, w, b: F(lib).conv_transpose2d(x, w, b, **kw), x, w, b, **tol("float32"))
    check(lambda lib, x, w, b: lib.conv_transpose2d(x, w, b, **kw), x, w, b, noncontig=True, **tol("float32"))
    check(lambda lib, x, w, b: lib.conv_transpose2d(x.to("meta"), w.to("meta"), None if b is None else b.to("meta"),
                                                    **kw), x, w, b)


@pytest.mark.parametrize("kw", [{}, dict(stride=3, padding=2, output_padding=2, dilation=2), dict(groups=3)])
def test_conv_transpose1d(kw):
    x, w, b = make((2, 3, 7), seed=1), make((3, 2, 4), seed=2), make((2 * kw.get("groups", 1),), seed=3)
    check(lambda lib, x, w, b: F(lib).conv_transpose1d(x, w, b, **kw), x, w, b, **tol("float32"))
    check(lambda lib, x, w, b: F(lib).conv_transpose1d(x.to("meta"), w.to("meta"), b.to("meta"), **kw), x, w, b)


@pytest.mark.parametrize("xs,ws,kw", [((2, 3, 5, 5), (4, 2, 3, 3), {}), ((2, 3, 5, 5), (3, 2, 3, 3),
                                                                         dict(output_padding=1)),
                                      ((2, 3, 1, 1), (3, 2, 1, 1), dict(padding=1)),
                                      ((2, 3, 5, 5), (3, 2, 3, 3), dict(groups=2))])
def test_conv_transpose_errors(xs, ws, kw):
    check(lambda lib, x, w: F(lib).conv_transpose2d(x, w, **kw), make(xs), make(ws))


# ---------------------------------------------------------------------------------------
# pooling
# ---------------------------------------------------------------------------------------
MAXPOOL2D = [(2, {}), ((3, 2), dict(stride=(2, 1))), (3, dict(stride=2, padding=1)),
             (3, dict(stride=2, padding=1, ceil_mode=True)), (2, dict(dilation=2, padding=1)),
             (3, dict(stride=2, ceil_mode=True)), ((2, 3), dict(stride=2, dilation=(2, 1), ceil_mode=True, padding=1))]


@pytest.mark.parametrize("k,kw", MAXPOOL2D)
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (3, 6, 5), (0, 2, 5, 5)])
def test_max_pool2d(k, kw, shape):
    x = make(shape)
    check(lambda lib, x: F(lib).max_pool2d(x, k, **kw), x)
    check(lambda lib, x: F(lib).max_pool2d(x, k, **kw, return_indices=True), x, noncontig=True)
    check(lambda lib, x: lib.max_pool2d(x, k, **kw), x)
    check(lambda lib, x: F(lib).max_pool2d(x.to("meta"), k, **kw, return_indices=True), x)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_pool_dtypes(dtype):
    x = make((2, 3, 6, 7), dtype)
    check(lambda lib, x: F(lib).max_pool2d(x, 2, return_indices=True), x)
    check(lambda lib, x: F(lib).max_pool1d(x[0], 2), x)
    check(lambda lib, x: F(lib).max_pool1d(x[0], 2, return_indices=True), x)
    check(lambda lib, x: F(lib).avg_pool2d(x, 2), x, **tol(dtype))
    check(lambda lib, x: F(lib).avg_pool1d(x[0], 3, padding=1), x, **tol(dtype))
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, (4, 3)), x, **tol(dtype))
    check(lambda lib, x: F(lib).adaptive_max_pool2d(x, (4, 3), return_indices=True), x)
    check(lambda lib, x: F(lib).adaptive_avg_pool1d(x[0], 4), x, **tol(dtype))


def test_max_pool_ties_and_nan_free_values():
    x = np.zeros((1, 1, 4, 4), np.float32)     # all ties: the first index of each window wins
    check(lambda lib, x: F(lib).max_pool2d(x, 2, return_indices=True), x)
    x = np.full((1, 1, 5, 5), -np.inf, np.float32)
    check(lambda lib, x: F(lib).max_pool2d(x, 3, stride=2, padding=1, return_indices=True), x)


@pytest.mark.parametrize("k,kw", [(2, {}), (3, dict(stride=2, padding=1, ceil_mode=True)), (2, dict(dilation=3)),
                                  (4, dict(stride=3, ceil_mode=True))])
def test_max_pool1d(k, kw):
    x = make((2, 3, 11))
    check(lambda lib, x: F(lib).max_pool1d(x, k, **kw), x)
    check(lambda lib, x: F(lib).max_pool1d(x, k, **kw, return_indices=True), x, noncontig=True)
    check(lambda lib, x: lib.max_pool1d_with_indices(x, k, **kw), x)
    check(lambda lib, x: F(lib).max_pool1d(x[0], k, **kw), x)
    check(lambda lib, x: F(lib).max_pool1d(x.to("meta"), k, **kw), x)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
                                dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), divisor_override=5),
                                dict(kernel_size=2, stride=3, ceil_mode=True)])
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (3, 6, 5)])
def test_avg_pool2d(kw, shape):
    x = make(shape)
    check(lambda lib, x: F(lib).avg_pool2d(x, **kw), x, **tol("float32"))
    check(lambda lib, x: F(lib).avg_pool2d(x, **kw), x, noncontig=True, **tol("float32"))
    check(lambda lib, x: F(lib).avg_pool2d(x.to("meta"), **kw), x)
    check(lambda lib, x: F(lib).avg_pool2d(x, **kw), x.astype("int64") * 7)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)])
def test_avg_pool1d(kw):
    x = make((2, 3, 11))
    check(lambda lib, x: F(lib).avg_pool1d(x, **kw), x, **tol("float32"))
    check(lambda lib, x: lib.avg_pool1d(x, **kw), x[0], **tol("float32"))
    check(lambda lib, x: F(lib).avg_pool1d(x.to("meta"), **kw), x)


@pytest.mark.parametrize("fn,shape,args", [
    ("max_pool2d", (1, 2, 5, 5), dict(kernel_size=3, padding=2)), ("avg_pool2d", (1, 2, 5, 5), dict(kernel_size=3,
                                                                                                  padding=2)),
    ("max_pool2d", (1, 1, 1), dict(kernel_size=2)), ("max_pool2d", (2, 5), dict(kernel_size=2)),
    ("max_pool2d", (2, 0, 5, 5), dict(kernel_size=2)), ("max_pool2d", (1, 2, 5, 5), dict(kernel_size=0)),
    ("max_pool2d", (1, 2, 5, 5), dict(kernel_size=2, stride=0)), ("avg_pool2d", (1, 2, 5, 5), dict(kernel_size=(2, 2,
                                                                                                               2))),
    ("avg_pool2d", (1, 2, 5, 5), dict(kernel_size=2, divisor_override=0)),
    ("max_pool1d", (1, 2, 5), dict(kernel_size=6)), ("avg_pool1d", (2, 5), dict(kernel_size=6)),
])
def test_pool_errors(fn, shape, args):
    check(lambda lib, x: getattr(F(lib), fn)(x, **args), make(shape))


@pytest.mark.parametrize("out", [1, 3, (4, 2), (5, 7), (None, 3), (7, 9)])
@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (3, 7, 5), (0, 2, 5, 5)])
def test_adaptive_pool2d(out, shape):
    x = make(shape)
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, out), x, **tol("float32"))
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, out), x, noncontig=True, dtype="float64")
    check(lambda lib, x: F(lib).adaptive_max_pool2d(x, out), x)
    check(lambda lib, x: F(lib).adaptive_max_pool2d(x, out, return_indices=True), x, noncontig=True)
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x.to("meta"), out), x)
    check(lambda lib, x: F(lib).adaptive_max_pool2d(x.to("meta"), out, return_indices=True), x)


@pytest.mark.parametrize("out", [1, 3, 5, 11])
def test_adaptive_pool1d(out):
    x = make((2, 3, 7))
    check(lambda lib, x: F(lib).adaptive_avg_pool1d(x, out), x, **tol("float32"))
    check(lambda lib, x: F(lib).adaptive_max_pool1d(x, out, return_indices=True), x)
    check(lambda lib, x: lib.adaptive_max_pool1d(x[0], out), x)
    check(lambda lib, x: lib.adaptive_avg_pool1d(x.to("meta"), out), x)


def test_adaptive_errors():
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, 2), make((2, 5)))
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, 2), make((1, 0, 5, 5)))
    check(lambda lib, x: F(lib).adaptive_max_pool2d(x, 2), make((1, 0, 5, 5)))
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, 2), make((1, 2, 0, 5)))
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, 1), make((1, 2, 3, 5), "complex64"))
    check(lambda lib, x: F(lib).adaptive_max_pool2d(x, -1), make((1, 2, 5, 5)))
    check(lambda lib, x: F(lib).adaptive_avg_pool2d(x, (1, 2, 3)), make((1, 2, 5, 5)))


# ---------------------------------------------------------------------------------------
# unfold / fold / pixel shuffle
# ---------------------------------------------------------------------------------------
UNFOLD = [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=2, padding=1),
          dict(kernel_size=3, dilation=2, padding=(2, 1), stride=(1, 2))]


@pytest.mark.parametrize("kw", UNFOLD)
@pytest.mark.parametrize("shape", [(2, 3, 7, 6), (3, 7, 6)])
def test_unfold_fold(kw, shape):
    x = make(shape)
    check(lambda lib, x: F(lib).unfold(x, **kw), x)
    check(lambda lib, x: F(lib).unfold(x, **kw), x, noncontig=True)
    check(lambda lib, x: F(lib).unfold(x.to("meta"), **kw), x)
    # fold(unfold(x)) sums each pixel once per block that covers it
    check(lambda lib, x: F(lib).fold(F(lib).unfold(x, **kw), shape[-2:], **kw), x, **tol("float32"))
    check(lambda lib, x: F(lib).fold(F(lib).unfold(x, **kw).to("meta"), shape[-2:], **kw), x)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_unfold_fold_dtypes(dtype):
    x = make((2, 3, 5, 4), dtype)
    check(lambda lib, x: F(lib).unfold(x, 2), x)
    check(lambda lib, c: F(lib).fold(c, (5, 4), 2), make((2, 12, 12), dtype), **tol(dtype))


def test_unfold_fold_errors():
    check(lambda lib, x: F(lib).unfold(x, 2), make((2, 5)))
    check(lambda lib, x: F(lib).unfold(x, 6), make((1, 2, 5, 5)))
    check(lambda lib, c: F(lib).fold(c, (5, 4), 2), make((2, 12, 11)))
    check(lambda lib, c: F(lib).fold(c, (5, 4), 2), make((2, 11, 12)))
    check(lambda lib, c: F(lib).fold(c, (5, 4), 2), make((2, 3, 11, 12)))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape,r", [((2, 8, 3, 2), 2), ((9, 2, 2), 3), ((2, 1, 4, 3, 2), 1), ((0, 4, 2, 2), 2)])
def test_pixel_shuffle(shape, r, dtype):
    x = make(shape, dtype)
    check(lambda lib, x: F(lib).pixel_shuffle(x, r), x)
    if shape[0]:  # PyTorch's pixel_unshuffle returns empty inputs unchanged (its bug)
        check(lambda lib, x: lib.pixel_unshuffle(lib.pixel_shuffle(x, r), r), x, noncontig=True)
    check(lambda lib, x: lib.pixel_shuffle(x.to("meta"), r), x)


def test_pixel_shuffle_errors():
    check(lambda lib, x: F(lib).pixel_shuffle(x, 2), make((5, 2, 2)))
    check(lambda lib, x: F(lib).pixel_shuffle(x, 2), make((4, 2)))
    check(lambda lib, x: F(lib).pixel_unshuffle(x, 2), make((1, 3, 2)))
    check(lambda lib, x: F(lib).pixel_shuffle(x, 0), make((1, 4, 2, 2)))
