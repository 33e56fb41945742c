"""Run saved script programs in a fresh interpreter: ``python _fresh_process_runner.py DIR``.

The acceptance tests (script_harness.py) save every scripted program of a test module with
ember.jit.save into DIR, write each call's inputs as .npy files plus a manifest.json, and start
this file once per test module with ``sys.executable`` and ``PYTHONPATH=<repo>``. It imports only
ember and NumPy -- never the test module, never torch -- loads each saved file with ember.jit.load,
runs it on each input set, and writes DIR/results.json (results as .npy files + a JSON tree).

Value trees (inputs and results) are JSON: {"tensor": file, "requires_grad": bool}, {"tuple": [..]},
{"list": [..]}, {"dict": [[key, value], ..]}, {"none": true}, {"int": v}, {"float": v}, {"bool": v},
{"str": v}. A call that raises records {"exc": class name, "msg": str(exc)}.
Kept free of test-only imports on purpose: it must run where the program's source is absent.
"""
import json
import os
import sys
import traceback

import numpy as np


def decode(tree, folder, ember):
    """A JSON value tree back into Python values / ember tensors."""
    if "tensor" in tree:
        arr = np.load(os.path.join(folder, tree["tensor"]), allow_pickle=False)
        t = ember.from_numpy(np.array(arr, copy=True))  # (ascontiguousarray would make 0-d arrays 1-d)
        if tree.get("requires_grad"):
            t.requires_grad_(True)
        return t
    if "tuple" in tree:
        return tuple(decode(v, folder, ember) for v in tree["tuple"])
    if "list" in tree:
        return [decode(v, folder, ember) for v in tree["list"]]
    if "dict" in tree:
        return {k: decode(v, folder, ember) for k, v in tree["dict"]}
    if "none" in tree:
        return None
    for kind in ("bool", "int", "float", "str"):
        if kind in tree:
            return tree[kind]
    raise ValueError(f"unknown value tree {tree!r}")


def encode(value, folder, prefix, ember, counter):
    """Python values / ember tensors as a JSON value tree; tensors go to .npy files."""
    if isinstance(value, ember.Tensor):
        counter[0] += 1
        name = f"{prefix}_{counter[0]}.npy"
        np.save(os.path.join(folder, name), np.asarray(value.detach().numpy()), allow_pickle=False)
        return {"tensor": name, "requires_grad": bool(value.requires_grad), "dtype": str(value.dtype)}
    if isinstance(value, tuple):
        return {"tuple": [encode(v, folder, prefix, ember, counter) for v in value]}
    if isinstance(value, list):
        return {"list": [encode(v, folder, prefix, ember, counter) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[k, encode(v, folder, prefix, ember, counter)] for k, v in value.items()]}
    if value is None:
        return {"none": True}
    for kind, typ in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if type(value) is typ:
            return {kind: value}
    return {"unsupported": f"{type(value).__name__}: {value!r}"}


def main(folder):
    """Load and run every program listed in folder/manifest.json; write folder/results.json."""
    import ember
    import ember.jit
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    results = {}
    for prog in manifest["programs"]:
        entry = results[prog["name"]] = {}
        try:
            loaded = ember.jit.load(os.path.join(folder, prog["file"]))
        except Exception as exc:  # reported per program by the parent
            entry["load_error"] = f"{type(exc).__name__}: {exc}"
            entry["traceback"] = traceback.format_exc()
            continue
        calls = entry["calls"] = []
        for i, call in enumerate(prog["calls"]):
            try:
                args = decode(call["args"], folder, ember)
                kwargs = decode(call["kwargs"], folder, ember)
                if call.get("seed") is not None:  # programs drawing random numbers
                    ember.manual_seed(call["seed"])
                out = loaded(*args, **kwargs)
                calls.append({"ok": encode(out, folder, f"out_{prog['name']}_{i}", ember, [0]),
                              "args_after": encode(list(args), folder, f"after_{prog['name']}_{i}", ember, [0])})
            except Exception as exc:
                calls.append({"exc": type(exc).__name__, "msg": str(exc), "traceback": traceback.format_exc()})
    # the point of the exercise: nothing of the tests' source may have been imported to run them
    leaked = sorted(m for m in sys.modules if m.startswith(("test_", "script_harness", "torch")))
    with open(os.path.join(folder, "results.json"), "w") as f:
        json.dump({"results": results, "imported": leaked}, f)


if __name__ == "__main__":
    main(sys.argv[1])
