"""``ember.futures.Future``: the subset of ``torch.futures.Future`` that DDP communication hooks use.

A future holds a value that becomes available later: after an ``ember.distributed`` work handle
completes (``Work.get_future()``), or when ``set_result`` is called. ``then(callback)`` chains a
callback that receives the finished future; its return value is the chained future's value.
MPI makes progress only inside MPI calls and ember has no background thread, so callbacks run
when a future is waited on (or polled with ``done()`` and found finished), not on another thread;
the order and the values are those PyTorch gives.
"""
from __future__ import annotations

__all__ = ["Future"]

_UNSET = object()


class Future:
    def __init__(self, *, work=None, value=_UNSET, parent=None, callback=None) -> None:
        self._work = work               # a distributed Work whose completion makes `value` ready
        self._value = value
        self._parent = parent           # then(): the future whose value feeds `callback`
        self._callback = callback

    def __class_getitem__(cls, item):  # Future[Tensor] in hook annotations, as in PyTorch
        return cls

    def done(self) -> bool:
        """Whether the value is ready; polls the underlying work once (drives MPI's progress)."""
        if self._value is not _UNSET:
            return True
        if self._work is not None:
            return self._work.is_completed()
        return self._parent is not None and self._parent.done()

    def wait(self):
        """Block until the value is ready (running chained callbacks) and return it."""
        if self._value is _UNSET:
            if self._work is not None:
                self._work.wait()
                self._value = self._work.result()
            elif self._parent is not None:
                self._parent.wait()
                self._value = self._callback(self._parent)
            else:
                raise RuntimeError("Future.wait: the future has no result yet and nothing will set one; "
                                   "call set_result first")
        return self._value

    def value(self):
        """The value of a completed future (``wait()`` first, or use inside a ``then`` callback)."""
        if not self.done():
            raise RuntimeError("Future.value: the future is not completed yet; call wait() first")
        return self.wait()

    def then(self, callback) -> "Future":
        """A future whose value is ``callback(self)`` once this one completes."""
        if not callable(callback):
            raise TypeError(f"Future.then: callback must be callable, got {type(callback).__name__}")
        return Future(parent=self, callback=callback)

    def set_result(self, result) -> None:
        if self._value is not _UNSET or self._work is not None or self._parent is not None:
            raise RuntimeError("Future.set_result: the future already has a result or a source of one")
        self._value = result
