"""Finite-difference checks of analytical gradients, like torch.autograd.gradcheck.

The numerical Jacobian perturbs each input element in place (through the NumPy array behind
the tensor, so strided, non-contiguous inputs work) and takes central differences; the
analytical one runs one ``autograd.grad`` per output element. Both cost a loop per element:
keep inputs small (tens of elements), in float64.
"""
from __future__ import annotations

import warnings

import numpy as np

from .._core.tensor import Tensor


class GradcheckError(RuntimeError):
    """The analytical and numerical Jacobians differ."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _float_outputs(out):
    return [o for o in _as_tuple(out) if isinstance(o, Tensor) and o.dtype.category >= 2]


def _numerical(fn, inputs, diff, n_outputs, eps):
    """{(output j, input k): (n_out_j x n_in_k) matrix} by central differences."""
    jac = {}
    for k in diff:
        arr = inputs[k].detach()._data      # shares memory with the input, whatever its strides or device
        cols = [[] for _ in range(n_outputs)]
        for idx in np.ndindex(*arr.shape):
            orig = arr[idx].item()
            # Grad mode stays on: gradgradcheck's function itself calls autograd.grad.
            arr[idx] = orig + eps
            plus = [o.detach().cpu().numpy().reshape(-1).astype(np.float64) for o in _float_outputs(fn(*inputs))]
            arr[idx] = orig - eps
            minus = [o.detach().cpu().numpy().reshape(-1).astype(np.float64) for o in _float_outputs(fn(*inputs))]
            arr[idx] = orig
            for j in range(n_outputs):
                cols[j].append((plus[j] - minus[j]) / (2 * eps))
        for j in range(n_outputs):
            jac[(j, k)] = np.stack(cols[j], axis=1) if cols[j] else np.zeros((0, 0))
    return jac


def _analytical(outputs, inputs, diff):
    """{(output j, input k): matrix} from one backward per output element."""
    from .engine import grad as autograd_grad
    from .. import zeros
    jac = {}
    for j, out in enumerate(outputs):
        rows = {k: [] for k in diff}
        for r in range(out.numel()):
            if out.requires_grad:
                g = zeros(out.numel(), dtype=out.dtype, device=out.device)
                g[r] = 1.0
                grads = autograd_grad([out], [inputs[k] for k in diff], [g.reshape(out.shape)], retain_graph=True,
                                      allow_unused=True)
            else:
                grads = [None] * len(diff)
            for k, gk in zip(diff, grads):
                if gk is not None and tuple(gk.shape) != tuple(inputs[k].shape):
                    raise GradcheckError(f"Gradient of input {k} has shape {list(gk.shape)}, expected "
                                         f"{list(inputs[k].shape)}")
                rows[k].append(np.zeros(inputs[k].numel()) if gk is None else
                               gk.detach().cpu().numpy().reshape(-1).astype(np.float64))
        for k in diff:
            jac[(j, k)] = np.stack(rows[k], axis=0) if rows[k] else np.zeros((0, inputs[k].numel()))
    return jac


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored) -> bool:
    """Check the gradients computed by backward against central finite differences for every
    input that requires grad (use float64 inputs). Raises `GradcheckError` on a mismatch
    (returns False instead with ``raise_exception=False``)."""
    inputs = _as_tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff:
        if inputs[i].dtype.category == 3:
            raise NotImplementedError("gradcheck of complex inputs is not supported by ember yet")
        if inputs[i].dtype.itemsize < 8:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex. ", UserWarning, stacklevel=2)
    outputs = _float_outputs(func(*inputs))
    analytical = _analytical(outputs, inputs, diff)
    numerical = _numerical(func, inputs, diff, len(outputs), eps)
    for (j, k), num in numerical.items():
        ana = analytical[(j, k)]
        if num.shape != ana.shape or not np.allclose(ana, num, atol=atol, rtol=rtol):
            if raise_exception:
                raise GradcheckError(f"Jacobian mismatch for output {j} with respect to input {k},\n"
                                     f"numerical:{num}\nanalytical:{ana}\n")
            return False
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  seed=0, **_ignored) -> bool:
    """gradcheck of the first derivative (double backward): checks the gradients of
    ``autograd.grad(func(inputs), inputs, grad_outputs, create_graph=True)`` with respect to
    the inputs and to `grad_outputs` (random by default)."""
    from .engine import grad as autograd_grad
    from .. import tensor as make_tensor
    inputs = _as_tuple(inputs)
    outs = _float_outputs(func(*inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(seed)
        grad_outputs = tuple(make_tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype, requires_grad=True)
                             for o in outs if o.requires_grad)
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)

    def first_grad(*args):
        ins, gos = args[:n], args[n:]
        o = [x for x in _float_outputs(func(*ins)) if x.requires_grad]
        d = [t for t in ins if isinstance(t, Tensor) and t.requires_grad]
        grads = autograd_grad(o, d, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)
    return gradcheck(first_grad, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
