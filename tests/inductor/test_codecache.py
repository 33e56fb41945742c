"""The on-disk kernel cache: hits and misses counted, corrupt or foreign entries rebuilt and never
loaded, unsafe cache dirs refused, concurrent builders (threads, processes) compiling once, compile
errors and a missing compiler reported. Values are checked against NumPy."""
import ctypes
import hashlib
import os
import stat
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from ember._inductor import codecache, config, diskstore
from kernel_cache_env import add_kernel_source, build_in_child, private_cache, run_child  # noqa: F401


def call_scale_add(lib, x, k, c):
    out = np.empty_like(x)
    bufs = (ctypes.c_void_p * 2)(out.ctypes.data, x.ctypes.data)
    lib.scale_add(bufs, (ctypes.c_int64 * 2)(x.size, k), (ctypes.c_double * 1)(c))
    return out


def assert_works(lib):
    x = np.linspace(-3, 3, 11)
    np.testing.assert_array_equal(call_scale_add(lib, x, 3, 0.5), x * 3 + 0.5)


def entry_paths(source):
    key = codecache.cache_key(source)
    so = os.path.join(diskstore.subdir("kernels"), key + ".so")
    return so, so + ".sha256", os.path.join(diskstore.subdir("kernels"), key + ".c")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def loaded_digests(monkeypatch):
    """The sha256 of every file codecache hands to dlopen, taken at the moment it is loaded."""
    seen = []
    real_cdll = ctypes.CDLL

    def spy(path, *args, **kwargs):
        seen.append(sha(path))
        return real_cdll(path, *args, **kwargs)
    monkeypatch.setattr(codecache.ctypes, "CDLL", spy)
    return seen


def test_memory_then_disk_hits(private_cache):
    src = add_kernel_source("hits")
    lib = codecache.load_c(src)
    assert_works(lib)
    assert codecache.counters["compile"] == 1
    assert codecache.load_c(src) is lib
    assert codecache.counters["memory_hit"] == 1
    codecache.clear_memory_cache()
    assert_works(codecache.load_c(src))
    assert (codecache.counters["compile"], codecache.counters["disk_hit"]) == (1, 1)


def test_entries_and_dirs_are_private(private_cache):
    src = add_kernel_source("private")
    codecache.load_c(src)
    for d in (private_cache, private_cache / "kernels", private_cache / "graphs", private_cache / "aot"):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    for path in entry_paths(src):
        assert stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0
    so, digest, _ = entry_paths(src)
    with open(digest) as f:
        assert f.read() == sha(so)


def corrupt_truncate(path):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)


def corrupt_flip(where):
    def flip(path):
        size = os.path.getsize(path)
        offset = {"start": 5, "middle": size // 2, "end": size - 3}[where]
        with open(path, "r+b") as f:
            f.seek(offset)
            byte = f.read(1)
            f.seek(offset)
            f.write(bytes([byte[0] ^ 0xFF]))
    return flip


def corrupt_empty(path):
    open(path, "wb").close()


@pytest.mark.parametrize("corrupt", [corrupt_truncate, corrupt_flip("start"), corrupt_flip("middle"),
                                     corrupt_flip("end"), corrupt_empty],
                         ids=["truncated", "flip-start", "flip-middle", "flip-end", "empty"])
def test_corrupt_entry_is_rebuilt_never_loaded(private_cache, loaded_digests, corrupt):
    src = add_kernel_source("corrupt")
    build_in_child(private_cache, "corrupt")
    so, digest_path, _ = entry_paths(src)
    good = sha(so)
    corrupt(so)
    bad = sha(so)
    codecache.clear_memory_cache()
    lib = codecache.load_c(src)
    assert_works(lib)
    assert bad not in loaded_digests
    assert codecache.counters["rejected"] == 1 and codecache.counters["compile"] == 1
    assert sha(so) == open(digest_path).read()
    assert sha(so) == good          # the build is deterministic: the same bytes come back


@pytest.mark.parametrize("damage", ["missing", "garbage", "other-digest"])
def test_bad_digest_sidecar_means_rebuild(private_cache, damage):
    src = add_kernel_source("sidecar")
    build_in_child(private_cache, "sidecar")
    _, digest_path, _ = entry_paths(src)
    if damage == "missing":
        os.unlink(digest_path)
    else:
        with open(digest_path, "w") as f:
            f.write("not a digest" if damage == "garbage" else hashlib.sha256(b"other").hexdigest())
    codecache.clear_memory_cache()
    assert_works(codecache.load_c(src))
    assert codecache.counters["compile"] == 1 and codecache.counters["disk_hit"] == 0


@pytest.mark.parametrize("mode", [0o720, 0o702, 0o777])
def test_writable_by_others_is_refused_and_rebuilt(private_cache, loaded_digests, mode):
    src = add_kernel_source("writable")
    build_in_child(private_cache, "writable")
    so, _, _ = entry_paths(src)
    os.chmod(so, mode)
    codecache.clear_memory_cache()
    assert_works(codecache.load_c(src))
    assert codecache.counters["rejected"] == 1 and codecache.counters["compile"] == 1
    assert stat.S_IMODE(os.stat(so).st_mode) & 0o022 == 0
    assert len(loaded_digests) == 1        # only the rebuilt file was dlopened


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_entry_owned_by_another_user_is_refused(private_cache):
    src = add_kernel_source("foreign")
    build_in_child(private_cache, "foreign")
    so, digest_path, _ = entry_paths(src)
    os.chown(so, 12345, 12345)
    codecache.clear_memory_cache()
    assert_works(codecache.load_c(src))
    assert codecache.counters["rejected"] == 1 and os.stat(so).st_uid == os.geteuid()


def test_symlink_planted_as_entry_is_not_followed(private_cache, tmp_path):
    src = add_kernel_source("symlink")
    build_in_child(private_cache, "symlink")
    so, digest_path, _ = entry_paths(src)
    elsewhere = tmp_path / "elsewhere.so"
    os.replace(so, elsewhere)
    os.symlink(elsewhere, so)          # same bytes, digest matches: still refused (O_NOFOLLOW)
    codecache.clear_memory_cache()
    assert_works(codecache.load_c(src))
    assert codecache.counters["rejected"] == 1 and not os.path.islink(so)


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o707])
def test_cache_dir_writable_by_others_is_refused(private_cache, tmp_path, monkeypatch, mode):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, mode)
    monkeypatch.setattr(config, "cache_dir", str(shared))
    src = add_kernel_source("shared-dir")
    with pytest.warns(RuntimeWarning, match="refusing the cache dir .*writable by group/others"):
        lib = codecache.load_c(src)
    assert_works(lib)
    assert os.listdir(shared) == []           # nothing was written into the unsafe dir
    assert not diskstore.root().startswith(str(shared))
    assert stat.S_IMODE(os.stat(diskstore.root()).st_mode) == 0o700


def test_unsafe_subdir_is_refused(private_cache, tmp_path, monkeypatch):
    base = tmp_path / "base"
    (base / "kernels").mkdir(parents=True)
    os.chmod(base, 0o700)
    os.chmod(base / "kernels", 0o777)
    monkeypatch.setattr(config, "cache_dir", str(base))
    with pytest.warns(RuntimeWarning, match="kernels is writable by group/others"):
        assert_works(codecache.load_c(add_kernel_source("subdir")))
    assert os.listdir(base / "kernels") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_cache_dir_owned_by_another_user_is_refused(private_cache, tmp_path, monkeypatch):
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 12345, 12345)
    monkeypatch.setattr(config, "cache_dir", str(theirs))
    with pytest.warns(RuntimeWarning, match="owned by uid 12345"):
        assert_works(codecache.load_c(add_kernel_source("theirs")))


def test_strict_turns_an_unsafe_cache_dir_into_an_error(private_cache, tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    monkeypatch.setattr(config, "cache_dir", str(shared))
    monkeypatch.setattr(config, "strict", True)
    with pytest.raises(PermissionError, match="refusing the cache dir"):
        codecache.load_c(add_kernel_source("strict"))


def test_threads_loading_one_new_source_compile_once(private_cache):
    src = add_kernel_source("threads")
    barrier = threading.Barrier(6)
    results, errors = [], []

    def worker():
        barrier.wait()
        try:
            results.append(codecache.load_c(src))
        except Exception as e:  # collected and re-raised by the assertion below
            errors.append(e)
    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert codecache.counters["compile"] == 1
    assert all(lib is results[0] for lib in results)
    assert_works(results[0])


def test_load_many_compiles_each_missing_source(private_cache):
    sources = [add_kernel_source(f"many-{i}") for i in range(3)]
    libs = codecache.load_many(sources)
    assert codecache.counters["compile"] == 3
    for lib in libs:
        assert_works(lib)
    assert codecache.load_many(sources) == libs and codecache.counters["compile"] == 3


def test_load_cached_by_key_never_compiles(private_cache):
    src = add_kernel_source("by-key")
    key = codecache.cache_key(src)
    assert codecache.load_cached(key) is None
    codecache.load_c(src)
    codecache.clear_memory_cache()
    assert_works(codecache.load_cached(key))
    assert codecache.counters["compile"] == 1
    with pytest.raises(ValueError, match="kernel key"):
        codecache.load_cached("../../etc/passwd")


def test_key_depends_on_flags_and_source(private_cache, monkeypatch):
    src = add_kernel_source("flags")
    key = codecache.cache_key(src)
    assert codecache.cache_key(src + "\n") != key
    monkeypatch.setattr(config, "cflags", config.cflags + ("-DEMBER_TEST=1",))
    assert codecache.cache_key(src) != key


CHILD_BUILD = """
import json, os, sys, time
from ember._inductor import codecache
sys.path.insert(0, {tests!r})
from kernel_cache_env import add_kernel_source
while not os.path.exists({go!r}):
    time.sleep(0.005)
lib = codecache.load_c(add_kernel_source("race"))
print(json.dumps(dict(codecache.counters)))
"""


def test_processes_compiling_one_new_kernel_concurrently(private_cache, tmp_path):
    go = tmp_path / "go"
    code = CHILD_BUILD.format(tests=os.path.dirname(__file__), go=str(go))
    env = dict(os.environ, EMBER_CACHE_DIR=str(private_cache), PYTHONPATH=os.getcwd(), OMP_NUM_THREADS="1")
    children = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=env) for _ in range(3)]
    time.sleep(0.5)                 # let them import; then all start building at once
    go.touch()
    outputs = [child.communicate(timeout=120) for child in children]
    assert [child.returncode for child in children] == [0, 0, 0], [err for _, err in outputs]
    counts = [__import__("json").loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert sum(c["compile"] for c in counts) == 1
    assert sum(c["disk_hit"] for c in counts) == 2
    kernels = os.listdir(private_cache / "kernels")
    assert not [name for name in kernels if name.startswith(".tmp-")]       # no partial files left
    assert_works(codecache.load_c(add_kernel_source("race")))
    assert codecache.counters["compile"] == 0


def test_warm_cache_in_a_new_process_runs_no_compiler(private_cache):
    src_tag = "warm"
    assert_works(codecache.load_c(add_kernel_source(src_tag)))
    from ember._inductor import launch
    launch.build_extension()
    code = f"""
import json, sys
sys.path.insert(0, {os.path.dirname(__file__)!r})
from ember._inductor import codecache, launch, machine
from kernel_cache_env import add_kernel_source
lib = codecache.load_c(add_kernel_source({src_tag!r}))
launch.build_extension()
print(json.dumps(dict(codecache.counters, probe=machine.counters["probe"])))
"""
    counts = run_child(code, private_cache)
    assert counts["compile"] == 0 and counts["probe"] == 0
    assert counts["disk_hit"] == 2


def test_compile_error_names_the_kernel_and_keeps_the_source(private_cache, caplog):
    src = "#include <stdint.h>\nvoid cpp_fused_broken_7(void *const *b, const int64_t *i, const double *f) {\n" \
          "    undeclared_name += 1;\n}\n"
    with pytest.raises(codecache.CCompileError) as info:
        codecache.load_c(src)
    err = info.value
    assert "cpp_fused_broken_7" in str(err) and err.kernel_name == "cpp_fused_broken_7"
    assert err.source_path in str(err) and "undeclared_name" in err.stderr
    with open(err.source_path) as f:
        assert f.read() == src
    assert "cpp_fused_broken_7" in caplog.text and err.source_path in caplog.text
    assert codecache.counters["compile"] == 0
    kernels = os.listdir(private_cache / "kernels")
    assert not [n for n in kernels if n.endswith(".so") or n.startswith(".tmp-")]
    with pytest.raises(codecache.CCompileError):       # a failure is not cached as a success
        codecache.load_c(src)


def test_compile_error_uses_the_given_name(private_cache):
    with pytest.raises(codecache.CCompileError, match="kernel my_kernel"):
        codecache.load_c("int broken( {", name="my_kernel")


@pytest.mark.parametrize("compiler", ["missing", "not-executable", "fails"])
def test_no_compiler_raises_compiler_unavailable(private_cache, tmp_path, monkeypatch, compiler):
    path = tmp_path / "fake-cc"
    if compiler != "missing":
        path.write_text("#!/bin/sh\nexit 1\n")
        os.chmod(path, 0o755 if compiler == "fails" else 0o644)
    monkeypatch.setattr(config, "cc", str(path))
    assert codecache.compiler_available() is False
    with pytest.raises(codecache.CompilerUnavailable, match="no working C compiler"):
        codecache.load_c(add_kernel_source("no-cc"))
    assert codecache.counters["compile"] == 0


def test_kernel_name_of():
    assert codecache.kernel_name_of("static int h(int x) { return x; }\nvoid cpp_k(float *a) { }") == "cpp_k"
    assert codecache.kernel_name_of("int only_decl(int);") is None
    helper = '__attribute__((visibility("hidden"))) float g(float x) { return x; }\n'
    assert codecache.kernel_name_of(helper + "void ember_k0(void *const *bufs) { }") == "ember_k0"


def test_stale_temp_files_of_killed_builds_are_swept(private_cache):
    kernels = private_cache / "kernels"
    stale, fresh = kernels / ".tmp-999999-dead.so", kernels / ".tmp-999999-live.so"
    stale.write_bytes(b"half a library")
    fresh.write_bytes(b"being written")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    codecache.load_c(add_kernel_source("sweep"))
    assert not stale.exists() and fresh.exists()


def test_kernel_that_compiles_but_does_not_load_is_a_compile_error(private_cache):
    src = "extern void ember_no_such_function(void);\nvoid cpp_unlinkable_3(void) { ember_no_such_function(); }\n"
    for _ in range(2):          # also when the (verified) entry comes from the disk
        with pytest.raises(codecache.CCompileError, match="kernel cpp_unlinkable_3 compiled but does not load") as info:
            codecache.load_c(src)
        assert "ember_no_such_function" in str(info.value)
        with open(info.value.source_path) as f:
            assert f.read() == src
    assert codecache.counters["compile"] == 1
