"""ember.jit: TorchScript-like frontends. ``trace`` records the ops a program runs (the Tracer
dispatch key) into an ember.fx graph; ``script`` compiles Python source into the same IR with
control flow as nested blocks (frontend/, ir/), optimised by passes/ and run by the profiling
graph executor (executor/); ``save``/``load`` store either without their Python source.

    traced = ember.jit.trace(lambda a, b: a + b, (ember.randn(3), ember.randn(3)))
    print(traced.graph)
    scripted = ember.jit.script(fn)          # fn: a function or an nn.Module
    print(scripted.graph, scripted.code)

Names load on first use (the table says from where). The tracer itself is
ember._functorch.make_fx's; jit.trace adds TorchScript names and TracerWarnings (_tracing.py).
"""
from __future__ import annotations

from ember.fx import _lazy_exports

_EXPORTS = {  # public name -> module (relative to ember.jit) that defines it
    "trace": "._trace", "trace_module": "._trace", "ScriptFunction": "._script",
    "TopLevelTracedModule": "._trace", "TracingCheckError": "._trace",
    "TracerWarning": "._tracing",
    "script": "._script", "ignore": "._script", "unused": "._script", "script_if_tracing": "._script",
    "is_scripting": "._script", "annotate": "._script",
    "save": "._save_load", "load": "._save_load",
    "ScriptModule": ".frontend.modules", "RecursiveScriptModule": ".frontend.modules",
    "export": ".frontend.modules", "fuser": ".executor.config",
}

__all__ = list(_EXPORTS)
__getattr__ = _lazy_exports(globals(), _EXPORTS)
