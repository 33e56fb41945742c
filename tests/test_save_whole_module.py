"""ember.save(model) of a whole nn.Module, loaded with weights_only=False as an explicit opt-in for trusted
files; the default stays weights-only (pickle.UnpicklingError naming the global, as PyTorch 2.13 raises) and
ember.serialization.safe_globals / add_safe_globals allowlist classes. PyTorch is the oracle."""
import io
import os
import pickle
import struct

import numpy as np
import pytest
import torch

import ember
from ember import serialization as ser
from oracle import as_numpy


def make_net(lib):
    class_name = "EmberNet" if lib is ember else "TorchNet"
    return globals()[class_name]()


class EmberNet(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = ember.nn.Linear(3, 3)
        self.head = ember.nn.Linear(3, 3)
        self.head.weight = self.fc.weight           # tied
        self.register_buffer("steps", ember.zeros(1))

    def forward(self, x):
        return self.head(ember.relu(self.fc(x)))


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)
        self.head = torch.nn.Linear(3, 3)
        self.head.weight = self.fc.weight
        self.register_buffer("steps", torch.zeros(1))

    def forward(self, x):
        return self.head(torch.relu(self.fc(x)))


def saved(lib, obj):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return buf


@pytest.mark.parametrize("lib", [ember, torch], ids=["ember", "torch"])
def test_whole_module_round_trips_with_weights_only_false(lib):
    net = make_net(lib)
    net.steps += 3
    loaded = lib.load(saved(lib, net), weights_only=False)
    assert type(loaded) is type(net) and loaded is not net
    assert loaded.head.weight is loaded.fc.weight
    assert type(loaded.fc.weight) is lib.nn.Parameter and loaded.fc.weight.requires_grad
    assert loaded.steps.item() == 3
    x = lib.ones(2, 3)
    assert lib.equal(loaded(x), net(x))
    assert list(loaded.state_dict()) == list(net.state_dict())


def test_ember_and_torch_load_to_the_same_values():
    e, t = EmberNet(), TorchNet()
    t.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in e.state_dict().items()})
    e2, t2 = ember.load(saved(ember, e), weights_only=False), torch.load(saved(torch, t), weights_only=False)
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(as_numpy(e2(ember.from_numpy(x))), as_numpy(t2(torch.from_numpy(x))), rtol=1e-6)


def weights_only_error(lib, buf, allow=()):
    with lib.serialization.safe_globals(list(allow)):
        with pytest.raises(pickle.UnpicklingError) as info:
            lib.load(buf)
    buf.seek(0)
    return str(info.value)


def test_default_load_refuses_a_pickled_module_as_torch_does():
    msgs = {lib.__name__: weights_only_error(lib, saved(lib, make_net(lib))) for lib in (ember, torch)}
    for lib, cls in (("ember", EmberNet), ("torch", TorchNet)):
        name = f"{cls.__module__}.{cls.__qualname__}"
        assert f"Unsupported global: GLOBAL {name} was not an allowed global by default" in msgs[lib]
        assert f"{lib}.serialization.add_safe_globals([{name}])" in msgs[lib]
        assert "weights_only" in msgs[lib] and "trust" in msgs[lib]


def test_safe_globals_moves_the_refusal_to_the_next_global_then_loads():
    for lib, cls in ((ember, EmberNet), (torch, TorchNet)):
        buf = saved(lib, cls())
        msg = weights_only_error(lib, buf, allow=[cls])
        assert f"GLOBAL {lib.__name__}.nn.modules.linear.Linear" in msg
        with lib.serialization.safe_globals([cls, lib.nn.Linear]):
            loaded = lib.load(buf)
        assert type(loaded) is cls and loaded.head.weight is loaded.fc.weight
        assert cls not in lib.serialization.get_safe_globals()     # the block's allowlist is gone


def test_add_and_clear_safe_globals():
    for lib, cls in ((ember, EmberNet), (torch, TorchNet)):
        before = lib.serialization.get_safe_globals()
        try:
            lib.serialization.add_safe_globals([cls, lib.nn.Linear])
            assert cls in lib.serialization.get_safe_globals()
            assert type(lib.load(saved(lib, cls()))) is cls
            with pytest.raises(TypeError):
                lib.serialization.add_safe_globals(cls)           # not a list
        finally:
            lib.serialization.clear_safe_globals()
            lib.serialization.add_safe_globals(before)
        assert cls not in lib.serialization.get_safe_globals()


@pytest.mark.parametrize("weights_only", [None, True, 0, "False"])
def test_only_an_explicit_false_unpickles(weights_only):
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        ember.load(saved(ember, EmberNet()), weights_only=weights_only)


def test_module_inside_a_container_and_map_location(tmp_path):
    net = EmberNet()
    opt = ember.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(ember.ones(1, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    ember.save({"model": net, "optimizer": opt.state_dict(), "epoch": 4}, path)
    ckpt = ember.load(path, weights_only=False, map_location="cpu")
    assert ckpt["epoch"] == 4 and type(ckpt["model"]) is EmberNet
    momentum = ckpt["optimizer"]["state"][0]["momentum_buffer"]
    assert ember.equal(momentum, opt.state_dict()["state"][0]["momentum_buffer"])
    with pytest.raises(pickle.UnpicklingError):
        ember.load(path)


class Unpicklable(ember.nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = lambda x: x


class TorchUnpicklable(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = lambda x: x


def test_a_module_that_cannot_be_pickled_raises_as_torch_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.pt"
    with pytest.raises((pickle.PicklingError, AttributeError)) as got:
        ember.save(Unpicklable(), path)
    assert not path.exists()
    with pytest.raises((pickle.PicklingError, AttributeError)) as want:
        torch.save(TorchUnpicklable(), io.BytesIO())
    assert got.type is want.type


def test_safe_format_objects_are_unchanged_and_never_pickled():
    buf = saved(ember, {"w": ember.ones(2)})
    assert buf.getvalue().startswith(ser.MAGIC)
    with pytest.raises(TypeError, match="ember.save"):
        ember.save({1, 2}, io.BytesIO())


def hostile_checkpoint(payload_pickle: bytes) -> bytes:
    tensors = io.BytesIO()
    ember.save([], tensors)
    blob = tensors.getvalue()
    return ser.PICKLE_MAGIC + struct.pack("<Q", len(blob)) + blob + payload_pickle


class RunsCode:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_weights_only_never_resolves_a_dangerous_global(monkeypatch):
    data = hostile_checkpoint(pickle.dumps(RunsCode()))
    calls = []
    monkeypatch.setattr(os, "system", lambda cmd: calls.append(cmd))
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global"):
        ember.load(io.BytesIO(data))
    with ember.serialization.safe_globals([EmberNet]):
        with pytest.raises(pickle.UnpicklingError):
            ember.load(io.BytesIO(data))
    assert calls == []


def test_a_foreign_pickle_is_refused_even_with_weights_only_false(tmp_path):
    path = tmp_path / "raw.pkl"
    path.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(RuntimeError, match="not an ember checkpoint"):
        ember.load(path, weights_only=False)


@pytest.mark.parametrize("cut", [4, 12, 40])
def test_truncated_pickled_checkpoint_raises(cut):
    data = saved(ember, EmberNet()).getvalue()[:cut]
    with pytest.raises((RuntimeError, pickle.UnpicklingError, EOFError)):
        ember.load(io.BytesIO(data), weights_only=False)
