"""The wrapper: an ember.fx GraphModule whose nodes check inputs, allocate buffers, launch the
compiled kernels and call extern ops (Inductor's wrapper `call(args)`; ember/fx/_codegen.py writes
its Python, as it does for every graph).

    def forward(self, arg0, arg1):
        check_inputs(arg0, arg1)                  # shapes, strides, dtypes: tuple compares, no loop over dims
        arg0_data = arg0._data
        alloc_buf2 = alloc_buf2()                 # an output: a fresh array per call
        alloc_buf2_data = alloc_buf2._data
        pool_buf1 = self.pool_buf1                # an intermediate: a pool array, reused across calls
        ember_k0(arg0_data, pool_buf1, alloc_buf2_data)   # launch.launcher() bound to the kernel
        ...
        return (alloc_buf2,)

It is built in two steps so that a warm process can skip everything before the second:
`plan_wrapper` turns the scheduled IR into a *plan*, plain data (JSON: buffers, pool blocks, the
steps in order, the outputs), which compile_fx stores in the graph cache; `build_wrapper` makes
the GraphModule from a plan and the kernels' addresses. A plan names extern ops, graph constants
and dtypes only by name, resolved against the aten graph being compiled and ember's dtype table:
loading one runs no code of its own.

Outputs are fresh tensors (a large one's memory is the previous call's when no reference to that
array is left: Alloc); intermediates read only by kernels live in a per-graph pool (reused
across calls: a fresh 40 MB array costs ~3 ms in page faults) and share memory when their
lifetimes do not overlap; buffers handed to extern ops are fresh too (an extern may return a view
of its argument). Kernels take arrays (launch.py's convention: the launcher reads each pointer).
"""
from __future__ import annotations

import functools
import importlib
import operator
import sys

import numpy as np

from .._core.dispatch import tls as _tls
from .._core.dtype import _BY_NAME as DTYPES
from .._core.tensor import AUTOGRAD_BIT, CPU_BIT, INFERENCE_BIT, Tensor, wrap as _wrap_array


# extern ops of the fuser's own (not aten ops of the graph): plan name -> (module, attribute)
FUSER_EXTERNS = {"draw_seed": (".lowering_random", "draw_seed"), "ember_linear": (".extern_blas", "linear"),
                 "ember_matmul": (".extern_blas", "matmul"), "ember_cublas_matmul": (".extern_cublas", "matmul")}


# the extern ops' bindings bound to a backend kernel: (OperatorHandle, backend key) -> function
_bound_externs: dict = {}


def bound_extern(op, device):
    """The extern `op` (an aten OperatorHandle) as the wrapper calls it: eager's binding bound to the
    kernel of the graph's backend (registry.bound_binding), skipping the dispatcher and the Autocast
    key: the graph was traced below autocast (its casts are nodes of their own), and the wrapper's
    inputs record no autograd (its input check). Generated once per op and backend."""
    from .._core.dispatch import DispatchKey
    from ..ops import registry
    backend = DispatchKey.CUDA if device == "cuda" else DispatchKey.CPU
    key = (op, backend)            # the handle itself: a library op re-made under one name is another
    fn = _bound_externs.get(key)
    if fn is None:
        if registry.OPERATORS.get(op.name) is not op or (op.row is None and op.name not in registry.ENTRIES):
            return op               # not a table operator (no binding to bind): through its own call
        fn = _bound_externs[key] = registry.bound_binding(op.name, backend, 1 << DispatchKey.Autocast)
        # how the wrapper's code names it (fx names globals by __name__): <namespace>_<op>__<overload>_on_<device>
        namespace = op.name.split("::", 1)[0]
        fn.__name__ = fn.__qualname__ = f"{namespace}_{op.__name__.replace('.', '__')}_on_{backend.name.lower()}"
    return fn


class GuardMismatch(Exception):
    """An input's shape/strides/dtype differ from the specialisation (the caller recompiles)."""


class PlanMismatch(Exception):
    """A stored plan does not fit the graph being compiled (the caller compiles afresh)."""


def wrap(arr) -> Tensor:
    return _wrap_array(arr)


def raise_if_error(flag):
    """Raise eager's exception for the lowest error bit a kernel set in `flag` (an int32 array)."""
    rc = int(flag[0])
    if rc:
        flag[0] = 0
        from .codegen_c import KERNEL_ERRORS
        exc, message = KERNEL_ERRORS[rc & -rc]
        raise exc(message)


def strided_view(t, shape, strides, offset):
    """A view of `t` (relative element offset) with the given element strides: copies nothing.
    Built by as_strided's kernel directly (the geometry lies within `t`'s buffer by construction:
    the lowering derived it from the buffer's own), not through the dispatcher (~20 us a call).
    The transpose of a C-contiguous matrix (a weight gradient's `grad.t()`) is NumPy's `.T`
    (~10 us less: no buffer-protocol array built on the storage)."""
    a = t._data
    if offset == 0 and len(shape) == 2 and a.__class__ is np.ndarray and a.shape == (shape[1], shape[0]) \
            and strides[0] == 1 and strides[1] == shape[0] and a.flags.c_contiguous:
        out = _wrap_array(a.T)
        out._version_counter = t._shared_version_counter()
        return out
    from ..ops.cpu.views import _view, geometry
    return _view(t, tuple(shape), tuple(strides), geometry(t)[2] + offset)


class _Named:
    """A callable with a name for the generated code (fx names globals by __name__)."""

    def _name(self, name):
        self.__name__ = self.__qualname__ = name
        self.__module__ = None


class InputCheck(_Named):
    def __init__(self, specs):
        self.specs = specs           # per input: (shape, byte strides, numpy dtype)
        self._name("check_inputs")

    def __call__(self, *tensors):
        for t, (shape, strides, dtype) in zip(tensors, self.specs):
            a = t._data
            if a.shape != shape or a.strides != strides or a.dtype != dtype or type(a) is not np.ndarray:
                raise GuardMismatch()
            if t._keys != CPU_BIT and not _plain_enough(t._keys):
                raise GuardMismatch()


def _plain_enough(keys, backend=CPU_BIT) -> bool:
    """A tensor of `backend` whose autograd recording is off here (the kernels record nothing):
    grad mode read from the thread state directly (is_grad_enabled's test; no import per call)."""
    return keys & ~(AUTOGRAD_BIT | INFERENCE_BIT) == backend and \
        not (keys & AUTOGRAD_BIT and not _tls.exclude & AUTOGRAD_BIT)


def _pop_with_refcount(spare, at=-1):
    """spare's array at `at` (popped: atomic under the GIL, so two threads never take the same one)
    and its reference count as seen here; _SOLE_OWNER is that count when nothing else references it."""
    arr = spare.pop(at)
    return arr, sys.getrefcount(arr)


_SOLE_OWNER = _pop_with_refcount([np.empty(1)])[1]     # the same function measures it: no guessed constant


class Alloc(_Named):
    """A buffer of the graph's outputs (or one handed to an extern): a fresh array per call, except
    that a large one (config.output_reuse_min_bytes) reuses one of the last SPARES arrays it handed
    out when nothing references it any more. A fresh 40 MB array costs ~3 ms of page faults (the
    kernel zeroes each new page), more than a 40 MB copy; two, because `y = f(x)` in a loop still
    holds the last result during the next call (bench/held_output.py). Whatever can still reach
    the memory holds a Python reference to the array: the Tensor (`_data`), a view (numpy's
    `.base`), `.numpy()`, a memoryview, a DLPack capsule, a saved-for-backward tensor; so "only
    this Alloc holds it" means the user can never see the memory again (data_ptr() integers
    aside, as in torch)."""

    def __init__(self, name, shape, strides, dtype):
        from . import config
        self.shape, self.dtype = shape, dtype.np
        self._name(f"alloc_{name}")
        limit = config.output_reuse_min_bytes
        self.reuses = bool(limit) and self.dtype.itemsize * int(np.prod(shape, dtype=np.int64)) >= limit
        self.spare = []            # the last arrays handed out, oldest first (reuses only)

    SPARES = 2

    def array(self):
        """The array for this call (reuses only): a dead spare one (the oldest first), else a fresh one."""
        spare = self.spare
        for _ in range(len(spare)):
            try:
                arr, refs = _pop_with_refcount(spare, 0)
            except IndexError:     # another thread popped it since the test
                break
            spare.append(arr)      # now the newest, dead or alive
            if refs == _SOLE_OWNER:
                return arr
        arr = np.empty(self.shape, self.dtype)
        spare.append(arr)          # (threads racing this one may leave more here: bounded by the threads)
        del spare[:-self.SPARES]
        return arr

    def __call__(self):
        return _wrap_array(self.array() if self.reuses else np.empty(self.shape, self.dtype))


class ExpectLayout(_Named):
    """An extern's result in the layout the kernels were compiled for (copied only if it differs).
    Its dtype must be the traced one: kernels compiled for another would read its bytes wrongly."""

    def __init__(self, name, shape, strides, dtype):
        self.shape, self.strides, self.dtype = shape, strides, dtype
        self.byte_strides = tuple(s * dtype.np.itemsize for s in strides)    # the common case: one tuple compare
        self._name(f"layout_{name}")

    def __call__(self, t):
        if t.dtype != self.dtype:
            raise RuntimeError(f"ember._inductor: the eager op behind {self.__name__[7:]} returned {t.dtype}, "
                               f"but the graph was traced with {self.dtype} (its meta kernel disagrees with it)")
        d = t._data
        if d.__class__ is np.ndarray and d.shape == self.shape and d.strides == self.byte_strides:
            return t
        if tuple(t.shape) == self.shape and (t.stride() == self.strides or t.numel() <= 1):
            return t
        import ember
        out = ember.empty_strided(self.shape, self.strides, dtype=t.dtype, device=t.device)
        out.copy_(t)
        return out


class Pool:
    """Intermediate buffers for one compiled graph, allocated once; buffers whose lifetimes do not
    overlap share one block (first fit over the schedule's order)."""

    def __init__(self):
        self.blocks = []           # [nbytes, free_from_step]
        self.placement = {}        # buffer name -> block index

    def place(self, name, nbytes, first_step, last_step):
        for i, (size, free_from) in enumerate(self.blocks):
            if free_from <= first_step and size >= nbytes:
                self.blocks[i][1] = last_step + 1
                self.placement[name] = i
                return
        self.blocks.append([nbytes, last_step + 1])
        self.placement[name] = len(self.blocks) - 1


def pool_arrays(blocks, placement) -> dict:
    """Buffer name -> a 64-byte aligned uint8 array on its block (the kernel indexes it itself)."""
    out = {}
    arrays = [np.empty(max(size, 1) + 64, np.uint8) for size in blocks]
    for name, i in placement.items():
        a = arrays[i]
        skip = -a.ctypes.data % 64
        out[name] = a[skip:skip + max(blocks[i], 1)]
    return out



# -- IR -> plan (data) ------------------------------------------------------------------------------

def _encode(v):
    """An extern argument or output leaf as JSON-able data; anything else stays an {"object": v}
    (usable in this process, and it keeps the plan out of the graph cache)."""
    from . import ir         # here and in plan_wrapper: building from a plan needs no IR
    if isinstance(v, ir.BufferValue):
        return {"value": [v.buffer.name, list(v.shape), list(v.strides), v.offset, v.is_whole_buffer()]}
    if isinstance(v, (list, tuple)):
        return {type(v).__name__: [_encode(x) for x in v]}
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and abs(v) != float("inf") else {"float": repr(v)}
    if type(v).__name__ == "dtype" and DTYPES.get(getattr(v, "name", None)) is v:
        return {"dtype": v.name}
    return {"object": v}


def plan_wrapper(g, groups, kernels, kept, device="cpu", launch=None) -> dict:
    """The wrapper as data. kernels: {id(group): (kernel name, [buffers], checks_errors)}; on "cuda"
    `launch` holds each kernel's launch facts (codegen_triton's meta) and nothing is pooled (CuPy's
    memory pool already reuses freed blocks)."""
    from . import ir
    inputs = [[list(b.shape), list(g.example_inputs[b.position]._data.strides), b.dtype.name] for b in g.inputs]
    constants = dict(g.constant_targets)
    buffers, steps, lifetimes = {}, [], {}
    fixed = {b.name for b in g.inputs} | set(constants)

    def note(b):
        if b.name not in fixed:
            buffers[b.name] = [list(b.shape), list(b.strides), b.dtype.name]
    for step, node in enumerate(groups):
        if isinstance(node, ir.ExternCall):
            for a in _leaves_of([node.args, list(node.kwargs.values())]):
                if isinstance(a, ir.BufferValue):
                    note(a.buffer)
            for b in node.outputs:
                note(b)
            steps.append(["extern", node.op.name, _encode(list(node.args)),
                          {k: _encode(v) for k, v in node.kwargs.items()}, bool(node.returns_tuple),
                          [[b.name, b.output_index] for b in node.outputs]])
            continue
        name, bufs, checks = kernels[id(node)]
        for b in bufs:
            note(b)
            lo, _ = lifetimes.get(b.name, (step, step))
            lifetimes[b.name] = (lo, step)
        steps.append(["kernel", name, [b.name for b in bufs], bool(checks)])
    outputs = _encode(g.outputs)
    for leaf in _leaves_of(g.outputs):
        if isinstance(leaf, ir.BufferValue):
            note(leaf.buffer)
    pool = Pool()
    for name, (lo, hi) in lifetimes.items():
        if name not in kept and name not in fixed and not name.startswith("extern") and device == "cpu":
            shape, _, dtype = buffers[name]
            size = 1
            for d in shape:
                size *= d
            pool.place(name, size * DTYPES[dtype].np.itemsize, lo, hi)
    plan = {"inputs": inputs, "constants": constants, "buffers": buffers, "steps": steps, "outputs": outputs,
            "pool": {"blocks": [size for size, _ in pool.blocks], "placement": pool.placement}}
    if device != "cpu":
        plan["device"], plan["launch"] = device, launch
    return plan


def _leaves_of(x):
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _leaves_of(v)
    else:
        yield x


# -- plan -> GraphModule -----------------------------------------------------------------------------

def _dtype(name):
    if name not in DTYPES:
        raise PlanMismatch(f"unknown dtype {name!r}")
    return DTYPES[name]


def _ints(xs):
    if not isinstance(xs, list) or not all(type(x) is int for x in xs):
        raise PlanMismatch(f"expected a list of ints, got {xs!r}")
    return tuple(xs)


def build_wrapper(plan, fnptrs, aten_gm, source_only=False):
    """The wrapper GraphModule of `plan`; fnptrs: kernel name -> address (on "cuda": the
    triton_launch.KernelCall); extern ops and constants are looked up in `aten_gm` by name. Raises
    PlanMismatch when the plan does not fit. source_only: built to be read (codegen_source)."""
    from ..fx import Graph, GraphModule
    cuda = plan.get("device") == "cuda"
    triton = plan.get("device") in ("cuda", "triton-cpu")     # kernels are Triton calls taking tensors
    if cuda:
        from . import triton_launch as dev
        check, alloc, raise_error = dev.CudaInputCheck, dev.CudaAlloc, dev.raise_if_error
    else:
        from .launch import launcher
        launch = None if triton else launcher()
        check, alloc, raise_error = InputCheck, Alloc, raise_if_error
    ops = {n.target.name: n.target for n in aten_gm.graph.nodes
           if n.op == "call_function" and hasattr(n.target, "name")}
    graph = Graph()
    specs = tuple((_ints(shape), _ints(strides), _dtype(dtype).np) for shape, strides, dtype in plan["inputs"])
    placeholders = [graph.placeholder(f"arg{i}") for i in range(len(specs))]
    graph.call_function(check(specs), tuple(placeholders))
    tensors = {f"arg{i}": p for i, p in enumerate(placeholders)}
    module_attrs, data_nodes = {}, {}
    for name, target in plan["constants"].items():
        if not isinstance(target, str) or not hasattr(aten_gm, target):
            raise PlanMismatch(f"constant {name}: the graph has no attribute {target!r}")
        module_attrs[name] = getattr(aten_gm, target)
        tensors[name] = graph.get_attr(name)
    buffers = plan["buffers"]
    pool = plan["pool"]
    placement = pool["placement"]
    if any(type(i) is not int or not 0 <= i < len(pool["blocks"]) for i in placement.values()):
        raise PlanMismatch("a pool placement names no block")
    for name, i in placement.items():      # a block holds every buffer placed in it
        shape, _, dtype = buffers[name]
        need = _dtype(dtype).np.itemsize
        for d in _ints(shape):
            need *= d
        if pool["blocks"][i] < need:
            raise PlanMismatch(f"pool block {i} is smaller than buffer {name}")
    for name, arr in pool_arrays(_ints(pool["blocks"]), placement).items():
        module_attrs[f"pool_{name}"] = arr
        data_nodes[name] = graph.get_attr(f"pool_{name}")

    def tensor(name):
        if name not in tensors:
            if name not in buffers or name in placement:
                raise PlanMismatch(f"buffer {name!r} is read before it is written")
            shape, strides, dtype = buffers[name]
            tensors[name] = graph.call_function(alloc(name, _ints(shape), _ints(strides), _dtype(dtype)), ())
        return tensors[name]

    def data(name):
        if triton:                  # Triton takes the tensors (data_ptr(), dtype)
            return tensor(name)
        if name not in data_nodes:
            data_nodes[name] = graph.call_function(getattr, (tensor(name), "_data"))
        return data_nodes[name]

    def decode(v):
        if isinstance(v, list):
            raise PlanMismatch("a bare list in a plan")
        if not isinstance(v, dict):
            return v
        (kind, x), = v.items()
        if kind == "value":
            name, shape, strides, offset, whole = x
            node = tensor(name)
            if whole is True:
                return node
            return graph.call_function(strided_view, (node, _ints(shape), _ints(strides), int(offset)))
        if kind in ("list", "tuple"):
            return (list if kind == "list" else tuple)(decode(e) for e in x)
        if kind == "float":
            return float(x)
        if kind == "dtype":
            return _dtype(x)
        if kind == "object":
            return x
        raise PlanMismatch(f"unknown plan entry {kind!r}")

    for step in plan["steps"]:
        if step[0] == "extern":
            _, op_name, args, kwargs, returns_tuple, outs = step
            if op_name in FUSER_EXTERNS and op_name not in ops:   # the fuser's own externs, imported
                module, attr = FUSER_EXTERNS[op_name]              # only where a plan calls them
                ops[op_name] = getattr(importlib.import_module(module, __package__), attr)
            if op_name not in ops:
                raise PlanMismatch(f"extern op {op_name!r} is not in the graph")
            fn = ops[op_name]
            if op_name not in FUSER_EXTERNS:
                fn = bound_extern(fn, plan.get("device", "cpu"))
            res = graph.call_function(fn, tuple(decode(args)), {k: decode(v) for k, v in kwargs.items()})
            for name, index in outs:
                t = graph.call_function(operator.getitem, (res, index)) if returns_tuple else res
                shape, strides, dtype = buffers[name]
                tensors[name] = graph.call_function(ExpectLayout(name, _ints(shape), _ints(strides), _dtype(dtype)),
                                                    (t,))
            continue
        _, kname, names, checks = step
        if kname not in fnptrs:
            raise PlanMismatch(f"kernel {kname!r} is not in the library")
        if triton:
            call = fnptrs[kname]
        else:
            call = functools.partial(launch, fnptrs[kname])
            call.__name__ = call.__qualname__ = kname          # launch.launcher() bound to the kernel
            call.__module__ = None
        args = [data(n) for n in names]
        if checks:
            module_attrs[f"err_{kname}"] = (None if source_only else dev.error_flag()) if cuda else np.zeros(1, np.int32)
            args.append(graph.get_attr(f"err_{kname}"))
        graph.call_function(call, tuple(args))
        if checks:
            graph.call_function(raise_error, (args[-1],))
    graph.output(decode(plan["outputs"]))
    gm = GraphModule(module_attrs, graph)
    gm._ember_pool_blocks = list(pool["blocks"])
    return gm
