"""The AOT cache (_functorch/_aot_cache.py): the traced forward/backward graphs of a captured
program on disk. A hit must give eager's values and gradients; every input the graphs depend on
must change the key; a damaged entry is rejected and traced again; processes share it safely."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember._functorch import _aot_cache
from ember._functorch.aot_autograd import _Cached
from ember._inductor import codecache, config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def aot_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "cache_dir", str(tmp_path / "cache"))
    monkeypatch.setattr(config, "aot_cache", True)
    codecache.clear_memory_cache()
    for k in _aot_cache.counters:
        monkeypatch.setitem(_aot_cache.counters, k, 0)
    ember.compiler.reset()
    yield tmp_path / "cache" / "aot"
    ember.compiler.reset()
    codecache.clear_memory_cache()


def make_model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def step_values(model, x, y, compiled: bool, backend="inductor"):
    def step(x, y):
        return nn.functional.cross_entropy(model(x), y)
    fn = ember.compile(step, backend=backend) if compiled else step
    model.zero_grad()
    loss = fn(x, y)
    loss.backward()
    return loss.item(), [p.grad.numpy().copy() for p in model.parameters()]


def assert_close(got, want):
    assert got[0] == pytest.approx(want[0], rel=1e-5)
    for g, w in zip(got[1], want[1]):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_hit_gives_eager_values_and_gradients(aot_cache, backend):
    model = make_model()
    x, y = ember.randn(4, 6), ember.tensor([0, 2, 1, 2])
    want = step_values(model, x, y, compiled=False)
    assert_close(step_values(model, x, y, compiled=True, backend=backend), want)
    assert _aot_cache.counters["aot_stored"] == 1 and len(list(aot_cache.glob("*.json"))) == 1
    ember.compiler.reset()                      # a new capture of the same program: traced graphs from disk
    assert_close(step_values(model, x, y, compiled=True, backend=backend), want)
    assert _aot_cache.counters["aot_hit"] == 1


def test_inference_graph_hit(aot_cache):
    x = ember.randn(5, 7)
    f = lambda x: (x * 2 + 1).softmax(-1).sum(0)      # noqa: E731
    for _ in range(2):
        ember.compiler.reset()
        np.testing.assert_allclose(ember.compile(f)(x).numpy(), f(x).numpy(), rtol=1e-6)
    assert _aot_cache.counters["aot_hit"] == 1


def _key_for(program, *args):
    """The entry key the compiled `program` would use for `args` (captured by dynamo)."""
    seen = []

    def backend(gm, example_inputs):
        seen.append(_aot_cache.entry_key(_aot_cache.program_namespace(gm), _Cached(*[None] * 5).key(example_inputs)))
        return gm.forward
    ember.compiler.reset()
    ember.compile(program, backend=backend)(*args)
    return seen[0]


def test_key_changes_with_everything_the_graphs_depend_on(aot_cache):
    f = lambda x: (x * 2).sum()          # noqa: E731
    x = ember.randn(3, 4)
    base = _key_for(f, x)
    assert _key_for(f, ember.randn(3, 4)) == base                 # other values, same specs
    others = {
        "dtype": _key_for(f, x.double()),
        "shape": _key_for(f, ember.randn(4, 3)),
        "strides": _key_for(f, ember.randn(4, 3).t()),
        "requires_grad": _key_for(f, x.detach().requires_grad_()),
        "program": _key_for(lambda x: (x * 3).sum(), x),
        "op": _key_for(lambda x: (x * 2).mean(), x),
    }
    with ember.no_grad():
        others["grad mode"] = _key_for(f, x)
    old = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        others["default dtype"] = _key_for(f, x)
    finally:
        ember.set_default_dtype(old)
    assert base not in others.values()
    assert len(set(others.values())) == len(others)


def test_key_changes_with_the_ember_source(aot_cache, monkeypatch):
    f = lambda x: x.relu()      # noqa: E731
    x = ember.randn(3)
    base = _key_for(f, x)
    monkeypatch.setattr(_aot_cache, "_source_stamp", "another ember")
    assert _key_for(f, x) != base


def test_programs_calling_outside_code_are_not_cached():
    lib = ember.library.Library("aotcachetest", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    gm = ember.fx.symbolic_trace(lambda x: ember.ops.aotcachetest.twice.default(x))
    assert _aot_cache.program_namespace(gm) is None


@pytest.mark.parametrize("damage", ["garbage", "valid digest, wrong graph", "other key", "truncated"])
def test_damaged_entry_is_rejected_and_rewritten(aot_cache, damage):
    model = make_model()
    x, y = ember.randn(4, 6), ember.tensor([0, 2, 1, 2])
    want = step_values(model, x, y, compiled=False)
    step_values(model, x, y, compiled=True)
    path, = aot_cache.glob("*.json")
    raw = path.read_bytes()
    digest, body = raw.split(b"\n", 1)
    entry = json.loads(body)
    if damage == "garbage":
        path.write_bytes(b"\x00" * 100)
    elif damage == "truncated":
        path.write_bytes(raw[:len(raw) // 2])
    else:
        if damage == "other key":
            entry["key"] = "0" * 64
        else:
            entry["forward"][-2][2] = {"op": "aten::no_such_op"}
        body = json.dumps(entry).encode()
        path.write_bytes(_aot_cache_digest(body) + b"\n" + body)
    ember.compiler.reset()
    assert_close(step_values(model, x, y, compiled=True), want)
    assert _aot_cache.counters["aot_rejected"] == 1 and _aot_cache.counters["aot_hit"] == 0
    from ember._inductor import diskstore
    assert diskstore.read_json(str(path))["forward"] != entry["forward"] or damage != "valid digest, wrong graph"
    ember.compiler.reset()
    assert_close(step_values(model, x, y, compiled=True), want)     # the rewritten entry
    assert _aot_cache.counters["aot_hit"] == 1


def _aot_cache_digest(body):
    from ember._inductor.diskstore import sha256_hex
    return sha256_hex(body).encode()


CHILD = """
import json, ember, ember.nn as nn
from ember._functorch import _aot_cache
ember.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))
x, y = ember.randn(4, 6), ember.tensor([0, 2, 1, 2])
loss = ember.compile(lambda x, y: nn.functional.cross_entropy(model(x), y))(x, y)
loss.backward()
print(json.dumps({"loss": loss.item(), "grads": [p.grad.tolist() for p in model.parameters()],
                  "counters": _aot_cache.counters}))
"""


def test_concurrent_processes_share_the_cache(tmp_path):
    env = dict(os.environ, EMBER_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT, OMP_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env, cwd=ROOT) for _ in range(2)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    warm = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert warm.returncode == 0, warm.stderr
    results.append(json.loads(warm.stdout.strip().splitlines()[-1]))
    assert results[-1]["counters"]["aot_hit"] == 1
    model = make_model()
    x, y = ember.randn(4, 6), ember.tensor([0, 2, 1, 2])
    want = step_values(model, x, y, compiled=False)
    for r in results:
        assert r["loss"] == pytest.approx(want[0], rel=1e-5)
        for g, w in zip(r["grads"], want[1]):
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-7)
