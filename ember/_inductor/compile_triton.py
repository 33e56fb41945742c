"""The GPU half of compile_fx: the scheduled groups -> one Triton module -> a wrapper GraphModule.

    wrapper_gm, payload = triton_wrapper(g, groups, reads, kept, aten_gm)      # device "cuda"
    wrapper, kernels = ember._inductor.codegen_source(fn, [("cuda", ember.float32, (4, 8))])

The lowering, the loop IR and the scheduler are the CPU path's (compile_fx.lower_and_schedule);
only the code generator (codegen_triton) and the launcher (triton_launch) differ. The plan is the
CPU wrapper's plan with the kernels' launch facts added, so the graph cache stores it the same way:
its payload names the module's source digest, and a warm process imports that file and launches
from the cubins in Triton's cache (nothing compiled).

`config.cpu_codegen = "triton"` (tests, debugging) runs CPU graphs through the same generator with
Triton's interpreter (TRITON_INTERPRET=1): buffers are NumPy arrays handed over as
torch.from_numpy views, so CI checks the generated kernels' values on a machine without a GPU.
"""
from __future__ import annotations

import json
import re

import numpy as np

from . import config
from .wrapper import _Named, build_wrapper, plan_wrapper


# the names generated code gives buffers (graph inputs, computed, extern outputs, constants)
_BUFFER_NAME = re.compile(r"\b(?:arg|buf|extern|const)\d+(?:_\d+)?\b")


def _renamed(src: str, name: str) -> str:
    """`src` with its kernel name and buffer names replaced in order of appearance: two kernels
    with the same text here compute the same thing on their arguments (taken by position)."""
    seen = {}
    return _BUFFER_NAME.sub(lambda m: seen.setdefault(m.group(0), f"b{len(seen)}"), src.replace(name, "K"))


def generate_module(groups, reads):
    """(module source, {id(group): (name, [buffers], checks_errors)}, {name: launch meta}). A kernel
    equal to an earlier one but for its buffers' names (each block of a transformer) is not emitted
    again: its group launches the earlier function (one compile, not one per layer)."""
    from .codegen_triton import HEADER, Unsupported, generate_kernel
    from .compile_fx import _kind
    from .graph import NotLowerable
    from . import ir
    functions, kernels, launch, emitted = [], {}, {}, {}
    for gr in groups:
        if isinstance(gr, ir.ExternCall):
            continue
        name = f"ember_k{len(launch)}_" + "_".join(_kind(b) for b in gr.members)[:40]
        try:
            src, bufs, checks, meta = generate_kernel(gr, name, reads)
        except Unsupported as e:          # the whole graph runs eagerly: never a wrong value
            raise NotLowerable(f"Triton: {e}") from e
        meta["dtypes"] = [b.dtype.name for b in bufs] + (["int32"] if checks else [])
        key = (_renamed(src, name), json.dumps(meta, sort_keys=True))
        if key in emitted:
            kernels[id(gr)] = (emitted[key], bufs, checks)
            continue
        emitted[key] = name
        functions.append(src)
        kernels[id(gr)] = (name, bufs, checks)
        launch[name] = meta
    return HEADER + "\n\n" + "\n\n".join(functions), kernels, launch


class InterpretCall(_Named):
    """A kernel run by Triton's interpreter on CPU buffers (config.cpu_codegen = "triton")."""

    def __init__(self, fn, name, meta):
        self.fn, self.meta = fn, meta
        self._name(name)

    def __call__(self, *args):
        import torch
        grid = self.meta["grid"]
        if grid == 0:
            return
        views = []
        for a in args:
            a = a if hasattr(a, "ctypes") else a._data
            if a.dtype.name == "bfloat16":          # NumPy's bfloat16 (ml_dtypes) is not torch's
                views.append(torch.from_numpy(a.view(np.uint16)).view(torch.bfloat16))
            else:
                views.append(torch.from_numpy(a))
        options = {"XBLOCK": self.meta.get("xblock", 1024)} if self.meta["flat"] else {}
        self.fn[(grid,)](*views, **options)


def kernel_calls(load_module, launch, device, tune_path=None):
    """{name: call} for the kernels of the module `load_module()` returns: on "cuda" the module is
    imported only when a kernel has no stored binary (triton_launch.KernelBinary), and the module's
    tuned block sizes are read once for all its kernels."""
    if device != "cuda":
        module = load_module()
        return {name: InterpretCall(getattr(module, name), name, meta) for name, meta in launch.items()}
    from .triton_launch import KernelCall, read_tuning
    tuning = read_tuning(tune_path)
    return {name: KernelCall(lambda name=name: getattr(load_module(), name), name, meta, tune_path, tuning)
            for name, meta in launch.items()}


def triton_wrapper(g, groups, reads, kept, aten_gm, device):
    """Generate, load and wrap (device "cuda", or "triton-cpu" for the interpreter)."""
    from .._logging import trace_log
    from . import triton_launch
    from .._core.dtype import _BY_NAME
    source, kernels, launch = generate_module(groups, reads)
    key = triton_launch.diskstore.sha256_hex(source.encode())
    module = triton_launch.load_module(source, key)
    tune_path = triton_launch.source_path(key) + ".tune.json"
    calls = kernel_calls(lambda: module, launch, device, tune_path)
    if device == "cuda" and len(calls) > 1:
        triton_launch.warm_up([(calls[n], [_BY_NAME[d] for d in meta["dtypes"]]) for n, meta in launch.items()])
    plan = plan_wrapper(g, groups, kernels, kept, device, launch)
    wrapper_gm = build_wrapper(plan, calls, aten_gm)
    trace_log("output_code", lambda: "WRAPPER\n" + wrapper_gm.code + "\nKERNELS (Triton)\n" + source)
    return wrapper_gm, {"plan": plan, "triton": key, "kernels": sorted(calls)}


def from_payload(payload, aten_gm):
    """The wrapper of a cached CUDA plan, or None when its module is gone."""
    from . import triton_launch
    key = payload["triton"]
    source = triton_launch.cached_source(key)
    if source is None:
        return None
    plan = payload["plan"]
    calls = kernel_calls(lambda: triton_launch.load_module(source, key), plan["launch"], plan["device"],
                         triton_launch.source_path(key) + ".tune.json")
    return build_wrapper(plan, calls, aten_gm)


def codegen_source(fn, specs):
    """(wrapper code, kernel source) of `fn` compiled for inputs of `specs` [(device, dtype, shape)]:
    traced over fake tensors (no GPU needed for "cuda"); C kernels for "cpu", Triton for "cuda"."""
    import ember
    from .._functorch import make_fx
    from .._functorch.fake_tensor import FakeTensorMode
    from .compile_fx import lower_and_schedule
    from . import ir
    devices = {str(d).split(":")[0] for d, _, _ in specs}
    if len(devices) != 1 or not devices <= {"cpu", "cuda"}:
        raise ValueError(f"codegen_source: expected specs on one device, 'cpu' or 'cuda', got {sorted(devices)}")
    device = devices.pop()
    with FakeTensorMode():
        fakes = [ember.empty(tuple(shape), dtype=dtype, device=device) for _, dtype, shape in specs]
    aten_gm = make_fx(fn, tracing_mode="fake")(*fakes)
    g, groups, reads, kept = lower_and_schedule(aten_gm, fakes, device)
    if device == "cuda":
        source, kernels, launch = generate_module(groups, reads)
        plan = plan_wrapper(g, groups, kernels, kept, device, launch)
        calls = {name: _SourceOnly(name) for name in launch}
        return build_wrapper(plan, calls, aten_gm, source_only=True).code, source
    from .codegen_c import generate_kernel, prelude
    from .compile_fx import _kind
    functions, kernels = [], {}
    for gr in groups:
        if not isinstance(gr, ir.ExternCall):
            name = f"ember_k{len(kernels)}_" + "_".join(_kind(b) for b in gr.members)[:40]
            src, bufs, checks = generate_kernel(gr, name, reads, config.threads)
            functions.append(src)
            kernels[id(gr)] = (name, bufs, checks)
    plan = plan_wrapper(g, groups, kernels, kept)
    fnptrs = {name: 0 for name, _, _ in kernels.values()}
    return build_wrapper(plan, fnptrs, aten_gm, source_only=True).code, prelude() + "\n".join(functions)


class _SourceOnly(_Named):
    """A kernel's name in a wrapper built only to be read (codegen_source)."""

    def __init__(self, name):
        self._name(name)

    def __call__(self, *args):
        raise RuntimeError(f"{self.__name__}: this wrapper was built by codegen_source and launches nothing")

