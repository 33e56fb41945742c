"""``ember.onnx``: present so programs with an optional ONNX export path import; exporting is not built.

``export`` raises NotImplementedError naming itself before touching the model or the file.
"""
from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, **kwargs):
    raise NotImplementedError("ember.onnx.export: ONNX export is not implemented in ember "
                              "(save the state dict with ember.save, or trace with ember.jit.trace)")


def is_in_onnx_export() -> bool:
    return False
