"""The graph-level cache: JSON payloads round-trip (also into a new process); a tampered, truncated,
foreign or non-JSON entry is rejected, and loading one never runs code."""
import json
import math
import os
import pickle

import pytest

from ember._inductor import codecache, diskstore
from kernel_cache_env import private_cache, run_child  # noqa: F401

PAYLOAD = {"wrapper": "def call(args):\n    return args\n", "kernels": ["a" * 40, "b" * 40],
           "sizes": [[2, 3], []], "scale": 0.5, "flags": {"training": False, "seed": None}, "n": -7}


def graph_files(cache):
    return [os.path.join(cache, "graphs", n) for n in os.listdir(os.path.join(cache, "graphs"))
            if n.endswith(".json")]


def test_round_trip(private_cache):
    assert codecache.graph_cache_get("g1") is None
    assert codecache.counters["graph_miss"] == 1
    codecache.graph_cache_put("g1", PAYLOAD)
    assert codecache.graph_cache_get("g1") == PAYLOAD
    assert codecache.graph_cache_get("g2") is None
    assert codecache.counters["graph_hit"] == 1
    codecache.graph_cache_put("g1", {"v": 2})            # a put replaces the entry whole
    assert codecache.graph_cache_get("g1") == {"v": 2}


def test_round_trip_into_a_new_process(private_cache):
    codecache.graph_cache_put("fw-graph", PAYLOAD)
    code = """
import json
from ember._inductor import codecache
print(json.dumps({"payload": codecache.graph_cache_get("fw-graph"), "compile": codecache.counters["compile"]}))
"""
    got = run_child(code, private_cache)
    assert got == {"payload": PAYLOAD, "compile": 0}


def test_entries_are_private_and_keys_stay_inside(private_cache):
    for key in ("../../escape", "/etc/passwd", "a\0b", "x" * 5000):
        codecache.graph_cache_put(key, {"key": key})
        assert codecache.graph_cache_get(key) == {"key": key}
    files = graph_files(private_cache)
    assert len(files) == 4
    for path in files:
        assert os.stat(path).st_mode & 0o077 == 0
    assert sorted(os.listdir(private_cache)) == ["aot", "graphs", "kernels"] + sorted(
        n for n in os.listdir(private_cache) if n.startswith("machine-"))


def flip_body(path):
    with open(path, "rb") as f:
        raw = f.read()
    return raw.replace(b'"scale":0.5', b'"scale":9.5')


def drop_tail(path):
    with open(path, "rb") as f:
        return f.read()[:-5]


def bad_digest(path):
    with open(path, "rb") as f:
        digest, _, body = f.read().partition(b"\n")
    return b"0" * len(digest) + b"\n" + body


def no_digest(path):
    with open(path, "rb") as f:
        return f.read().partition(b"\n")[2]


@pytest.mark.parametrize("tamper", [flip_body, drop_tail, bad_digest, no_digest, lambda p: b""],
                         ids=["edited", "truncated", "bad-digest", "no-digest", "empty"])
def test_tampered_payload_is_rejected(private_cache, tamper):
    codecache.graph_cache_put("g", PAYLOAD)
    (path,) = graph_files(private_cache)
    data = tamper(path)
    with open(path, "wb") as f:
        f.write(data)
    assert codecache.graph_cache_get("g") is None
    assert codecache.counters["graph_rejected"] == 1 and codecache.counters["graph_hit"] == 0


class _Planted:
    def __reduce__(self):
        return (open, (MARKER, "w"))


MARKER = None


def test_a_pickle_with_a_valid_digest_is_not_unpickled(private_cache, tmp_path):
    global MARKER
    MARKER = str(tmp_path / "ran")
    codecache.graph_cache_put("g", PAYLOAD)
    (path,) = graph_files(private_cache)
    body = pickle.dumps(_Planted())
    with open(path, "wb") as f:
        f.write(diskstore.sha256_hex(body).encode() + b"\n" + body)
    assert codecache.graph_cache_get("g") is None
    assert not os.path.exists(MARKER)


def test_valid_json_that_is_not_a_dict_is_rejected(private_cache):
    codecache.graph_cache_put("g", PAYLOAD)
    (path,) = graph_files(private_cache)
    body = json.dumps([1, 2]).encode()
    with open(path, "wb") as f:
        f.write(diskstore.sha256_hex(body).encode() + b"\n" + body)
    assert codecache.graph_cache_get("g") is None


def test_writable_by_others_is_rejected(private_cache):
    codecache.graph_cache_put("g", PAYLOAD)
    (path,) = graph_files(private_cache)
    os.chmod(path, 0o666)
    assert codecache.graph_cache_get("g") is None
    codecache.graph_cache_put("g", PAYLOAD)       # a put replaces it with a private file
    assert codecache.graph_cache_get("g") == PAYLOAD


@pytest.mark.parametrize("payload, error", [
    ([1, 2], TypeError), ("text", TypeError), ({"f": object()}, TypeError), ({"b": b"bytes"}, TypeError),
    ({"x": math.nan}, ValueError), ({"x": math.inf}, ValueError)])
def test_put_rejects_what_json_cannot_hold(private_cache, payload, error):
    with pytest.raises(error):
        codecache.graph_cache_put("g", payload)
    assert graph_files(private_cache) == []
    assert not [n for n in os.listdir(private_cache / "graphs") if n.startswith(".tmp-")]
