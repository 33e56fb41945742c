"""The kernel cache's size cap (config.cache_size_limit): past it, a compile evicts whole entries,
least recently used first (a hit counts as a use), never the one just built nor one another
process holds; an evicted kernel is compiled again when needed and computes the same."""
import ctypes
import fcntl
import os
import time

import numpy as np

from ember._inductor import codecache, config, diskstore
from kernel_cache_env import add_kernel_source, private_cache  # noqa: F401


def entry_sizes(cache):
    """key -> bytes of its files (lock files aside)."""
    sizes = {}
    for name in os.listdir(cache / "kernels"):
        if not name.startswith(".") and not name.endswith(".lock"):
            key = name.split(".", 1)[0]
            sizes[key] = sizes.get(key, 0) + os.path.getsize(cache / "kernels" / name)
    return sizes


def key_of(tag):
    return codecache.cache_key(add_kernel_source(tag))


def run_kernel(lib):
    fn = lib.scale_add
    fn.argtypes = [ctypes.c_void_p] * 3
    x = np.arange(4, dtype=np.float64)
    out = np.empty_like(x)
    bufs = (ctypes.c_void_p * 2)(out.ctypes.data, x.ctypes.data)
    ints, floats = (ctypes.c_int64 * 2)(4, 3), (ctypes.c_double * 1)(0.5)
    fn(bufs, ints, floats)
    return out


def build(tag, age_s=0.0):
    lib = codecache.load_c(add_kernel_source(tag))
    if age_s:     # pretend it was last used age_s ago
        past = time.time() - age_s
        for path in codecache._paths(key_of(tag)):
            os.utime(path, (past, past))
    return lib


def test_least_recently_used_entries_go_first(private_cache, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 0)
    build("a", age_s=400)
    one = entry_sizes(private_cache)[key_of("a")]
    build("b", age_s=300)
    build("c", age_s=200)
    codecache.clear_memory_cache()
    build("a")                          # a disk hit: "a" is now the most recently used
    monkeypatch.setattr(config, "cache_size_limit", int(one * 2.5))
    build("d")                          # over the cap: "b" then "c" are the least recently used
    left = entry_sizes(private_cache)
    assert set(left) == {key_of("a"), key_of("d")}
    assert sum(left.values()) <= config.cache_size_limit
    assert codecache.counters["evicted"] == 2
    # an evicted kernel is compiled again when needed, and computes the same
    before = codecache.counters["compile"]
    codecache.clear_memory_cache()
    np.testing.assert_array_equal(run_kernel(build("b")), np.arange(4) * 3 + 0.5)
    assert codecache.counters["compile"] == before + 1


def test_the_entry_just_built_stays_even_over_the_cap(private_cache, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 1)
    build("only")
    assert set(entry_sizes(private_cache)) == {key_of("only")}
    build("next")
    assert set(entry_sizes(private_cache)) == {key_of("next")}


def test_an_entry_in_use_by_another_holder_is_not_evicted(private_cache, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 0)
    build("held", age_s=500)
    monkeypatch.setattr(config, "cache_size_limit", 1)
    so = codecache._paths(key_of("held"))[0]
    fd = os.open(so + ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)          # another open file description: as another process
    try:
        build("newer")
    finally:
        os.close(fd)
    assert key_of("held") in entry_sizes(private_cache)
    build("newest")                         # released: now it goes
    assert set(entry_sizes(private_cache)) == {key_of("newest")}


def test_no_cap_keeps_everything(private_cache, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", None)
    for tag in "pqr":
        build(tag)
    assert len(entry_sizes(private_cache)) == 3


def test_eviction_skips_foreign_files_and_temps(private_cache, monkeypatch):
    monkeypatch.setattr(config, "cache_size_limit", 0)
    build("x", age_s=100)
    kernels = private_cache / "kernels"
    (kernels / ".tmp-123-abc.so").write_bytes(b"\0" * 10)
    removed, left = diskstore.evict_least_recent(str(kernels), 0, "none", lambda key: True)
    assert removed == 1 and left == 0 and (kernels / ".tmp-123-abc.so").exists()
