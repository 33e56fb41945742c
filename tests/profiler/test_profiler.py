"""ember.profiler against what actually ran: call counts, nesting, times, trace, schedule, TLS."""
from __future__ import annotations

import json
import re
from collections import Counter

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember._core.dispatch import DispatchKey, tls
from ember.profiler import ProfilerActivity, profile, record_function, schedule
from ember.utils._python_dispatch import TorchDispatchMode

PROFILER_BIT = 1 << DispatchKey.Profiler


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def _data():
    rng = np.random.default_rng(1)
    return ember.tensor(rng.standard_normal((5, 4)).astype(np.float32)), ember.tensor([0, 1, 2, 0, 1])


def _train_step(model, opt, x, y):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


class _Count(TorchDispatchMode):
    """Counts the operator calls that reach the Python key (top-level calls: a mode is popped
    while its op runs, so calls made inside a kernel do not reach it)."""

    def __init__(self):
        self.counts = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[func.name.split(".", 1)[0]] += 1
        return func(*args, **(kwargs or {}))


def _op_ancestor(evt):
    p = evt.cpu_parent
    while p is not None and p.kind != "op":
        p = p.cpu_parent
    return p


def _profiled_step():
    model, (x, y) = _model(), _data()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("train_step"):
            _train_step(model, opt, x, y)
    return prof


def test_training_step_counts_match_the_ops_issued(monkeypatch):
    # A Python mode turns the native eager kernels off (it must see every op); the profiler keeps them
    # on (it only observes), so the composed formulas' ops are compared with the native paths off.
    from ember.ops import native
    monkeypatch.setattr(native, "enabled", False)
    prof = _profiled_step()
    model, (x, y) = _model(), _data()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    with _Count() as mode:
        _train_step(model, opt, x, y)
    top = Counter(e.name for e in prof.events() if e.kind == "op" and _op_ancestor(e) is None)
    assert top == mode.counts and sum(top.values()) > 10
    # every op event, nested ones included, is counted in key_averages
    every = Counter(e.name for e in prof.events())
    rows = {a.key: a for a in prof.key_averages()}
    assert {k: a.count for k, a in rows.items()} == dict(every)
    assert rows["aten::linear"].count == 2 and rows["aten::relu"].count == 1
    assert rows["aten::cross_entropy_loss"].count == 1
    assert rows["train_step"].count == 1
    # the backward nodes each ran once inside their evaluate_function range
    assert rows["autograd::engine::evaluate_function: LinearBackward0"].count == 2
    assert rows["LinearBackward0"].count == 2
    table = prof.key_averages().table(sort_by="count", row_limit=100)
    line = next(ln for ln in table.splitlines() if ln.strip().startswith("aten::linear "))
    assert line.split()[-1] == "2"


def test_k_calls_counted_k_times_and_shapes():
    a, b = ember.ones(2, 3), ember.ones(3)
    with profile(record_shapes=True) as prof:
        for _ in range(7):
            ember.add(a, b)
        ember.mul(a, 2.0)
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::add"].count == 7 and avg["aten::mul"].count == 1
    by_shape = prof.key_averages(group_by_input_shape=True)
    add = [e for e in by_shape if e.key == "aten::add"]
    assert len(add) == 1 and add[0].input_shapes == [[2, 3], [3], []]
    assert [e for e in by_shape if e.key == "aten::mul"][0].input_shapes == [[2, 3], []]


def test_nesting_record_function_composites_and_backward():
    prof = _profiled_step()
    events = prof.events()
    root = [e for e in events if e.name == "train_step"]
    assert len(root) == 1 and root[0].cpu_parent is None
    # every other event is inside the user range, by tree and by time
    for e in events:
        if e is root[0]:
            continue
        p = e
        while p.cpu_parent is not None:
            p = p.cpu_parent
        assert p is root[0]
        assert e.start_ns >= e.cpu_parent.start_ns and e.end_ns <= e.cpu_parent.end_ns
    # backward formulas' ops are children of the node, the node of its evaluate_function range
    for node in (e for e in events if e.name == "LinearBackward0"):
        assert node.cpu_parent.name == "autograd::engine::evaluate_function: LinearBackward0"
        assert any(c.kind == "op" for c in node.cpu_children)
    # a composite op's decomposition is its child: flatten -> reshape -> view
    x = ember.ones(2, 3, 4)
    with profile() as p2:
        ember.flatten(x)
    (flat,) = [e for e in p2.events() if e.cpu_parent is None]
    assert flat.name == "aten::flatten"
    assert [c.name for c in flat.cpu_children] == ["aten::reshape"]
    assert [c.name for c in flat.cpu_children[0].cpu_children] == ["aten::view"]


def test_self_time_le_total_and_children_add_up():
    prof = _profiled_step()
    for e in prof.events():
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        kids = sum(c.cpu_time_total for c in e.cpu_children)
        assert kids <= e.cpu_time_total + 1e-9
        assert abs(e.self_cpu_time_total - (e.cpu_time_total - kids)) < 1e-6
    for a in prof.key_averages():
        assert a.self_cpu_time_total <= a.cpu_time_total + 1e-9
        assert abs(a.cpu_time - a.cpu_time_total / a.count) < 1e-9
    # self times of all events sum to the root's total (one root: the user range)
    total = sum(e.self_cpu_time_total for e in prof.events())
    root = next(e for e in prof.events() if e.name == "train_step")
    assert abs(total - root.cpu_time_total) < 1e-3


def test_table_layout_matches_torch():
    prof = _profiled_step()
    ours = prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tprof:
        torch.nn.functional.cross_entropy(tmodel(torch.randn(5, 4)), torch.tensor([0, 1, 2, 0, 1])).backward()
    theirs = tprof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
    o, t = ours.splitlines(), theirs.splitlines()
    assert o[0] == t[0] and o[1] == t[1] and o[2] == t[2]    # separators and header, character for character
    assert len(o) == len(t) == 10 and o[-2] == t[-2]
    assert re.fullmatch(r"Self CPU time total: \d+\.\d{3}(us|ms|s)", o[-1])
    row = re.compile(r" *\S.{0,54}  +\d+\.\d\d%  +\d+\.\d{3}(us|ms|s)  +\d+\.\d\d%  +\d+\.\d{3}(us|ms|s)"
                     r"  +\d+\.\d{3}(us|ms|s)  +\d+  ")
    for line in o[3:8]:
        assert row.fullmatch(line), line
        assert len(line) == len(o[1])
    # grouped by input shape: the extra column, as torch prints it
    shaped = _profiled_step().key_averages(group_by_input_shape=True).table(row_limit=3)
    assert shaped.splitlines()[1].endswith("Input Shapes  ")
    with torch.profiler.profile(record_shapes=True) as tp2:
        torch.add(torch.ones(2), torch.ones(2))
    with profile(record_shapes=True) as ep2:
        ember.add(ember.ones(2), ember.ones(2))
    t_lines = tp2.key_averages(group_by_input_shape=True).table().splitlines()
    e_lines = ep2.key_averages(group_by_input_shape=True).table().splitlines()
    t_add = next(ln for ln in t_lines if "aten::add" in ln)
    e_add = next(ln for ln in e_lines if "aten::add" in ln)
    assert e_add.split()[-4:] == t_add.split()[-4:]          # "1  [[2], [2], []]"


def test_time_format():
    from ember.profiler.table import format_time
    assert format_time(12.3456) == "12.346us"
    assert format_time(1234.5) == "1.234ms" or format_time(1234.5) == "1.235ms"
    assert format_time(2.5e6) == "2.500s"


def test_chrome_trace(tmp_path):
    prof = _profiled_step()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    data = json.loads(path.read_text())
    xs = [e for e in data["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == len(prof.events())
    for e in xs:
        assert {"ph", "name", "cat", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["dur"] >= 0 and e["cat"] in ("cpu_op", "user_annotation")
    ops = [e for e in xs if e["name"] == "aten::linear"]
    assert ops[0]["args"]["Input Dims"] == [[5, 4], [8, 4], [8]]
    # durations nest: each event lies inside the interval of its parent
    by_name = {e.id: x for e, x in zip(prof.events(), xs)}
    for e in prof.events():
        if e.cpu_parent is not None:
            c, p = by_name[e.id], by_name[e.cpu_parent.id]
            assert p["ts"] <= c["ts"] + 1e-3 and c["ts"] + c["dur"] <= p["ts"] + p["dur"] + 1e-3
    assert [x["name"] for x in xs] == [e.name for e in prof.events()]


def test_schedule_records_only_active_steps():
    a = ember.ones(3)
    ready = []
    sched = schedule(wait=1, warmup=1, active=2, repeat=2)
    with profile(schedule=sched, on_trace_ready=lambda p: ready.append(
            Counter(e.name for e in p.events()))) as prof:
        for step in range(10):
            for _ in range(step + 1):    # step s runs s+1 adds
                ember.add(a, a)
            prof.step()
    # cycles: steps 0 wait, 1 warmup, 2-3 active; 4 wait, 5 warmup, 6-7 active; then nothing
    assert len(ready) == 2
    assert ready[0]["aten::add"] == 3 + 4 and ready[1]["aten::add"] == 7 + 8
    assert ready[0]["ProfilerStep#2"] == 1 and ready[0]["ProfilerStep#3"] == 1
    assert not any(n.startswith("ProfilerStep#") and n not in ("ProfilerStep#6", "ProfilerStep#7")
                   for n in ready[1])
    step7 = next(e for e in prof.events() if e.name == "ProfilerStep#7")
    assert sum(1 for c in step7.cpu_children if c.name == "aten::add") == 8
    assert not tls.include & PROFILER_BIT


def test_schedule_validation():
    with pytest.raises(AssertionError):
        schedule(wait=0, warmup=0, active=0)


def test_profiled_run_gives_same_numbers():
    def run(profiled):
        model, (x, y) = _model(), _data()
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        losses = []
        for _ in range(3):
            if profiled:
                with profile(record_shapes=True, with_stack=True):
                    losses.append(_train_step(model, opt, x, y).item())
            else:
                losses.append(_train_step(model, opt, x, y).item())
        return losses, [p.detach().numpy().copy() for p in model.parameters()]
    l0, p0 = run(False)
    l1, p1 = run(True)
    assert l0 == l1
    for a, b in zip(p0, p1):
        assert np.array_equal(a, b)


def test_profiling_off_after_exit_and_after_exception():
    a = ember.ones(2)
    before = tls.include
    with profile() as prof:
        assert tls.include & PROFILER_BIT
        ember.add(a, a)
    assert tls.include == before
    with pytest.raises(ValueError):
        with profile() as prof2:
            with record_function("boom"):
                ember.add(a, a)
                raise ValueError("x")
    assert tls.include == before
    assert [e.name for e in prof2.events()] == ["boom", "aten::add"]
    assert prof2.events()[0].end_ns is not None
    # nothing is recorded once the profilers are gone
    ember.add(a, a)
    with record_function("outside"):
        ember.add(a, a)
    assert [e.name for e in prof.events()] == ["aten::add"]
    assert not ember.profiler.is_profiler_enabled()


def test_start_stop_and_nested_profilers():
    a = ember.ones(2)
    prof = profile()
    prof.start()
    ember.mul(a, a)
    with pytest.raises(RuntimeError):
        profile().start()
    prof.stop()
    assert [e.name for e in prof.events()] == ["aten::mul"]
    assert not tls.include & PROFILER_BIT


def test_record_function_decorator_and_autograd_alias():
    @record_function("my_fn")
    def f(t):
        return ember.relu(t) + 1

    t = ember.ones(2)
    with ember.autograd.profiler.profile(record_shapes=True) as prof:
        f(t)
    (root,) = [e for e in prof.function_events if e.cpu_parent is None]
    assert root.name == "my_fn" and root.is_user_annotation
    assert [c.name for c in root.cpu_children] == ["aten::relu", "aten::add"]
    with ember.autograd.profiler.profile(enabled=False) as off:
        f(t)
    assert len(off.events()) == 0


def test_fast_path_is_taken_when_not_profiling():
    # the binding's fast path is guarded by the include set: empty outside the profiler
    assert not tls.include & PROFILER_BIT
    src = ember.ops.registry.binding_source("aten::add.Tensor")
    assert "not _tls.include" in src
