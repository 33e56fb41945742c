"""The dispatcher: dispatch keys, key sets, thread-local include/exclude, kernel tables.

As in c10 (seed 001 "Pytorch Eager Mode", seed 002): every operator has a table with one
slot per dispatch key. A call computes a *key set* — the union of its tensor arguments' keys,
plus the thread-local include set, minus the thread-local exclude set — and runs the kernel of
the highest key in it. A key set is a plain int bitmask; a key's bit position is its priority.

Two kinds of kernels:
  * backend kernels (CPU, CUDA, Meta) take the op's arguments: ``kernel(*args)``;
  * functionality kernels (Python, Profiler, Tracer, Autograd, ...) and boxed fallbacks take
    ``kernel(op, key_set, *args)`` and usually end with ``op.redispatch(key_set, *args)``,
    which continues with the keys *below* their own.

A key with no kernel for an op either falls through (skipped) or runs the key's global boxed
fallback, exactly like ``TORCH_LIBRARY_IMPL(_, Key, m) { m.fallback(...) }``.

Adding a key is: one line in `DispatchKey`, and (if every op should pass it untouched until
something registers) one line in `_FALLTHROUGH_BY_DEFAULT`.
"""
from __future__ import annotations

import enum
import threading


class DispatchKey(enum.IntEnum):
    """Dispatch keys; a larger value is dispatched to first."""
    CPU = 0
    CUDA = 1
    Meta = 2
    # --- functionality keys: above the backends -----------------------------------------
    # Fake tensors (ember/_functorch/fake_tensor.py) carry this key over a Meta backend, and
    # FakeTensorMode includes it in TLS: its kernel checks devices, caches and wraps the Meta
    # kernel's results as fake tensors. Below autograd (where PyTorch's FakeTensor's Python key
    # sits), so autograd records fake ops like real ones.
    Fake = 4
    ADInplaceOrView = 5
    Autograd = 6
    # Inference tensors (made inside ``inference_mode``) carry this key, and inference_mode
    # includes it in TLS: its kernel refuses in-place updates of inference tensors outside
    # inference mode (before anything is written) and marks outputs as inference tensors.
    # Above Autograd so that the refusal comes before autograd records anything.
    Inference = 7
    Tracer = 8
    # Above Tracer: functionalisation turns in-place and out= ops into functional ones before
    # make_fx records anything, so a trace of ``functionalize(fn)`` holds only the functional ops.
    Functionalize = 9
    Profiler = 10
    Python = 11
    # ember.autocast (ember/amp): casts the arguments of listed ops, then redispatches; included in
    # TLS by autocast only. Above Python, so a Python mode sees the casts and the op it runs.
    Autocast = 12


NUM_KEYS = max(DispatchKey) + 1
BACKEND_KEYS = (DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta)
BACKEND_MASK = sum(1 << k for k in BACKEND_KEYS)
CPU_BIT = 1 << DispatchKey.CPU
CUDA_BIT = 1 << DispatchKey.CUDA
META_BIT = 1 << DispatchKey.Meta
AUTOGRAD_BIT = 1 << DispatchKey.Autograd
FAKE_BIT = 1 << DispatchKey.Fake
INFERENCE_BIT = 1 << DispatchKey.Inference
_CPU_AUTOGRAD = CPU_BIT | AUTOGRAD_BIT
_CUDA_AUTOGRAD = CUDA_BIT | AUTOGRAD_BIT
_BELOW_AUTOGRAD = AUTOGRAD_BIT - 1
_AUTOGRAD_KEY = int(DispatchKey.Autograd)
_CUDA_KEY = int(DispatchKey.CUDA)

# The backend of factories called without a device (``ember.set_default_device``): [its bit, its device].
default_factory_backend = [CPU_BIT, None]

# Keys every op passes through unless a kernel or a fallback is registered for it.
_FALLTHROUGH_BY_DEFAULT = {DispatchKey.Fake, DispatchKey.ADInplaceOrView, DispatchKey.Autograd, DispatchKey.Inference,
                           DispatchKey.Functionalize, DispatchKey.Tracer, DispatchKey.Profiler, DispatchKey.Python,
                           DispatchKey.Autocast}


def key_set(*keys: DispatchKey) -> int:
    """The bitmask of the given keys: ``key_set(DispatchKey.CPU, DispatchKey.Autograd)``."""
    mask = 0
    for k in keys:
        mask |= 1 << k
    return mask


def keys_of(mask: int) -> list:
    """The keys in a key set, highest priority first (for printing and tests)."""
    return [DispatchKey(k) for k in sorted(DispatchKey, reverse=True) if mask >> k & 1]


def below(key: DispatchKey) -> int:
    """The mask of every key strictly below `key`: ``key_set & below(k)`` redispatches past k."""
    return (1 << key) - 1


class _LocalDispatchState(threading.local):
    """Thread-local include/exclude sets (c10's LocalDispatchKeySet)."""
    include = 0
    exclude = 0


tls = _LocalDispatchState()


# ---------------------------------------------------------------------------------------------
# the fast path of a binding
# ---------------------------------------------------------------------------------------------
def fast_call_source(keys: str, args: str, assign: str = "_r = ") -> str:
    """The fast path as three Python statements, each ending in `assign`: when the key set computed from the arguments is just
    {CPU} and no thread-local key is included (nothing but the CPU backend needs to see the call),
    the CPU kernel straight from the op's table; otherwise the dispatcher. It reads the names
    ``_op`` (the OperatorHandle), ``_table`` (its kernel table) and ``_tls``.

    The one definition of the rule: the generated bindings (ember/ops/codegen.py) inline it, since
    a call to `fast_call` costs a Python frame, about 8% of ``ember.add`` (bench/dispatch_overhead.py),
    and an if/else statement measured ~2-4% faster than the same test as a conditional expression;
    `fast_call` below is the same text compiled as a function, for Python callers."""
    return (f"if {keys} == {CPU_BIT} and not _tls.include: {assign}_table[0]({args})\n"
            + cuda_call_source(keys, args, assign, "elif"))


def cuda_call_source(keys: str, args: str, assign: str = "_r = ", first: str = "if") -> str:
    """The same for a key set of just {CUDA} (what `OperatorHandle.call` answers first for it:
    the CUDA kernel, unless the entry is a fallthrough), and the dispatcher otherwise: a tiny CUDA
    op's binding skips `call`'s frame (~0.2 us of a ~9 us op on the lent H100's host)."""
    return (f"{first} {keys} == {CUDA_BIT} and not _tls.include and _table[{_CUDA_KEY}] is not None:"
            f" {assign}_table[{_CUDA_KEY}]({args})\n"
            f"else: {assign}_op.call({keys}, {args})")


_fast_call_namespace = {"_tls": tls}
exec("def fast_call(_op, keys, *args):\n"
     "    _table = _op.table\n"
     + "".join(f"    {line}\n" for line in fast_call_source("keys", "*args", "return ").splitlines()),
     _fast_call_namespace)
fast_call = _fast_call_namespace["fast_call"]
fast_call.__doc__ = """``fast_call(op, keys, *args)``: run `op` on `args` whose tensors' key set is `keys`, through
the fast path of `fast_call_source` (the CPU kernel when `keys` is {CPU} and TLS includes nothing)."""


class _KeyGuard:
    __slots__ = ("mask", "saved", "attr", "on")

    def __init__(self, keys, attr, on):
        self.mask = keys if isinstance(keys, int) and not isinstance(keys, DispatchKey) else (
            key_set(*keys) if isinstance(keys, (list, tuple, set, frozenset)) else 1 << keys)
        self.attr, self.on = attr, on

    def __enter__(self):
        self.saved = getattr(tls, self.attr)
        setattr(tls, self.attr, (self.saved | self.mask) if self.on else (self.saved & ~self.mask))
        return self

    def __exit__(self, *exc):
        setattr(tls, self.attr, self.saved)


def _ExcludeDispatchKeyGuard(keys):
    """Context manager: the keys are skipped by every dispatch on this thread inside it."""
    return _KeyGuard(keys, "exclude", True)


def _IncludeDispatchKeyGuard(keys):
    """Context manager: the keys are added to every dispatch on this thread inside it."""
    return _KeyGuard(keys, "include", True)


def _DisableIncludeGuard(keys):
    """Context manager: temporarily drop keys from the include set (e.g. inside a mode)."""
    return _KeyGuard(keys, "include", False)


# ---------------------------------------------------------------------------------------
# global (per key, all ops) registrations
# ---------------------------------------------------------------------------------------
FALLTHROUGH = "fallthrough"
_global_fallbacks: dict = {}       # key -> boxed kernel(op, key_set, *args) or FALLTHROUGH
_all_ops: list = []                # every OperatorHandle, so a new fallback refreshes tables


def register_fallback(key: DispatchKey, kernel) -> None:
    """Register a boxed kernel ``kernel(op, key_set, *args)`` for `key` on every operator
    (or ``FALLTHROUGH``); ``None`` removes it."""
    if kernel is None:
        _global_fallbacks.pop(key, None)
    else:
        _global_fallbacks[key] = kernel
    for op in _all_ops:        # only `key`'s entry can change (one key, not every table, per op)
        op._refresh((key,))


class NoKernelError(NotImplementedError):
    """Raised when an operator has no kernel for the key a call dispatches to."""


def _missing(op, key):
    def kernel(*args):
        raise NoKernelError(f"Could not run '{op.name}' with arguments from the '{key.name}' backend. "
                            f"'{op.name}' is only available for these backends: "
                            f"{[k.name for k in op.registered_keys()]}.")
    return kernel


class OperatorHandle:
    """One operator overload's kernel table (c10's OperatorEntry).

    ``table[k]`` is the kernel that runs when `k` is the highest key of a call, computed from
    the op's own registrations, the global fallbacks and fallthrough (``None`` = fall through).
    """

    def __init__(self, name: str, schema):
        self.name = name            # "aten::add.Tensor"
        self.schema = schema
        self.kernels: dict = {}     # DispatchKey -> kernel, as registered
        self.table: list = [None] * NUM_KEYS
        # the keys whose table entry is a kernel (not a fallthrough): `redispatch` finds the highest
        # key of a call that runs something in one step, not by walking past fallthrough keys
        self.live_keys = BACKEND_MASK
        self.is_backend = [k in BACKEND_KEYS for k in range(NUM_KEYS)]
        self.composite = None       # CompositeImplicitAutograd kernel: runs for Autograd and backends
        _all_ops.append(self)
        self._refresh()

    def register(self, key: DispatchKey, kernel) -> None:
        """Register `kernel` for `key` (``FALLTHROUGH`` to pass the key through)."""
        self.kernels[DispatchKey(key)] = kernel
        self._refresh()

    def deregister(self, key: DispatchKey) -> None:
        self.kernels.pop(DispatchKey(key), None)
        self._refresh()

    def registered_keys(self) -> list:
        return [k for k, v in self.kernels.items() if v is not FALLTHROUGH] + (
            list(BACKEND_KEYS) if self.composite else [])

    def _refresh(self, keys=DispatchKey) -> None:
        for k in keys:
            kernel = self.kernels.get(k)
            if kernel is None and self.composite is not None and (k in BACKEND_KEYS or k == DispatchKey.Autograd):
                kernel = self.composite
                if k == DispatchKey.Autograd:
                    kernel = _composite_as_functionality(kernel)
            if kernel is None:
                kernel = _global_fallbacks.get(k)
            if kernel is None:
                kernel = FALLTHROUGH if k in _FALLTHROUGH_BY_DEFAULT else _missing(self, k)
            self.table[k] = None if kernel is FALLTHROUGH else kernel
            if kernel is FALLTHROUGH:
                self.live_keys &= ~(1 << k)
            else:
                self.live_keys |= 1 << k

    # -- calling --------------------------------------------------------------------------
    def call(self, keys: int, *args):
        """Dispatch with the key set computed from the arguments (before TLS is applied).

        The common {CPU} set is answered here, in one Python frame (bench/dispatch_overhead.py
        measures it), and so are sets whose live keys (`_refresh`: never a None entry) are {CPU, Autograd}, {CUDA}
        or {CUDA, Autograd} (also under autocast, for ops it passes); any other set goes through `redispatch`."""
        keys = (keys | tls.include) & ~tls.exclude
        live = keys & self.live_keys
        if live == CPU_BIT:
            return self.table[0](*args)
        if live == _CPU_AUTOGRAD:      # a CPU op recording autograd: what redispatch picks, a frame sooner
            return self.table[_AUTOGRAD_KEY](self, keys & _BELOW_AUTOGRAD, *args)
        if live == CUDA_BIT:           # likewise on CUDA (tested after the CPU sets: they pay nothing)
            return self.table[_CUDA_KEY](*args)
        if live == _CUDA_AUTOGRAD:
            return self.table[_AUTOGRAD_KEY](self, keys & _BELOW_AUTOGRAD, *args)
        return self.redispatch(keys, *args)

    def redispatch(self, keys: int, *args):
        """Run the kernel of the highest key in `keys` (already TLS-adjusted) that has one."""
        live = keys & self.live_keys
        if not live:
            raise NoKernelError(f"'{self.name}': no kernel to dispatch to (no tensor arguments?)")
        k = live.bit_length() - 1
        kernel = self.table[k]
        if k <= 2:  # backend
            if keys & BACKEND_MASK & ~(1 << k):
                args = _mixed_devices(self, keys, args)
            return kernel(*args)
        return kernel(self, keys & ((1 << k) - 1), *args)

    def __repr__(self):
        return f"<OperatorHandle {self.name}>"


def _composite_as_functionality(kernel):
    def run(op, keys, *args):
        return kernel(*args)
    return run


def _mixed_devices(op, keys, args):
    """Tensors of two backends in one call, by the op's rule in device_rules (PyTorch CUDA's):
    accepted as they are, refused with PyTorch's RuntimeError, or accepted with the CPU tensors it
    takes (0-d scalars; index tensors of indexing ops) copied to the device (`args`, so converted).
    Off the hot path: only calls that mix backends come here."""
    from .tensor import Tensor
    from . import device_rules as rules
    if op.name in rules.COPIES:
        return args
    on_cuda = keys & CUDA_BIT and not keys & META_BIT
    if on_cuda and op.name in rules.WRAPPER_CHECKED:
        error = rules.wrapper_error(op, args, Tensor)
        if error is not None:
            raise error
    devices, cpu_scalars = [], False
    indexing = op.name in rules.INDEXING

    def visit(a, in_list):
        nonlocal cpu_scalars
        if isinstance(a, Tensor):
            if a._keys & CPU_BIT and on_cuda and ((indexing and in_list) or a._data.ndim == 0):
                cpu_scalars = True
            elif str(a.device) not in devices:
                devices.append(str(a.device))
        elif isinstance(a, (list, tuple)):
            for x in a:
                visit(x, True)
    for a in args:
        visit(a, False)
    if len(devices) > 1 or not cpu_scalars:
        names = devices + ["cpu"] if len(devices) == 1 else devices
        raise RuntimeError(f"{op.name}: Expected all tensors to be on the same device, but found at least "
                           f"two devices, {names[0]} and {names[1]}!")

    def to_device(a):
        if isinstance(a, Tensor) and a._keys & CPU_BIT:
            return a.to(devices[0])
        if isinstance(a, (list, tuple)):
            return type(a)(to_device(x) for x in a)
        return a
    return tuple(to_device(a) for a in args)
