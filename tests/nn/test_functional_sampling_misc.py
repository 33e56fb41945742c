"""F's grid_sample / affine_grid / area interpolation / upsample*, conv_transpose3d, conv_tbc,
embedding_bag, channel_shuffle, pdist, gumbel_softmax, local_response_norm,
multi_head_attention_forward and linear_cross_entropy vs PyTorch (values, gradients, exceptions)."""
import warnings

import numpy as np
import pytest
import torch

import ember
from grad_oracle import check_grad
from oracle import check_raises

RNG = np.random.default_rng(3)


def f(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def F(lib):
    return lib.nn.functional


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample(mode, padding_mode, align_corners):
    diff = (0,) if mode == "nearest" else (0, 1)
    grid = RNG.uniform(-1.6, 1.6, (2, 3, 4, 2)).astype(np.float32)  # partly outside the image
    check_grad(lambda lib, x, g: F(lib).grid_sample(x, g, mode, padding_mode, align_corners), f(2, 3, 5, 6), grid,
               diff=diff, atol=1e-4)
    if mode != "bicubic":
        grid = RNG.uniform(-1.6, 1.6, (2, 3, 4, 2, 3)).astype(np.float32)
        check_grad(lambda lib, x, g: F(lib).grid_sample(x, g, mode, padding_mode, align_corners),
                   f(2, 3, 5, 6, 4), grid, diff=diff, atol=1e-4)


def test_grid_sample_float64_and_default_align_corners_warning():
    grid = RNG.uniform(-1, 1, (1, 4, 4, 2))
    with pytest.warns(UserWarning):
        check_grad(lambda lib, x, g: F(lib).grid_sample(x, g), f(1, 2, 3, 5, dtype=np.float64), grid, diff=(0, 1))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [[2, 3, 4, 5], [1, 1, 1, 6], [2, 3, 4, 5, 3], [1, 2, 1, 3, 2]])
def test_affine_grid(align_corners, size):
    theta = f(size[0], 2, 3) if len(size) == 4 else f(size[0], 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_grad(lambda lib, t: F(lib).affine_grid(t, size, align_corners=align_corners), theta)


def test_affine_grid_then_grid_sample_rotation():
    angle = 0.3
    theta = np.array([[[np.cos(angle), -np.sin(angle), 0.1], [np.sin(angle), np.cos(angle), -0.2]]], np.float32)
    check_grad(lambda lib, x, t: F(lib).grid_sample(x, F(lib).affine_grid(t, [1, 2, 6, 7], align_corners=False),
                                                    align_corners=False), f(1, 2, 6, 7), theta, diff=(0, 1),
               atol=1e-4)


@pytest.mark.parametrize("shape,kwargs", [((2, 3, 9), dict(size=4)), ((2, 3, 6, 7), dict(size=(3, 5))),
                                          ((2, 3, 6, 7), dict(size=(9, 10))), ((2, 3, 6, 7), dict(scale_factor=0.5)),
                                          ((1, 2, 6, 7, 5), dict(scale_factor=(0.5, 0.7, 1.5)))])
def test_interpolate_area(shape, kwargs):
    check_grad(lambda lib, x: F(lib).interpolate(x, mode="area", **kwargs), f(*shape))


def test_upsample_aliases_warn_and_match():
    for name, kwargs in [("upsample", dict(scale_factor=2, mode="bilinear")), ("upsample_nearest", dict(size=7)),
                         ("upsample_bilinear", dict(scale_factor=2))]:
        with pytest.warns(UserWarning):
            check_grad(lambda lib, x: getattr(F(lib), name)(x, **kwargs), f(2, 3, 4, 5))


GRID_BAD = [
    lambda lib, x, g: F(lib).grid_sample(x, g, mode="linear", align_corners=False),
    lambda lib, x, g: F(lib).grid_sample(x, g, padding_mode="wrap", align_corners=False),
    lambda lib, x, g: F(lib).grid_sample(x, g[..., :1], align_corners=False),
    lambda lib, x, g: F(lib).grid_sample(x[:1], g, align_corners=False),
    lambda lib, x, g: F(lib).grid_sample(x[0], g, align_corners=False),
    lambda lib, x, g: F(lib).grid_sample(x, g.double(), align_corners=False),
    lambda lib, x, g: F(lib).grid_sample(x.unsqueeze(2), g.unsqueeze(1).expand(-1, 2, -1, -1, -1)[..., :1]
                                         .expand(-1, -1, -1, -1, 3), mode="bicubic", align_corners=False),
    lambda lib, x, g: F(lib).affine_grid(x[:, 0, :2, :3].long(), [2, 3, 4, 5], align_corners=False),
    lambda lib, x, g: F(lib).affine_grid(x[:, 0, :2, :2], [2, 3, 4, 5], align_corners=False),
    lambda lib, x, g: F(lib).affine_grid(x[:, 0, :2, :3], [2, 3, 4, 5, 6], align_corners=False),
    lambda lib, x, g: F(lib).affine_grid(x[:, 0, :2, :3], [2, 3, 4], align_corners=False),
    lambda lib, x, g: F(lib).affine_grid(x[:, 0, :2, :3], [2, 3, 0, 5], align_corners=False),
]


@pytest.mark.parametrize("fn", GRID_BAD, ids=range(len(GRID_BAD)))
def test_sampling_bad_arguments_raise_torchs_exception_type(fn):
    check_raises(fn, f(2, 3, 4, 5), RNG.uniform(-1, 1, (2, 3, 4, 2)).astype(np.float32))


# convolution -------------------------------------------------------------------------------------
CONV_T3D = [dict(), dict(stride=2), dict(stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2)),
            dict(groups=2, dilation=2, padding=2), dict(stride=2, dilation=(1, 2, 1), output_padding=1)]


@pytest.mark.parametrize("kwargs", CONV_T3D)
def test_conv_transpose3d(kwargs):
    groups = kwargs.get("groups", 1)
    check_grad(lambda lib, x, w, b: F(lib).conv_transpose3d(x, w, b, **kwargs), f(2, 4, 3, 4, 3), f(4, 3, 2, 3, 2),
               f(3 * groups), diff=(0, 1, 2), atol=1e-4)
    check_grad(lambda lib, x, w: F(lib).conv_transpose3d(x, w, **kwargs), f(4, 3, 4, 3), f(4, 3, 2, 3, 2),
               diff=(0, 1), atol=1e-4)


def test_conv_transpose_composition_matches_the_2d_kernel():
    """The same composition in 2-D reproduces ember's own conv_transpose2d kernel."""
    from ember.nn.functional_misc import _conv_transpose_nd
    x, w, b = ember.tensor(f(2, 4, 5, 6)), ember.tensor(f(4, 3, 3, 2)), ember.tensor(f(6))
    for kw in (dict(stride=2, padding=1, output_padding=1, groups=2, dilation=1),
               dict(stride=(1, 3), padding=(0, 1), output_padding=(0, 2), groups=1, dilation=(2, 1))):
        kw2 = dict(kw)
        groups = kw2.pop("groups")
        got = _conv_transpose_nd(2, x, w, b[:3 * groups], kw2["stride"], kw2["padding"], kw2["output_padding"],
                                 groups, kw2["dilation"])
        want = F(ember).conv_transpose2d(x, w, b[:3 * groups], groups=groups, **kw2)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


def test_conv_tbc():
    def run(lib, x, w, b):
        return (torch.conv_tbc if lib is torch else F(ember).conv_tbc)(x, w, b, 1)
    check_grad(run, f(7, 2, 3), f(3, 3, 4), f(4), diff=(0, 1, 2), atol=1e-4)
    check_raises(lambda lib, x, w, b: (torch.conv_tbc if lib is torch else F(ember).conv_tbc)(x, w, b[:2]),
                 f(7, 2, 3), f(3, 3, 4), f(4))


CONV_BAD = [
    lambda lib, x, w: F(lib).conv_transpose3d(x, w[:3]),
    lambda lib, x, w: F(lib).conv_transpose3d(x, w, stride=2, output_padding=2),
    lambda lib, x, w: F(lib).conv_transpose3d(x[0, 0], w),
    lambda lib, x, w: F(lib).conv_transpose3d(x, w[0]),
]


@pytest.mark.parametrize("fn", CONV_BAD, ids=range(len(CONV_BAD)))
def test_conv_transpose3d_bad_arguments(fn):
    check_raises(fn, f(2, 4, 3, 4, 3), f(4, 3, 2, 3, 2))


# embedding_bag ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    weight = f(10, 5)
    check_grad(lambda lib, w, i: F(lib).embedding_bag(i, w, mode=mode), weight, RNG.integers(0, 10, (4, 3)))
    indices, offsets = RNG.integers(0, 10, 9), np.array([0, 2, 2, 7])  # bag 1 is empty
    check_grad(lambda lib, w, i, o: F(lib).embedding_bag(i, w, o, mode=mode, padding_idx=3), weight, indices,
               offsets)
    check_grad(lambda lib, w, i, o: F(lib).embedding_bag(i, w, o, mode=mode, include_last_offset=True), weight,
               indices, np.array([0, 2, 2, 7, 9]))
    check_grad(lambda lib, w, i, o: F(lib).embedding_bag(i.int(), w, o.int(), mode=mode), weight, indices, offsets)


def test_embedding_bag_per_sample_weights_and_max_norm():
    weight, indices, offsets = f(10, 5), RNG.integers(0, 10, 9), np.array([0, 4, 4])
    check_grad(lambda lib, w, i, o, p: F(lib).embedding_bag(i, w, o, mode="sum", per_sample_weights=p), weight,
               indices, offsets, f(9), diff=(0, 3))
    check_grad(lambda lib, w, i, o: F(lib).embedding_bag(i, w.detach() * 3, o, max_norm=1.0), weight, indices,
               offsets, diff=())


EMBEDDING_BAG_BAD = [
    lambda lib, w, i, o: F(lib).embedding_bag(i, w),
    lambda lib, w, i, o: F(lib).embedding_bag(i.reshape(3, 3), w, o),
    lambda lib, w, i, o: F(lib).embedding_bag(i, w, o.reshape(1, 3)),
    lambda lib, w, i, o: F(lib).embedding_bag(i, w, o, mode="median"),
    lambda lib, w, i, o: F(lib).embedding_bag(i, w, o, mode="max", per_sample_weights=w[:9, 0]),
    lambda lib, w, i, o: F(lib).embedding_bag(i, w, o, per_sample_weights=w[:4, 0], mode="sum"),
    lambda lib, w, i, o: F(lib).embedding_bag(i, w[0], o),
    lambda lib, w, i, o: F(lib).embedding_bag(i, w, o + 1),
    lambda lib, w, i, o: F(lib).embedding_bag(i, w, o, mode="max", scale_grad_by_freq=True),
    lambda lib, w, i, o: F(lib).embedding_bag(i.reshape(1, 1, 9), w),
]


@pytest.mark.parametrize("fn", EMBEDDING_BAG_BAD, ids=range(len(EMBEDDING_BAG_BAD)))
def test_embedding_bag_bad_arguments(fn):
    check_raises(fn, f(10, 5), RNG.integers(0, 10, 9), np.array([0, 4, 4]))


# small layers ----------------------------------------------------------------------------------
def test_channel_shuffle():
    check_grad(lambda lib, x: F(lib).channel_shuffle(x, 3), f(2, 6, 4, 5))
    check_grad(lambda lib, x: F(lib).native_channel_shuffle(x, 2), np.arange(12).reshape(1, 6, 2), diff=())
    for groups, shape in ((4, (2, 6, 3)), (0, (2, 6, 3)), (2, (6,))):
        check_raises(lambda lib, x: F(lib).channel_shuffle(x, groups), f(*shape))


@pytest.mark.parametrize("p", [0, 0.5, 1, 2, 3, float("inf")])
def test_pdist(p):
    check_grad(lambda lib, x: F(lib).pdist(x, p), f(6, 4), diff=() if p == 0 else (0,))
    check_grad(lambda lib, x: F(lib).pdist(x, p), f(1, 3), diff=())


def test_pdist_bad_arguments():
    for fn in (lambda lib, x: F(lib).pdist(x), lambda lib, x: F(lib).pdist(x[0], -1.0),
               lambda lib, x: F(lib).pdist(x.long())):
        check_raises(fn, f(2, 3, 4))
    check_raises(lambda lib, x: F(lib).pdist(x, -1.0), f(3, 4))


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_local_response_norm(size):
    check_grad(lambda lib, x: F(lib).local_response_norm(x, size, alpha=0.1, beta=0.6, k=2), f(2, 7, 4))
    check_grad(lambda lib, x: F(lib).local_response_norm(x, size), f(2, 7, 4, 3, 2))
    check_raises(lambda lib, x: F(lib).local_response_norm(x, size), f(2, 7))


def test_gumbel_softmax_is_a_softmax_of_gumbel_perturbed_logits():
    """The noise cannot be drawn identically in both libraries: recover it from ember's soft sample
    (tau * log y - logits, up to a per-row constant), check that it looks Gumbel distributed, and
    check the soft and hard samples and their (straight-through) gradients against PyTorch's
    formula given that noise (the hard pass draws the same noise: same seed)."""
    logits, tau = f(4000, 4), 0.7
    gout = f(4000, 4)
    samples, grads = {}, {}
    for hard in (False, True):
        ember.manual_seed(0)
        x = ember.tensor(logits, requires_grad=True)
        samples[hard] = F(ember).gumbel_softmax(x, tau=tau, hard=hard)
        samples[hard].backward(ember.tensor(gout))
        grads[hard] = x.grad.numpy()
    noise = (np.log(samples[False].detach().numpy().astype(np.float64)) * tau - logits).astype(np.float32)
    # argmax of the noise alone is uniform over the classes; its spread is Gumbel's (sd pi/sqrt(6))
    np.testing.assert_allclose(np.bincount(noise.argmax(-1), minlength=4) / len(noise), 0.25, atol=0.03)
    centred = noise - noise.mean(-1, keepdims=True)
    np.testing.assert_allclose(centred.std() / np.sqrt(3 / 4), np.pi / np.sqrt(6), rtol=0.05)
    for hard in (False, True):
        xt = torch.tensor(logits, requires_grad=True)
        soft = ((xt + torch.tensor(noise)) / tau).softmax(-1)
        want = soft
        if hard:
            one_hot = torch.zeros_like(soft).scatter_(-1, soft.argmax(-1, keepdim=True), 1.0)
            want = one_hot - soft.detach() + soft
        np.testing.assert_allclose(samples[hard].detach().numpy(), want.detach().numpy(), rtol=1e-4, atol=1e-5)
        want.backward(torch.tensor(gout))
        np.testing.assert_allclose(grads[hard], xt.grad.numpy(), rtol=1e-3, atol=1e-5)


def test_multi_head_attention_forward_matches_torch():
    e, h = 8, 2
    args = (f(5, 2, e), f(4, 2, e), f(4, 2, e), f(3 * e, e), f(3 * e), f(e, e), f(e))

    def run(lib, q, k, v, ipw, ipb, opw, opb, **kw):
        return F(lib).multi_head_attention_forward(q, k, v, e, h, ipw, ipb, None, None, False, 0.0, opw, opb, **kw)
    check_grad(run, *args, diff=tuple(range(7)), atol=1e-4)
    check_grad(lambda lib, *a: run(lib, *a, average_attn_weights=False), *args, diff=(0, 3), atol=1e-4)
    mask = np.triu(np.ones((5, 4), dtype=bool), 1)
    check_grad(lambda lib, *a: run(lib, *a[:-1], attn_mask=a[-1]), *args, mask, diff=(0,), atol=1e-4)
    sep = (f(5, 2, e), f(4, 2, 3), f(4, 2, 6), f(e, e), f(e, 3), f(e, 6), f(3 * e), f(e, e), f(e), f(1, 1, e),
           f(1, 1, e))

    def separate(lib, q, k, v, wq, wk, wv, ipb, opw, opb, bk, bv):
        return F(lib).multi_head_attention_forward(q, k, v, e, h, None, ipb, bk, bv, True, 0.0, opw, opb,
                                                   use_separate_proj_weight=True, q_proj_weight=wq,
                                                   k_proj_weight=wk, v_proj_weight=wv, training=False)
    # the key bias's gradient is zero in exact arithmetic (softmax ignores a shift shared by a row):
    # float32 leaves ~1e-6 of rounding there, next to gradients of ~1e2 elsewhere
    check_grad(separate, *sep, diff=tuple(range(11)), atol=1e-4)
    check_raises(lambda lib, *a: F(lib).multi_head_attention_forward(
        *a[:3], e, 3, a[3], a[4], None, None, False, 0.0, a[5], a[6]), *args)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_linear_cross_entropy(reduction):
    check_grad(lambda lib, x, w, t: F(lib).linear_cross_entropy(x, w, t, reduction=reduction), f(5, 4), f(7, 4),
               RNG.integers(0, 7, 5), diff=(0, 1))
    check_grad(lambda lib, x, w, t, b: F(lib).linear_cross_entropy(x, w, t, linear_bias=b, label_smoothing=0.1,
                                                                   reduction=reduction),
               f(5, 4), f(7, 3, 4), RNG.integers(0, 7, (5, 3)), f(7, 3), diff=(0, 1, 3))
    probs = RNG.dirichlet(np.ones(7), 5).astype(np.float32)
    check_grad(lambda lib, x, w, t: F(lib).linear_cross_entropy(x, w, t, reduction=reduction), f(5, 4), f(7, 4),
               probs, diff=(0, 1))
    check_grad(lambda lib, x, w, t: F(lib).linear_cross_entropy(x, w, t, ignore_index=2, reduction=reduction),
               f(4), f(7, 4), np.array(3), diff=(0, 1))


def test_linear_cross_entropy_bad_arguments():
    cases = [(f(2, 3, 4), f(7, 4), RNG.integers(0, 7, 2)), (f(5, 4), f(4), RNG.integers(0, 7, 5)),
             (f(5, 3), f(7, 4), RNG.integers(0, 7, 5)), (f(4), f(7, 3, 4), RNG.integers(0, 7, 3))]
    for x, w, t in cases:
        check_raises(lambda lib, x, w, t: F(lib).linear_cross_entropy(x, w, t), x, w, t)
    check_raises(lambda lib, x, w, t: F(lib).linear_cross_entropy(x, w, t, ignore_index=1), f(5, 4), f(7, 4),
                 f(5, 7))
    check_raises(lambda lib, x, w, t, b: F(lib).linear_cross_entropy(x, w, t, linear_bias=b), f(5, 4), f(7, 4),
                 RNG.integers(0, 7, 5), f(6))


def test_assert_int_or_pair_and_grid_sample_tables():
    for lib in (torch, ember):
        F(lib).assert_int_or_pair(3, "k", "{} bad")
        F(lib).assert_int_or_pair((1, 2), "k", "{} bad")
        with pytest.raises(AssertionError, match="k bad"):
            F(lib).assert_int_or_pair((1, 2, 3), "k", "{} bad")
    assert F(ember).GRID_SAMPLE_INTERPOLATION_MODES == F(torch).GRID_SAMPLE_INTERPOLATION_MODES
    assert F(ember).GRID_SAMPLE_PADDING_MODES == F(torch).GRID_SAMPLE_PADDING_MODES
