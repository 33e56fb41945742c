"""The graph cache end to end: a program compiled in one process runs in a new process without
lowering or the C compiler (zero compiles) and gives the same results; a damaged or foreign
graph entry is rejected and the graph compiled again."""
import json
import os

from kernel_cache_env import private_cache, run_child  # noqa: F401

# An MLP training step under ember.compile (forward and backward graphs, an extern matmul) and a
# row-wise softmax/layernorm: results printed as lists, compile counters last.
PROGRAM = """
import json
import ember
import ember.nn as nn
import ember.nn.functional as F
from ember._inductor import codecache
ember.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))
x = ember.randn(5, 12)
step = ember.compile(lambda x: (model(x).log_softmax(-1)[:, 0].sum(),
                                F.layer_norm(x, (12,)) * 2 + (x - x.mean(0)).abs().sum(1, keepdim=True)))
loss, ln = step(x)
loss.backward()
grads = [p.grad.tolist() for p in model.parameters()]
print(json.dumps({"loss": loss.item(), "ln": ln.tolist(), "grads": grads, "counters": codecache.counters}))
"""


def eager_reference():
    import ember
    import ember.nn as nn
    import ember.nn.functional as F
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))
    x = ember.randn(5, 12)
    loss = model(x).log_softmax(-1)[:, 0].sum()
    loss.backward()
    # (the column means are an intermediate between two kernels: the plan pools them)
    ln = F.layer_norm(x, (12,)) * 2 + (x - x.mean(0)).abs().sum(1, keepdim=True)
    return loss.item(), ln.tolist(), [p.grad.tolist() for p in model.parameters()]


def assert_same(got, ref):
    import numpy as np
    loss, ln, grads = ref
    np.testing.assert_allclose(got["loss"], loss, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["ln"], ln, rtol=1e-5, atol=1e-5)
    for g, r in zip(got["grads"], grads):
        np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-5)


def graph_entries(cache):
    folder = os.path.join(cache, "graphs")
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".json"))


def test_a_warm_new_process_compiles_nothing_and_matches_eager(private_cache):
    ref = eager_reference()
    cold = run_child(PROGRAM, private_cache)
    assert cold["counters"]["compile"] >= 1 and cold["counters"]["graph_miss"] >= 2      # forward + backward
    assert_same(cold, ref)
    warm = run_child(PROGRAM, private_cache)
    assert warm["counters"]["compile"] == 0
    assert warm["counters"]["graph_hit"] == cold["counters"]["graph_miss"]
    assert warm["counters"]["graph_miss"] == 0 and warm["counters"]["graph_rejected"] == 0
    assert_same(warm, ref)


def test_a_tampered_graph_entry_is_rejected_and_recompiled(private_cache):
    ref = eager_reference()
    cold = run_child(PROGRAM, private_cache)
    entries = graph_entries(private_cache)
    assert entries
    with open(entries[0], "rb") as f:
        data = f.read()
    with open(entries[0], "wb") as f:          # one byte of the body changed: the digest no longer matches
        f.write(data[:-2] + bytes([data[-2] ^ 1]) + data[-1:])
    warm = run_child(PROGRAM, private_cache)
    assert warm["counters"]["graph_rejected"] == 1
    assert warm["counters"]["graph_hit"] == cold["counters"]["graph_miss"] - 1
    assert_same(warm, ref)
    again = run_child(PROGRAM, private_cache)    # the rejected entry was written afresh
    assert again["counters"]["graph_rejected"] == 0 and again["counters"]["compile"] == 0


def test_a_well_formed_entry_that_does_not_fit_is_compiled_again(private_cache):
    """A digest-valid entry whose plan names a kernel the library lacks, a buffer never written, an
    op not in the graph or pool blocks too small for their buffers: rejected (counted), compiled
    afresh, results right."""
    from ember._inductor import diskstore
    ref = eager_reference()
    run_child(PROGRAM, private_cache)
    for damage in ("kernel", "buffer", "extern", "pool"):
        for path in graph_entries(private_cache):
            payload = diskstore.read_json(path)
            steps = payload["plan"]["steps"]
            if damage == "kernel":
                payload["kernels"] = ["no_such_kernel"]
            elif damage == "buffer":
                for s in steps:
                    if s[0] == "kernel":
                        s[2] = ["buf_never_written"] + s[2]
            elif damage == "extern":
                for s in steps:
                    if s[0] == "extern":
                        s[1] = "aten::os_system"
            else:
                payload["plan"]["pool"]["blocks"] = [1 for _ in payload["plan"]["pool"]["blocks"]]
            diskstore.write_json(path, payload)
        warm = run_child(PROGRAM, private_cache)
        assert warm["counters"]["graph_rejected"] >= 1, damage
        assert_same(warm, ref)


def test_entries_are_json_with_no_code(private_cache):
    run_child(PROGRAM, private_cache)
    for path in graph_entries(private_cache):
        with open(path, "rb") as f:
            body = f.read().split(b"\n", 1)[1]
        payload = json.loads(body)
        assert set(payload) == {"plan", "library", "kernels"}
        assert b"def " not in body and b"import" not in body


# A classifier's step with cross_entropy inside the compiled function: its backward graph has a node
# with several keyword arguments (ones(..., dtype=, device=)); the AOT cache hands the warm process
# that graph with its keywords in the traced order, so the fuser's graph key matches the cold one's.
KWARGS_PROGRAM = """
import json
import ember
import ember.nn as nn
from ember._inductor import codecache
ember.manual_seed(0)
model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))
x, y = ember.randn(6, 12), ember.tensor([0, 3, 1, 2, 2, 0])
step = ember.compile(lambda x, y: nn.functional.cross_entropy(model(x), y))
loss = step(x, y)
loss.backward()
print(json.dumps({"loss": loss.item(), "grads": [p.grad.tolist() for p in model.parameters()],
                  "counters": codecache.counters}))
"""


def test_a_warm_process_finds_every_graph_whatever_its_keyword_order(private_cache):
    cold = run_child(KWARGS_PROGRAM, private_cache)
    warm = run_child(KWARGS_PROGRAM, private_cache)
    assert cold["counters"]["graph_miss"] == 2
    assert warm["counters"]["graph_hit"] == 2 and warm["counters"]["graph_miss"] == 0
    assert warm["counters"]["compile"] == 0
    assert warm["loss"] == cold["loss"] and warm["grads"] == cold["grads"]


def test_a_warm_process_imports_neither_logging_nor_the_tracer_side(private_cache):
    # what a warm start pays for is its imports: the stdlib's logging (only when a cache problem is
    # reported), fx's prim ops / blocks / op-properties table (only graphs with prim ops), the
    # lowering and the scheduler (only graphs not in the cache) are not among them
    program = KWARGS_PROGRAM.replace(
        '"counters": codecache.counters}',
        '"counters": codecache.counters, "modules": sorted(m for m in __import__("sys").modules '
        'if m in ("logging", "ember.fx.prim", "ember.fx.blocks", "ember.ops.properties", '
        '"ember._inductor.lowering", "ember._inductor.scheduler"))}')
    cold = run_child(program, private_cache)
    warm = run_child(program, private_cache)
    assert cold["counters"]["graph_miss"] == 2 and "ember._inductor.lowering" in cold["modules"]
    assert warm["counters"]["graph_hit"] == 2 and warm["counters"]["compile"] == 0
    assert warm["modules"] == []
    assert warm["loss"] == cold["loss"] and warm["grads"] == cold["grads"]
