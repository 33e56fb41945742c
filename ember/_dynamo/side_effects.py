"""Mutations of pre-existing objects seen during capture, replayed after the graph in program order.

    se.mutation(tx, list_var)                 # before list_var.items changes (undo log entry)
    se.store_attr(tx, obj_var, "count", v)    # obj.count = v, replayed as STORE_ATTR
    se.store_global(tx, "step", v)            # global step = v, replayed as STORE_GLOBAL
    se.codegen(cg)                            # bytecode that applies them to the real objects

Objects created during capture need no replay: they are rebuilt wherever they are still live.
An undo log lets the translator roll back a partly-run instruction before a graph break.
"""
from __future__ import annotations

import dataclasses

from .exc import unimplemented


def _replace_list(target: list, items: list) -> None:
    target[:] = items


def _replace_dict(target: dict, items: dict) -> None:
    target.clear()
    target.update(items)


@dataclasses.dataclass
class _Entry:
    kind: str        # "container" | "attr" | "global"
    target: object   # tracker (container/attr) or global name
    name: str = ""
    value: object = None


class SideEffects:
    def __init__(self):
        self.entries: dict = {}          # key -> _Entry, in first-mutation order (dicts keep insertion order)
        self.undo: list = []             # (key, previous entry or None, container snapshot or None)

    # ------------------------------------------------------------------ recording
    def track(self, vt):
        """Containers that came from the frame (inputs, globals): mutations on them must be replayed."""
        return vt

    def mutation(self, tx, vt) -> None:
        """Called by a container tracker before it changes its items."""
        if hasattr(vt, "snapshot"):     # a tracker with more state than its items (sets: their history)
            snapshot = vt.snapshot()
        else:
            snapshot = dict(vt.items) if isinstance(vt.items, dict) else list(vt.items)
        key = ("container", id(vt))
        self.undo.append((key, self.entries.get(key), (vt, snapshot)))
        if vt.source is not None and key not in self.entries:
            self.entries[key] = _Entry("container", vt)

    def is_modified(self, vt) -> bool:
        return ("container", id(vt)) in self.entries

    def store_attr(self, tx, obj, name, value) -> None:
        key = ("attr", id(obj), name)
        self.undo.append((key, self.entries.get(key), None))
        self.entries.pop(key, None)      # re-insert: replay order follows the last assignment
        self.entries[key] = _Entry("attr", obj, name, value)

    def pending_attr(self, obj, name):
        entry = self.entries.get(("attr", id(obj), name))
        return entry.value if entry is not None else None

    def store_global(self, tx, name, value) -> None:
        if tx.f_globals is not tx.output.root_globals:
            unimplemented(f"assignment to global {name!r} of another module")
        key = ("global", name)
        self.undo.append((key, self.entries.get(key), None))
        self.entries.pop(key, None)
        self.entries[key] = _Entry("global", name, name, value)

    def pending_global(self, tx, name):
        if tx.f_globals is not tx.output.root_globals:
            return None
        entry = self.entries.get(("global", name))
        return entry.value if entry is not None else None

    # ------------------------------------------------------------------ checkpoints
    def checkpoint(self) -> int:
        return len(self.undo)

    def restore(self, mark: int) -> None:
        while len(self.undo) > mark:
            key, previous, snapshot = self.undo.pop()
            if snapshot is not None:
                vt, items = snapshot
                if hasattr(vt, "restore_snapshot"):
                    vt.restore_snapshot(items)
                elif isinstance(vt.items, dict):
                    vt.items.clear()
                    vt.items.update(items)
                else:
                    vt.items[:] = items
            if previous is None:
                self.entries.pop(key, None)
            else:
                self.entries[key] = previous

    # ------------------------------------------------------------------ replay
    def is_empty(self) -> bool:
        return not self.entries

    def values(self) -> list:
        """Trackers the replay will rebuild (their tensors must be graph outputs)."""
        out = []
        for entry in self.entries.values():
            if entry.kind == "container":
                items = entry.target.items
                out.extend(items.values() if isinstance(items, dict) else items)
            else:
                out.append(entry.value)
        return out

    def codegen(self, cg) -> None:
        """Apply every recorded mutation, in order, to the real objects."""
        for entry in self.entries.values():
            if entry.kind == "container":
                vt = entry.target
                is_dict = isinstance(vt.items, dict)
                cg.load_python_value(_replace_dict if is_dict else _replace_list, push_null=True)
                cg.load_source(vt.source)
                if is_dict:
                    for k, v in vt.items.items():
                        cg.load_const(k)
                        cg.reconstruct(v)
                    cg.build("BUILD_MAP", len(vt.items))
                else:
                    for item in vt.items:
                        cg.reconstruct(item)
                    cg.build("BUILD_LIST", len(vt.items))
                cg.call(2, push_null=False)
                cg.pop_top()
            elif entry.kind == "attr":
                cg.reconstruct(entry.value)
                cg.reconstruct(entry.target)
                cg.store_attr(entry.name)
            else:
                cg.reconstruct(entry.value)
                cg.store_global(entry.name)
