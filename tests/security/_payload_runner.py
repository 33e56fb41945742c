"""Try hostile files in a fresh interpreter: ``python _payload_runner.py MANIFEST REPORT MODE``.

MANIFEST is a JSON list of ``{"name", "path", "kind", "marker"}``. For each file: ember.jit.load it;
if that succeeds, call the program three times (a profiling run, then the optimised plan, whose
generated Python source is where NFKC-normalised names would bite). Everything raised, even
SystemExit, is caught and recorded. REPORT gets one JSON line per file -- written before the
attempt ({"name", "started": true}) and after it -- so a payload that kills the process shows as
started and never finished.

MODE "checked" runs ember as it is. MODE "permissive" switches the load-time checks off
(check_payload, the allowlist: any dotted name is imported, any method or attribute allowed, any
builtin exception raisable) to show that the payloads are live: what stops them is the checks.
Kept free of test imports: it runs where only ember is importable.
"""
import builtins
import importlib
import json
import os
import sys


def permissive() -> None:
    from ember.jit import _save_load
    from ember.jit.ir import allowlist, prim
    strict = allowlist.function_by_name

    def resolve_anything(name):
        if not isinstance(name, str) or "::" in name:
            return strict(name)
        head, _, attr = name.rpartition(".")
        try:
            return getattr(importlib.import_module(head), attr)
        except (ImportError, AttributeError, ValueError):
            return None
    allowlist.function_by_name = resolve_anything
    allowlist.is_method_name = lambda name: isinstance(name, str)
    allowlist.is_getattr_name = lambda name: isinstance(name, str)
    prim.RAISABLE = {n: c for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, BaseException)}
    _save_load.check_payload = lambda payload: None


def main(manifest_path: str, report_path: str, mode: str) -> None:
    import ember
    if mode == "permissive":
        permissive()
    with open(manifest_path) as fh:
        manifest = json.load(fh)
    with open(report_path, "w") as report:
        for item in manifest:
            report.write(json.dumps({"name": item["name"], "started": True}) + "\n")
            report.flush()
            record = {"name": item["name"], "load": None, "call": None, "calls": 0}
            try:
                program = ember.jit.load(item["path"])
            except BaseException as exc:   # noqa: BLE001 - SystemExit & co are what some payloads raise
                record["load"] = [type(exc).__name__, str(exc)]
            else:
                for _ in range(3):
                    try:
                        x = ember.randn(2, 3)
                        program(x) if item["kind"] == "module" else program(x, 2)
                        record["calls"] += 1
                    except BaseException as exc:   # noqa: BLE001
                        record["call"] = [type(exc).__name__, str(exc)[:300]]
                        break
            record["marker"] = os.path.exists(item["marker"])
            ember.set_default_dtype(ember.float32)   # what a (permissive) payload may have changed
            report.write(json.dumps(record) + "\n")
            report.flush()


if __name__ == "__main__":
    main(*sys.argv[1:4])
