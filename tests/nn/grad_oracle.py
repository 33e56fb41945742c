"""Forward-and-backward oracle for nn.functional tests: run ``fn(lib, *tensors)`` in torch and ember
on the same NumPy inputs, compare the outputs, then backpropagate the same random output gradient
in both and compare the gradients of the inputs listed in `diff`."""
import numpy as np
import torch

import ember

from oracle import assert_same


def check_grad(fn, *arrays, diff=(0,), rtol=1e-4, atol=1e-5, seed=0):
    """Returns ember's output. Tuples of outputs: all are compared, the first is differentiated."""
    tin = [torch.tensor(a, requires_grad=i in diff) if isinstance(a, np.ndarray) else a for i, a in enumerate(arrays)]
    ein = [ember.tensor(a, requires_grad=i in diff) if isinstance(a, np.ndarray) else a for i, a in enumerate(arrays)]
    tout, eout = fn(torch, *tin), fn(ember, *ein)
    assert_same(eout, tout, rtol=rtol, atol=atol)
    if not diff:
        return eout
    tfirst, efirst = (tout[0], eout[0]) if isinstance(tout, tuple) else (tout, eout)
    gout = np.random.default_rng(seed).standard_normal(tuple(tfirst.shape)).astype(tfirst.detach().numpy().dtype)
    tfirst.backward(torch.tensor(gout))
    efirst.backward(ember.tensor(gout))
    for i in diff:
        assert ein[i].grad is not None, f"no gradient reached input {i}"
        np.testing.assert_allclose(ein[i].grad.numpy(), tin[i].grad.numpy(), rtol=rtol, atol=max(atol, 1e-5),
                                   err_msg=f"gradient of input {i}")
    return eout
