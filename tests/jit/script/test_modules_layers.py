"""ember.jit.script on ember's own nn layers (the scriptable forwards of
ember/jit/frontend/module_builtins.py), BatchNorm's shared running stats, save/load, graph_for,
deepcopy and the ``__script_forward__`` hook; each scripted module against the eager one."""
import numpy as np
import pytest

import ember
import ember.nn as nn

from _helpers import TwoLayer, check_module as _check, close as _close, randn_maker as _randn


def test_builtin_layers_conv_layernorm_embedding():
    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 3, 3, padding=1)
            self.norm = nn.LayerNorm(5)
            self.act = nn.GELU()

        def forward(self, x):
            return self.act(self.norm(self.conv(x)))

    _check(Mixed(), _randn(1, 2, 5, 5))

    class Emb(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)

        def forward(self, idx):
            return self.emb(idx).sum(0)

    _check(Emb(), lambda: ember.tensor(np.random.randint(0, 10, size=(6,))))


_BUILTIN_LAYERS = [
    (lambda: nn.LeakyReLU(0.2), (3, 4)), (lambda: nn.ELU(), (3, 4)), (lambda: nn.Hardtanh(), (3, 4)),
    (lambda: nn.ReLU6(), (3, 4)), (lambda: nn.Softplus(), (3, 4)), (lambda: nn.Softmax(dim=1), (3, 4)),
    (lambda: nn.LogSoftmax(dim=1), (3, 4)), (lambda: nn.SiLU(), (3, 4)), (lambda: nn.Mish(), (3, 4)),
    (lambda: nn.GLU(), (3, 4)), (lambda: nn.Softshrink(), (3, 4)), (lambda: nn.Threshold(0.1, 2.0), (3, 4)),
    (lambda: nn.Flatten(), (2, 3, 4)), (lambda: nn.MaxPool2d(2), (1, 2, 4, 4)),
    (lambda: nn.AvgPool2d(2), (1, 2, 4, 4)), (lambda: nn.AdaptiveAvgPool2d(2), (1, 2, 4, 4)),
    (lambda: nn.Conv1d(2, 3, 3), (1, 2, 6)), (lambda: nn.Identity(), (3,)),
    (lambda: nn.Dropout2d().eval(), (1, 2, 3, 3)), (lambda: nn.BatchNorm2d(3).eval(), (2, 3, 4, 4)),
]


@pytest.mark.parametrize("make,shape", _BUILTIN_LAYERS)
def test_builtin_layer_scripts(make, shape):
    _check(make(), _randn(*shape), runs=2)


def test_batchnorm_training_updates_shared_running_stats():
    import copy
    eager = nn.BatchNorm1d(4)
    twin = copy.deepcopy(eager)
    scripted = ember.jit.script(twin)
    for _ in range(3):
        x = ember.randn(6, 4)
        _close(scripted(x), eager(x))
    _close(twin.running_mean, eager.running_mean)
    _close(twin.running_var, eager.running_var)
    assert twin.num_batches_tracked.item() == eager.num_batches_tracked.item() == 3


def test_save_load_roundtrip(tmp_path):
    m = TwoLayer()
    scripted = ember.jit.script(m)
    path = tmp_path / "two_layer.pt"
    scripted.save(str(path))
    loaded = ember.jit.load(str(path))
    x = ember.randn(3, 4)
    _close(loaded(x), m(x))
    assert set(loaded.state_dict()) == set(m.state_dict())


def test_graph_for_and_modulelist_indexing():
    class Indexed(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Sequential(nn.Linear(3, 2), nn.ReLU())])

        def forward(self, x):
            return self.layers[1](self.layers[0](x))

    scripted = _check(Indexed(), _randn(2, 3))
    text = str(scripted.graph_for(ember.randn(2, 3)))
    assert text.startswith("graph(")
    assert "prim::CallMethod" not in str(scripted.graph)  # .graph is inlined, like TorchScript's


class _Acc(nn.Module):
    """Counts its calls in a scripted attribute (state a deep copy must carry)."""

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        self.calls += 1
        return self.lin(x) * float(self.calls)


def test_deepcopy_rescripts_with_copied_state():
    import copy
    import pickle

    scripted = ember.jit.script(_Acc())
    x = ember.randn(3)
    scripted(x)
    dup = copy.deepcopy(scripted)
    assert isinstance(dup, ember.jit.RecursiveScriptModule) and dup.calls == 1
    assert dup.lin.weight is not scripted.lin.weight
    _close(dup(x), scripted(x))
    with pytest.raises(TypeError, match="ember.jit.save"):
        pickle.dumps(scripted)


def test_deepcopy_keeps_each_scripted_child_state_in_its_own_module():
    # a child that was scripted before its parent: its state goes to the copy's child, not to the root
    import copy

    class Outer(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.calls = 100
            self.inner = inner

        def forward(self, x):
            return self.inner(x)

    outer = ember.jit.script(Outer(ember.jit.script(_Acc())))
    x = ember.randn(3)
    outer(x)
    outer(x)
    dup = copy.deepcopy(outer)
    assert (dup.calls, dup.inner.calls) == (outer.calls, outer.inner.calls) == (100, 2)
    _close(dup(x), outer(x))


def test_script_forward_hook_replaces_unscriptable_forward():
    class Hooked(nn.Module):
        def __init__(self):
            super().__init__()
            self.k = 3.0

        def forward(self, x):
            return ember.tensor(x.numpy() * self.k)  # eager-only (numpy round trip)

        def __script_forward__(self, x):
            return x * self.k

    _check(Hooked(), _randn(4))


def test_traced_submodule_inside_scripted_module():
    inner = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    traced = ember.jit.trace(inner, (ember.randn(2, 3),))

    class Top(nn.Module):
        def __init__(self):
            super().__init__()
            self.feat = traced
            self.head = nn.Linear(4, 2)

        def forward(self, x):
            h = self.feat(x)
            if h.sum() > 0:  # control flow around the traced part
                h = h * 2.0
            return self.head(h)

    scripted = _check(Top(), lambda: ember.randn(5, 3))
    assert "__torch__.ember.nn.modules.container.Sequential" in str(scripted.graph)
    assert scripted.feat.original_name == "Sequential"


class _ShiftAndSum(nn.Module):
    """Traced with a tensor made from Python data (a constant of the trace, not a member of the
    module), a traced size and a tuple result."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x) + ember.tensor([1.0, -2.0, 0.5])
        return y.view(x.size(0), -1), y.sum()


class _UsesTraced(nn.Module):
    def __init__(self, traced):
        super().__init__()
        self.traced = traced

    def forward(self, x):
        a, b = self.traced(x)
        return a * b


@pytest.mark.filterwarnings("ignore::ember.jit.TracerWarning")
def test_traced_submodule_with_trace_constants_scripts_and_saves(tmp_path):
    # one script form of a trace serves scripting and jit.save: the trace's tensor constants are
    # prim::Constants there (a GetAttr of them on the module used to fail at run time)
    traced = ember.jit.trace(_ShiftAndSum(), ember.randn(2, 3))
    top = _UsesTraced(traced)
    scripted = _check(top, _randn(4, 3))
    for program in (traced, scripted):
        ember.jit.save(program, tmp_path / "p.pt")
        loaded = ember.jit.load(tmp_path / "p.pt")
        for rows in (4, 6):   # the traced size follows the input
            x = ember.randn(rows, 3)
            got, want = loaded(x), program(x)
            for g, w in zip(*((got, want) if isinstance(want, tuple) else ((got,), (want,)))):
                _close(g, w)
