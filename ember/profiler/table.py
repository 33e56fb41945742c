"""Profiler results: raw events, averaged events, PyTorch's summary table and the Chrome trace.

A `FunctionEvent` is one recorded range (an operator call, a ``record_function`` range, an
autograd node run) with its start and end (``time.perf_counter_ns``), thread, input shapes,
parent and children. Times are exposed in microseconds as floats, like PyTorch's
``FunctionEvent``: ``cpu_time_total`` (end - start) and ``self_cpu_time_total`` (total minus
the children's totals). ``EventList.key_averages()`` groups events by name (optionally by input
shapes / stack) into `FunctionEventAvg` rows; ``EventList.table()`` prints them in the layout of
``torch.autograd.profiler_util._build_table``.
"""
from __future__ import annotations

import json
import os
import threading


def format_time(time_us) -> str:
    """12.345us / 1.234ms / 1.234s, as PyTorch formats profiler times."""
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def format_time_share(time_us, total_us) -> str:
    if total_us == 0:
        return "NaN"
    return f"{time_us * 100.0 / total_us:.2f}%"


class FunctionEvent:
    """One recorded range. ``kind``: "op" (a dispatcher call), "user" (record_function),
    "autograd" (the engine's ranges around a node)."""

    __slots__ = ("id", "name", "kind", "thread", "start_ns", "end_ns", "input_shapes", "stack",
                 "cpu_parent", "cpu_children", "sequence_nr", "device_events", "device_time_us")

    def __init__(self, id, name, kind, thread, start_ns, input_shapes=None, stack=None, parent=None):
        self.id = id
        self.name = name
        self.kind = kind
        self.thread = thread
        self.start_ns = start_ns
        self.end_ns = None
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.stack = stack if stack is not None else []
        self.cpu_parent = parent
        self.cpu_children = []
        self.sequence_nr = -1
        self.device_events = None     # [start, end] CUDA events while recording (profiler.py)
        self.device_time_us = None    # their elapsed time, once resolved; None: not timed

    # PyTorch's FunctionEvent attributes -------------------------------------------------
    key = property(lambda self: self.name)
    count = 1
    is_user_annotation = property(lambda self: self.kind == "user")
    is_async = False
    start_us = property(lambda self: self.start_ns / 1000.0)
    end_us = property(lambda self: self.end_ns / 1000.0)
    time_range = property(lambda self: _Interval(self.start_us, self.end_us))

    @property
    def cpu_time_total(self) -> float:
        return (self.end_ns - self.start_ns) / 1000.0

    cpu_time = cpu_time_total

    @property
    def self_cpu_time_total(self) -> float:
        return max(0.0, (self.end_ns - self.start_ns - sum(c.end_ns - c.start_ns for c in self.cpu_children))
                   / 1000.0)

    cpu_time_str = property(lambda self: format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: format_time(self.self_cpu_time_total))
    device_timed = property(lambda self: self.device_time_us is not None)
    device_time_total = property(lambda self: self.device_time_us or 0.0)
    device_time = cuda_time_total = cuda_time = device_time_total

    @property
    def self_device_time_total(self) -> float:
        """Device time minus the children's (an op's own kernels, not those of the ops it called)."""
        return max(0.0, self.device_time_total - sum(c.device_time_total for c in self.cpu_children))

    self_cuda_time_total = self_device_time_total

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time={self.cpu_time_str} start_us={self.start_us:.3f} end_us={self.end_us:.3f} "
                f"cpu_children={[c.id for c in self.cpu_children]} input_shapes={self.input_shapes}>")


class _Interval:
    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start, self.end = start, end

    def elapsed_us(self):
        return self.end - self.start


class FunctionEventAvg:
    """The events of one key (name, and input shapes / stack when grouped by them), summed."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes = None
        self.stack = []
        self.is_user_annotation = False
        self.is_async = False
        self.cpu_parent = None
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.device_timed = False

    def add(self, evt) -> "FunctionEventAvg":
        if self.key is None:
            self.key = evt.key
            self.input_shapes = evt.input_shapes
            self.stack = evt.stack
            self.is_user_annotation = evt.is_user_annotation
            self.cpu_parent = evt.cpu_parent
        self.count += evt.count
        self.cpu_time_total += evt.cpu_time_total
        self.self_cpu_time_total += evt.self_cpu_time_total
        self.device_time_total += evt.device_time_total
        self.self_device_time_total += evt.self_device_time_total
        self.device_timed = self.device_timed or evt.device_timed
        return self

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / self.count if self.count else 0.0

    cpu_time_str = property(lambda self: format_time(self.cpu_time))
    cpu_time_total_str = property(lambda self: format_time(self.cpu_time_total))
    self_cpu_time_total_str = property(lambda self: format_time(self.self_cpu_time_total))
    device_time = property(lambda self: self.device_time_total / self.count if self.count else 0.0)
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str} count={self.count} input_shapes={self.input_shapes}>")


class EventList(list):
    """A list of events (raw or averaged) with PyTorch's EventList methods."""

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0):
        """Group by name (plus input shapes / the first n stack frames when asked), in order of
        each group's first event."""
        stats = {}
        for evt in self:
            key = (evt.key, evt.is_user_annotation)
            if group_by_input_shapes:
                key += (str(evt.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(evt.stack[:group_by_stack_n])
            avg = stats.get(key)
            if avg is None:
                avg = stats[key] = FunctionEventAvg()
            avg.add(evt)
        out = EventList(stats.values())
        for avg in out:
            avg.stack = avg.stack[:group_by_stack_n]
            if not group_by_input_shapes:
                avg.input_shapes = ""
        return out

    def self_cpu_time_total(self) -> float:
        return sum(e.self_cpu_time_total for e in self)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """PyTorch's profiler summary table (see `build_table`)."""
        return build_table(self, sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           top_level_events_only=top_level_events_only, time_unit=time_unit)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path) -> None:
        export_chrome_trace(self, path)


def _unit(time_us, default, unit):
    return {"s": f"{time_us / 1e6:.3f}s", "ms": f"{time_us / 1e3:.3f}ms",
            "us": f"{time_us:.3f}us"}.get(unit, default)


def build_table(events, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
                max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None) -> str:
    """The table, laid out as PyTorch's: a right-aligned name column (at most
    `max_name_column_width` wide, longer names cut with "..."), 12-wide value columns separated
    by two spaces, dashed separators, "Input Shapes" when any row has shapes, "Source Location"
    when any row has a stack, and the footer "Self CPU time total: ..."."""
    if len(events) == 0:
        return ""
    if sort_by is not None:
        events = sorted(events, key=lambda e: getattr(e, sort_by.replace("cuda", "device")), reverse=True)
    has_shapes = any(e.input_shapes for e in events)
    has_stack = any(e.stack for e in events)
    name_w = min(max(len(e.key) for e in events) + 4, max_name_column_width or 10 ** 9)
    shapes_w = min(max(len(str(e.input_shapes)) for e in events) + 4, max_shapes_column_width or 10 ** 9)
    has_device = any(e.device_timed for e in events)   # PyTorch's columns of a CUDA profile
    device_headers = ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"] if has_device else []
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"] + device_headers + \
        ["# of Calls"]
    widths = [name_w] + [12] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(shapes_w)
        aligns.append(">")
    if has_stack:
        src_w = min(max(len(s) for e in events for s in e.stack) + 4, max_src_column_width or 10 ** 9)
        headers.append("Source Location")
        widths.append(src_w)
        aligns.append("<")
    row_format = "".join("{: " + a + str(w) + "}  " for a, w in zip(aligns, widths))
    sep = "".join("-" * w + "  " for w in widths)
    line_length = sum(w + 2 for w in widths) - 2
    total = sum(e.self_cpu_time_total for e in events)
    device_total = sum(e.self_device_time_total for e in events)

    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level ops statistics"]
    lines += [sep, row_format.format(*headers), sep]
    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, format_time_share(e.self_cpu_time_total, total),
               _unit(e.self_cpu_time_total, e.self_cpu_time_total_str, time_unit),
               format_time_share(e.cpu_time_total, total),
               _unit(e.cpu_time_total, e.cpu_time_total_str, time_unit),
               _unit(e.cpu_time, e.cpu_time_str, time_unit)]
        if has_device:
            row += [_unit(e.self_device_time_total, format_time(e.self_device_time_total), time_unit),
                    format_time_share(e.self_device_time_total, device_total),
                    _unit(e.device_time_total, format_time(e.device_time_total), time_unit),
                    _unit(e.device_time, format_time(e.device_time), time_unit)]
        row.append(e.count)
        if has_shapes:
            row.append(str(e.input_shapes)[:shapes_w])
        if has_stack:
            src = e.stack[0] if e.stack else ""
            if len(src) > src_w:
                src = "..." + src[len(src) - src_w + 3:]
            row.append(src)
            lines.append(row_format.format(*row))
            for s in e.stack[1:]:
                lines.append(row_format.format(*([""] * (len(row) - 1) + [s[-src_w:]])))
            continue
        lines.append(row_format.format(*row))
    lines.append(sep)
    lines.append(f"Self CPU time total: {_unit(total, format_time(total), time_unit)}")
    if has_device:
        lines.append(f"Self CUDA time total: {_unit(device_total, format_time(device_total), time_unit)}")
    return "".join(line + "\n" for line in lines)


_CATEGORY = {"op": "cpu_op", "user": "user_annotation", "autograd": "cpu_op"}


def chrome_trace(events) -> dict:
    """The Chrome trace-event JSON object ("X" complete events, microseconds) that
    chrome://tracing and Perfetto open."""
    pid = os.getpid()
    base = min((e.start_ns for e in events), default=0)
    trace = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0, "args": {"name": "python"}}]
    for tid in sorted({e.thread for e in events}):
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0,
                      "args": {"name": f"thread {tid} (python)"}})
    for e in events:
        args = {}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
        trace.append({"ph": "X", "cat": _CATEGORY[e.kind], "name": e.name, "pid": pid, "tid": e.thread,
                      "ts": (e.start_ns - base) / 1000.0, "dur": (e.end_ns - e.start_ns) / 1000.0,
                      "args": args})
    return {"schemaVersion": 1, "displayTimeUnit": "ms", "traceName": "ember", "traceEvents": trace}


def export_chrome_trace(events, path) -> None:
    with open(path, "w") as f:
        json.dump(chrome_trace(events), f, indent=1)


def current_thread_id() -> int:
    return threading.get_native_id()
