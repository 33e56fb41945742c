"""Module-tree guards behind the module state version (ember/_dynamo/module_guards.py): after every
kind of change to a module tree, the two-tier check answers exactly what the full guard list
answers (CheckFn.failure_reason evaluates every guard, one by one), the compiled model gives eager's
values, and it recompiles exactly when a guard fails."""
import copy
import pickle

import numpy as np
import pytest

import ember
from ember._dynamo import eval_frame
from ember.nn.modules._common import STATE_VERSION, TRACKED_TYPES

nn = ember.nn


class Block(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.drop = nn.Dropout(0.0)
        self.scale = 2.0
        self.register_buffer("shift", ember.ones(n))

    def forward(self, x):
        y = self.drop(self.lin(x)) * self.scale + self.shift
        if self.training:
            return y + 1
        return y


class Net(nn.Module):
    def __init__(self, n=4, layers=3):
        super().__init__()
        self.blocks = nn.ModuleList([Block(n) for _ in range(layers)])
        self.head = nn.Linear(n, 2)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class Compiled:
    """A model compiled with a recording backend; each call checks both oracles first."""

    def __init__(self, model):
        ember._dynamo.reset()
        self.model, self.graphs = model, []
        self.fn = ember.compile(model, backend=self._backend)

    def _backend(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward

    def entries(self):
        code = type(self.model).forward.__code__
        return [e for (c, _), cache in eval_frame._caches.items() if c is code for e in cache.entries]

    def guards_agree(self, x):
        self.guards_agree_with(x)

    def guards_agree_with(self, *args):
        for entry in self.entries():
            fast = entry.check.fn(self.model, *args)
            full = entry.check.failure_reason(self.model, *args) is None
            assert fast == full, (fast, entry.check.failure_reason(self.model, *args))

    def __call__(self, x):
        self.guards_agree(x)
        ember.manual_seed(0)
        got = self.fn(x)
        self.guards_agree(x)
        ember.manual_seed(0)
        want = self.model(x)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
        return got

    def is_fast(self) -> bool:
        """Every entry's last full pass is still current (its next check takes the fast tier)."""
        return all(e.check.fn.__globals__["___stamp"][0] == STATE_VERSION[0] for e in self.entries())


@pytest.fixture
def setup():
    ember.manual_seed(0)
    model = Net().eval()
    c = Compiled(model)
    x = ember.randn(3, 4)
    c(x)
    c(x)
    assert len(c.graphs) == 1 and c.is_fast()
    return c, model, x


def test_nothing_changed_takes_the_fast_tier_and_every_call_matches_eager(setup):
    c, model, x = setup
    for _ in range(3):
        c(ember.randn(3, 4))
    assert len(c.graphs) == 1 and c.is_fast()


def test_reassigned_parameter_same_shape_is_used_without_recompiling(setup):
    c, model, x = setup
    model.blocks[1].lin.weight = nn.Parameter(ember.randn(4, 4))
    assert not c.is_fast()
    c(x)
    assert len(c.graphs) == 1 and c.is_fast()
    model.blocks[1].lin.weight.data = ember.randn(4, 4)   # .data swap, same spec: still no recompile
    c(x)
    assert len(c.graphs) == 1


@pytest.mark.parametrize("change", ["parameter_shape", "data_shape", "data_strides", "requires_grad"])
def test_parameter_metadata_changes_recompile(setup, change):
    c, model, x = setup
    lin = model.blocks[2].lin
    if change == "parameter_shape":
        model.blocks[2].lin = nn.Linear(4, 4, bias=False)   # another module: bias None
    elif change == "data_shape":   # in place on the same Parameter object: no module write at all
        model.head.bias.data = ember.randn(1)
    elif change == "data_strides":
        model.head.weight.data = ember.randn(4, 2).t()
    else:
        lin.weight.requires_grad_(False)
    c(x)
    assert len(c.graphs) == 2


@pytest.mark.parametrize("how", ["eval_train", "attribute", "dict_write"])
def test_training_flag_changes_recompile(setup, how):
    c, model, x = setup
    if how == "eval_train":
        model.train()
    elif how == "attribute":
        model.blocks[0].training = True
    else:   # through the instance __dict__, around Module.__setattr__
        model.blocks[0].__dict__["training"] = True
    c(x)
    assert len(c.graphs) == 2
    model.eval()
    c(x)                     # back to the first entry: no third graph
    assert len(c.graphs) == 2


def test_plain_attribute_change_recompiles(setup):
    c, model, x = setup
    model.blocks[1].scale = 3.0
    c(x)
    assert len(c.graphs) == 2
    vars(model.blocks[1]).update(scale=4.0)     # dict update around __setattr__
    c(x)
    assert len(c.graphs) == 3


def test_buffers(setup):
    c, model, x = setup
    model.blocks[0].shift = ember.full((4,), 5.0)           # same spec: no recompile, new values
    c(x)
    model.blocks[0].register_buffer("shift", ember.zeros(4))
    c(x)
    assert len(c.graphs) == 1
    model.blocks[0]._buffers["shift"] = ember.zeros(1, 4)   # the state dict itself, other shape
    c(x)
    assert len(c.graphs) == 2


@pytest.mark.parametrize("replacement", ["same_class", "other_class", "dict_item"])
def test_submodule_replaced_in_module_list(setup, replacement):
    c, model, x = setup
    if replacement == "same_class":
        model.blocks[1] = Block(4).eval()
    elif replacement == "other_class":
        model.blocks[1] = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    else:
        model.blocks._modules["1"] = Block(4).eval()
    c(x)
    assert len(c.graphs) == 2


def test_module_list_grows_and_shrinks(setup):
    c, model, x = setup
    model.blocks.append(Block(4).eval())
    c(x)
    del model.blocks[0]
    c(x)
    assert len(c.graphs) == 3


def test_hooks_added_and_removed(setup):
    c, model, x = setup
    first = c.entries()[0]
    handle = model.blocks[2].lin.register_forward_hook(lambda m, args, out: out * 0)
    assert not first.check.fn(model, x)
    c(x)                           # (a module with hooks graph-breaks: eager's values all the same)
    reasons = eval_frame.guard_failures[type(model).forward.__code__]
    assert any("blocks[2].lin" in r for r in reasons), reasons
    handle.remove()
    assert first.check.fn(model, x)   # the first entry holds again
    c(x)


def test_instance_forward_class_patch_and_class_swap(setup, monkeypatch):
    c, model, x = setup
    model.head.forward = lambda inp: inp.sum(-1, keepdim=True)
    c(x)
    n = len(c.graphs)
    del model.head.forward
    monkeypatch.setattr(Block, "forward", lambda self, inp: self.lin(inp) - 1)
    c(x)
    assert len(c.graphs) == n + 1

    class Other(Block):
        def forward(self, inp):
            return self.lin(inp) * 3
    model.blocks[0].__class__ = Other
    c(x)
    assert len(c.graphs) == n + 2


def test_deleted_instance_attribute_falls_back_to_the_class():
    class Scaled(nn.Module):
        k = 1.0

        def __init__(self):
            super().__init__()
            self.k = 2.0

        def forward(self, x):
            return x * self.k
    model = Scaled()
    c = Compiled(model)
    x = ember.randn(3)
    c(x)
    del model.k          # now read from the class: guarded there from the next full pass on
    c(x)
    Scaled.k = 5.0       # a class write: no module version bump, the fast tier must still see it
    c(x)
    assert len(c.graphs) == 3


def test_optimizer_steps_keep_the_fast_tier():
    ember.manual_seed(0)
    model = Net().eval()
    c = Compiled(model)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x = ember.randn(3, 4)
        loss = c(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert c.is_fast()
    assert len(c.graphs) == 1


def test_untracked_subclass_setattr_keeps_every_guard():
    class Loose(nn.Module):   # writes around Module.__setattr__: never covered by the version
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)
            object.__setattr__(self, "gain", 1.0)

        def __setattr__(self, name, value):
            object.__setattr__(self, name, value)

        def forward(self, x):
            return self.lin(x) * self.gain
    model = Loose()
    c = Compiled(model)
    x = ember.randn(2, 3)
    c(x)
    model.gain = 3.0
    c(x)
    assert len(c.graphs) == 2


def test_copies_and_pickles_keep_tracked_state_dicts():
    ember.manual_seed(0)
    model = Net()
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model)), copy.copy(model)):
        for m in clone.modules():
            d = object.__getattribute__(m, "__dict__")
            assert type(d) in TRACKED_TYPES
            assert all(type(d[k]) in TRACKED_TYPES for k in ("_parameters", "_buffers", "_modules"))
        x = ember.randn(3, 4)
        np.testing.assert_allclose(clone.eval()(x).detach().numpy(), model.eval()(x).detach().numpy())


def test_state_writes_bump_the_version():
    model = Net()
    writes = [lambda: setattr(model.head, "training", False),
              lambda: model.head.register_buffer("b2", ember.zeros(1)),
              lambda: model.head._parameters.pop("bias"),
              lambda: model.blocks._modules.update({"9": nn.ReLU()}),
              lambda: model.head.register_forward_pre_hook(lambda m, a: None),
              lambda: model.head.__dict__.setdefault("extra", 1),
              lambda: delattr(model.head, "extra")]
    for write in writes:
        before = STATE_VERSION[0]
        write()
        assert STATE_VERSION[0] > before


class Configured(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.sizes = [1, 2]                                   # a plain list attribute

        class Cfg:
            gain = 2.0
        self.cfg = Cfg()                                       # a plain object attribute

    def forward(self, x):
        return self.lin(x) * self.cfg.gain + len(self.sizes) + self.sizes[0]


@pytest.mark.parametrize("change", ["list_in_place", "list_item", "object_attribute"])
def test_mutable_attributes_of_modules_are_read_live(change):
    model = Configured()
    c = Compiled(model)
    x = ember.randn(2, 3)
    c(x)
    c(x)
    before = STATE_VERSION[0]
    if change == "list_in_place":
        model.sizes.append(3)          # no module write: the version does not move
    elif change == "list_item":
        model.sizes[0] = 5
    else:
        model.cfg.gain = 3.0
    assert STATE_VERSION[0] == before
    c(x)
    assert len(c.graphs) == 2


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(3, 3, bias=False)
        self.out = nn.Linear(3, 3, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, x, w):
        return self.out(self.emb(x)) + w


def test_tied_weights_and_a_parameter_passed_as_input():
    model = Tied()
    c = Compiled(model)
    x, w = ember.randn(3, 3), ember.randn(3, 3)

    def call(wt):
        c.guards_agree_with(x, wt)
        got = c.fn(x, wt)
        np.testing.assert_allclose(got.detach().numpy(), model(x, wt).detach().numpy(), rtol=1e-6)
    call(w)
    call(w)
    call(model.emb.weight)     # now an input aliases a parameter: the aliasing guard fails
    n = len(c.graphs)
    call(w)
    model.out.weight = nn.Parameter(ember.randn(3, 3))   # untied
    call(w)
    assert len(c.graphs) == n + 1


class Holder:
    """A plain object a module keeps (DDP's reducer): lists read through it are not module state."""

    def __init__(self, params):
        self.params, self.order, self.ready = params, [[1, 0]], None


class WithHolder(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)
        self.helper = Holder([self.a.weight, self.b.weight])

    def forward(self, x, **kwargs):
        h = self.helper
        h.ready = [False] * len(h.params)
        y = self.b(self.a(x))
        for i in h.order[0]:
            y = y + h.params[i].sum()
        return y


def test_two_aliasing_rows_with_module_and_loose_sources_keep_the_fast_tier():
    """Two no-aliasing guards, each over module tensors and loose objects (the lists read through
    the holder, the input): each keeps its own ids of the module side. One shared set made the
    first row fail its fast tier on every call -- a recompile per call whose reason read "None"
    (DDP's compiled forward: a new graph every few steps until the cache limit, then eager)."""
    ember.manual_seed(0)
    model = WithHolder()
    c = Compiled(model)
    x = ember.randn(2, 3)
    for _ in range(4):
        c.guards_agree_with(x)
        got = c.fn(x)
        np.testing.assert_allclose(got.detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert len(c.graphs) == 1 and c.is_fast()
    model.helper.order = [[1, 0]]            # a new list with the same contents: no guard fails
    c.fn(x)
    assert len(c.graphs) == 1
    model.helper.order[0].append(1)          # a longer list: recompiles
    c.guards_agree_with(x)
    np.testing.assert_allclose(c.fn(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert len(c.graphs) == 2
