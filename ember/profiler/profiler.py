"""ember.profiler: see every operator call through the dispatcher's Profiler key.

    with ember.profiler.profile(record_shapes=True) as prof:
        with ember.profiler.record_function("step"):
            loss = model(x).sum(); loss.backward()
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    prof.export_chrome_trace("trace.json")

While a profiler records, the Profiler key is in this thread's include set, so every binding
leaves its fast path and calls the dispatcher; the key's boxed fallback opens an event
("aten::add": the op name without its overload, as PyTorch names them), redispatches below the
key and closes the event. An op called from inside another op's kernel (a composite such as
``linear``, or a derivative formula run by backward) passes the key again and becomes a child
of the open event: events form a tree per thread, kept by a stack as they open and close.
``record_function`` ranges and the autograd engine's ranges ("autograd::engine::evaluate_function:
AddBackward0" around "AddBackward0") are events in the same tree. When no profiler records, the
key is not included and nothing runs: the bindings' fast path is unchanged.

``schedule(wait, warmup, active, repeat, skip_first)`` with ``prof.step()`` records only the
active steps (each inside a "ProfilerStep#N" range) and calls ``on_trace_ready(prof)`` at the end
of every active cycle; ``prof.events()`` / ``key_averages()`` then show the last cycle.
"""
from __future__ import annotations

import enum
import functools
import os
import threading
import time
import traceback
import warnings

from .._core import dispatch as _dispatch
from .._core.dispatch import DispatchKey, register_fallback, tls
from .._core.tensor import Tensor
from ..autograd import engine as _engine
from .table import EventList, FunctionEvent, export_chrome_trace

PROFILER_BIT = 1 << DispatchKey.Profiler
_now = time.perf_counter_ns


class ProfilerActivity(enum.Enum):
    """What to profile. CUDA: operators on CUDA tensors also get their device time, from a pair
    of CUDA events around each call (recorded only where a GPU is usable)."""
    CPU = 0
    CUDA = 1


class ProfilerAction(enum.Enum):
    """What a schedule asks for at a step."""
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0):
    """A schedule: skip `skip_first` steps, then cycles of `wait` idle, `warmup` and `active`
    recorded steps, `repeat` times (0: until the profiler stops). The last active step of a
    cycle is RECORD_AND_SAVE: the trace is ready after it."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)

    def schedule_fn(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


def _always_record(step: int) -> ProfilerAction:
    return ProfilerAction.RECORD


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


# ---------------------------------------------------------------------------------------
# the recorder: one active profiler, an open-event stack per thread
# ---------------------------------------------------------------------------------------
class _Stack(threading.local):
    def __init__(self):
        self.open = []


_stack = _Stack()
_active = None          # the profile that is recording, or None
_device_timing = [False]  # whether the recording profile times CUDA operators with events
_op_names: dict = {}    # OperatorHandle -> "aten::add"
_INTERNAL = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # ember/


def _input_shapes(args) -> list:
    """PyTorch's "Input Shapes": a tensor's sizes, [] for anything else (lists included)."""
    return [list(a.shape) if isinstance(a, Tensor) else [] for a in args]


def _python_stack() -> list:
    """The user's Python frames, innermost first ("file(line): function"), ember's own left out."""
    frames = traceback.extract_stack()[:-3]
    return [f"{f.filename}({f.lineno}): {f.name}" for f in reversed(frames)
            if not f.filename.startswith(_INTERNAL) and not f.filename.startswith("<ember")]


def _begin(prof, name, kind, args=None) -> FunctionEvent:
    opened = _stack.open
    prof._next_id += 1
    evt = FunctionEvent(prof._next_id, name, kind, threading.get_native_id(), 0,
                        _input_shapes(args) if args is not None and prof.record_shapes else None,
                        _python_stack() if prof.with_stack and kind == "op" else None,
                        opened[-1] if opened else None)
    if evt.cpu_parent is not None:
        evt.cpu_parent.cpu_children.append(evt)
    prof._cycle.append(evt)
    opened.append(evt)
    evt.start_ns = _now()
    return evt


def _end(evt) -> None:
    evt.end_ns = _now()
    opened = _stack.open
    if evt in opened:               # close it (and anything left open inside it)
        while opened:
            top = opened.pop()
            if top.end_ns is None:
                top.end_ns = evt.end_ns
            if top is evt:
                break


def _profiler_fallback(op, keys, *args):
    """The Profiler key's boxed kernel: an event around the rest of the dispatch."""
    prof = _active
    if prof is None:
        return op.redispatch(keys, *args)
    name = _op_names.get(op)
    if name is None:
        name = _op_names[op] = op.name.split(".", 1)[0]
    evt = _begin(prof, name, "op", args)
    timed = _device_timing[0] and _on_cuda(args)
    if timed:
        evt.device_events = [_record_cuda_event()]
    try:
        return op.redispatch(keys, *args)
    finally:
        if timed:
            evt.device_events.append(_record_cuda_event())
        _end(evt)


def _on_cuda(args) -> bool:
    """Whether a call works on CUDA memory: a CUDA tensor argument (or in a list argument), or a
    CUDA ``device=`` of a factory."""
    for a in args:
        if isinstance(a, Tensor):
            if a.device.type == "cuda":
                return True
        elif isinstance(a, (list, tuple)):
            if a and isinstance(a[0], Tensor) and a[0].device.type == "cuda":
                return True
        elif getattr(a, "type", None) == "cuda":
            return True
    return False


def _record_cuda_event():
    import cupy
    e = cupy.cuda.Event()
    e.record()
    return e


def _resolve_device_times(events) -> None:
    """Each timed event's device time: the milliseconds between its two CUDA events (the work
    queued on the current stream while it ran; a stalled GPU's wait counts too), in us."""
    import cupy
    for evt in events:
        if evt.device_events is not None and len(evt.device_events) == 2:
            start, end = evt.device_events
            end.synchronize()
            evt.device_time_us = cupy.cuda.get_elapsed_time(start, end) * 1000.0
        evt.device_events = None


register_fallback(DispatchKey.Profiler, _profiler_fallback)


class record_function:
    """A user range: ``with record_function("name"):`` or ``@record_function("name")``.
    Records nothing (and costs one check) when no profiler is recording."""

    def __init__(self, name: str, args=None):
        self.name = name
        self.args = args
        self._event = None

    def __enter__(self):
        prof = _active
        if prof is not None:
            self._event = _begin(prof, self.name, "user")
        return self

    def __exit__(self, *exc):
        if self._event is not None:
            _end(self._event)
            self._event = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapped


def _evaluate_node(node, grads):
    """Run an autograd node inside PyTorch's two ranges (called by the engine only while the
    Profiler key is included): "autograd::engine::evaluate_function: Name" around "Name"."""
    prof = _active
    if prof is None:
        return node.apply(grads)
    name = node.name()
    outer = _begin(prof, "autograd::engine::evaluate_function: " + name, "autograd")
    try:
        inner = _begin(prof, name, "autograd")
        inner.sequence_nr = getattr(node, "sequence_nr", -1)
        try:
            return node.apply(grads)
        finally:
            _end(inner)
    finally:
        _end(outer)


_engine.node_evaluators.append(_evaluate_node)   # the engine runs nodes through it while the key is on


# ---------------------------------------------------------------------------------------
# the profile context manager
# ---------------------------------------------------------------------------------------
class profile:
    """Profile the ops run inside it on this thread (``torch.profiler.profile``).

    activities: ProfilerActivity values (CPU; CUDA accepted). schedule: a `schedule(...)`
    function of the step number; without one every step is recorded and ``step()`` adds no
    ranges. on_trace_ready: called with the profiler at the end of each active cycle (and at
    stop while recording). record_shapes: keep input shapes. with_stack: keep the Python stack
    of each op. profile_memory: accepted; memory is not tracked.
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, acc_events=False, use_cuda=None, **unused):
        self.activities = set(activities) if activities is not None else {ProfilerActivity.CPU}
        self.schedule = schedule if schedule is not None else _always_record
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.step_num = 0
        self.current_action = self.schedule(0)
        self._cycle = []                # events of the cycle being recorded
        self._events = None             # events of the last finished cycle
        self._next_id = 0
        self._started = False
        self._step_range = None
        self._had_bit = False

    # -- lifecycle ------------------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.stop()
        return False

    def start(self) -> None:
        global _active
        if _active is not None and _active is not self:
            raise RuntimeError("Can't start an ember profiler: another profiler is already recording")
        if self._started:
            return
        self._started = True
        self._transit(ProfilerAction.NONE, self.current_action)
        self._open_step_range()

    def stop(self) -> None:
        if not self._started:
            return
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
        self._transit(self.current_action, None)
        self._started = False

    def step(self) -> None:
        """Mark the end of a step: the schedule decides whether the next one is recorded."""
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._open_step_range()

    def _open_step_range(self):
        if self.record_steps and _active is self:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}").__enter__()

    def _transit(self, prev, cur) -> None:
        was, now = prev in _RECORDING, cur in _RECORDING
        if prev is ProfilerAction.RECORD_AND_SAVE or (was and cur is None):
            self._finish_cycle()
            was = False
        if now and not was:
            self._start_recording()
        elif was and not now:          # RECORD -> NONE/WARMUP (a hand-written schedule)
            self._finish_cycle()

    def _start_recording(self) -> None:
        global _active
        if _dispatch._global_fallbacks.get(DispatchKey.Profiler) is not _profiler_fallback:
            register_fallback(DispatchKey.Profiler, _profiler_fallback)   # someone replaced it: take the key back
        self._cycle = []
        _stack.open = []
        self._had_bit = bool(tls.include & PROFILER_BIT)
        from .. import cuda
        _device_timing[0] = ProfilerActivity.CUDA in self.activities and cuda.is_available()
        _active = self
        tls.include |= PROFILER_BIT

    def _finish_cycle(self) -> None:
        global _active
        if _active is not self:
            return
        now = _now()
        for evt in _stack.open:         # ranges still open at the end of the cycle end here
            if evt.end_ns is None:
                evt.end_ns = now
        _stack.open = []
        _active = None
        if _device_timing[0]:
            _device_timing[0] = False
            _resolve_device_times(self._cycle)
        if not self._had_bit:
            tls.include &= ~PROFILER_BIT
        self._events = EventList(e for e in self._cycle if e.end_ns is not None)
        self._cycle = []
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # -- results --------------------------------------------------------------------------
    def events(self) -> EventList:
        """The raw events of the last recorded cycle, in start order."""
        if self._events is None:
            if _active is self:
                raise RuntimeError("Profiler results are available after the profiler stops (or a cycle ends)")
            return EventList()
        return self._events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """The events grouped by name (and input shapes / stack frames when asked)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n)

    def table(self, *args, **kwargs) -> str:
        return self.key_averages().table(*args, **kwargs)

    def export_chrome_trace(self, path) -> None:
        """Write the events as Chrome trace-event JSON (chrome://tracing, ui.perfetto.dev)."""
        export_chrome_trace(self.events(), path)

    def export_stacks(self, path, metric="self_cpu_time_total") -> None:
        """One line per event with a stack: "frame;frame;... <self time in us>" (flamegraph)."""
        with open(path, "w") as f:
            for evt in self.events():
                if evt.stack:
                    f.write(";".join(reversed(evt.stack)) + f" {int(getattr(evt, metric))}\n")


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False):
    """An ``on_trace_ready`` that writes each cycle's trace to
    ``dir_name/<worker>.<time_ms>.pt.trace.json`` (.gz with use_gzip)."""
    import gzip
    import json
    import socket
    from .table import chrome_trace

    def handler(prof):
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{worker}.{int(time.time() * 1000)}.pt.trace.json")
        text = json.dumps(chrome_trace(prof.events()))
        if use_gzip:
            with gzip.open(path + ".gz", "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)
    return handler


def is_profiler_enabled() -> bool:
    return _active is not None


class legacy_profile(profile):
    """``ember.autograd.profiler.profile(enabled=True, *, record_shapes=..., ...)``."""

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack)
        self.enabled = enabled

    def start(self):
        if self.enabled:
            super().start()

    def __exit__(self, *exc):
        self.stop()
        return False

    @property
    def function_events(self) -> EventList:
        return self.events()
