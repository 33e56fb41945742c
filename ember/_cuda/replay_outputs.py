"""Outputs of a CUDA-graph replay that are still alive when the graph replays again.

A replay writes its outputs into the same buffers every time (the graph's pool), so an output the
program still holds (a loss kept for logging, the saved activations of a forward whose backward has
not run, a gradient kept by the caller) would be overwritten by the next replay. PyTorch raises on
access to such an output; ember *moves* it instead: before the next replay, each tensor still over
an output buffer gets a copy of that buffer (one copy per allocation, so outputs that alias each
other still do) and its ``_data`` is repointed there. Its values, shape, strides and version
counter are those it had.

Who holds an output buffer is read from reference counts, which is exact and costs a few
``sys.getrefcount`` per output per replay:

- the replay hands out *aliases* of the record's static output arrays (Tensors whose ``_data``
  is the static array itself): each one alive adds one reference to its array, and this module
  keeps a weak reference to each, so it can move them;
- anything else that reaches the buffer adds a reference the replay did not make: a view (a new
  array on the same allocation), an alias made by the runtime or the user (``detach()``,
  autograd's alias of a saved output), a raw array taken out (DLPack). Those cannot be found to
  be moved, so `moves` answers None and the caller runs the call without its graph (exact: the
  record stays for later calls, whose holders may be gone).

Baselines are taken right after each hand-out (`handed_out`), when the only holders are the record
and the handed-out aliases. The memory itself is reached through `ArrayMemory`, a small table of
the backend's three operations (CuPy's in `cupy_memory`; the CPU tests use NumPy's), so this logic
runs and is tested without a GPU.
"""
from __future__ import annotations

import sys
import weakref
from typing import Callable, NamedTuple


class ArrayMemory(NamedTuple):
    """The backend operations `ReplayOutputs` needs."""
    allocation_of: Callable      # array -> the object that owns its memory (one per allocation)
    holders: Callable            # array -> the objects a new view of it would reference (its allocation, base ...)
    copy_allocation: Callable    # allocation -> a new allocation holding a copy of its bytes
    rebuild: Callable            # (array, old allocation, new allocation) -> the same view on the new one


class ReplayOutputs:
    """The static output arrays of one record and the tensors its last replay handed out."""

    __slots__ = ("memory", "arrays", "index", "watched", "array_refs", "watched_refs", "handed")

    def __init__(self, arrays, memory: ArrayMemory):
        self.memory = memory
        distinct = {id(a): a for a in arrays}
        self.arrays = list(distinct.values())
        self.index = {key: i for i, key in enumerate(distinct)}
        # what a view or raw copy of a static array would reference besides the array: its allocation,
        # its base, CuPy's MemoryPointer (not the static arrays themselves: those are counted apart)
        watched = {id(h): h for a in self.arrays for h in memory.holders(a) if id(h) not in distinct}
        self.watched = list(watched.values())
        self.array_refs = self.watched_refs = None
        self.handed = []       # weak references to the tensors the last replay handed out

    def _counts(self):
        return [sys.getrefcount(a) for a in self.arrays], [sys.getrefcount(h) for h in self.watched]

    def handed_out(self, tensors) -> None:
        """The last replay returned `tensors` (aliases of the static arrays): the baseline is now."""
        self.handed = [weakref.ref(t) for t in tensors]
        self.array_refs, self.watched_refs = self._counts()
        # each counted alias is subtracted again when it dies or moves (see `moves`)
        self.array_refs = [n - self._handed_on(i, tensors) for i, n in enumerate(self.array_refs)]

    def _handed_on(self, i, tensors) -> int:
        array = self.arrays[i]
        return sum(1 for t in tensors if t._data is array)

    def moves(self):
        """The tensors to move before the next replay (a list, maybe empty), or None when a holder
        of an output buffer is not one of them (the call must run without the graph)."""
        if self.array_refs is None:
            return []
        live, on = [], [0] * len(self.arrays)
        index = self.index
        for ref in self.handed:
            t = ref()
            if t is None:
                continue
            i = index.get(id(t._data))
            if i is not None and t._data is self.arrays[i]:
                on[i] += 1
                live.append(t)
        arrays, watched = self._counts()
        if any(n > base + k for n, base, k in zip(arrays, self.array_refs, on)) or \
                any(n > base for n, base in zip(watched, self.watched_refs)):
            return None
        return live

    def move(self, tensors) -> None:
        """Give each of `tensors` (from `moves`) a copy of its buffer, one copy per allocation."""
        allocation_of, copies = self.memory.allocation_of, {}
        for t in tensors:
            old = allocation_of(t._data)
            new = copies.get(id(old))
            if new is None:
                new = copies[id(old)] = self.memory.copy_allocation(old)
            t._data = self.memory.rebuild(t._data, old, new)


def cupy_memory() -> ArrayMemory:
    """ArrayMemory of CuPy arrays: the allocation is the MemoryPointer's ``mem``."""
    import cupy

    def copy_allocation(mem):
        new = cupy.cuda.alloc(mem.size)
        new.copy_from_device_async(cupy.cuda.MemoryPointer(mem, 0), mem.size)
        return new.mem

    def rebuild(arr, old, new):
        return cupy.ndarray(arr.shape, arr.dtype, cupy.cuda.MemoryPointer(new, arr.data.ptr - old.ptr),
                            arr.strides)
    def holders(arr):
        return (arr.data, arr.data.mem) + (() if arr.base is None else (arr.base,))
    return ArrayMemory(lambda arr: arr.data.mem, holders, copy_allocation, rebuild)
