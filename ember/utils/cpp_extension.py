"""C++ extensions built on the fly, like ``torch.utils.cpp_extension``:

    from ember.utils.cpp_extension import load_inline, load
    module = load_inline(name="inline_extension", cpp_sources=[source], functions=["sin_add"])
    module.sin_add(x, y)
    module = load(name="my_ops", sources=["my_ops.cpp"])    # PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)

The C++ side is ember/include/ember/extension.h: `at::Tensor` wraps an ember tensor and calls ember
through Python (see the header). Bindings are pybind11's (the optional extra `ember[cpp]`).

A build goes into the fuser's kernel cache (`ember._inductor.codecache.load_library`): the same
folder, file lock, digest check and permissions as the fuser's kernels. Its key hashes the source
text, the flags, the contents of ember's headers, the C++ compiler's identity and version, the
Python ABI and pybind11's version, so a second process (or a second call) loads the built library
without running the compiler. `ember._inductor.codecache.counters["compile"]` counts compiler runs.

To run an extension function as an operator (dispatcher, profiler, autograd, ember.compile), define
it with ember.library and give it a fake (meta) function and a derivative; see README.md.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
import threading

INCLUDE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")
_CXXFLAGS = ("-O2", "-std=c++17", "-fPIC", "-shared", "-fvisibility=hidden")
_modules: dict = {}              # cache key -> the imported extension module (one import per process)
_lock = threading.Lock()
_header_digest = None


# -- what extension.h calls back into -----------------------------------------------------------

def _dtype_of_code(code: int):
    """The ember dtype of an at::ScalarType (PyTorch's numbering, ember's dtype.scalar_type_code)."""
    from .._core import dtype as _dt
    for d in _dt.ALL_DTYPES:
        if d.scalar_type_code == code:
            return d
    raise TypeError(f"at::ScalarType {code} has no ember dtype")


def _is_number(value) -> bool:
    import numbers
    return isinstance(value, numbers.Number)


# -- the toolchain ------------------------------------------------------------------------------

def _cxx() -> str:
    return os.environ.get("CXX", "c++")


def compiler_facts() -> dict | None:
    """{"path", "version"} of the C++ compiler ($CXX, default c++), or None when there is none.
    Its `--version` runs once per machine and compiler binary (kept in the cache, like the fuser's
    machine probe): a warm process only stats the binary."""
    from .._inductor import diskstore, machine
    identity = machine._compiler_identity(_cxx())
    if identity is None:
        return None
    path = os.path.join(diskstore.root(), f"cxx-{hashlib.sha256(identity[1].encode()).hexdigest()[:24]}.json")
    facts = diskstore.read_json(path)
    if isinstance(facts, dict) and facts.get("path") == identity[0] and isinstance(facts.get("version"), str):
        return facts
    import subprocess
    with diskstore.locked(path):
        try:
            proc = subprocess.run([identity[0], "--version"], capture_output=True, text=True)
        except OSError:
            return None
        if proc.returncode != 0:
            return None
        facts = {"path": identity[0], "version": proc.stdout.strip()}
        diskstore.write_json(path, facts)
    return facts


def compiler_available() -> bool:
    return compiler_facts() is not None


def include_paths() -> list:
    """ember's headers, pybind11's and Python's (what an extension is compiled with)."""
    import sysconfig
    try:
        import pybind11
    except ImportError:
        raise RuntimeError("ember.utils.cpp_extension needs pybind11 (pip install 'ember[cpp]')") from None
    return [INCLUDE_DIR, pybind11.get_include(), sysconfig.get_path("include")]


def _headers_digest() -> str:
    """A digest of every file under ember/include: a changed header rebuilds every extension."""
    global _header_digest
    if _header_digest is None:
        h = hashlib.sha256()
        for dirpath, dirs, files in os.walk(INCLUDE_DIR):
            dirs.sort()
            for file in sorted(files):
                path = os.path.join(dirpath, file)
                with open(path, "rb") as f:
                    h.update(os.path.relpath(path, INCLUDE_DIR).encode() + b"\0" + f.read() + b"\0")
        _header_digest = h.hexdigest()
    return _header_digest


def _python_abi() -> str:
    import sysconfig
    return f"{sys.implementation.cache_tag}{sys.abiflags}{sysconfig.get_config_var('EXT_SUFFIX')}"


# -- building and loading -----------------------------------------------------------------------

def _check_name(name) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"cpp_extension: name must be a valid C++/Python identifier (it names the module's "
                         f"PyInit function), got {name!r}")


def _string_list(what: str, value) -> list:
    values = [value] if isinstance(value, str) else list(value or ())
    if not all(isinstance(v, str) for v in values):
        raise TypeError(f"cpp_extension: {what} must be a string or a list of strings, got {value!r}")
    return values


def cache_key(name, contents, paths, facts, cflags, ldflags, headers=None, abi=None, pybind11_version=None) -> str:
    """The library's key: everything the build reads or depends on (headers, abi and pybind11_version
    default to this installation's; a test passes others)."""
    text = "\0".join(("ember-cpp-extension-1", name, *contents, "\1", *paths, "\1", facts["path"], facts["version"],
                      "\1", *cflags, "\1", *ldflags, "\1", headers or _headers_digest(), abi or _python_abi(),
                      pybind11_version or _pybind11_version()))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:40]


def _build(name: str, source: str, sources_on_disk, extra_cflags, extra_ldflags, extra_include_paths,
           verbose: bool, build_directory):
    """Build (or fetch from the cache) and import the extension module `name`."""
    from .._inductor import codecache
    facts = compiler_facts()
    if facts is None:
        raise RuntimeError(f"cpp_extension: no C++ compiler: {_cxx()!r} was not found or does not run (set $CXX)")
    includes = include_paths() + list(extra_include_paths)
    cflags = [*_CXXFLAGS, f"-DTORCH_EXTENSION_NAME={name}", *(f"-I{p}" for p in includes)]
    if not sources_on_disk:
        # load_inline's include, given to the compiler rather than written into the source, so the
        # compiler's line numbers are those of cpp_sources (absolute: never a file of the cwd)
        cflags += ["-include", os.path.join(INCLUDE_DIR, "ember", "extension.h")]
    cflags += extra_cflags
    contents = [source] + [_read_source(p) for p in sources_on_disk]
    key = cache_key(name, contents, sources_on_disk, facts, cflags, extra_ldflags)
    module = _modules.get(key)
    if module is not None:
        return module
    def command(kept, out):           # run only on a cache miss
        argv = [facts["path"], *cflags, *(sources_on_disk or [kept]), "-o", out, *extra_ldflags]
        if verbose:
            print(f"cpp_extension: building {name}: {' '.join(argv)}", file=sys.stderr)
        return argv
    if verbose:
        print(f"cpp_extension: {name}: cache key {key}", file=sys.stderr)
    try:
        lib = codecache.load_library(key, source, f"extension {name}", command, ".cpp")
    except codecache.CCompileError as e:
        raise RuntimeError(f"Error building extension '{name}' (its source is kept at {e.source_path}):\n"
                           f"{e.stderr.strip()}") from None
    if build_directory is not None:
        os.makedirs(build_directory, exist_ok=True)
        with open(os.path.join(build_directory, "main.cpp"), "w", encoding="utf-8") as f:
            f.write(source)
    with _lock:
        module = _modules.get(key)
        if module is None:
            loader = importlib.machinery.ExtensionFileLoader(name, lib._name)
            module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
            loader.exec_module(module)
            _modules[key] = module
    return module


def _read_source(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _pybind11_version() -> str:
    import pybind11
    return pybind11.__version__


def _bindings(name: str, functions) -> str:
    if functions is None:
        return ""
    if isinstance(functions, str):
        functions = [functions]
    docs = dict(functions) if isinstance(functions, dict) else {f: f for f in functions}
    for fn in docs:
        if not isinstance(fn, str) or not fn.isidentifier():
            raise ValueError(f"load_inline(): functions must name C++ functions, got {fn!r}")
    lines = [f'  m.def("{fn}", &{fn}, {_cpp_string(doc)});' for fn, doc in docs.items()]
    return "\nPYBIND11_MODULE(" + name + ", m) {\n" + "\n".join(lines) + "\n}\n"


def _cpp_string(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def load_inline(name: str, cpp_sources, functions=None, extra_cflags=None, extra_ldflags=None,
                extra_include_paths=None, build_directory=None, verbose: bool = False, with_pytorch_error_handling=True,
                is_python_module: bool = True, cuda_sources=None, **unsupported):
    """Compile C++ source strings into a Python module `name`.

    <ember/extension.h> is included first (the sources may include it too; it is passed as
    `-include`, so the compiler's line numbers are those of the sources); `functions` (names,
    or {name: docstring}) get pybind11 bindings, else the sources define PYBIND11_MODULE themselves.
    Raises RuntimeError quoting the compiler's messages when it rejects the code."""
    _check_name(name)
    if cuda_sources:
        raise NotImplementedError("load_inline(): cuda_sources are not supported by ember (CPU C++ only)")
    if not is_python_module:
        raise NotImplementedError("load_inline(): is_python_module=False is not supported by ember")
    if unsupported:
        raise TypeError(f"load_inline() got unsupported arguments {sorted(unsupported)}")
    sources = _string_list("cpp_sources", cpp_sources)
    source = "\n".join(sources) + _bindings(name, functions)
    return _build(name, source, [], _string_list("extra_cflags", extra_cflags),
                  _string_list("extra_ldflags", extra_ldflags), _string_list("extra_include_paths", extra_include_paths),
                  verbose, build_directory)


def load(name: str, sources, extra_cflags=None, extra_ldflags=None, extra_include_paths=None,
         build_directory=None, verbose: bool = False, is_python_module: bool = True, **unsupported):
    """Compile C++ files into a Python module `name`; they define it with
    ``PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)`` and include <ember/extension.h>. The cache key
    covers the files' text, not headers of their own they include: edit a .cpp to rebuild."""
    _check_name(name)
    if not is_python_module:
        raise NotImplementedError("load(): is_python_module=False is not supported by ember")
    if unsupported:
        raise TypeError(f"load() got unsupported arguments {sorted(unsupported)}")
    paths = [os.path.abspath(p) for p in _string_list("sources", sources)]
    if not paths:
        raise ValueError("load(): sources must name at least one C++ file")
    for path in paths:
        if not path.endswith((".cpp", ".cc", ".cxx", ".c++", ".C")):
            raise ValueError(f"load(): {path} is not a C++ source file (.cpp, .cc, .cxx)")
    record = "".join(f"// {p}\n" for p in paths)       # kept next to the library for a bug report
    return _build(name, record, paths, _string_list("extra_cflags", extra_cflags),
                  _string_list("extra_ldflags", extra_ldflags), _string_list("extra_include_paths", extra_include_paths),
                  verbose, build_directory)
