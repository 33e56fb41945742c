"""The kernel cache: C source -> compiled shared library -> loaded (ctypes), once per source.

    lib = load_c(source)                  # compiled with config.cc/cflags, or fetched from the cache
    libs = load_many([src0, src1])        # several at once (compiler subprocesses in parallel)

A library is keyed by a hash of (source, compiler, flags); the in-memory table makes a second
`load_c` of the same source free. On disk: `<config.cache_dir>/kernels/<key>.so`.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

from . import config


class CompilerUnavailable(RuntimeError):
    """No working C compiler on this machine."""


class CCompileError(RuntimeError):
    """The C compiler rejected a generated kernel; `.source_path` keeps the source for a bug report."""

    def __init__(self, message, source_path):
        super().__init__(message)
        self.source_path = source_path


_loaded: dict = {}            # key -> ctypes.CDLL
_lock = threading.Lock()


def cache_key(source: str) -> str:
    text = "\0".join((source, config.cc, *config.cflags, *config.ldflags))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _kernel_dir() -> str:
    path = os.path.join(config.cache_dir, "kernels")
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path


def _build(source: str, key: str) -> str:
    directory = _kernel_dir()
    so_path = os.path.join(directory, key + ".so")
    if os.path.exists(so_path):
        return so_path
    c_path = os.path.join(directory, key + ".c")
    with open(c_path, "w") as f:
        f.write(source)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=directory)
    os.close(fd)
    cmd = [config.cc, *config.cflags, c_path, "-o", tmp, *config.ldflags]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError as e:
        os.unlink(tmp)
        raise CompilerUnavailable(f"ember._inductor: C compiler {config.cc!r} not found") from e
    if proc.returncode != 0:
        os.unlink(tmp)
        raise CCompileError(f"ember._inductor: compiling {c_path} failed:\n{proc.stderr}", c_path)
    os.replace(tmp, so_path)        # atomic: another process never sees a half-written library
    return so_path


def load_c(source: str) -> ctypes.CDLL:
    """The loaded library compiled from `source` (compiled once per machine, loaded once per process)."""
    key = cache_key(source)
    lib = _loaded.get(key)
    if lib is None:
        path = _build(source, key)
        with _lock:
            lib = _loaded.get(key)
            if lib is None:
                lib = _loaded[key] = ctypes.CDLL(path)
    return lib


def load_many(sources) -> list:
    """`load_c` of each source, compiling the missing ones in parallel."""
    sources = list(sources)
    if len(sources) <= 1:
        return [load_c(s) for s in sources]
    with ThreadPoolExecutor(max_workers=min(len(sources), os.cpu_count() or 1)) as pool:
        return list(pool.map(load_c, sources))
