"""Adam/AdamW's update of one CUDA parameter as one kernel: weight decay, both moving averages
and the step, where the single-tensor algorithm (ember/optim/adam.py) launches about fifteen
(lerp alone is several). The arithmetic is that algorithm's, in its order and dtype, so that
float32 results round as PyTorch's do (lerp's weight-below-one-half form, addcmul's and
addcdiv's left-to-right products).

The kernel is launched directly (`launch.py`) where every operand is contiguous: CuPy's
ElementwiseKernel call resolves and broadcasts its twelve arguments first (~45 us a parameter on
the lent H100, a GPT-2 step has 148). The direct kernel's loop body is the text CuPy generates
for the ElementwiseKernel below -- the operands bound as references into their arrays, then the
same statements -- so both compile to the same arithmetic; the ElementwiseKernel runs the rest."""
from __future__ import annotations

import cupy
import numpy

from . import launch as _direct

_OPERATION = """
    T g = l2 == (T)0 ? grad : grad + l2 * param;
    param = param * decay_factor;
    exp_avg = exp_avg + one_minus_beta1 * (g - exp_avg);
    exp_avg_sq = exp_avg_sq * beta2 + one_minus_beta2 * g * g;
    param = param + neg_step * exp_avg / (sqrt(exp_avg_sq) / bias2_sqrt + eps);
    """
_ELEMENTWISE = cupy.ElementwiseKernel(
    "T grad, T decay_factor, T l2, T one_minus_beta1, T beta2, T one_minus_beta2, T neg_step, T bias2_sqrt, T eps",
    "T param, T exp_avg, T exp_avg_sq", _OPERATION, "ember_adam_step")
_FLOATS = (numpy.dtype(numpy.float32), numpy.dtype(numpy.float64))
_SCALARS = ("decay_factor", "l2", "one_minus_beta1", "beta2", "one_minus_beta2", "neg_step", "bias2_sqrt", "eps")
_DIRECT_SOURCE = "".join(
    f"""extern "C" __global__ void ember_adam_step_{tag}(const {ctype}* _raw_grad, {", ".join(f"const {ctype} {name}" for name in _SCALARS)},
        {ctype}* _raw_param, {ctype}* _raw_exp_avg, {ctype}* _raw_exp_avg_sq, long long n) {{
    typedef {ctype} T;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {{
        const T &grad = _raw_grad[i];
        T &param = _raw_param[i];
        T &exp_avg = _raw_exp_avg[i];
        T &exp_avg_sq = _raw_exp_avg_sq[i];
        {_OPERATION}
    }}
}}
""" for tag, ctype in (("f32", "float"), ("f64", "double")))
_direct_module: list = []     # the RawModule of _DIRECT_SOURCE, compiled on first use
_direct_kernels: dict = {}     # dtype -> (RawKernel, its launcher)


def _direct_kernel(dtype):
    entry = _direct_kernels.get(dtype)
    if entry is None:
        if not _direct_module:
            _direct_module.append(cupy.RawModule(code=_DIRECT_SOURCE))
        f32 = dtype == numpy.float32
        entry = _direct_kernels[dtype] = (_direct_module[0].get_function("ember_adam_step_" + ("f32" if f32 else "f64")),
                                          _direct.launcher("p" + ("f" if f32 else "d") * 8 + "pppq"))
    return entry


def _ADAM(g, *rest):
    """The update with `_ELEMENTWISE`'s arguments (grad, the eight scalars, param, exp_avg,
    exp_avg_sq): one direct launch where all four arrays are contiguous, else the ElementwiseKernel."""
    p, m, v = rest[8:]
    if not (g._c_contiguous and p._c_contiguous and m._c_contiguous and v._c_contiguous):
        _ELEMENTWISE(g, *rest)
        return
    n = p.size
    if n:
        kernel, run = _direct_kernel(p.dtype)
        run(_direct.function_pointer(kernel), max(1, min((n + 255) // 256, 8192)), 256,
            g.data.ptr, *rest[:8], p.data.ptr, m.data.ptr, v.data.ptr, n)


def _scalars(group, t, dtype):
    """The kernels' eight scalar operands (in `_SCALARS` order) for step `t`, in `dtype`."""
    lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
    beta1, beta2 = group["betas"]
    decoupled = bool(group.get("decoupled_weight_decay"))
    s = dtype.type
    return (s(1 - lr * decay if decoupled and decay else 1), s(0 if decoupled else decay), s(1 - beta1), s(beta2),
            s(1 - beta2), s(-(lr / (1 - beta1 ** t))), s((1 - beta2 ** t) ** 0.5), s(eps))


def adam_step(param, grad, exp_avg, exp_avg_sq, group, t) -> bool:
    """Update in place and return True; False (nothing touched) where the kernel does not apply:
    AMSGrad, dtypes other than float32/64, or operands that differ in dtype or shape."""
    p, g, m, v = param._data, grad._data, exp_avg._data, exp_avg_sq._data
    if group["amsgrad"] or p.dtype not in _FLOATS or not (p.dtype == g.dtype == m.dtype == v.dtype) \
            or not (p.shape == g.shape == m.shape == v.shape) or not all(isinstance(a, cupy.ndarray) for a in (g, m, v)):
        return False
    _ADAM(g, *_scalars(group, t, p.dtype), p, m, v)
    for tensor in (param, exp_avg, exp_avg_sq):
        tensor._bump_version()
    return True


# -- foreach: all parameters of a group in one launch per (device, dtype, step) ------------------
# A block updates one CHUNK of one tensor. The launch reads its operands from a table in device
# memory (uploaded asynchronously per launch, CuPy stages it in pinned memory):
#   grad[k], param[k], exp_avg[k], exp_avg_sq[k] addresses, size[k], first_block[k] (k < count),
#   first_block[count] = the grid size;
# a block finds its tensor by binary search over first_block. The loop body is `_OPERATION`, as in
# the per-parameter kernels, so the numbers are theirs. maximize negates the gradient in the kernel
# by flipping its sign bit with a mask passed at the launch (exact, as the for-loop's `-grad`): a
# `maximize ? -g : g` lets the compiler specialise the loop for -g and contract g*g differently
# (one rounding apart from the per-parameter kernel in a third of the elements).
CHUNK = 65536
_FOREACH_SOURCE = """__device__ __forceinline__ float flip_sign(float x, long long mask) { return __int_as_float(__float_as_int(x) ^ (int)mask); }
__device__ __forceinline__ double flip_sign(double x, long long mask) { return __longlong_as_double(__double_as_longlong(x) ^ mask); }
""" + "".join(
    f"""extern "C" __global__ void ember_adam_foreach_{tag}(const long long* table, long long count,
        {", ".join(f"const {ctype} {name}" for name in _SCALARS)}, long long sign_mask) {{
    typedef {ctype} T;
    __shared__ long long which;
    const long long* first_block = table + 5 * count;
    if (threadIdx.x == 0) {{
        long long lo = 0, hi = count - 1;
        while (lo < hi) {{ long long mid = (lo + hi + 1) / 2; if (first_block[mid] <= blockIdx.x) lo = mid; else hi = mid - 1; }}
        which = lo;
    }}
    __syncthreads();
    const long long k = which, n = table[4 * count + k];
    const long long start = (blockIdx.x - first_block[k]) * {CHUNK}LL, end = min(start + {CHUNK}LL, n);
    const T* _raw_grad = (const T*)table[k];
    T* _raw_param = (T*)table[count + k];
    T* _raw_exp_avg = (T*)table[2 * count + k];
    T* _raw_exp_avg_sq = (T*)table[3 * count + k];
    for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {{
        const T grad = flip_sign(_raw_grad[i], sign_mask);
        T &param = _raw_param[i];
        T &exp_avg = _raw_exp_avg[i];
        T &exp_avg_sq = _raw_exp_avg_sq[i];
        {_OPERATION}
    }}
}}
""" for tag, ctype in (("f32", "float"), ("f64", "double")))
_foreach_module: list = []
_foreach_kernels: dict = {}    # dtype -> (RawKernel, its launcher)


def _foreach_kernel(dtype):
    entry = _foreach_kernels.get(dtype)
    if entry is None:
        if not _foreach_module:
            _foreach_module.append(cupy.RawModule(code=_FOREACH_SOURCE))
        f32 = dtype == numpy.float32
        entry = _foreach_kernels[dtype] = (_foreach_module[0].get_function("ember_adam_foreach_" + ("f32" if f32 else "f64")),
                                           _direct.launcher("pq" + ("f" if f32 else "d") * 8 + "q"))
    return entry


def _takes(param, grad, state) -> bool:
    """Whether the foreach kernel can update `param`: contiguous non-empty float32/64 CUDA
    arrays of one dtype and shape, on one device, and a CPU step counter."""
    p, g = param._data, grad._data
    if p.__class__ is not cupy.ndarray or g.__class__ is not cupy.ndarray or p.dtype not in _FLOATS \
            or g.dtype != p.dtype or g.shape != p.shape or not (p._c_contiguous and g._c_contiguous) or not p.size \
            or g.device.id != p.device.id:
        return False
    if not state:
        return True       # the moments are made below, like the parameter
    m, v, counter = state["exp_avg"]._data, state["exp_avg_sq"]._data, state["step"]._data
    return (counter.__class__ is numpy.ndarray and counter.ndim == 0 and m.__class__ is cupy.ndarray
            and v.__class__ is cupy.ndarray and m.dtype == v.dtype == p.dtype and m.shape == v.shape == p.shape
            and m._c_contiguous and v._c_contiguous and m.device.id == v.device.id == p.device.id)


def adam_foreach(pairs, group, state_of, negate, new_state) -> list:
    """Update the (param, grad) `pairs` that `_takes` accepts, one launch per (device, dtype, step
    count) batch, and return the others for the for-loop update. Everything is checked before
    anything is written; a parameter without state gets `new_state(param, group)` first."""
    rest, batches = [], {}
    for param, grad in pairs:
        state = state_of.get(param)
        if not _takes(param, grad, state):
            rest.append((param, grad))
            continue
        counter = state["step"]._data if state else None
        t = 1.0 if counter is None else (counter + 1).item()
        p = param._data
        batches.setdefault((p.device.id, p.dtype, t), []).append((param, grad, state))
    for (device, dtype, t), rows in batches.items():
        with cupy.cuda.Device(device):
            _launch_batch(rows, group, state_of, negate, new_state, dtype, t)
    return rest


def _launch_batch(rows, group, state_of, negate, new_state, dtype, t) -> None:
    states = []
    for param, _, state in rows:
        if not state:
            state = state_of[param] = new_state(param, group)
        states.append(state)
    count = len(rows)
    table = numpy.empty(6 * count + 1, numpy.int64)
    blocks = 0
    for k, ((param, grad, _), state) in enumerate(zip(rows, states)):
        p = param._data
        table[k], table[count + k], table[2 * count + k] = grad._data.data.ptr, p.data.ptr, state["exp_avg"]._data.data.ptr
        table[3 * count + k], table[4 * count + k], table[5 * count + k] = state["exp_avg_sq"]._data.data.ptr, p.size, blocks
        blocks += (p.size + CHUNK - 1) // CHUNK
    table[6 * count] = blocks
    device_table = cupy.asarray(table)     # kept alive by the pool's stream order until the kernel ran
    kernel, run = _foreach_kernel(dtype)
    sign_mask = 0 if not negate else -(1 << 31) if dtype == numpy.float32 else -(1 << 63)   # the sign bit
    run(_direct.function_pointer(kernel), blocks, 256, device_table.data.ptr, count, *_scalars(group, t, dtype),
        sign_mask)
    for (param, _, _), state in zip(rows, states):
        counter = state["step"]
        numpy.add(counter._data, 1, out=counter._data)
        for tensor in (param, state["exp_avg"], state["exp_avg_sq"], counter):
            tensor._bump_version()
