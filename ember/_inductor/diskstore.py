"""The fuser's on-disk store: a private directory whose files are only trusted when they are ours.

Everything the fuser keeps between processes (compiled kernels, graph payloads, the machine
probe) goes through here, so the safety rules live in one place:

- the root (`config.cache_dir`) and its sub-folders are created 0700; a root owned by another
  user or writable by group/others is refused (a warning, then a private temp dir for this
  process; `config.strict` raises instead): whoever can write there could plant a library we
  would dlopen.
- a file is read only if it is a regular file, owned by us and not writable by group/others
  (checked with fstat on the opened descriptor, O_NOFOLLOW, so the check and the read see the
  same inode).
- a file is written whole or not at all: a temp file in the same folder, then os.replace.
- `locked(path)` is an fcntl.flock on `<path>.lock` so two processes building the same entry
  take turns (the second finds the first one's result).
- JSON entries are `<sha256 hex>\\n<json>`: the digest is checked before parsing, and parsing is
  json.loads, so a loaded entry is data and never runs code (no pickle anywhere).
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import threading
import warnings

from .._logging import lazy_logger
from . import config

log = lazy_logger("ember._inductor.cache")     # logging is imported on the first message

SUBDIRS = ("kernels", "graphs", "aot")      # aot: _functorch/_aot_cache.py's traced graphs
_resolved: dict = {}          # config.cache_dir as set -> the root actually used
_resolve_lock = threading.Lock()
_private_root = None          # this process's fallback temp dir, made on first need


class UnsafeCacheDir(PermissionError):
    """config.cache_dir is not private to this user (raised only under config.strict)."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _dir_problem(path: str) -> str | None:
    """Why `path` cannot hold trusted files, or None when it can."""
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"is writable by group/others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _make_private(path: str) -> str | None:
    """Create `path` (and the sub-folders) 0700 where missing; the first problem found, or None."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        for sub in (path, *(os.path.join(path, s) for s in SUBDIRS)):
            if not os.path.isdir(sub):
                os.mkdir(sub, 0o700)
            problem = _dir_problem(sub)
            if problem:
                return f"{sub} {problem}"
    except OSError as e:
        return f"{path} cannot be created or read ({e.strerror})"
    return None


def _fallback_root() -> str:
    global _private_root
    if _private_root is None:
        import atexit
        import shutil
        import tempfile
        _private_root = tempfile.mkdtemp(prefix="ember-cache-")   # mkdtemp makes it 0700
        atexit.register(shutil.rmtree, _private_root, True)
        problem = _make_private(_private_root)
        if problem:
            raise UnsafeCacheDir(f"ember._inductor: private cache dir {problem}")
    return _private_root


def root() -> str:
    """The cache root for config.cache_dir, checked once per process per setting."""
    wanted = os.path.abspath(os.path.expanduser(config.cache_dir))
    found = _resolved.get(wanted)
    if found is not None:
        return found
    with _resolve_lock:
        found = _resolved.get(wanted)
        if found is None:
            problem = _make_private(wanted)
            if problem is None:
                found = wanted
            else:
                message = (f"ember._inductor: refusing the cache dir {wanted}: {problem}; "
                           f"kernels compiled in this process are cached in a private temp dir instead")
                if config.strict:
                    raise UnsafeCacheDir(message)
                warnings.warn(message, RuntimeWarning, stacklevel=3)
                found = _fallback_root()
            _resolved[wanted] = found
    return found


def subdir(name: str) -> str:
    return os.path.join(root(), name)


def forget_roots() -> None:
    """Drop the per-process memo of checked roots (tests change permissions under it)."""
    with _resolve_lock:
        _resolved.clear()


def open_trusted(path: str) -> int | None:
    """A read descriptor on `path` if it is a regular file of ours not writable by others, else
    None (a missing file is None too; an untrusted one is logged)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:       # ELOOP: a symlink was planted where an entry belongs
        log.warning("ember cache: not reading %s (%s)", path, e.strerror)
        return None
    st = os.fstat(fd)
    problem = None
    if not stat.S_ISREG(st.st_mode):
        problem = "not a regular file"
    elif st.st_uid != os.geteuid():
        problem = f"owned by uid {st.st_uid}"
    elif st.st_mode & 0o022:
        problem = f"writable by group/others (mode {stat.S_IMODE(st.st_mode):o})"
    if problem:
        os.close(fd)
        log.warning("ember cache: not trusting %s: %s", path, problem)
        return None
    return fd


def read_fd(fd: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def read_trusted(path: str) -> bytes | None:
    fd = open_trusted(path)
    if fd is None:
        return None
    try:
        return read_fd(fd)
    finally:
        os.close(fd)


def new_temp_file(directory: str, suffix: str = "") -> str:
    """A new empty file `.tmp-*` in `directory` (0600, created exclusively); the caller replaces
    or unlinks it. (tempfile.mkstemp's job, without importing tempfile on the warm path.)"""
    while True:
        path = os.path.join(directory, f".tmp-{os.getpid()}-{os.urandom(6).hex()}{suffix}")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
            return path
        except FileExistsError:
            continue


def sweep_stale_temps(directory: str, max_age_s: float = 3600.0) -> int:
    """Remove `.tmp-*` files older than `max_age_s` (left by a process killed mid-build: a live
    build replaces or removes its temp file within seconds). Returns how many went."""
    import time
    removed, cutoff = 0, time.time() - max_age_s
    for entry in os.scandir(directory):
        if entry.name.startswith(".tmp-") and entry.is_file(follow_symlinks=False):
            try:     # a live build may publish (rename) its temp file between scandir and here
                if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
            except FileNotFoundError:      # published, or another process swept it first
                continue
    return removed


def write_atomic(path: str, data: bytes, mode: int = 0o600) -> None:
    """`path` holds `data` or its previous content, never a mix (temp file + os.replace)."""
    tmp = new_temp_file(os.path.dirname(path))
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def replace_into(tmp: str, path: str, mode: int = 0o600) -> None:
    """Move a finished temp file (same folder) over `path` with private permissions."""
    os.chmod(tmp, mode)
    os.replace(tmp, path)


@contextlib.contextmanager
def locked(path: str):
    """An exclusive inter-process lock for building `path` (released when the block ends)."""
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)        # closing the descriptor releases the flock


def read_json(path: str):
    """The payload stored by write_json, or None when missing, untrusted or not matching its digest."""
    raw = read_trusted(path)
    if raw is None:
        return None
    digest, sep, body = raw.partition(b"\n")
    if not sep or digest.decode("ascii", "replace") != sha256_hex(body):
        log.warning("ember cache: %s does not match its digest; ignoring it", path)
        return None
    try:
        return json.loads(body.decode("utf-8"))
    except ValueError:          # digest matches but the text is not JSON: written by someone else
        log.warning("ember cache: %s is not a JSON entry; ignoring it", path)
        return None


def write_json(path: str, payload) -> None:
    """Store a JSON-able `payload` (dicts, lists, str, numbers, bools, None) with its digest."""
    body = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")
    write_atomic(path, sha256_hex(body).encode("ascii") + b"\n" + body)


def evict_least_recent(directory: str, limit: int, keep: str, remove_entry) -> int:
    """Remove whole entries of `directory` (files `<key>.*`, lock files aside), least recently
    used first (the newest mtime of an entry's files: a hit touches it), until their total size
    is at most `limit` bytes. `keep` (the entry just built) stays; `remove_entry(key)` removes
    one entry under its lock and returns False when the entry is in use. Returns (how many went,
    the bytes left)."""
    entries: dict = {}           # key -> [bytes, last use]
    for entry in os.scandir(directory):
        if entry.name.startswith(".") or entry.name.endswith(".lock") or not entry.is_file(follow_symlinks=False):
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:         # evicted or replaced by another process meanwhile
            continue
        row = entries.setdefault(entry.name.split(".", 1)[0], [0, 0.0])
        row[0] += st.st_size
        row[1] = max(row[1], st.st_mtime)
    total = sum(size for size, _ in entries.values())
    removed = 0
    for key, (size, _) in sorted(entries.items(), key=lambda kv: kv[1][1]):
        if total <= limit:
            break
        if key != keep and remove_entry(key):
            total -= size
            removed += 1
    return removed, total


@contextlib.contextmanager
def try_locked(path: str):
    """Like `locked`, without waiting: yields False (and holds nothing) when another holder has it."""
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
