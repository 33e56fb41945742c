"""Acceptance harness for ember.jit.script: each program is checked three ways against ember eager.

A test module (test_programs_script_*.py) is written once against a library bound to the global
``lib`` (``lib = bind_lib(globals())``): pytest imports it with ``lib = ember``, and the harness
loads the same file a second time as a separate module with ``lib = torch``, so the very same
source is scripted by both libraries. Its ``PROGRAMS`` list holds one ``P(...)`` per program
(a function or an nn.Module class). For every program ``check(PROGRAMS[i], globals())`` runs
``calls`` input sets (fresh random NumPy inputs from a per-program seed; ``inputs(rng, call)``
may vary by call index so both sides of a branch are taken) through:

0. ember eager: the reference (results, inputs after the call -- programs may mutate them -- or
   the exception raised);
1. "script": ``ember.jit.script(prog)`` on identical copies: results must match eager exactly in
   structure, type, dtype, shape and requires_grad and closely in values; a raising call must raise
   the same exception class with eager's message;
1a. "print": ``.graph`` prints, ``.code`` parses as Python, ``graph_for(inputs)`` prints;
1b. "grad" (programs with ``P(grad=True)``): one scripted object runs the calls plain, then with
   float tensor arguments requiring grad (backpropagating the sum of the float results:
   arguments' and parameters' .grad must match), then with such arguments under no_grad;
2. "torch": ``torch.jit.script`` of the torch copy of the program on the same inputs, compared
   with ember eager (dtypes by name); a raising call must raise torch.jit.Error naming the class
   and message. ``P(torch="why")`` marks a program torch.jit.script rejects (asserted, strictly);
3. "fresh": every program of the test module is scripted, saved with ember.jit.save, and run by
   ONE fresh interpreter per module (_fresh_process_runner.py, copied next to the saved files so
   the tests' folder is not on its path; it imports only ember and NumPy); its results must
   equal the eager ones like in 1.

Modules are built three times from the same seed (eager, scripted, torch) so parameters and any
state evolve identically; their state_dict after each call is compared too (stages 1, 1b, 2). ``KNOWN_GAPS`` lists (program, stage) pairs that fail today for a
missing feature, with why: those stages must fail (the test xfails with the first error line)
and the test FAILS once they pass, so the entry gets removed. Comparisons are never loosened.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings
import zlib

import numpy as np
import pytest
import torch

import ember

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
STAGES = ("script", "print", "grad", "torch", "fresh")

# (program name, stage) -> why it fails today. Strict: the stage must still fail.
KNOWN_GAPS: dict = {
}


def bind_lib(module_globals):
    """The library a program module is being loaded for (ember unless the harness says torch)."""
    return module_globals.get("__script_lib__", ember)


@dataclasses.dataclass
class Program:
    """One scripted program. `target`: the function or nn.Module class name in the test module;
    `inputs(rng, call) -> tuple` of NumPy arrays / Python values (arrays become tensors);
    `init`: module constructor args; `kwargs(rng, call) -> dict`; `torch`: True, or why
    torch.jit.script rejects the program (then asserted to reject it); `grad`: adds a stage
    "grad" where float tensor arguments require grad and each call backpropagates the sum of the
    float results, then the arguments' and parameters' .grad (accumulating over the calls) are
    compared with eager's as well; `eval`: the module is put in eval mode; `rng`: the program draws
    random numbers, so lib.manual_seed(seed + call) runs before each call (torch's generator
    differs from ember's: the torch stage then compares torch.jit.script with torch eager);
    `torch_builtin_errors`: the program's errors come from builtins (int division by zero, list
    index, dict key), which torch's interpreter raises as a plain RuntimeError with its own text:
    the torch stage then requires a RuntimeError on exactly the calls where eager raised;
    `saveable`: True, or why ember.jit.save must refuse the program (e.g. it calls an
    @jit.ignore'd Python function): the fresh stage then asserts that save raises.
    Modules' state_dict after each call is always compared (buffers a forward updates)."""
    target: str
    inputs: object
    init: tuple = ()
    kwargs: object = None
    torch: object = True
    calls: int = 4
    is_module: bool = False
    grad: bool = False
    eval: bool = False
    rng: bool = False
    torch_builtin_errors: bool = False
    saveable: object = True

    @property
    def name(self):
        return self.target

    @property
    def seed(self):
        return zlib.crc32(self.target.encode()) % 100_000


def P(target, inputs, **kw):
    """A Program for a function or nn.Module subclass defined in the test module."""
    return Program(target.__name__, inputs, is_module=isinstance(target, type), **kw)


def arr(rng, *shape, dtype="float32", low=-2.0, high=2.0):
    """A random NumPy array (integers for int dtypes, coin flips for bool)."""
    if dtype.startswith("int"):
        return rng.integers(int(low), int(high) + 1, size=shape).astype(dtype)
    if dtype == "bool":
        return rng.random(shape) > 0.5
    return rng.uniform(low, high, size=shape).astype(dtype)


def tensors(*shapes, dtype="float32"):
    """inputs(): one random array per shape."""
    def make(rng, call):
        return tuple(arr(rng, *s, dtype=dtype) for s in shapes)
    return make


def signed(*shapes, shift=3.0):
    """inputs(): random arrays shifted positive on even calls and negative on odd ones, so a
    program branching on the sign of a sum takes both paths."""
    def make(rng, call):
        s = shift if call % 2 == 0 else -shift
        return tuple(arr(rng, *sh) + np.float32(s) for sh in shapes)
    return make


# ----------------------------------------------------------------------------------------------
# values: conversion and comparison
# ----------------------------------------------------------------------------------------------
def to_lib(value, lib):
    """NumPy arrays in an input tree become `lib` tensors (fresh copies)."""
    if isinstance(value, np.ndarray):
        return lib.from_numpy(np.array(value, copy=True))
    if isinstance(value, tuple):
        return tuple(to_lib(v, lib) for v in value)
    if isinstance(value, list):
        return [to_lib(v, lib) for v in value]
    if isinstance(value, dict):
        return {k: to_lib(v, lib) for k, v in value.items()}
    return value


def is_tensor(x):
    return isinstance(x, (torch.Tensor, ember.Tensor))


def to_numpy(x):
    return np.array(x.detach().numpy(), copy=True)


def dtype_name(dt):
    return str(dt).split(".")[-1]


def assert_same(got, want, path, rtol, atol, check_grad=True):
    """Structural equality: containers (same kind and length), scalars (same Python type),
    tensors (shape, dtype by name, requires_grad, values: exact for ints/bools)."""
    if is_tensor(want):
        assert is_tensor(got), f"{path}: expected a tensor, got {type(got).__name__}: {got!r}"
        assert tuple(got.shape) == tuple(want.shape), f"{path}: shape {tuple(got.shape)} != {tuple(want.shape)}"
        assert dtype_name(got.dtype) == dtype_name(want.dtype), f"{path}: dtype {got.dtype} != {want.dtype}"
        if check_grad:
            assert bool(got.requires_grad) == bool(want.requires_grad), \
                f"{path}: requires_grad {got.requires_grad} != {want.requires_grad}"
        a, b = to_numpy(got), to_numpy(want)
        if b.dtype.kind in "biu":
            np.testing.assert_array_equal(a, b, err_msg=path)
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=path)
        return
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want), f"{path}: {type(got).__name__} != {type(want).__name__}: {got!r}"
        assert len(got) == len(want), f"{path}: length {len(got)} != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{path}[{i}]", rtol, atol, check_grad)
        return
    if isinstance(want, dict):
        assert isinstance(got, dict) and list(got) == list(want), f"{path}: {got!r} != {want!r}"
        for k in want:
            assert_same(got[k], want[k], f"{path}[{k!r}]", rtol, atol, check_grad)
        return
    assert type(got) is type(want), f"{path}: {type(got).__name__} {got!r} != {type(want).__name__} {want!r}"
    if got == want:
        return
    if isinstance(want, float) and (math.isnan(want) or math.isnan(got)):
        assert math.isnan(want) and math.isnan(got), f"{path}: {got!r} != {want!r}"
    elif isinstance(want, float):
        assert abs(got - want) <= atol + rtol * abs(want), f"{path}: {got!r} != {want!r}"
    else:
        assert got == want, f"{path}: {got!r} != {want!r}"


def assert_outcome(got, want, path, rtol, atol, exc_check):
    """Compare one call's outcome ("ok", result, args_after) / ("exc", exception)."""
    if want[0] == "exc":
        assert got[0] == "exc", f"{path}: eager raised {type(want[1]).__name__}({want[1]}), this returned {got[1]!r}"
        exc_check(got[1], want[1], path)
        return
    if got[0] == "exc":
        raise AssertionError(f"{path}: raised {type(got[1]).__name__}: {got[1]}") from got[1]
    assert_same(got[1], want[1], f"{path}: result", rtol, atol)
    assert_same(got[2], want[2], f"{path}: inputs after the call", rtol, atol)
    if len(got) > 3:  # in-process runs: gradients and module state too (the fresh process has neither)
        assert_same(got[3], want[3], f"{path}: gradients / module state", rtol, atol)


def same_exception(got, want, path):
    """ember (script or loaded): the same exception class, eager's message in its message."""
    assert type(got).__name__ == type(want).__name__, \
        f"{path}: raised {type(got).__name__}({got}), eager raised {type(want).__name__}({want})"
    assert str(want) in str(got), f"{path}: message {str(got)!r} lacks eager's {str(want)!r}"


def torch_exception(got, want, path, builtin_errors=False):
    """torch.jit.Error whose text names eager's exception class and message (or, for errors
    raised by builtins, the RuntimeError torch's interpreter raises for them)."""
    if builtin_errors and not isinstance(got, torch.jit.Error):
        assert type(got) is RuntimeError, f"{path}: torch raised {type(got).__name__}: {got}"
        return
    assert isinstance(got, torch.jit.Error), f"{path}: torch raised {type(got).__name__}: {got}"
    text = str(got)
    assert f"{type(want).__name__}: {want}" in text, f"{path}: torch's error lacks {type(want).__name__}: {want}"


# ----------------------------------------------------------------------------------------------
# running programs
# ----------------------------------------------------------------------------------------------
_VARIANTS = {}


def torch_variant(module_globals):
    """The test module's source loaded again as a separate module with lib = torch."""
    path = module_globals["__file__"]
    name = "_script_torch_" + os.path.splitext(os.path.basename(path))[0]
    if name not in _VARIANTS:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        mod.__dict__["__script_lib__"] = torch
        sys.modules[name] = mod  # torch.jit resolves classes through their module
        spec.loader.exec_module(mod)
        _VARIANTS[name] = mod
    return vars(_VARIANTS[name])


def seed_module(module, lib, seed):
    """Same parameter / floating buffer values for every build of a module (name order)."""
    rng = np.random.default_rng(seed)
    with lib.no_grad():
        for _, t in sorted(list(module.named_parameters()) + list(module.named_buffers()), key=lambda kv: kv[0]):
            if dtype_name(t.dtype).startswith("float"):
                t.copy_(lib.from_numpy(arr(rng, *t.shape, low=-0.5, high=0.5)))
    return module


def build(prog, module_globals, lib):
    """The program object for `lib`: the function, or a freshly built, seeded module."""
    obj = module_globals[prog.target]
    if prog.is_module:
        module = seed_module(obj(*prog.init), lib, prog.seed + 7)
        return module.eval() if prog.eval else module
    return obj


def call_inputs(prog, call):
    """NumPy input tree (args, kwargs) of one call; the same for every library and stage."""
    args = prog.inputs(np.random.default_rng(prog.seed + call), call)
    kwargs = prog.kwargs(np.random.default_rng(prog.seed + 500 + call), call) if prog.kwargs else {}
    return args, kwargs


def _float_tensors(value):
    if is_tensor(value):
        return [value] if dtype_name(value.dtype).startswith("float") else []
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _float_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _float_tensors(v)]
    return []


def _extras(fn, args, result, grad):
    """What a call leaves besides its result: gradients (prog.grad) and a module's state."""
    extras = {}
    is_module = isinstance(fn, (torch.nn.Module, ember.nn.Module))
    if grad:
        outs = [t for t in _float_tensors(result) if t.requires_grad]
        if outs:
            loss = outs[0].sum()
            for t in outs[1:]:
                loss = loss + t.sum()
            loss.backward()
        grads = [None if t.grad is None else t.grad.detach().clone() for t in _float_tensors(list(args))]
        if is_module:
            grads += [None if p.grad is None else p.grad.detach().clone()
                      for _, p in sorted(fn.named_parameters(), key=lambda kv: kv[0])]
        extras["grads"] = grads
    if is_module:
        extras["state"] = {k: v.detach().clone() for k, v in sorted(fn.state_dict().items())}
    return extras


def run_calls(fn, prog, lib, grad=False, no_grad=False):
    """Outcome of each call: ("ok", result, args after, extras) or ("exc", exception).
    grad: float tensor args require grad, results are backpropagated (extras hold the grads);
    no_grad: float tensor args require grad but the call runs under lib.no_grad()."""
    out = []
    for call in range(prog.calls):
        args, kwargs = call_inputs(prog, call)
        args, kwargs = to_lib(args, lib), to_lib(kwargs, lib)
        if grad or no_grad:
            for t in _float_tensors(list(args)):
                t.requires_grad_(True)
        if prog.rng:
            lib.manual_seed(prog.seed + call)
        try:
            if no_grad:
                with lib.no_grad():
                    result = fn(*args, **kwargs)
            else:
                result = fn(*args, **kwargs)
            extras = _extras(fn, args, result, grad)
        except Exception as exc:  # compared with eager's exception
            out.append(("exc", exc))
            continue
        out.append(("ok", result, list(args), extras))
    return out


def eager_outcomes(prog, module_globals):
    return run_calls(build(prog, module_globals, ember), prog, ember)


def first_line(exc):
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


# ----------------------------------------------------------------------------------------------
# the fresh process (one per test module)
# ----------------------------------------------------------------------------------------------
_FRESH = {}


def _encode(value, folder, prefix, counter):
    if isinstance(value, np.ndarray):
        counter[0] += 1
        name = f"{prefix}_{counter[0]}.npy"
        np.save(os.path.join(folder, name), value, allow_pickle=False)
        return {"tensor": name}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, folder, prefix, counter) for v in value]}
    if isinstance(value, list):
        return {"list": [_encode(v, folder, prefix, counter) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[k, _encode(v, folder, prefix, counter)] for k, v in value.items()]}
    if value is None:
        return {"none": True}
    for kind, typ in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if type(value) is typ:
            return {kind: value}
    raise TypeError(f"cannot pass {value!r} to the fresh process")


def fresh_results(programs, module_globals):
    """{program name: list of outcomes | Exception} from running every program of the module,
    saved by ember.jit.save, in one fresh interpreter. Cached per test module."""
    key = module_globals["__name__"]
    if key in _FRESH:
        return _FRESH[key]
    import ember.jit
    folder = tempfile.mkdtemp(prefix="ember_script_fresh_")
    out, manifest = {}, []
    for prog in programs:
        if prog.saveable is not True:
            scripted = ember.jit.script(build(prog, module_globals, ember))
            try:
                ember.jit.save(scripted, os.path.join(folder, "refused.pt"))
                out[prog.name] = AssertionError(f"ember.jit.save accepted it; expected a refusal: {prog.saveable}")
            except Exception:  # the expected refusal
                out[prog.name] = "refused"
            continue
        try:
            scripted = ember.jit.script(build(prog, module_globals, ember))
            file = f"{prog.name}.pt"
            ember.jit.save(scripted, os.path.join(folder, file))
        except Exception as exc:  # reported by the test of that program
            out[prog.name] = RuntimeError(f"scripting/saving in the parent failed: {first_line(exc)}")
            continue
        calls = []
        for call in range(prog.calls):
            args, kwargs = call_inputs(prog, call)
            calls.append({"seed": prog.seed + call if prog.rng else None,
                          "args": _encode(args, folder, f"in_{prog.name}_{call}", [0]),
                          "kwargs": _encode(kwargs, folder, f"kw_{prog.name}_{call}", [0])})
        manifest.append({"name": prog.name, "file": file, "calls": calls})
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump({"programs": manifest}, f)
    # run a copy of the runner from the temp folder: the tests' directory is then not on sys.path
    runner = shutil.copy(os.path.join(HERE, "_fresh_process_runner.py"), folder)
    env = {**os.environ, "PYTHONPATH": REPO, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, runner, folder], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        err = RuntimeError(f"fresh process failed (rc {proc.returncode}): {proc.stderr.strip()[-2000:]}")
        for m in manifest:
            out[m["name"]] = err
        _FRESH[key] = out
        return out
    with open(os.path.join(folder, "results.json")) as f:
        data = json.load(f)
    assert not data["imported"], f"the fresh process imported test/torch modules: {data['imported']}"
    from _fresh_process_runner import decode  # the runner's own decoder, here with ember
    for name, entry in data["results"].items():
        if "load_error" in entry:
            out[name] = RuntimeError(f"ember.jit.load failed in the fresh process: {entry['load_error']}")
            continue
        outcomes = []
        for c in entry["calls"]:
            if "exc" in c:
                cls = type(c["exc"], (Exception,), {})
                outcomes.append(("exc", cls(c["msg"])))
            else:
                outcomes.append(("ok", decode(c["ok"], folder, ember), decode(c["args_after"], folder, ember)))
        out[name] = outcomes
    shutil.rmtree(folder, ignore_errors=True)  # results are in memory now
    _FRESH[key] = out
    return out


# ----------------------------------------------------------------------------------------------
# the check
# ----------------------------------------------------------------------------------------------
class CompileFailed(Exception):
    """ember.jit.script itself raised (the stages after "script" then fail the same way)."""


def _stage_script(prog, module_globals, eager):
    import ember.jit
    try:
        scripted = ember.jit.script(build(prog, module_globals, ember))
    except Exception as exc:
        raise CompileFailed(first_line(exc)) from exc
    got = run_calls(scripted, prog, ember)
    for call, (g, w) in enumerate(zip(got, eager)):
        assert_outcome(g, w, f"script call {call}", 1e-5, 1e-6, same_exception)


def _stage_print(prog, module_globals, eager):
    """The scripted program's .graph prints, .code parses as Python, and graph_for(inputs of a
    call that eager completed) gives a printable optimised graph."""
    import ast
    import ember.jit
    scripted = ember.jit.script(build(prog, module_globals, ember))
    assert "graph(" in str(scripted.graph), str(scripted.graph)[:500]
    ast.parse(scripted.code)
    ok_calls = [call for call, outcome in enumerate(eager) if outcome[0] == "ok"]
    if ok_calls:
        args, kwargs = call_inputs(prog, ok_calls[0])
        args, kwargs = to_lib(args, ember), to_lib(kwargs, ember)
        assert "graph(" in str(scripted.graph_for(*args, **kwargs))


def _stage_grad(prog, module_globals, eager):
    """One scripted object run plain, then with grad, then with grad inputs under no_grad (its
    plans are cached per input signature, grad mode included), against eager doing the same."""
    import ember.jit

    def phases(fn):
        return (run_calls(fn, prog, ember) + run_calls(fn, prog, ember, grad=True)
                + run_calls(fn, prog, ember, no_grad=True))
    eager = phases(build(prog, module_globals, ember))
    got = phases(ember.jit.script(build(prog, module_globals, ember)))
    for call, (g, w) in enumerate(zip(got, eager)):
        phase = ("plain", "grad", "no_grad")[call // prog.calls]
        assert_outcome(g, w, f"script {phase} call {call % prog.calls}", 1e-5, 1e-6, same_exception)


def _stage_torch(prog, module_globals, eager):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="`torch.jit.script` is deprecated")
        _torch_oracle(prog, module_globals, eager)


def _torch_oracle(prog, module_globals, eager):
    tg = torch_variant(module_globals)
    if prog.torch is not True:
        with pytest.raises(Exception):
            torch.jit.script(build(prog, tg, torch))
        return
    scripted = torch.jit.script(build(prog, tg, torch))
    got = run_calls(scripted, prog, torch)
    if prog.rng:  # torch's random stream is not ember's: torch eager is the reference here
        eager = run_calls(build(prog, tg, torch), prog, torch)
    for call, (g, w) in enumerate(zip(got, eager)):
        assert_outcome(g, w, f"torch.jit.script call {call}", 1e-4, 1e-5,
                       lambda g, w, p: torch_exception(g, w, p, prog.torch_builtin_errors))


def _stage_fresh(prog, module_globals, eager, programs):
    got = fresh_results(programs, module_globals).get(prog.name)
    if isinstance(got, Exception):
        raise got
    if got == "refused":
        return
    for call, (g, w) in enumerate(zip(got, eager)):
        assert_outcome(g, w, f"fresh process call {call}", 1e-5, 1e-6, same_exception)


def check(prog, module_globals):
    """Run every stage of `prog` (module docstring); fail with one line per failing stage."""
    programs = module_globals["PROGRAMS"]
    eager = eager_outcomes(prog, module_globals)
    failures = {}
    stages = (("script", _stage_script), ("print", _stage_print), ("grad", _stage_grad), ("torch", _stage_torch),
              ("fresh", _stage_fresh))
    for stage, fn in stages:
        if stage == "grad" and not prog.grad:
            continue
        try:
            if stage == "fresh":
                fn(prog, module_globals, eager, programs)
            else:
                fn(prog, module_globals, eager)
        except Exception as exc:
            failures[stage] = exc
    gaps = {stage: why for (name, stage), why in KNOWN_GAPS.items() if name == prog.name}
    if isinstance(failures.get("script"), CompileFailed):  # one compile error: report it once
        for stage in ("print", "grad", "fresh"):
            if stage in failures and stage not in gaps:
                del failures[stage]
    report = os.environ.get("SCRIPT_TESTS_REPORT")  # a JSON line per failing stage (for routing gaps)
    if report:
        with open(report, "a") as f:
            for stage, exc in failures.items():
                f.write(json.dumps({"program": prog.name, "stage": stage, "error": first_line(exc)}) + "\n")
    closed = [s for s in gaps if s not in failures]
    unexpected = {s: e for s, e in failures.items() if s not in gaps}
    lines = [f"[{s}] {first_line(e)}" for s, e in unexpected.items()]
    lines += [f"[{s}] KNOWN_GAPS entry passes now: remove ({prog.name!r}, {s!r})" for s in closed]
    if lines:
        detail = "\n\n".join(f"--- {s} ---\n" + "".join(traceback.format_exception(e))[-3000:]
                             for s, e in unexpected.items())
        pytest.fail(" | ".join(lines) + "\n\n" + detail)
    if gaps:
        pytest.xfail("; ".join(f"[{s}] {gaps[s]}: {first_line(failures[s])}" for s in gaps))


def program_ids(programs):
    return [p.name for p in programs]
