"""Recurrent layers: RNN (tanh/relu), LSTM (with projections), GRU, and their single-step cells.

Parameter names, shapes, order and initialisation are PyTorch's (``weight_ih_l0``,
``weight_hh_l1_reverse``, ``bias_ih_l0``, ``weight_hr_l0`` ...; U(-1/sqrt(hidden), 1/sqrt(hidden))),
so state dicts load both ways. The computation is ``ember/nn/_vf_rnn.py`` (torch's ``_VF`` kernels
composed from ember ops); this file parses and checks arguments as ``torch/nn/modules/rnn.py`` does.
Loaded on first use of ``nn.RNN`` & co (not by ``import ember``).
"""
from __future__ import annotations

import math
import numbers
import warnings

from ... import zeros as _zeros
from .. import _vf_rnn, init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from ._common import empty
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

# mode -> (the kernel, the name its error messages use)
_KERNELS = {"RNN_TANH": (_vf_rnn.rnn_tanh, "RNN"), "RNN_RELU": (_vf_rnn.rnn_relu, "RNN"),
            "LSTM": (_vf_rnn.lstm, "LSTM"), "GRU": (_vf_rnn.gru, "GRU")}


def _check_sizes(input_size, hidden_size, num_layers, proj_size, bias, batch_first, dropout):
    """RNNBase's constructor checks, in PyTorch's order and with its exception types."""
    if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
        raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                         "element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                      f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                      stacklevel=4)
    for name, value in (("bias", bias), ("batch_first", batch_first)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} should be of type bool, got: {type(value).__name__}")
    for name, value in (("input_size", input_size), ("hidden_size", hidden_size)):
        if not isinstance(value, int):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")


def _uniform_init(module):
    """PyTorch's recurrent init: every parameter U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for weight in module.parameters():
        init.uniform_(weight, -stdv, stdv)


class RNNBase(Module):
    """Parameters, checks and the forward shared by RNN, LSTM and GRU; `mode` picks the kernel."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None) -> None:
        super().__init__()
        _check_sizes(input_size, hidden_size, num_layers, proj_size, bias, batch_first, dropout)
        if mode not in _KERNELS:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode = mode
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = _vf_rnn.MODES[mode][0] * hidden_size
        real_hidden_size = proj_size if proj_size > 0 else hidden_size
        num_directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            layer_input_size = input_size if layer == 0 else real_hidden_size * num_directions
            for direction in range(num_directions):
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = {"weight_ih": (gate_size, layer_input_size), "weight_hh": (gate_size, real_hidden_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size > 0:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                names = []
                for base, shape in shapes.items():
                    setattr(self, base + suffix, Parameter(empty(*shape, device=device, dtype=dtype)))
                    names.append(base + suffix)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        """The parameters in the kernel's order, looked up by name at each use (so replacing
        ``weight_ih_l0``, as functional_call and load_state_dict(assign=True) do, is seen)."""
        return [getattr(self, name, None) for name in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op: cuDNN's packed weight buffer does not exist on CPU (as in PyTorch on CPU)."""

    def reset_parameters(self) -> None:
        _uniform_init(self)

    # -- checks (PyTorch's methods, kept public because subclasses in the wild override them)
    def check_input(self, input, batch_sizes) -> None:
        weight_dtype = self._flat_weights[0].dtype
        if input.dtype != weight_dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight_dtype}). "
                             f"Convert input: input.to({weight_dtype}), or convert model: model.to({input.dtype})")
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(f"input must have {expected_input_dim} dimensions, got {input.dim()}")
        if self.input_size != input.size(-1):
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.size(-1)}")

    def _mini_batch(self, input, batch_sizes) -> int:
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.size(0) if self.batch_first else input.size(1)

    def get_expected_hidden_size(self, input, batch_sizes):
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, self._mini_batch(input, batch_sizes), size)

    def check_hidden_size(self, hx, expected_hidden_size, msg: str = "Expected hidden size {}, got {}") -> None:
        if tuple(hx.size()) != tuple(expected_hidden_size):
            raise RuntimeError(msg.format(tuple(expected_hidden_size), list(hx.size())))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx.index_select(1, permutation)

    # -- forward
    def _zero_state(self, input, max_batch_size):
        num_directions = 2 if self.bidirectional else 1
        return _zeros(self.num_layers * num_directions, max_batch_size, self.hidden_size, dtype=input.dtype,
                      device=input.device)

    def _check_hx_dims(self, hx, batched: bool):
        """Unbatched input takes 2-D states, batched input 3-D ones (RuntimeError otherwise);
        returns the states with the batch dimension added."""
        if not batched:
            if hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
            return hx.unsqueeze(1)
        if hx.dim() != 3:
            raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        return hx

    def _squeeze_hidden(self, hidden):
        return hidden.squeeze(1)

    def forward(self, input, hx=None):
        kernel, name = _KERNELS[self.mode]
        packed = isinstance(input, PackedSequence)
        if packed:
            input, batch_sizes, sorted_indices, unsorted_indices = input
            batched = True
            hx = self._zero_state(input, int(batch_sizes[0])) if hx is None else self.permute_hidden(
                hx, sorted_indices)
        else:
            batch_sizes = sorted_indices = unsorted_indices = None
            if input.dim() not in (2, 3):
                tensor = " tensor" if name == "RNN" else ""
                raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{tensor} instead")
            batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not batched:
                input = input.unsqueeze(batch_dim)
            if hx is None:
                hx = self._zero_state(input, input.size(batch_dim))
            else:
                hx = self._check_hx_dims(hx, batched)
        if not (packed and self.mode == "LSTM"):  # PyTorch leaves packed LSTM input to the kernel's checks
            self.check_forward_args(input, hx, batch_sizes)
        if packed:
            result = kernel(input, batch_sizes, hx, self._flat_weights, self.bias, self.num_layers, self.dropout,
                            self.training, self.bidirectional)
        else:
            result = kernel(input, hx, self._flat_weights, self.bias, self.num_layers, self.dropout,
                            self.training, self.bidirectional, self.batch_first)
        output, hidden = result[0], (result[1] if len(result) == 2 else result[1:])
        if packed:
            return (PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices),
                    self.permute_hidden(hidden, unsorted_indices))
        if not batched:
            output, hidden = output.squeeze(batch_dim), self._squeeze_hidden(hidden)
        return output, hidden

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("proj_size", 0), ("num_layers", 1), ("bias", True), ("batch_first", False),
                              ("dropout", 0), ("bidirectional", False)):
            value = getattr(self, name)
            if value != default:
                s += f", {name}={value}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        if "proj_size" not in state:  # modules pickled before PyTorch 1.8
            self.proj_size = 0


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False, device=None, dtype=None)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if self.nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(modes[self.nonlinearity], *args, **kwargs)


class LSTM(RNNBase):
    """Long short-term memory; gates (i, f, g, o) in that order in weight_ih/weight_hh. With
    ``proj_size > 0`` the hidden state is projected by ``weight_hr_l{k}`` (h has proj_size features).

    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0, device=None, dtype=None)``; the state is a tuple (h, c)."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes):
        num_directions = 2 if self.bidirectional else 1
        return (self.num_layers * num_directions, self._mini_batch(input, batch_sizes), self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden[0], self.get_expected_hidden_size(input, batch_sizes),
                               "Expected hidden[0] size {}, got {}")
        self.check_hidden_size(hidden[1], self.get_expected_cell_size(input, batch_sizes),
                               "Expected hidden[1] size {}, got {}")

    def permute_hidden(self, hx, permutation):
        if permutation is None:
            return hx
        return hx[0].index_select(1, permutation), hx[1].index_select(1, permutation)

    def _zero_state(self, input, max_batch_size):
        num_directions = 2 if self.bidirectional else 1
        real_hidden_size = self.proj_size if self.proj_size > 0 else self.hidden_size
        shape = self.num_layers * num_directions, max_batch_size
        kw = {"dtype": input.dtype, "device": input.device}
        return _zeros(*shape, real_hidden_size, **kw), _zeros(*shape, self.hidden_size, **kw)

    def _check_hx_dims(self, hx, batched: bool):
        h, c = hx[0], hx[1]  # indexed as PyTorch does: a lone tensor is split along dim 0
        expected = 3 if batched else 2
        if h.dim() != expected or c.dim() != expected:
            what = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {what} input, hx and cx should also be {expected}-D but got "
                               f"({h.dim()}-D, {c.dim()}-D) tensors")
        return (h, c) if batched else (h.unsqueeze(1), c.unsqueeze(1))

    def _squeeze_hidden(self, hidden):
        return hidden[0].squeeze(1), hidden[1].squeeze(1)


class GRU(RNNBase):
    """Gated recurrent unit; gates (r, z, n) in that order; n = tanh(x W_in + b_in + r * (h W_hn + b_hn)).

    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, device=None, dtype=None)``."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ------------------------------------------------------------------------------ cells

class RNNCellBase(Module):
    """weight_ih (num_chunks * hidden, input), weight_hh (num_chunks * hidden, hidden), bias_ih, bias_hh."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty(num_chunks * hidden_size, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(empty(num_chunks * hidden_size, hidden_size, device=device, dtype=dtype))
        for name in ("bias_ih", "bias_hh"):
            if bias:
                setattr(self, name, Parameter(empty(num_chunks * hidden_size, device=device, dtype=dtype)))
            else:
                self.register_parameter(name, None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_init(self)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _batched(self, name, input, hiddens):
        """Check the ranks (ValueError, PyTorch's messages); returns (input as 2-D, is_batched)."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        for label, h in hiddens:
            if h is not None and h.dim() not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {h.dim()}D instead")
        batched = input.dim() == 2
        return (input if batched else input.unsqueeze(0)), batched

    def _zeros(self, input):
        return _zeros(input.size(0), self.hidden_size, dtype=input.dtype, device=input.device)

    def _weights(self):
        return self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) (or relu)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        input, batched = self._batched("RNNCell", input, (("hidden", hx),))
        hx = self._zeros(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        cells = {"tanh": _vf_rnn.rnn_tanh_cell, "relu": _vf_rnn.rnn_relu_cell}
        if self.nonlinearity not in cells:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        ret = cells[self.nonlinearity](input, hx, *self._weights())
        return ret if batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step; the state is a tuple (h, c), zeros when not given."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        hiddens = () if hx is None else tuple((f"hx[{k}]", h) for k, h in enumerate(hx))
        input, batched = self._batched("LSTMCell", input, hiddens)
        if hx is None:
            zeros = self._zeros(input)
            hx = (zeros, zeros)
        elif not batched:
            hx = (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _vf_rnn.lstm_cell(input, hx, *self._weights())
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: h' = (1 - z) * n + z * h."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        input, batched = self._batched("GRUCell", input, (("hidden", hx),))
        hx = self._zeros(input) if hx is None else (hx if batched else hx.unsqueeze(0))
        ret = _vf_rnn.gru_cell(input, hx, *self._weights())
        return ret if batched else ret.squeeze(0)
