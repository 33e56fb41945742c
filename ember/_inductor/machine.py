"""What this machine's C toolchain and CPU can do, probed once per machine and kept on disk.

    probe()                   # {"cc_version", "march", "isa", "libmvec", "libmvec_functions", ...} or None
    isa()                     # the CPU part: {"avx2": True, "avx512f": False, "vector_bits": 256, ...}
    vector_math_prelude()     # C prototypes that route expf/logf/tanhf/... to glibc's libmvec

Inductor spends ~1 s per process probing with subprocesses. Here a process reads the first CPU
block of /proc/cpuinfo (microseconds) and stats the compiler binary; the subprocess work
(`cc --version`, what -march=native means, whether libmvec links and computes right) runs once
and is stored as `<cache>/machine-<fingerprint>.json`, the fingerprint naming the host, the CPU's
SIMD flags and the compiler binary (path, size, mtime: an upgraded compiler is re-probed).
"""
from __future__ import annotations

import ctypes
import hashlib
import math
import os
import platform
import re
import threading

from . import config, diskstore

_SIMD_FLAG = re.compile(r"^(sse\w*|ssse3|avx\w*|fma4?|f16c|bmi\d|amx\w*|asimd\w*|sve\w*|neon)$")
_probes: dict = {}            # (config.cc, cache dir) and config.cc -> probe dict (None: no usable compiler)
_probe_lock = threading.Lock()
counters = {"probe": 0}       # subprocess probes run in this process (0 on a warm machine)

# libmvec's functions (glibc >= 2.35 has them all on x86-64); one listed in the prelude only when
# every x86 variant the compiler may call (SSE b, AVX c, AVX2 d, AVX-512 e) is exported.
UNARY = ("exp", "exp2", "exp10", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan",
         "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "cbrt")
BINARY = ("pow", "atan2", "hypot")
_LANES = {"float": ("bN4", "cN8", "dN8", "eN16"), "double": ("bN2", "cN4", "dN4", "eN8")}


def cpu_flags() -> tuple:
    """The SIMD-relevant flags of the first CPU in /proc/cpuinfo (empty where there is none)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return tuple(sorted(w for w in line.split(":", 1)[1].split() if _SIMD_FLAG.match(w)))
                if not line.strip():        # end of the first processor's block
                    break
    except OSError:
        pass
    return ()


def isa_from_flags(flags) -> dict:
    flags = set(flags)
    bits = 512 if "avx512f" in flags else 256 if "avx2" in flags or "avx" in flags else 128
    return {"flags": sorted(flags), "sse4_2": "sse4_2" in flags, "avx": "avx" in flags,
            "avx2": "avx2" in flags, "fma": "fma" in flags, "avx512f": "avx512f" in flags,
            "avx512bw": "avx512bw" in flags, "avx512_bf16": "avx512_bf16" in flags,
            "neon": bool(flags & {"asimd", "neon"}), "vector_bits": bits}


def _which(cc: str) -> str | None:
    """The executable `cc` names: itself when it has a slash, else the first on $PATH."""
    candidates = [cc] if os.sep in cc else [os.path.join(d, cc) for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _compiler_identity(cc: str):
    """(resolved path, stat fingerprint) of the compiler binary, or None when it is not there."""
    path = _which(cc)
    if path is None:
        return None
    real = os.path.realpath(path)
    st = os.stat(real)
    return real, f"{real}:{st.st_size}:{st.st_mtime_ns}"


def _fingerprint(identity_key: str, flags) -> str:
    text = "\0".join((platform.node(), platform.machine(), identity_key, *flags))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def libmvec_functions() -> list:
    """C names (expf, exp, powf, ...) whose every x86 vector variant libmvec exports."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return []
    try:
        lib = ctypes.CDLL("libmvec.so.1")
    except OSError:
        return []
    found = []
    for ctype, suffix in (("float", "f"), ("double", "")):
        for names, arity in ((UNARY, "v"), (BINARY, "vv")):
            for name in names:
                if all(hasattr(lib, f"_ZGV{lane}{arity}_{name}{suffix}") for lane in _LANES[ctype]):
                    found.append(name + suffix)
    return found


def _base_and_type(fn: str):
    if fn.endswith("f") and fn[:-1] in UNARY + BINARY:
        return fn[:-1], "float"
    return fn, "double"


def prelude_for(functions) -> str:
    lines = ["/* ember: vector variants from glibc's libmvec (link with -lmvec -lm) */"]
    for fn in functions:
        base, ctype = _base_and_type(fn)
        params = ", ".join([ctype] * (2 if base in BINARY else 1))
        lines.append(f"#pragma omp declare simd notinbranch\n{ctype} {fn}({params});")
    return "\n".join(lines) + "\n"


_MVEC_CHECK = r"""
#include <math.h>
#include <stdint.h>
%s
void ember_mvec_check(float *restrict out, const float *restrict in, int64_t n) {
    #pragma omp simd
    for (int64_t i = 0; i < n; i++) out[i] = expf(in[i]) + tanhf(in[i]) + logf(in[i] + 5.0f);
}
"""


def _libmvec_usable(cc_path: str, functions) -> bool:
    """Does a kernel calling expf/tanhf/logf through the prelude link, load and compute right?"""
    import subprocess
    import tempfile
    if not {"expf", "tanhf", "logf"} <= set(functions):
        return False
    with tempfile.TemporaryDirectory(prefix="ember-probe-") as tmp:
        src, lib_path = os.path.join(tmp, "check.c"), os.path.join(tmp, "check.so")
        with open(src, "w") as f:
            f.write(_MVEC_CHECK % prelude_for(["expf", "tanhf", "logf"]))
        proc = subprocess.run([cc_path, *config.cflags, src, "-o", lib_path, "-lmvec", "-lm"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return False
        lib = ctypes.CDLL(lib_path)
    n = 37                       # not a multiple of any vector width: exercises the tail too
    xs = [(i - 18) / 4.0 for i in range(n)]
    inp, out = (ctypes.c_float * n)(*xs), (ctypes.c_float * n)()
    lib.ember_mvec_check(out, inp, ctypes.c_int64(n))
    want = [math.exp(x) + math.tanh(x) + math.log(x + 5.0) for x in xs]
    return all(math.isclose(o, w, rel_tol=1e-5, abs_tol=1e-5) for o, w in zip(out, want))


def _run_probe(cc: str, cc_path: str, flags) -> dict:
    import subprocess                   # only the once-per-machine probe runs programs
    counters["probe"] += 1
    version = subprocess.run([cc_path, "--version"], capture_output=True, text=True, check=True).stdout
    target = subprocess.run([cc_path, "-march=native", "-Q", "--help=target"], capture_output=True, text=True)
    march = re.search(r"^\s+-march=\s+(\S+)", target.stdout, re.M) if target.returncode == 0 else None
    functions = libmvec_functions()
    usable = _libmvec_usable(cc_path, functions)
    return {"cc": cc, "cc_path": cc_path, "cc_version": version.strip(),
            "march": march.group(1) if march else None, "isa": isa_from_flags(flags),
            "libmvec": usable, "libmvec_functions": functions if usable else []}


def probe() -> dict | None:
    """This machine's compiler + CPU facts for config.cc (None: no usable C compiler)."""
    memo_key = (config.cc, config.cache_dir)
    if memo_key in _probes:
        return _probes[memo_key]
    with _probe_lock:
        if memo_key not in _probes:
            _probes[memo_key] = _probe_into_cache(config.cc, _probes.get(config.cc))
            _probes.setdefault(config.cc, _probes[memo_key])
        return _probes[memo_key]


_FACT_TYPES = {"cc": str, "cc_path": str, "cc_version": str, "march": (str, type(None)), "isa": dict,
               "libmvec": bool, "libmvec_functions": list}


def _valid_facts(facts, cc_path: str):
    """`facts` if it has every field with its type and names the compiler found on PATH, else None
    (the compiler path in it is what gets executed: never one the file alone chose)."""
    if not isinstance(facts, dict) or facts.get("cc_path") != cc_path:
        return None
    if not all(isinstance(facts.get(k), t) for k, t in _FACT_TYPES.items()):
        return None
    if not all(isinstance(f, str) and f.isidentifier() for f in facts["libmvec_functions"]):
        return None
    return facts


def _probe_into_cache(cc: str, known: dict | None) -> dict | None:
    """Read the facts from this cache dir; else reuse `known` (probed for another cache dir by
    this process) or run the probe, and store them there so the next process reads them."""
    identity = _compiler_identity(cc)
    if identity is None:
        return None
    flags = cpu_flags()
    path = os.path.join(diskstore.root(), f"machine-{_fingerprint(identity[1], flags)}.json")
    result = _valid_facts(diskstore.read_json(path), identity[0])
    if result is not None:
        return result
    with diskstore.locked(path):
        result = _valid_facts(diskstore.read_json(path), identity[0])
        if result is None:
            if known is not None and known["cc_path"] == identity[0]:
                result = known
            else:
                from subprocess import CalledProcessError
                try:
                    result = _run_probe(cc, identity[0], flags)
                except (OSError, CalledProcessError):
                    return None      # present but not runnable: no compiler
            diskstore.write_json(path, result)
    return result


def forget() -> None:
    """Drop the in-process probe memo (tests that switch config.cc or the cache dir)."""
    with _probe_lock:
        _probes.clear()


def isa() -> dict:
    """The CPU's SIMD capabilities (from /proc/cpuinfo) plus whether libmvec is usable."""
    facts = probe()
    info = dict(facts["isa"]) if facts else isa_from_flags(cpu_flags())
    info["march"] = facts["march"] if facts else None
    info["libmvec"] = bool(facts and facts["libmvec"] and config.use_libmvec)
    return info


def vector_math_prelude() -> str:
    """C text to put after `#include <math.h>` in a kernel: `#pragma omp declare simd notinbranch`
    prototypes for each libmvec function, so `#pragma omp simd` loops call the vector variants.
    Empty when libmvec is not usable here (kernels then call scalar libm)."""
    facts = probe()
    if not (facts and facts["libmvec"] and config.use_libmvec):
        return ""
    return prelude_for(facts["libmvec_functions"])
