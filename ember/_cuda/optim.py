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


def adam_step(param, grad, exp_avg, exp_avg_sq, group, t) -> bool:
    """Update in place and return True; False (nothing touched) where the kernel does not apply:
    AMSGrad, dtypes other than float32/64, or operands that differ in dtype or shape."""
    p, g, m, v = param._data, grad._data, exp_avg._data, exp_avg_sq._data
    if group["amsgrad"] or p.dtype not in _FLOATS or not (p.dtype == g.dtype == m.dtype == v.dtype) \
            or not (p.shape == g.shape == m.shape == v.shape) or not all(isinstance(a, cupy.ndarray) for a in (g, m, v)):
        return False
    lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
    beta1, beta2 = group["betas"]
    decoupled = bool(group.get("decoupled_weight_decay"))
    s = p.dtype.type
    _ADAM(g, s(1 - lr * decay if decoupled and decay else 1), s(0 if decoupled else decay), s(1 - beta1), s(beta2),
          s(1 - beta2), s(-(lr / (1 - beta1 ** t))), s((1 - beta2 ** t) ** 0.5), s(eps), p, m, v)
    for tensor in (param, exp_avg, exp_avg_sq):
        tensor._bump_version()
    return True
