"""The kernel cache: C source -> compiled shared library -> loaded (ctypes), once per source.

    lib = load_c(source)                  # compiled with config.cc/cflags, or fetched from the cache
    libs = load_many([src0, src1])        # several at once (compiler subprocesses in parallel)
    lib = load_cached(key)                # by key only, never compiles (None when not on disk)
    fn = kernel_pointer(lib, "cpp_fused_add_0")   # the address launch.launcher() calls
    graph_cache_put(key, {...}); graph_cache_get(key)   # JSON payloads of whole compiled graphs
    counters["compile"], ["disk_hit"], ["memory_hit"], ...   # what each load cost

A library is keyed by a hash of (source, compiler binary + `cc --version`, flags, -march=native's
meaning, the CPU's SIMD flags); the machine facts come from machine.probe(), run once per machine.
Two tables:

- in memory (`_loaded`, the kernel spec cache): key -> loaded library. Thread-safe: lookups of a
  new key serialise on the key's file lock, so two threads loading one new source compile once.
- on disk (`<config.cache_dir>/kernels/`): `<key>.so`, `<key>.so.sha256` (digest of the .so's
  bytes), `<key>.c` (the source, kept for bug reports). Built under an fcntl lock, published by
  os.replace; before dlopen the .so is read, must be ours and not writable by group/others
  (diskstore.open_trusted) and must match its digest, otherwise it is rebuilt, never loaded.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import threading

from .._logging import lazy_logger
from . import config, diskstore, machine
from .machine import isa, vector_math_prelude  # noqa: F401  (the codegen's entry points)

log = lazy_logger("ember._inductor.codecache")     # logging is imported on the first message

COUNTER_NAMES = ("compile", "disk_hit", "memory_hit", "rejected", "graph_hit", "graph_miss", "graph_rejected",
                 "evicted")
counters = dict.fromkeys(COUNTER_NAMES, 0)
_counter_lock = threading.Lock()
_loaded: dict = {}            # key -> ctypes.CDLL
_lock = threading.Lock()
_KERNEL_NAME = re.compile(r"^(?!static\b|__attribute__)[\w \t\*]*?\b(\w+)\s*\([^;{]*\)\s*\{", re.M)


class CompilerUnavailable(RuntimeError):
    """No working C compiler on this machine."""


class CCompileError(RuntimeError):
    """The C compiler rejected a generated kernel; `.source_path` keeps the source for a bug report."""

    def __init__(self, message, source_path, kernel_name=None, stderr=""):
        super().__init__(message)
        self.source_path = source_path
        self.kernel_name = kernel_name
        self.stderr = stderr


def _count(name: str, n: int = 1) -> None:
    with _counter_lock:
        counters[name] += n


def reset_counters() -> None:
    with _counter_lock:
        for name in COUNTER_NAMES:
            counters[name] = 0


def clear_memory_cache() -> None:
    """Forget the libraries loaded in this process (the next load_c goes to disk); for tests."""
    with _lock:
        _loaded.clear()
    _cache_bytes.clear()
    _swept.clear()
    diskstore.forget_roots()


def compiler_available() -> bool:
    """Whether config.cc is a working C compiler (probed once per machine, memoised per process)."""
    return machine.probe() is not None


def link_flags() -> tuple:
    """The link of a kernel library: only the libraries kernels call. -nostdlib drops the C
    runtime's start files and the default libraries (a third of a new kernel's link time: ~6 of
    ~17 ms CPU here); what a kernel can need comes back explicitly: libgomp (OpenMP regions),
    libm/libmvec (math) and libgcc (the compiler's helpers, e.g. half-float conversions). libc
    is resolved when the library is loaded, from the process that loads it, as an extension
    module's Python API is: every process that runs ember has it. GCC only (its OpenMP runtime is
    libgomp); another compiler links as it does by default."""
    facts = machine.probe()
    mvec = ("-lmvec",) if facts and facts["libmvec"] and config.use_libmvec else ()
    if not facts or "Free Software Foundation" not in facts["cc_version"] or "clang" in facts["cc_version"]:
        return (*config.ldflags, *mvec)
    gomp = ("-lgomp",) if "-fopenmp" in config.cflags else ()
    return ("-nostdlib", *gomp, *config.ldflags, *mvec, "-lgcc")


def _toolchain() -> dict:
    facts = machine.probe()
    if facts is None:
        raise CompilerUnavailable(
            f"ember._inductor: no working C compiler: config.cc={config.cc!r} was not found or does not run "
            f"(set $CC or ember._inductor.config.cc)")
    return facts


def _toolchain_id(facts) -> str:
    return "\0".join((facts["cc_path"], facts["cc_version"], str(facts["march"]), *facts["isa"]["flags"]))


def cache_key(source: str, extra_flags=()) -> str:
    """The kernel's cache key: source + compiler identity and version + flags + ISA."""
    facts = _toolchain()
    text = "\0".join(("ember-kernel-1", source, _toolchain_id(facts), *config.cflags, *extra_flags,
                      "\1", *link_flags()))
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def kernel_name_of(source: str) -> str | None:
    """The first function defined in `source` that is neither static nor a prelude helper behind
    `__attribute__` (names the kernel in errors)."""
    match = _KERNEL_NAME.search(source)
    return match.group(1) if match else None


def _paths(key: str, source_suffix: str = ".c") -> tuple:
    directory = diskstore.subdir("kernels")
    so_path = os.path.join(directory, key + ".so")
    return so_path, so_path + ".sha256", os.path.join(directory, key + source_suffix)


def _load_verified(so_path: str, digest_path: str, name: str):
    """dlopen the entry if it is trusted and matches its digest; None when missing or rejected.
    A verified library the loader refuses (an undefined symbol) is a CCompileError for `name`."""
    fd = diskstore.open_trusted(so_path)
    if fd is None:
        if os.path.lexists(so_path):
            _count("rejected")
        return None
    try:
        data = diskstore.read_fd(fd)
    finally:
        os.close(fd)
    digest = diskstore.read_trusted(digest_path)
    if digest is None or digest.decode("ascii", "replace").strip() != diskstore.sha256_hex(data):
        log.warning("ember cache: %s is corrupt or truncated (digest mismatch); rebuilding it", so_path)
        _count("rejected")
        return None
    # Only we can write this 0700 folder, so the file dlopen maps is the one just verified.
    try:
        return ctypes.CDLL(so_path)
    except OSError as e:
        c_path = so_path[:-len(".so")] + ".c"
        message = f"ember._inductor: kernel {name} compiled but does not load ({e}); its source is at {c_path}"
        log.error("%s", message)
        raise CCompileError(message, c_path, name, str(e)) from e


def _compile(source: str, name: str, command, so_path: str, digest_path: str, c_path: str):
    diskstore.write_atomic(c_path, source.encode("utf-8"))
    import subprocess                    # imported here: a warm process never compiles
    directory = os.path.dirname(so_path)
    if directory not in _swept:          # once per process: a scan of a large cache costs ~10 ms
        _swept.add(directory)
        diskstore.sweep_stale_temps(directory)
    tmp = diskstore.new_temp_file(os.path.dirname(so_path), ".so")
    cmd = command(c_path, tmp)
    if config.debug:
        log.warning("ember cache: %s", " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError as e:       # the compiler went away since the probe
        os.unlink(tmp)
        raise CompilerUnavailable(f"ember._inductor: compiler {cmd[0]!r} not found") from e
    if proc.returncode != 0:
        os.unlink(tmp)
        message = (f"ember._inductor: the C compiler rejected kernel {name}; its source is kept at {c_path}\n"
                   f"{' '.join(cmd)}\n{proc.stderr}")
        log.error("%s", message)
        raise CCompileError(message, c_path, name, proc.stderr)
    _count("compile")
    with open(tmp, "rb") as f:
        digest = diskstore.sha256_hex(f.read())
    # The digest goes first: a reader between the two replaces sees a mismatch and rebuilds
    # (under the lock), never an unverified library.
    diskstore.write_atomic(digest_path, digest.encode("ascii"))
    diskstore.replace_into(tmp, so_path, 0o700)
    lib = _load_verified(so_path, digest_path, name)
    if lib is None:
        raise OSError(f"ember._inductor: {so_path} changed while it was being published")
    if config.cache_size_limit:
        _enforce_size_limit(so_path, (so_path, digest_path, c_path))
    return lib


_swept: set = set()           # kernels dirs whose stale temp files this process removed
_cache_bytes: dict = {}       # kernels dir -> its size at this process's last scan + what it added since


def _enforce_size_limit(so_path: str, new_files) -> None:
    """Evict least recently used entries when the kernels dir may exceed config.cache_size_limit.
    The dir is scanned (a stat per file) on a process's first compile into it and then only when
    its own additions could cross the cap: LRU-ish, other processes' additions are seen at the
    next scan."""
    directory = os.path.dirname(so_path)
    added = sum(os.stat(p).st_size for p in new_files)
    known = _cache_bytes.get(directory)
    if known is not None and known + added <= config.cache_size_limit:
        _cache_bytes[directory] = known + added
        return
    evicted, _cache_bytes[directory] = diskstore.evict_least_recent(
        directory, config.cache_size_limit, os.path.basename(so_path)[:-len(".so")], _remove_entry)
    if evicted:
        _count("evicted", evicted)


def _remove_entry(key: str) -> bool:
    """Remove one kernel library (digest first, so no reader trusts a half-removed entry) unless a
    process holds its lock (building or loading it). A process that loaded it keeps its mapping;
    a graph entry naming it compiles it again."""
    so_path, digest_path, c_path = _paths(key)
    with diskstore.try_locked(so_path) as got:
        if not got:
            return False
        for path in (digest_path, so_path, c_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    return True


def _touch(so_path: str) -> None:
    """Mark a library used (its mtime), so the size cap evicts the least recently used first."""
    try:
        os.utime(so_path)
    except OSError:       # evicted meanwhile, or a read-only cache: only the eviction order suffers
        pass


def load_c(source: str, name: str | None = None, extra_flags=()) -> ctypes.CDLL:
    """The loaded library compiled from `source` (compiled once per machine, loaded once per process).

    `extra_flags` go after config.cflags (and into the key). Raises CompilerUnavailable when there is
    no C compiler, CCompileError (naming the kernel and the kept source file) when it rejects the source."""
    key = cache_key(source, extra_flags)
    lib = _loaded.get(key)
    if lib is not None:
        _count("memory_hit")
        return lib
    cc_path = _toolchain()["cc_path"]
    return load_library(key, source, name or kernel_name_of(source) or key,
                        lambda src, out: [cc_path, *config.cflags, *extra_flags, src, "-o", out, *link_flags()])


def load_library(key: str, source: str, name: str, command, source_suffix: str = ".c") -> ctypes.CDLL:
    """The library stored under `key`, built when missing by running the argv `command(source_path,
    out_path)` on `source` (kept as `<key><source_suffix>`). load_c's entry for other builders
    (ember.utils.cpp_extension): the caller's key must hash everything the build depends on; the
    lock, digest check, permissions and counters are load_c's."""
    lib = _loaded.get(key)
    if lib is not None:
        _count("memory_hit")
        return lib
    so_path, digest_path, c_path = _paths(key, source_suffix)
    with diskstore.locked(so_path):      # also serialises this process's threads on the key
        lib = _loaded.get(key)
        if lib is not None:
            _count("memory_hit")
            return lib
        lib = _load_verified(so_path, digest_path, name)
        if lib is not None:
            _count("disk_hit")
            _touch(so_path)
        else:
            lib = _compile(source, name, command, so_path, digest_path, c_path)
        with _lock:
            _loaded[key] = lib
    return lib


def kept_source_path(key: str) -> str:
    """Where the C source of the library stored under `key` is kept."""
    return _paths(key)[2]


def load_cached(key: str):
    """The library stored under `key` (from a graph payload), or None; never runs the compiler."""
    lib = _loaded.get(key)
    if lib is not None:
        _count("memory_hit")
        return lib
    if not re.fullmatch(r"[0-9a-f]{40}", key):
        raise ValueError(f"load_cached: expected a 40-hex-digit kernel key, got {key!r}")
    so_path, digest_path, _ = _paths(key)
    with diskstore.locked(so_path):
        lib = _loaded.get(key) or _load_verified(so_path, digest_path, key)
        if lib is not None:
            _count("disk_hit")
            _touch(so_path)
            with _lock:
                _loaded[key] = lib
    return lib


def load_many(sources, names=None) -> list:
    """`load_c` of each source, compiling the missing ones in parallel (a thread per compiler subprocess)."""
    sources = list(sources)
    names = list(names) if names is not None else [None] * len(sources)
    if len(sources) <= 1:
        return [load_c(s, n) for s, n in zip(sources, names)]
    from concurrent.futures import ThreadPoolExecutor
    workers = min(len(sources), config.compile_workers or os.cpu_count() or 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(load_c, sources, names))


def kernel_pointer(lib: ctypes.CDLL, name: str) -> int:
    """The address of function `name` in `lib` (what launch.launcher()(fnptr, ...) calls)."""
    return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value


# -- the graph-level cache: a warm process skips lowering and the C compiler ------------------

def _graph_path(key: str) -> str:
    facts = machine.probe()
    toolchain = _toolchain_id(facts) if facts else "no-compiler"
    name = hashlib.sha256(f"ember-graph-1\0{key}\0{toolchain}".encode()).hexdigest()[:40]
    return os.path.join(diskstore.subdir("graphs"), name + ".json")


def graph_cache_get(key: str):
    """The payload stored under `key` for this machine's toolchain, or None (missing, tampered,
    not ours). The stored text is parsed with json.loads only: loading it never runs code."""
    path = _graph_path(key)
    exists = os.path.lexists(path)
    payload = diskstore.read_json(path) if exists else None
    if payload is None or not isinstance(payload, dict):
        _count("graph_rejected" if exists else "graph_miss")
        return None
    _count("graph_hit")
    return payload


def graph_cache_put(key: str, payload: dict) -> None:
    """Store a JSON-able dict (str/int/float/bool/None, lists, dicts) under `key`, atomically."""
    if not isinstance(payload, dict):
        raise TypeError(f"graph_cache_put: payload must be a dict, got {type(payload).__name__}")
    path = _graph_path(key)
    with diskstore.locked(path):
        diskstore.write_json(path, payload)
