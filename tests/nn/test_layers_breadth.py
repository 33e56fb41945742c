"""The nn layers added for API breadth (issue 20) vs PyTorch 2.13: the same constructor runs in both
libraries, torch's initial state is copied into ember, then repr, state_dict keys/shapes, forward
in train and eval mode, buffers, and input and parameter gradients are compared; bad input must
raise torch's exception type."""
import warnings

import numpy as np
import pytest
import torch

import ember
import ember.nn as enn

RNG = np.random.default_rng(0)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ints(high, *shape):
    return RNG.integers(0, high, size=shape).astype(np.int64)


def signs(*shape):
    return np.where(RNG.random(shape) > 0.5, 1.0, -1.0).astype(np.float32)


def positive(*shape):
    return RNG.uniform(0.2, 2.0, size=shape).astype(np.float32)


def multilabel_target():
    return np.array([[3, 0, -1, 1], [1, 1, 2, -1], [-1, 2, 3, 0]], dtype=np.int64)


# (constructor expression in `nn`, input makers, differentiable input indices)
CASES = [
    # padding
    *[(f"nn.{kind}Pad{n}d({pad})", [lambda n=n: f32(2, 3, *([5] * n))], [0])
      for kind in ("Zero", "Reflection", "Replication", "Circular") for n in (1, 2, 3)
      for pad in (2, tuple(i % 3 + 1 for i in range(2 * n)))],
    *[(f"nn.ConstantPad{n}d({pad}, 1.5)", [lambda n=n: f32(2, 3, *([4] * n))], [0])
      for n in (1, 2, 3) for pad in (1, tuple(range(2 * n)))],
    ("nn.ZeroPad2d((1, -1, 0, 2))", [lambda: f32(3, 4, 5)], [0]),
    ("nn.ReflectionPad2d(1)", [lambda: f32(3, 4, 5)], [0]),
    ("nn.CircularPad1d(1)", [lambda: f32(3, 5)], [0]),
    # 3-D and other pooling
    ("nn.MaxPool3d(2)", [lambda: f32(2, 3, 4, 5, 6)], [0]),
    ("nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True)", [lambda: f32(1, 2, 5, 6, 7)], [0]),
    ("nn.MaxPool3d((2, 1, 3), stride=(1, 2, 2), dilation=(2, 1, 1), return_indices=True)",
     [lambda: f32(2, 6, 5, 7)], [0]),
    ("nn.AvgPool3d(2)", [lambda: f32(2, 3, 4, 5, 6)], [0]),
    ("nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)", [lambda: f32(1, 2, 5, 6, 7)],
     [0]),
    ("nn.AvgPool3d((1, 2, 3), divisor_override=4)", [lambda: f32(2, 3, 4, 6)], [0]),
    ("nn.AdaptiveAvgPool3d((2, None, 3))", [lambda: f32(2, 3, 5, 6, 7)], [0]),
    ("nn.AdaptiveAvgPool3d(1)", [lambda: f32(2, 4, 3, 3)], [0]),
    ("nn.AdaptiveMaxPool3d(3)", [lambda: f32(2, 3, 5, 6, 7)], [0]),
    ("nn.AdaptiveMaxPool3d((4, 2, 5), return_indices=True)", [lambda: f32(2, 5, 4, 7)], [0]),
    ("nn.LPPool1d(2, 3, stride=2)", [lambda: f32(2, 3, 9)], [0]),
    ("nn.LPPool2d(3, (2, 3))", [lambda: positive(2, 3, 6, 7)], [0]),
    ("nn.LPPool3d(1.5, 2, ceil_mode=True)", [lambda: positive(2, 3, 5, 4, 5)], [0]),
    ("nn.FractionalMaxPool2d(2, output_size=(4, 5), _random_samples=samples2)", [lambda: f32(2, 3, 8, 9)], [0]),
    ("nn.FractionalMaxPool2d((2, 3), output_ratio=0.5, return_indices=True, _random_samples=samples2)",
     [lambda: f32(2, 3, 10, 12)], [0]),
    ("nn.FractionalMaxPool3d(2, output_size=3, _random_samples=samples3)", [lambda: f32(2, 3, 6, 7, 8)], [0]),
    ("nn.FractionalMaxPool3d((1, 2, 3), output_ratio=(0.5, 0.6, 0.4), return_indices=True, "
     "_random_samples=samples3)", [lambda: f32(2, 3, 6, 7, 9)], [0]),
    # normalization
    ("nn.InstanceNorm3d(3)", [lambda: f32(2, 3, 3, 4, 5)], [0]),
    ("nn.InstanceNorm3d(3, affine=True, track_running_stats=True)", [lambda: f32(2, 3, 3, 4, 5)], [0]),
    ("nn.SyncBatchNorm(3)", [lambda: f32(4, 3, 5)], [0]),
    ("nn.SyncBatchNorm(3, momentum=None, affine=False)", [lambda: f32(4, 3, 2, 3)], [0]),
    ("nn.LocalResponseNorm(3)", [lambda: f32(2, 6, 5)], [0]),
    ("nn.LocalResponseNorm(4, alpha=0.1, beta=0.5, k=2.0)", [lambda: f32(2, 7, 3, 4)], [0]),
    ("nn.CrossMapLRN2d(3, alpha=0.1, beta=0.6, k=2.0)", [lambda: f32(2, 7, 3, 4)], [0]),
    ("nn.CrossMapLRN2d(5)", [lambda: f32(2, 9, 3, 2)], [0]),
    ("nn.CrossMapLRN2d(2, alpha=0.5)", [lambda: f32(1, 4, 3, 3)], [0]),
    # convolution, embedding, rearrangement
    ("nn.ConvTranspose3d(4, 2, 3)", [lambda: f32(2, 4, 3, 4, 3)], [0]),
    ("nn.ConvTranspose3d(4, 6, (2, 3, 2), stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2), "
     "groups=2, dilation=(1, 2, 1))", [lambda: f32(1, 4, 3, 4, 3)], [0]),
    ("nn.ConvTranspose3d(2, 2, 2, stride=2, bias=False)", [lambda: f32(2, 3, 2, 3)], [0]),
    ("nn.EmbeddingBag(10, 3)", [lambda: ints(10, 4, 5)], []),
    ("nn.EmbeddingBag(10, 3, mode='max')", [lambda: ints(10, 4, 5)], []),
    ("nn.EmbeddingBag(10, 3, mode='sum', padding_idx=2)", [lambda: ints(10, 9), lambda: np.array([0, 3, 3, 6])],
     []),
    ("nn.EmbeddingBag(10, 3, mode='max', include_last_offset=True)",
     [lambda: ints(10, 9), lambda: np.array([0, 2, 5, 9])], []),
    ("nn.EmbeddingBag(10, 3, mode='sum')", [lambda: ints(10, 9), lambda: np.array([0, 4, 4]), lambda: f32(9)],
     [2]),
    ("nn.Fold((4, 5), 2)", [lambda: f32(2, 12, 12)], [0]),
    ("nn.Fold(5, (2, 3), dilation=1, padding=1, stride=2)", [lambda: f32(2, 6, 9)], [0]),
    ("nn.Unfold(2)", [lambda: f32(2, 3, 4, 5)], [0]),
    ("nn.Unfold((2, 3), dilation=2, padding=1, stride=(1, 2))", [lambda: f32(2, 3, 6, 7)], [0]),
    ("nn.Upsample(scale_factor=2)", [lambda: f32(2, 3, 4, 5)], [0]),
    ("nn.Upsample(size=(5, 7), mode='bilinear', align_corners=True)", [lambda: f32(2, 3, 4, 5)], [0]),
    ("nn.Upsample(scale_factor=(1.5, 2.0), mode='bicubic')", [lambda: f32(2, 3, 4, 5)], [0]),
    ("nn.Upsample(scale_factor=2, mode='trilinear')", [lambda: f32(1, 2, 3, 4, 5)], [0]),
    ("nn.Upsample(size=3, mode='area')", [lambda: f32(2, 3, 7)], [0]),
    ("nn.Upsample(size=(3, 4, 2), mode='area')", [lambda: f32(1, 2, 6, 9, 5)], [0]),
    ("nn.Upsample(scale_factor=3, mode='nearest-exact')", [lambda: f32(2, 3, 4)], [0]),
    ("nn.UpsamplingNearest2d(scale_factor=2)", [lambda: f32(2, 3, 4, 5)], [0]),
    ("nn.UpsamplingBilinear2d(size=(7, 9))", [lambda: f32(2, 3, 4, 5)], [0]),
    ("nn.ChannelShuffle(3)", [lambda: f32(2, 6, 4, 5)], [0]),
    ("nn.ChannelShuffle(2)", [lambda: f32(2, 4, 3)], [0]),
    ("nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])", [lambda: f32(7, 8), lambda: ints(10, 7)], [0]),
    ("nn.AdaptiveLogSoftmaxWithLoss(8, 12, [2, 5, 9], div_value=2.0, head_bias=True)",
     [lambda: f32(9, 8), lambda: ints(12, 9)], [0]),
    ("nn.LinearCrossEntropyLoss(4, 7)", [lambda: f32(5, 4), lambda: ints(7, 5)], [0]),
    ("nn.LinearCrossEntropyLoss(4, 5, out_features=(3,), bias=True, reduction='sum', label_smoothing=0.1)",
     [lambda: f32(6, 4), lambda: ints(5, 6, 3)], [0]),
    ("nn.LinearCrossEntropyLoss(4, 7, weight=w7, ignore_index=2, options=nn.LinearCrossEntropyOptions("
     "batch_chunk_size=2, chunking_method=None))", [lambda: f32(5, 4), lambda: ints(7, 5)], [0]),
    ("nn.Container(a=nn.Linear(2, 3), b=nn.ReLU())", None, []),
]

LOSSES = [
    ("nn.CosineEmbeddingLoss()", [lambda: f32(4, 5), lambda: f32(4, 5), lambda: signs(4)], [0, 1]),
    ("nn.CosineEmbeddingLoss(margin=0.3, reduction='none')", [lambda: f32(4, 5), lambda: f32(4, 5),
                                                             lambda: signs(4)], [0, 1]),
    ("nn.CosineEmbeddingLoss(reduction='sum')", [lambda: f32(5), lambda: f32(5), lambda: signs()], [0, 1]),
    ("nn.HingeEmbeddingLoss()", [lambda: f32(4, 5), lambda: signs(4, 5)], [0]),
    ("nn.HingeEmbeddingLoss(margin=0.5, reduction='none')", [lambda: f32(6), lambda: signs(6)], [0]),
    ("nn.MarginRankingLoss()", [lambda: f32(6), lambda: f32(6), lambda: signs(6)], [0, 1]),
    ("nn.MarginRankingLoss(margin=0.2, reduction='sum')", [lambda: f32(3, 4), lambda: f32(3, 4),
                                                          lambda: signs(3, 4)], [0, 1]),
    ("nn.SoftMarginLoss()", [lambda: f32(4, 5), lambda: signs(4, 5)], [0]),
    ("nn.SoftMarginLoss(reduction='none')", [lambda: f32(4, 5), lambda: signs(4, 5)], [0]),
    ("nn.MultiLabelSoftMarginLoss()", [lambda: f32(4, 5), lambda: ints(2, 4, 5).astype(np.float32)], [0]),
    ("nn.MultiLabelSoftMarginLoss(weight=w5, reduction='none')",
     [lambda: f32(4, 5), lambda: ints(2, 4, 5).astype(np.float32)], [0]),
    ("nn.MultiLabelMarginLoss()", [lambda: f32(3, 4), multilabel_target], [0]),
    ("nn.MultiLabelMarginLoss(reduction='none')", [lambda: f32(3, 4), multilabel_target], [0]),
    ("nn.MultiLabelMarginLoss(reduction='sum')", [lambda: f32(4), lambda: multilabel_target()[1]], [0]),
    ("nn.MultiMarginLoss()", [lambda: f32(4, 5), lambda: ints(5, 4)], [0]),
    ("nn.MultiMarginLoss(p=2, margin=0.5, weight=w5, reduction='none')", [lambda: f32(4, 5), lambda: ints(5, 4)],
     [0]),
    ("nn.MultiMarginLoss(reduction='sum')", [lambda: f32(5), lambda: ints(5)], [0]),
    ("nn.TripletMarginLoss()", [lambda: f32(4, 5), lambda: f32(4, 5), lambda: f32(4, 5)], [0, 1, 2]),
    ("nn.TripletMarginLoss(margin=0.5, p=1.5, swap=True, reduction='none')",
     [lambda: f32(4, 5), lambda: f32(4, 5), lambda: f32(4, 5)], [0, 1, 2]),
    ("nn.TripletMarginWithDistanceLoss()", [lambda: f32(4, 5), lambda: f32(4, 5), lambda: f32(4, 5)], [0, 1, 2]),
    ("nn.TripletMarginWithDistanceLoss(distance_function=nn.CosineSimilarity(), margin=0.4, swap=True, "
     "reduction='sum')", [lambda: f32(4, 5), lambda: f32(4, 5), lambda: f32(4, 5)], [0, 1, 2]),
    ("nn.PoissonNLLLoss()", [lambda: f32(4, 5), lambda: RNG.poisson(2, (4, 5)).astype(np.float32)], [0]),
    ("nn.PoissonNLLLoss(log_input=False, full=True, reduction='none')",
     [lambda: positive(4, 5), lambda: RNG.poisson(2, (4, 5)).astype(np.float32)], [0]),
    ("nn.GaussianNLLLoss()", [lambda: f32(4, 5), lambda: f32(4, 5), lambda: positive(4, 5)], [0, 2]),
    ("nn.GaussianNLLLoss(full=True, eps=0.5, reduction='none')",
     [lambda: f32(4, 5), lambda: f32(4, 5), lambda: positive(4)], [0, 2]),
    ("nn.GaussianNLLLoss(reduction='sum')", [lambda: f32(4, 5), lambda: f32(4, 5), lambda: positive(4, 1)], [0, 2]),
    ("nn.NLLLoss2d()", [lambda: f32(2, 4, 3, 3), lambda: ints(4, 2, 3, 3)], [0]),
]
CASES += LOSSES


def build(expr):
    samples2, samples3 = RNG.random((2, 3, 2)).astype(np.float32), RNG.random((2, 3, 3)).astype(np.float32)
    w5, w7 = positive(5), positive(7)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        tm = eval(expr, {"nn": torch.nn, "samples2": torch.tensor(samples2), "samples3": torch.tensor(samples3),
                         "w5": torch.tensor(w5), "w7": torch.tensor(w7)})
        em = eval(expr, {"nn": enn, "samples2": ember.tensor(samples2), "samples3": ember.tensor(samples3),
                         "w5": ember.tensor(w5), "w7": ember.tensor(w7)})
    return tm, em


def close(e, t, tol=1e-5):
    if isinstance(t, (tuple, list)):
        assert len(e) == len(t)
        for a, b in zip(e, t):
            close(a, b, tol)
        return
    assert tuple(e.shape) == tuple(t.shape)
    assert e.dtype.name == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


def _first(out):
    return out[0] if isinstance(out, tuple) else out


def _loss_of(out):
    """A scalar from the output (AdaptiveLogSoftmaxWithLoss returns (output, loss))."""
    return out.loss if hasattr(out, "loss") else _first(out)


@pytest.mark.parametrize("expr,inputs,diff", CASES, ids=[c[0] for c in CASES])
def test_layer_matches_torch(expr, inputs, diff):
    tm, em = build(expr)
    assert repr(em) == repr(tm)
    tsd, esd = tm.state_dict(), em.state_dict()
    assert list(esd.keys()) == list(tsd.keys())
    assert [tuple(v.shape) for v in esd.values()] == [tuple(v.shape) for v in tsd.values()]
    em.load_state_dict({k: ember.tensor(v.detach().numpy().copy()) for k, v in tsd.items()})
    if inputs is None:
        return
    arrays = [make() for make in inputs]
    for mode in ("train", "eval"):
        getattr(tm, mode)()
        getattr(em, mode)()
        tin = [torch.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
        ein = [ember.tensor(a, requires_grad=i in diff) for i, a in enumerate(arrays)]
        tout, eout = tm(*tin), em(*ein)
        close(eout, tout, 1e-4)
        for name, buf in tm.named_buffers():
            close(em.get_buffer(name), buf)
        if mode == "eval":
            continue
        tl, el = _loss_of(tout), _loss_of(eout)
        if not tl.requires_grad:
            continue
        gout = RNG.standard_normal(tuple(tl.shape)).astype(np.float32)
        tl.backward(torch.tensor(gout))
        el.backward(ember.tensor(gout))
        for i in diff:
            close(ein[i].grad, tin[i].grad, 1e-4)
        for (name, ep), (_, tp) in zip(em.named_parameters(), tm.named_parameters()):
            if tp.grad is not None:
                close(ep.grad, tp.grad, 1e-4)


BAD_INPUTS = [
    ("nn.CircularPad2d(1)", lambda: [f32(5)]),
    ("nn.ReflectionPad1d(3)", lambda: [f32(2, 3)]),
    ("nn.MaxPool3d(2)", lambda: [f32(4, 4)]),
    ("nn.MaxPool3d(5)", lambda: [f32(1, 2, 4, 4, 4)]),
    ("nn.MaxPool3d(2, padding=2)", lambda: [f32(1, 2, 4, 4, 4)]),
    ("nn.AvgPool3d(2)", lambda: [f32(4, 4)]),
    ("nn.AdaptiveAvgPool3d(2)", lambda: [f32(4, 4, 4)]),
    ("nn.AdaptiveMaxPool3d((2, 2))", lambda: [f32(1, 2, 4, 4, 4)]),
    ("nn.FractionalMaxPool2d(3, output_size=4)", lambda: [f32(1, 2, 5, 5)]),
    ("nn.InstanceNorm3d(3)", lambda: [f32(3, 4)]),
    ("nn.SyncBatchNorm(3)", lambda: [f32(3)]),
    ("nn.LocalResponseNorm(2)", lambda: [f32(3, 4)]),
    ("nn.CrossMapLRN2d(3)", lambda: [f32(2, 3, 4)]),
    ("nn.ConvTranspose3d(4, 2, 3)", lambda: [f32(1, 3, 3, 3, 3)]),
    ("nn.EmbeddingBag(10, 3)", lambda: [ints(10, 2, 3, 4)]),
    ("nn.EmbeddingBag(10, 3)", lambda: [ints(10, 6)]),
    ("nn.EmbeddingBag(10, 3)", lambda: [ints(10, 2, 3), np.array([0, 1])]),
    ("nn.EmbeddingBag(10, 3, mode='mean')", lambda: [ints(10, 6), np.array([0, 2]), f32(6)]),
    ("nn.Fold(4, 2)", lambda: [f32(2, 3, 4, 5, 6)]),
    ("nn.ChannelShuffle(4)", lambda: [f32(2, 6, 3)]),
    ("nn.Upsample(scale_factor=2, mode='bilinear')", lambda: [f32(2, 3, 4)]),
    ("nn.MarginRankingLoss()", lambda: [f32(4), f32(4, 1), signs(4)]),
    ("nn.CosineEmbeddingLoss()", lambda: [f32(4, 5), f32(4, 5), signs(4, 2)]),
    ("nn.MultiMarginLoss()", lambda: [f32(4, 5), ints(5, 3)]),
    ("nn.TripletMarginLoss()", lambda: [f32(4, 5), f32(4, 5), f32(5)]),
    ("nn.GaussianNLLLoss()", lambda: [f32(4, 5), f32(4, 5), positive(3)]),
    ("nn.GaussianNLLLoss()", lambda: [f32(4, 5), f32(4, 5), -positive(4, 5)]),
    ("nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])", lambda: [f32(4, 8), ints(10, 5)]),
    ("nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6])", lambda: [f32(4, 8), np.array([0, 1, 2, 10])]),
    ("nn.LinearCrossEntropyLoss(4, 7)", lambda: [f32(5, 3), ints(7, 5)]),
]


@pytest.mark.parametrize("expr,inputs", BAD_INPUTS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_INPUTS)])
def test_bad_input_raises_torchs_exception_type(expr, inputs):
    tm, em = build(expr)
    arrays = inputs()
    with pytest.raises(Exception) as texc:
        tm(*[torch.tensor(a) for a in arrays])
    with pytest.raises(type(texc.value)):
        em(*[ember.tensor(a) for a in arrays])


BAD_CONSTRUCTORS = [
    "nn.FractionalMaxPool2d(2)", "nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)",
    "nn.FractionalMaxPool3d(2, output_ratio=1.5)", "nn.FractionalMaxPool3d(0, output_size=2)",
    "nn.MultiMarginLoss(p=3)", "nn.TripletMarginLoss(margin=0)", "nn.TripletMarginWithDistanceLoss(margin=-1)",
    "nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])", "nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3])",
    "nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 10])", "nn.EmbeddingBag(5, 2, padding_idx=5)",
    "nn.LinearCrossEntropyLoss(4, 7, label_smoothing=1.5)", "nn.LinearCrossEntropyOptions(acc_policy='fast')",
    "nn.LinearCrossEntropyOptions(chunking_method='rows')", "nn.LinearCrossEntropyOptions(batch_chunk_size=0)",
]


@pytest.mark.parametrize("expr", BAD_CONSTRUCTORS)
def test_bad_constructor_raises_torchs_exception_type(expr):
    with pytest.raises(Exception) as texc:
        eval(expr, {"nn": torch.nn})
    with pytest.raises(type(texc.value)):
        eval(expr, {"nn": enn})


def test_max_unpool_inverts_max_pool_like_torch():
    x = f32(2, 3, 4, 6, 8)
    for n, shape in ((1, (2, 3, 8)), (2, (2, 3, 6, 8)), (3, (2, 3, 4, 6, 8))):
        x = f32(*shape)
        tpool = getattr(torch.nn, f"MaxPool{n}d")(2, return_indices=True)
        tout, tidx = tpool(torch.tensor(x))
        tun, eun = getattr(torch.nn, f"MaxUnpool{n}d")(2), getattr(enn, f"MaxUnpool{n}d")(2)
        assert repr(eun) == repr(tun)
        ein = ember.tensor(tout.numpy(), requires_grad=True)
        tin = tout.detach().requires_grad_()
        eres, tres = eun(ein, ember.tensor(tidx.numpy())), tun(tin, tidx)
        close(eres, tres)
        gout = f32(*tres.shape)
        eres.backward(ember.tensor(gout))
        tres.backward(torch.tensor(gout))
        close(ein.grad, tin.grad)
        # an explicit (larger) output size, as the N, C, *spatial list
        size = [s + 1 for s in tres.shape]
        close(eun(ein, ember.tensor(tidx.numpy()), output_size=size[:2] + size[2:]),
              tun(tin, tidx, output_size=size[:2] + size[2:]))


def test_sync_batch_norm_converts_a_model_like_torch():
    tm, em = build("nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.Sequential(nn.BatchNorm1d(4, affine=False)))")
    tconv, econv = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tm), enn.SyncBatchNorm.convert_sync_batchnorm(em)
    assert repr(econv) == repr(tconv)
    assert econv[1].weight is em[1].weight and econv[1].running_mean is em[1].running_mean


def test_uninitialized_parameter_and_buffer_like_torch():
    for lib in (torch, ember):
        p = lib.nn.UninitializedParameter()
        assert repr(p) == "<UninitializedParameter>"
        assert lib.nn.parameter.is_lazy(p)
        with pytest.raises(ValueError):
            p + 1
        with pytest.raises(ValueError):
            p.sum()
        with pytest.raises(RuntimeError):
            p.shape
        m = lib.nn.Module()
        m.w = p
        assert list(dict(m.named_parameters())) == ["w"]
        with pytest.raises(ValueError):
            m.state_dict()
        p.materialize((2, 3))
        assert type(p) is lib.nn.Parameter and tuple(p.shape) == (2, 3) and p.requires_grad
        assert not lib.nn.parameter.is_lazy(p)
        b = lib.nn.UninitializedBuffer()
        b.materialize(4, dtype=lib.float64)
        assert type(b) is lib.Tensor and b.dtype == lib.float64 and not b.requires_grad


def test_container_is_deprecated_like_torch():
    with pytest.warns(FutureWarning):
        em = enn.Container(a=enn.Linear(2, 3))
    assert [n for n, _ in em.named_children()] == ["a"]


def test_adaptive_log_softmax_log_prob_and_predict_match_torch():
    tm, em = build("nn.AdaptiveLogSoftmaxWithLoss(8, 12, [2, 5, 9], div_value=2.0)")
    em.load_state_dict({k: ember.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()})
    x = f32(16, 8)
    close(em.log_prob(ember.tensor(x)), tm.log_prob(torch.tensor(x)))
    np.testing.assert_array_equal(em.predict(ember.tensor(x)).numpy(), tm.predict(torch.tensor(x)).numpy())
    # unbatched
    out_e, out_t = em(ember.tensor(x[0]), ember.tensor(7)), tm(torch.tensor(x[0]), torch.tensor(7))
    close(out_e.output, out_t.output)
    close(out_e.loss, out_t.loss)


def test_lazy_layer_files_list_what_they_define():
    """ember/nn/modules/__init__.py's table of lazily loaded files names exactly each file's __all__."""
    import importlib
    from ember.nn import modules
    for file, names in modules._LAZY_FILES.items():
        assert tuple(importlib.import_module(f"ember.nn.modules.{file}").__all__) == names, file


def test_embedding_bag_from_pretrained_like_torch():
    weight = f32(6, 3)
    for freeze in (True, False):
        tm = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(weight), freeze=freeze, mode="sum", padding_idx=1)
        em = enn.EmbeddingBag.from_pretrained(ember.tensor(weight), freeze=freeze, mode="sum", padding_idx=1)
        assert repr(em) == repr(tm) and em.weight.requires_grad == tm.weight.requires_grad
        idx = ints(6, 3, 4)
        close(em(ember.tensor(idx)), tm(torch.tensor(idx)))
    with pytest.raises(AssertionError):
        enn.EmbeddingBag.from_pretrained(ember.tensor(weight[0]))
