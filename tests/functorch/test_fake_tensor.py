"""ember._functorch.fake_tensor against torch._subclasses.fake_tensor: the same program run on fake
tensors in both libraries gives outputs of the same shape, strides, dtype, device and requires_grad;
the same errors (data-dependent ops, real tensors mixed with fakes, devices that do not match); views
share their input's storage exactly when torch's do; autograd gives fake gradients like torch's."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode as TorchFakeMode
from torch.multiprocessing.reductions import StorageWeakRef

import ember
from ember._functorch.fake_tensor import FakeTensorMode, is_fake

from node_vals import significant_strides

F32 = "float32"


def _arr(shape, dtype=F32, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("int"):
        return rng.integers(0, 3, size=shape).astype(dtype)
    return rng.uniform(0.5, 1.5, size=shape).astype(dtype)


def _inputs(specs):
    """(ember tensors, torch tensors) with equal values from specs (shape, dtype[, "grad" | "t"])."""
    ours, theirs = [], []
    for i, spec in enumerate(specs):
        shape, dtype, *flags = spec
        a = _arr(shape, dtype, seed=i)
        e, t = ember.from_numpy(a.copy()), torch.from_numpy(a.copy())
        if "t" in flags:           # a transposed (non-contiguous) view
            e, t = ember.from_numpy(np.ascontiguousarray(a.T).copy()).t(), torch.from_numpy(np.ascontiguousarray(a.T).copy()).t()
        if "grad" in flags:
            e.requires_grad_(True)
            t.requires_grad_(True)
        ours.append(e)
        theirs.append(t)
    return ours, theirs


def _flat(value):
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flat(v)]
    return []


def _meta(t):
    dtype = str(t.dtype).split(".")[-1]
    return tuple(t.shape), significant_strides(t), dtype, str(t.device), t.requires_grad


def run_both(program, specs, *, in_mode=True):
    """Run `program(lib, *inputs)` on fakes of the same inputs in both libraries; (ours, theirs)."""
    ours_in, theirs_in = _inputs(specs)
    mode, tmode = FakeTensorMode(), TorchFakeMode()
    ours_in = [mode.from_tensor(x) for x in ours_in]
    theirs_in = [tmode.from_tensor(x) for x in theirs_in]
    if in_mode:
        with mode:
            ours = program(ember, *ours_in)
        with tmode:
            theirs = program(torch, *theirs_in)
    else:
        ours, theirs = program(ember, *ours_in), program(torch, *theirs_in)
    return ours, theirs


def assert_same_metadata(ours, theirs):
    ours, theirs = _flat(ours), _flat(theirs)
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert is_fake(o), type(o)
        assert _meta(o) == _meta(t)


M = (3, 4)
PROGRAMS = {
    # pointwise: broadcasting and type promotion
    "add_broadcast": (lambda L, x, y: x + y, [((3, 1, 4), F32), ((2, 4), F32)]),
    "int_times_float_scalar": (lambda L, x: x * 2.5, [(M, "int64")]),
    "int32_plus_int64": (lambda L, x, y: x + y, [(M, "int32"), (M, "int64")]),
    "f32_plus_f64": (lambda L, x, y: x + y, [(M, F32), ((4,), "float64")]),
    "f32_plus_f64_scalar_tensor": (lambda L, x, y: x + y, [(M, F32), ((), "float64")]),
    "bool_plus_int": (lambda L, x, y: x + y, [(M, "bool"), (M, "int32")]),
    "int_true_divide": (lambda L, x, y: x / y, [(M, "int64"), (M, "int64")]),
    "compare_where": (lambda L, x, y: L.where(x > y, x, y.double()), [(M, F32), (M, F32)]),
    "unary_on_transposed": (lambda L, x: (x.exp(), x.sigmoid(), x + 1), [(M, F32, "t")]),
    "int_exp_promotes": (lambda L, x: (x.exp(), x.sqrt(), x.abs()), [(M, "int32")]),
    "clamp_pow": (lambda L, x: (x.clamp(0.2, 0.8), x.pow(2), 2 ** x), [(M, F32)]),
    "mixed_layout": (lambda L, x, y: x * y, [(M, F32, "t"), (M, F32)]),
    # reductions
    "sum_all": (lambda L, x: (x.sum(), x.mean(), x.amax()), [((2, 3, 4), F32)]),
    "sum_dim_keepdim": (lambda L, x: (x.sum(1, keepdim=True), x.mean((0, 2)), x.var(1), x.std(0)), [((2, 3, 4), F32)]),
    "int_sum_prod": (lambda L, x: (x.sum(), x.prod(1), x.cumsum(0)), [(M, "int32")]),
    "max_dim": (lambda L, x: (x.max(1), x.min(0, keepdim=True), x.argmax(-1)), [(M, F32)]),
    "logsumexp_norm": (lambda L, x: (x.logsumexp(1), x.norm(), x.all(), x.any(0)), [(M, F32)]),
    # views
    "view_reshape": (lambda L, x: (x.view(12), x.reshape(2, 6), x.view(-1, 2)), [(M, F32)]),
    "reshape_transposed": (lambda L, x: x.reshape(12), [(M, F32, "t")]),
    "permute_transpose": (lambda L, x: (x.permute(2, 0, 1), x.transpose(0, 2), x.t() if x.ndim == 2 else x.mT),
                          [((2, 3, 4), F32)]),
    "expand_unsqueeze": (lambda L, x: (x.unsqueeze(0).expand(5, 3, 4), x[:, None].squeeze(1), x.flatten()), [(M, F32)]),
    "slicing": (lambda L, x: (x[1:, ::2], x[0], x[..., -1], x[:, 1:3].contiguous(), x.narrow(1, 1, 2)),
                [((3, 5), F32)]),
    "split_unbind": (lambda L, x: (x.split(2, 1), x.unbind(0), x.chunk(3, 1), x.diagonal()), [((3, 5), F32)]),
    "movedim_select": (lambda L, x: (x.movedim(0, -1), x.select(1, 2), x.unflatten(2, (2, 2))), [((2, 3, 4), F32)]),
    # linear algebra, convolution
    "matmul_broadcast": (lambda L, x, y: x @ y, [((2, 3, 4), F32), ((4, 5), F32)]),
    "bmm_mm_addmm": (lambda L, x, y, z: (L.bmm(x, x.transpose(1, 2)), L.mm(y, z), L.addmm(y[:, :1], y, z)),
                     [((2, 3, 4), F32), ((3, 4), F32), ((4, 3), F32)]),
    "linear": (lambda L, x, w, b: L.nn.functional.linear(x, w, b), [((5, 4), F32), ((3, 4), F32), ((3,), F32)]),
    "conv2d": (lambda L, x, w, b: L.nn.functional.conv2d(x, w, b, stride=2, padding=1),
               [((2, 3, 9, 9), F32), ((4, 3, 3, 3), F32), ((4,), F32)]),
    "conv1d": (lambda L, x, w: L.nn.functional.conv1d(x, w, dilation=2), [((2, 3, 10), F32), ((4, 3, 3), F32)]),
    # joining
    "cat_stack": (lambda L, x, y: (L.cat([x, y], 0), L.stack([x, y], 1), L.cat([x, y.t().t()], 1)), [(M, F32), (M, F32)]),
    # nn
    "softmax": (lambda L, x: (L.softmax(x, 1), L.log_softmax(x, 0), L.nn.functional.gelu(x)), [(M, F32)]),
    "layer_norm": (lambda L, x, w, b: L.nn.functional.layer_norm(x, (4,), w, b), [((2, 3, 4), F32), ((4,), F32), ((4,), F32)]),
    "batch_norm_train": (lambda L, x, rm, rv: L.nn.functional.batch_norm(x, rm, rv, training=True),
                         [((4, 3, 5), F32), ((3,), F32), ((3,), F32)]),
    "batch_norm_eval": (lambda L, x, rm, rv: L.nn.functional.batch_norm(x, rm, rv), [((4, 3, 5, 5), F32), ((3,), F32), ((3,), F32)]),
    "embedding": (lambda L, w, i: L.nn.functional.embedding(i, w), [((10, 4), F32), ((2, 3), "int64")]),
    "pooling": (lambda L, x: (L.nn.functional.max_pool2d(x, 2), L.nn.functional.avg_pool2d(x, 3, 1),
                              L.nn.functional.adaptive_avg_pool2d(x, 1)), [((2, 3, 8, 8), F32)]),
    "losses": (lambda L, x, t: (L.nn.functional.cross_entropy(x, t), L.nn.functional.mse_loss(x, x)),
               [((4, 5), F32), ((4,), "int64")]),
    "dropout_train": (lambda L, x: L.nn.functional.dropout(x, 0.5, True), [(M, F32)]),
    # indexing with integer tensors
    "index_tensor": (lambda L, x, i: (x[i], x[:, i], x[i, i]), [((3, 3), F32), ((2,), "int64")]),
    "index_select_gather": (lambda L, x, i: (x.index_select(1, i[0]), x.gather(1, i), x.scatter(1, i, 1.0)),
                            [(M, F32), ((3, 2), "int64")]),
    "masked_fill_index_put": (lambda L, x, m, i: (x.masked_fill(m, 0.0), x.index_put((i,), x[0])),
                              [(M, F32), (M, "bool"), ((2,), "int64")]),
    # in place
    "inplace_chain": (lambda L, x: x.clone().add_(1).mul_(2).relu_(), [(M, F32)]),
    "inplace_transposed": (lambda L, x, y: x.clone().t().add_(y), [(M, F32), ((4, 3), F32)]),
    "inplace_broadcast_rhs": (lambda L, x, y: x.clone().mul_(y), [(M, F32), ((4,), F32)]),
    "setitem": (lambda L, x, y: _setitem(x.clone(), y), [(M, F32), ((4,), F32)]),
    "boolean_mask_writes": (lambda L, x, m, v: (_setitem(x.clone(), 1.0, m), x.clone().index_put_((m,), v),
                                                x.index_put((m,), v, True), x.masked_scatter(m, x)),
                            [(M, F32), (M, "bool"), ((5,), F32)]),
    "copy_fill_zero": (lambda L, x, y: (x.clone().copy_(y), x.clone().fill_(2), x.clone().zero_()), [(M, F32), ((4,), "float64")]),
    # factory functions
    "factories": (lambda L: (L.zeros(2, 3), L.ones(4, dtype=L.int32), L.empty(3, 2), L.full((2, 2), 7),
                             L.full((2,), 1.5), L.arange(5), L.arange(0, 1, 0.25), L.linspace(0, 1, 5),
                             L.eye(3), L.randn(2, 3), L.rand(4), L.randint(0, 5, (3,)), L.empty_strided((2, 3), (1, 2)),
                             L.tensor([1, 2, 3]), L.tensor(2.5), L.zeros(2, 3, dtype=L.float64)), []),
    "like_factories": (lambda L, x: (L.zeros_like(x), L.ones_like(x, dtype=L.int64), L.empty_like(x), L.randn_like(x),
                                     L.full_like(x, 3), x.new_zeros(2), x.new_ones((2, 2)), x.new_full((3,), 1)),
                       [(M, F32, "t")]),
    "dtype_conversions": (lambda L, x: (x.double(), x.to(L.int32), x.long(), x.bool(), x.half(), x.to("cpu")), [(M, F32)]),
    "requires_grad_flow": (lambda L, x, y: ((x * y).sum(1), x.detach(), (x + 1).detach(), y * 2), [(M, F32, "grad"), (M, F32)]),
}


def _setitem(x, y, mask=None):
    if mask is not None:
        x[mask] = y
        return x
    x[0] = y
    x[:, 1] = 0.5
    return x


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_outputs_match_torch_fake_outputs(name):
    program, specs = PROGRAMS[name]
    ours, theirs = run_both(program, specs)
    assert_same_metadata(ours, theirs)


@pytest.mark.parametrize("name", ["add_broadcast", "max_dim", "split_unbind", "matmul_broadcast", "inplace_chain"])
def test_ops_on_fakes_work_outside_the_mode(name):
    program, specs = PROGRAMS[name]
    ours, theirs = run_both(program, specs, in_mode=False)
    assert_same_metadata(ours, theirs)


GRAD_PROGRAMS = {
    "mlp": (lambda L, x, w1, b1, w2: (L.nn.functional.linear(x, w1, b1).relu() @ w2).sum(),
            [((5, 4), F32), ((6, 4), F32, "grad"), ((6,), F32, "grad"), ((6, 3), F32, "grad")]),
    "conv_pool": (lambda L, x, w: L.nn.functional.max_pool2d(L.nn.functional.conv2d(x, w, padding=1), 2).mean(),
                  [((2, 3, 8, 8), F32, "grad"), ((4, 3, 3, 3), F32, "grad")]),
    # (x.t() @ y with a leaf x: eager ember's x.grad is (1, 4)-strided where torch's AccumulateGrad makes
    # it follow x's layout; fake mode gives what eager gives, so the program leaves that case out)
    "views_and_softmax": (lambda L, x, y: (L.softmax(x.unsqueeze(0)[0] @ y[:, ::2], -1)[:, 1:] * 3).sum(),
                          [((3, 4), F32, "grad"), ((4, 6), F32, "grad")]),
    "layer_norm_gelu": (lambda L, x, w: L.nn.functional.gelu(L.nn.functional.layer_norm(x, (4,), w)).sum(),
                        [((2, 3, 4), F32, "grad"), ((4,), F32, "grad")]),
    "broadcast_reduce": (lambda L, x, y: ((x + y) ** 2).mean(), [((3, 1, 4), F32, "grad"), ((2, 4), "float64", "grad")]),
}


@pytest.mark.parametrize("name", sorted(GRAD_PROGRAMS))
@pytest.mark.parametrize("how", ["backward", "autograd.grad"])
def test_autograd_gives_fake_grads_like_torch(name, how):
    program, specs = GRAD_PROGRAMS[name]

    def grads(L, *xs):
        loss = program(L, *xs)
        leaves = [x for x in xs if x.requires_grad]
        if how == "backward":
            loss.backward()
            return [loss] + [x.grad for x in leaves]
        return [loss] + list(L.autograd.grad(loss, leaves))
    ours, theirs = run_both(grads, specs)
    assert_same_metadata(ours, theirs)
    assert ours[0].grad_fn is not None and all(g.grad_fn is None for g in ours[1:])


# ---------------------------------------------------------------------------------------
# devices: fake cuda without a GPU
# ---------------------------------------------------------------------------------------
DEVICE_PROGRAMS = {
    "factory_cuda": lambda L: (L.empty(2, 3, device="cuda"), L.zeros(3, dtype=L.int32, device="cuda"),
                               L.empty(2, device="cuda:1"), L.randn(2, device="cuda")),
    "cuda_plus_cpu_scalar_tensor": lambda L: L.empty(4, 3, device="cuda") + L.tensor(2.0),
    "cpu_scalar_fake_plus_cuda": lambda L: L.empty((), device="cpu") * L.empty(4, 3, device="cuda"),
    "cuda_mm_and_like": lambda L: (L.empty(4, 3, device="cuda") @ L.empty(3, 2, device="cuda"),
                                   L.ones_like(L.empty(4, 3, device="cuda"))),
    "cuda_to_cpu_and_copy": lambda L: (L.empty(4, 3, device="cuda").cpu(), L.empty(4, 3).copy_(L.empty(4, 3, device="cuda"))),
    "meta_device": lambda L: L.empty(2, device="meta") + 1,
}


@pytest.mark.parametrize("name", sorted(DEVICE_PROGRAMS))
def test_fake_devices_match_torch(name):
    ours, theirs = run_both(lambda L: DEVICE_PROGRAMS[name](L), [])
    assert_same_metadata(ours, theirs)


@pytest.mark.parametrize("program", [lambda L: L.empty(4, 3, device="cuda") + L.empty(4, 3),
                                     lambda L: L.where(L.empty(4, 3) > 0, L.empty(4, 3, device="cuda"), 0.0)])
def test_device_mismatch_raises_like_torch(program):
    errors = []
    for L, mode in ((ember, FakeTensorMode()), (torch, TorchFakeMode())):
        with mode, pytest.raises(RuntimeError) as info:
            program(L)
        errors.append(info.value)
    assert type(errors[0]).__name__ == type(errors[1]).__name__ == "FakeTensorDeviceMismatchError"
    assert str(errors[0]).endswith(str(errors[1]))
    assert str(errors[0]).startswith("aten::")


def test_moving_a_fake_to_cuda_and_back_keeps_metadata():
    # PyTorch built without CUDA refuses `.to("cuda")` even on fakes, so the oracle here is the rule its
    # fake_impls apply: the device argument decides, layout and dtype follow _to_copy's meta kernel.
    mode = FakeTensorMode()
    x = mode.from_tensor(ember.randn(4, 3).t())
    with mode:
        y = x.to("cuda")
        z = y.cuda().double().cpu()
    assert (y.device, y.stride(), y.dtype) == (ember.device("cuda", 0), x.stride(), x.dtype)
    assert (z.device.type, z.stride(), z.dtype) == ("cpu", x.stride(), ember.float64)
    assert y.is_cuda and not y.is_cpu and y.get_device() == 0 and not z.is_cuda and z.get_device() == -1


# ---------------------------------------------------------------------------------------
# storage: views share their input's fake storage exactly when torch's do
# ---------------------------------------------------------------------------------------
ALIAS_PROGRAMS = {
    "view": lambda L, x: (x, x.view(12)),
    "transpose": lambda L, x: (x, x.t()),
    "slice": lambda L, x: (x, x[1:, ::2]),
    "clone": lambda L, x: (x, x.clone()),
    "detach": lambda L, x: (x, x.detach()),
    "reshape_contiguous": lambda L, x: (x, x.reshape(2, 6)),
    "reshape_transposed": lambda L, x: (x, x.t().reshape(12)),
    "unbind": lambda L, x: (x, x.unbind(0)[1]),
    "split": lambda L, x: (x, x.split(2, 1)[1]),
    "expand": lambda L, x: (x, x[:1].expand(5, 4)),
    "inplace": lambda L, x: (x, x.add_(1)),
    "add": lambda L, x: (x, x + 0),
    "contiguous_of_contiguous": lambda L, x: (x, x.contiguous()),
    "contiguous_of_transposed": lambda L, x: (x, x.t().contiguous()),
    "to_same_dtype": lambda L, x: (x, x.to(L.float32)),
    "view_of_view": lambda L, x: (x, x[1:].t()[0]),
}


@pytest.mark.parametrize("name", sorted(ALIAS_PROGRAMS))
def test_views_share_storage_like_torch(name):
    program = ALIAS_PROGRAMS[name]
    for _ in range(2):                 # the second run answers from the cache: still the right storage
        ours, theirs = run_both(program, [(M, F32)])
        assert (ours[0].untyped_storage() is ours[1].untyped_storage()) == (
            StorageWeakRef(theirs[0].untyped_storage()) == StorageWeakRef(theirs[1].untyped_storage()))
        assert ours[1].storage_offset() == theirs[1].storage_offset()


def test_from_tensor_keeps_views_strides_offset_and_memoises():
    base = np.arange(16, dtype=np.float32).reshape(4, 4)
    e, t = ember.from_numpy(base.copy()), torch.from_numpy(base.copy())
    mode, tmode = FakeTensorMode(), TorchFakeMode()
    ev, tv = mode.from_tensor(e[1:, ::2]), tmode.from_tensor(t[1:, ::2])
    assert (tuple(ev.shape), ev.stride(), ev.storage_offset()) == (tuple(tv.shape), tv.stride(), tv.storage_offset())
    assert mode.from_tensor(e[1:, ::2]).untyped_storage() is ev.untyped_storage() is mode.from_tensor(e).untyped_storage()
    assert mode.from_tensor(e) is mode.from_tensor(e)
    other = mode.from_tensor(ember.from_numpy(base.copy()))
    assert other.untyped_storage() is not ev.untyped_storage()
    g = ember.randn(3, requires_grad=True)
    fg = mode.from_tensor(g)
    assert fg.requires_grad and fg.is_leaf and mode.from_tensor(ember.randn(3)).requires_grad is False


# ---------------------------------------------------------------------------------------
# errors: data-dependent ops, real tensors among fakes
# ---------------------------------------------------------------------------------------
DATA_DEPENDENT = {
    # name: (program, torch's op name when ember's table has the same op)
    "nonzero": (lambda L, x: L.nonzero(x), "nonzero"),
    "argwhere": (lambda L, x: L.argwhere(x), None),                # torch: nonzero; ember: its own argwhere
    "where_one_argument": (lambda L, x: L.where(x > 1), None),      # torch: nonzero; ember: nonzero_numpy
    "item": (lambda L, x: x.sum().item(), "_local_scalar_dense"),
    "tolist": (lambda L, x: x.tolist(), "_local_scalar_dense"),
    "bool": (lambda L, x: bool(x[0, 0] > 1), "_local_scalar_dense"),
    "int": (lambda L, x: int(x[0, 0]), "_local_scalar_dense"),
    "float": (lambda L, x: float(x[0, 0]), "_local_scalar_dense"),
    "boolean_mask_index": (lambda L, x: x[x > 1], None),          # torch: nonzero; ember: index.Tensor
    "masked_select": (lambda L, x: L.masked_select(x, x > 1), "masked_select"),
    "unique": (lambda L, x: L.unique(x), "_unique2"),
    "unique_consecutive": (lambda L, x: L.unique_consecutive(x), "unique_consecutive"),
    "repeat_interleave_tensor": (lambda L, x: L.repeat_interleave(x, L.ones(3, dtype=L.int64), dim=0), None),
    "repeat_interleave_repeats": (lambda L, x: L.repeat_interleave(L.ones(3, dtype=L.int64)), "repeat_interleave"),
    "equal": (lambda L, x: L.equal(x, x), "equal"),
    "allclose": (lambda L, x: L.allclose(x, x), "allclose"),
    "one_hot_infer_classes": (lambda L, x: L.nn.functional.one_hot(x.long()), None),
}


@pytest.mark.parametrize("name", sorted(DATA_DEPENDENT))
def test_data_dependent_ops_raise_like_torch(name):
    program, torch_op = DATA_DEPENDENT[name]
    errors = []
    for L, mode in ((ember, FakeTensorMode()), (torch, TorchFakeMode())):
        x = mode.from_tensor(L.ones(3, 4))
        with mode, pytest.raises(RuntimeError) as info:
            program(L, x)
        errors.append(info.value)
    ours, theirs = errors
    # ember's DynamicOutputShapeException is a DataDependentOutputException: either is torch's class
    # or its subclass (one_hot: torch reads num_classes with item(), ember refuses the op itself)
    assert type(theirs).__name__ in [c.__name__ for c in type(ours).__mro__]
    assert isinstance(ours, ember._functorch.DataDependentOutputException)
    assert str(ours).startswith("aten::")
    if torch_op is not None:
        assert str(ours).split(":")[2].split(".")[0] == torch_op == theirs.func._opname


def test_shape_known_from_arguments_is_not_data_dependent():
    ours, theirs = run_both(lambda L, x, r: (L.repeat_interleave(r, output_size=5), x[L.tensor([0, 2])],
                                             L.nn.functional.one_hot(r, 4), x.repeat_interleave(2, dim=0)),
                            [(M, F32), ((3,), "int64")])
    assert_same_metadata(ours, theirs)


@pytest.mark.parametrize("inside", [True, False])
def test_real_and_fake_in_one_op_raise_like_torch(inside):
    errors = []
    for L, mode in ((ember, FakeTensorMode()), (torch, TorchFakeMode())):
        x, real = mode.from_tensor(L.ones(4, 3)), L.ones(4, 3)
        with pytest.raises(AssertionError) as info:
            if inside:
                with mode:
                    x + real
            else:
                x + real
        errors.append(str(info.value))
    assert errors[0] == errors[1]


def test_real_tensor_alone_inside_the_mode_raises_and_allow_non_fake_inputs_converts():
    for L, Mode in ((ember, FakeTensorMode), (torch, TorchFakeMode)):
        real = L.ones(4, 3).t()
        with Mode(), pytest.raises(AssertionError, match="aten.mul.Tensor"):
            real * 2
        with Mode(allow_non_fake_inputs=True):
            out = real * 2
        assert type(out).__name__ == "FakeTensor" and out.stride() == (1, 3)


def test_a_fake_function_making_its_output_on_the_inputs_device_matches_torch():
    """A user op's fake function written the usual way, ``empty(shape, device=x.device)``: PyTorch
    runs it on fakes that report their device (cpu); ember runs Meta kernels on fakes that report
    meta, so the tensor it makes is moved to the op's output device (was: a fake on meta, and the
    next op on it a device mismatch)."""
    torch_lib = torch.library.Library("ember_fake_devtest", "FRAGMENT")
    torch_lib.define("twice(Tensor x) -> Tensor")
    torch_lib.impl("twice", lambda x: x * 2, "CPU")
    torch.library.register_fake("ember_fake_devtest::twice", lambda x: torch.empty(x.shape, dtype=x.dtype,
                                                                                  device=x.device), lib=torch_lib)
    lib = ember.library.Library("ember_fake_devtest", "DEF")
    try:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        lib.impl("twice", lambda x: ember.empty(x.shape, dtype=x.dtype, device=x.device), "Meta")
        with TorchFakeMode() as torch_mode:
            want = torch.ops.ember_fake_devtest.twice(torch_mode.from_tensor(torch.ones(2, 3))) + 1
        with FakeTensorMode() as mode:
            got = ember.ops.ember_fake_devtest.twice(mode.from_tensor(ember.ones(2, 3))) + 1
        assert is_fake(got) and str(got.device) == str(want.device) == "cpu"
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
        with FakeTensorMode() as mode:          # an op whose inputs are on meta keeps meta
            got_meta = ember.ops.ember_fake_devtest.twice(mode.from_tensor(ember.ones(2, device="meta")))
        assert str(got_meta.device) == "meta"
    finally:
        lib._destroy()
        torch_lib._destroy()
