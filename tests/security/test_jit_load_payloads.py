"""ember.jit.load of archives whose program tries to run code (jit_payloads.PAYLOADS): every one is
refused at load time with a RuntimeError naming the file and the offending node, and nothing runs.

The payloads are tried in a fresh interpreter (_payload_runner.py), so one that ended the process
would show as an unfinished attempt instead of taking pytest down; each would create its own
marker file if it ran. The same files are then tried with the load-time checks switched off, to
show the payloads are live attacks: the markers appear, SystemExit & co are raised.
"""
import json
import os
import subprocess
import sys

import pytest

import ember
import hostile_archives as H
from jit_payloads import PAYLOADS

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ENDING = {"SystemExit", "KeyboardInterrupt", "GeneratorExit", "StopIteration"}


def run_payloads(items: list, folder, mode: str) -> dict:
    """Run _payload_runner.py over `items`; name -> its last report record."""
    manifest, report = folder / f"manifest_{mode}.json", folder / f"report_{mode}.jsonl"
    manifest.write_text(json.dumps(items))
    env = dict(os.environ, PYTHONPATH=REPO, OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "_payload_runner.py"), str(manifest), str(report), mode],
                          env=env, capture_output=True, text=True, timeout=600)
    records = {}
    for line in report.read_text().splitlines():
        record = json.loads(line)
        records[record["name"]] = record
    records["<process>"] = {"returncode": proc.returncode, "stderr": proc.stderr[-3000:]}
    return records


@pytest.fixture(scope="module")
def attempts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jit_payloads")
    (folder / "markers").mkdir()
    legit = H.save_legit(str(folder))
    items = []
    for p in PAYLOADS:
        payload = H.read_archive(legit[p.base])
        marker = str(folder / "markers" / p.name)
        p.build(H.Edit(payload), marker)
        path = str(folder / f"{p.name}.pt")
        H.write_archive(path, payload)
        items.append({"name": p.name, "path": path, "kind": p.base, "marker": marker})
    checked = run_payloads(items, folder, "checked")
    markers_after = {item["name"]: os.path.exists(item["marker"]) for item in items}
    permissive = run_payloads(items, folder, "permissive")
    return {"checked": checked, "markers": markers_after, "permissive": permissive,
            "paths": {item["name"]: item["path"] for item in items}}


def test_enough_distinct_payloads():
    assert len({p.name for p in PAYLOADS}) == len(PAYLOADS) >= 60 and sum(p.live for p in PAYLOADS) >= 30


def test_checked_run_finished(attempts):
    proc = attempts["checked"]["<process>"]
    assert proc["returncode"] == 0, proc["stderr"]
    assert all("load" in attempts["checked"][p.name] for p in PAYLOADS)   # none ended the process


@pytest.mark.parametrize("payload", PAYLOADS, ids=lambda p: p.name)
def test_refused_at_load_and_nothing_runs(attempts, payload):
    record = attempts["checked"][payload.name]
    assert "load" in record, f"{payload.name} ended the process"
    assert record["load"] is not None, f"{payload.name} loaded (and was called {record['calls']} times)"
    kind, message = record["load"]
    assert kind == "RuntimeError"
    assert message.startswith(f"ember.jit.load: {attempts['paths'][payload.name]}: "), message
    assert "node %" in message or "module '<top>'" in message, message
    assert record["calls"] == 0 and not record["marker"] and not attempts["markers"][payload.name]


@pytest.mark.parametrize("payload", [p for p in PAYLOADS if p.live], ids=lambda p: p.name)
def test_payload_is_live_without_the_checks(attempts, payload):
    record = attempts["permissive"][payload.name]
    assert "load" in record, f"{payload.name} ended the permissive run"
    assert record["load"] is None, record["load"]
    if payload.ends_process:
        assert record["call"] is not None and record["call"][0] in ENDING, record
    else:
        assert record["marker"], record


def test_legit_archives_load_and_run(tmp_path):
    paths = H.save_legit(str(tmp_path))
    for kind, path in paths.items():
        loaded = ember.jit.load(path)
        for _ in range(3):
            assert isinstance(H.call_legit(loaded, kind), ember.Tensor)
