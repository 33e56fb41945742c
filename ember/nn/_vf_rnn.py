"""PyTorch's recurrent kernels (``torch.lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu`` and their
``*_cell`` forms, which nn.RNN/LSTM/GRU and the cells call through ``torch._VF``), composed from
ember ops so that autograd, the profiler and the tracers see ordinary operators.

A layer runs as ATen's CPU kernels do: the input projection of every time step is one matmul over
the whole sequence (``x W_ih^T + b``), and only the recurrence ``h W_hh^T`` is a Python loop over
time. Packed sequences (``batch_sizes``) run the same loop: at each step only the first
``batch_sizes[t]`` rows are live, so a forward direction drops rows whose sequence ended (keeping
their final state) and a reverse direction adds rows, from the initial state, as sequences start.
"""
from __future__ import annotations

from .. import compiler as _compiler, ops as _ops  # noqa: F401  (ember's op table is registered by the time this loads)
from . import _lstm_native, functional as F
from ..ops.registry import FUNCTIONS as _FUNCTIONS

_T = _FUNCTIONS[""]  # torch-namespace bindings: addmm, sigmoid, tanh, cat, stack ...
_addmm, _sigmoid, _tanh, _relu = _T["addmm"], _T["sigmoid"], _T["tanh"], _T["relu"]
_cat, _stack = _T["cat"], _T["stack"]

# mode -> (gates per hidden unit, the state is (h, c))
MODES = {"LSTM": (4, True), "GRU": (3, False), "RNN_TANH": (1, False), "RNN_RELU": (1, False)}


# ------------------------------------------------------------------------------ one time step
# Each step function takes the step's input projection (a tuple of tensors), the state tuple and
# the layer's recurrent weights; it returns (output, new state). `bias_hh` is already folded into
# the input projection where it only adds (LSTM, RNN); GRU keeps it because r multiplies it.

def _lstm_step(x, state, w):
    h, c = state
    i, f, g, o = _addmm(x[0], h, w["hh_t"]).chunk(4, 1)
    c = _sigmoid(f) * c + _sigmoid(i) * _tanh(g)
    h = _sigmoid(o) * _tanh(c)
    if w["hr_t"] is not None:
        h = h.mm(w["hr_t"])
    return h, (h, c)


def _gru_step(x, state, w):
    (h,) = state
    x_rz, x_n = x
    hh = h.mm(w["hh_t"]) if w["b_hh"] is None else _addmm(w["b_hh"], h, w["hh_t"])
    h_rz, h_n = hh.split(w["split"], 1)
    r, z = _sigmoid(x_rz + h_rz).chunk(2, 1)
    n = _tanh(x_n + r * h_n)
    h = n + z * (h - n)
    return h, (h,)


def _rnn_tanh_step(x, state, w):
    h = _tanh(_addmm(x[0], state[0], w["hh_t"]))
    return h, (h,)


def _rnn_relu_step(x, state, w):
    h = _relu(_addmm(x[0], state[0], w["hh_t"]))
    return h, (h,)


_STEPS = {"LSTM": _lstm_step, "GRU": _gru_step, "RNN_TANH": _rnn_tanh_step, "RNN_RELU": _rnn_relu_step}


# ------------------------------------------------------------------------------ one layer, one direction

def _input_projection(mode, x, weights, hidden_size):
    """The step inputs of the whole sequence at once: (T, B, G) or, packed, (N, G), as the
    tuple of parts a step function takes."""
    w_ih, w_hh, b_ih, b_hh = weights[:4]
    if mode == "GRU":
        gi = F.linear(x, w_ih, b_ih)
        return gi.split([2 * hidden_size, hidden_size], -1)
    bias = b_ih if b_hh is None else b_hh if b_ih is None else b_ih + b_hh
    return (F.linear(x, w_ih, bias),)


def _time_steps(parts, batch_sizes):
    """[(part_0[t], part_1[t], ...) for each t]: the padded layout unbinds dim 0, the packed
    layout splits its rows by batch size."""
    per_part = [p.unbind(0) if batch_sizes is None else p.split(batch_sizes, 0) for p in parts]
    return list(zip(*per_part))


def _run_direction(mode, steps, state, w, batch_sizes, reverse):
    """The recurrence over `steps`; returns (outputs in time order, final state)."""
    step = _STEPS[mode]
    outs = []
    if batch_sizes is None:
        for x in (reversed(steps) if reverse else steps):
            out, state = step(x, state, w)
            outs.append(out)
    elif not reverse:
        finished = []  # states of rows whose sequence ended, latest last
        for x in steps:
            live, rows = x[0].shape[0], state[0].shape[0]
            if live < rows:
                finished.append(tuple(s.narrow(0, live, rows - live) for s in state))
                state = tuple(s.narrow(0, 0, live) for s in state)
            out, state = step(x, state, w)
            outs.append(out)
        if finished:
            state = tuple(_cat([s] + [f[k] for f in reversed(finished)]) for k, s in enumerate(state))
    else:
        initial = state
        state = tuple(s.narrow(0, 0, steps[-1][0].shape[0]) for s in state)
        for x in reversed(steps):
            live, rows = x[0].shape[0], state[0].shape[0]
            if live > rows:  # sequences that start at this step join with their initial state
                state = tuple(_cat([s, s0.narrow(0, rows, live - rows)]) for s, s0 in zip(state, initial))
            out, state = step(x, state, w)
            outs.append(out)
    if reverse:
        outs.reverse()
    return outs, state


def _composed_lstm_layer(xproj, h0, c0, w_hh, reverse):
    """The LSTM layer that _lstm_native fuses, in ember ops (its create_graph backward)."""
    w = {"hh_t": w_hh.t(), "b_hh": None, "hr_t": None}
    outs, (h, c) = _run_direction("LSTM", _time_steps((xproj,), None), (h0, c0), w, None, reverse)
    return _stack(outs), h, c


# ------------------------------------------------------------------------------ the whole network

def _layer_weights(params, has_biases, num_layers, num_directions):
    """Split the flat parameter list into per-(layer, direction) tuples (w_ih, w_hh, b_ih, b_hh,
    w_hr); PyTorch infers projections from the count, as we do."""
    per = len(params) // (num_layers * num_directions)
    if per * num_layers * num_directions != len(params) or per not in ((4, 5) if has_biases else (2, 3)):
        raise RuntimeError(f"rnn: expected {num_layers * num_directions} groups of "
                           f"{'4 or 5' if has_biases else '2 or 3'} weights, got {len(params)} weights")
    out = []
    for k in range(num_layers * num_directions):
        g = list(params[k * per:(k + 1) * per])
        w_ih, w_hh = g[0], g[1]
        b_ih, b_hh = (g[2], g[3]) if has_biases else (None, None)
        w_hr = g[-1] if per in (3, 5) else None
        out.append((w_ih, w_hh, b_ih, b_hh, w_hr))
    return out


def _check_states(input, batch_sizes, hx, layers, batch_first):
    """The states must be (layers * directions, batch, size) in the input's dtype: a wrong batch
    size would otherwise be read as finished sequences of a packed batch."""
    if input.dim() != (2 if batch_sizes is not None else 3):
        raise RuntimeError(f"rnn: input must have {2 if batch_sizes is not None else 3} dimensions, "
                           f"got {input.dim()}")
    batch = int(batch_sizes[0]) if batch_sizes is not None else input.shape[0 if batch_first else 1]
    w_hh = layers[0][1]
    sizes = (w_hh.shape[1], w_hh.shape[0] // 4)  # h (projected when w_hr exists), then LSTM's c
    for k, (s, size) in enumerate(zip(hx, sizes)):
        expected = (len(layers), batch, size)
        if tuple(s.shape) != expected:
            raise RuntimeError(f"rnn: expected hidden[{k}] of size {expected}, got {list(s.shape)}")
        if s.dtype != input.dtype:
            raise RuntimeError(f"rnn: expected hidden[{k}] of dtype {input.dtype}, got {s.dtype}")


def run_rnn(mode, input, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional,
            batch_first):
    """The body of torch.lstm/gru/rnn_tanh/rnn_relu. `hx` is (h0,) or (h0, c0), each of shape
    (num_layers * num_directions, B, H). Returns (output, h_n) or (output, h_n, c_n)."""
    if batch_sizes is None and input.dim() == 3 and input.shape[1 if batch_first else 0] == 0:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    num_directions = 2 if bidirectional else 1
    layers = _layer_weights(params, has_biases, num_layers, num_directions)
    _check_states(input, batch_sizes, hx, layers, batch_first)
    if batch_first and batch_sizes is None:
        input = input.transpose(0, 1)
    sizes = None if batch_sizes is None else [int(b) for b in batch_sizes.tolist()]
    initial = [s.unbind(0) for s in hx]
    finals = [[] for _ in hx]
    x = input
    for layer in range(num_layers):
        outputs = []
        for direction in range(num_directions):
            k = layer * num_directions + direction
            w_ih, w_hh, b_ih, b_hh, w_hr = layers[k]
            hidden_size = w_hh.shape[0] // MODES[mode][0]
            w = {"hh_t": w_hh.t(), "b_hh": b_hh, "hr_t": None if w_hr is None else w_hr.t(),
                 "split": [2 * hidden_size, hidden_size]}
            proj = _input_projection(mode, x, layers[k], hidden_size)
            fused = None
            # one native node per layer in eager; ember.compile captures the composed ops
            if mode == "LSTM" and sizes is None and w_hr is None and not _compiler.is_compiling():
                fused = _lstm_native.run_layer(proj[0], initial[0][k], initial[1][k], w_hh, direction == 1,
                                               _composed_lstm_layer)
            if fused is not None:
                out, state = fused
                outputs.append(out)
            else:
                outs, state = _run_direction(mode, _time_steps(proj, sizes), tuple(s[k] for s in initial), w,
                                             sizes, direction == 1)
                outputs.append(_stack(outs) if sizes is None else _cat(outs))
            for final, s in zip(finals, state):
                final.append(s)
        x = outputs[0] if num_directions == 1 else _cat(outputs, -1)
        if dropout > 0 and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    if batch_first and batch_sizes is None:
        x = x.transpose(0, 1)
    return (x,) + tuple(_stack(f) for f in finals)


def _rnn_entry(mode):
    """torch.<mode>(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) or, for packed data, (data, batch_sizes, hx, params, has_biases, num_layers,
    dropout, train, bidirectional)."""
    is_lstm = MODES[mode][1]

    def entry(input, *args):
        if isinstance(args[2], (list, tuple)):  # the packed overload: batch_sizes comes second
            batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional = args
            batch_first = False
        else:
            hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first = args
            batch_sizes = None
        hx = tuple(hx) if is_lstm else (hx,)
        out = run_rnn(mode, input, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                      bidirectional, batch_first)
        return out if is_lstm else (out[0], out[1])
    entry.__name__ = mode.lower()
    return entry


lstm, gru, rnn_tanh, rnn_relu = (_rnn_entry(m) for m in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU"))


# ------------------------------------------------------------------------------ the cells

def _check_cell(input, hiddens, w_ih, w_hh):
    """ATen's checks of a cell's input and hidden states (RuntimeError, its messages)."""
    if input.size(1) != w_ih.size(1):
        raise RuntimeError(f"input has inconsistent input_size: got {input.size(1)} expected {w_ih.size(1)}")
    for k, h in enumerate(hiddens):
        if input.size(0) != h.size(0):
            raise RuntimeError(f"Input batch size {input.size(0)} doesn't match hidden{k} batch size {h.size(0)}")
        if h.size(1) != w_hh.size(1):
            raise RuntimeError(f"hidden{k} has inconsistent hidden_size: got {h.size(1)}, expected {w_hh.size(1)}")


def _cell_weights(w_hh, b_hh):
    hidden_size = w_hh.size(1)
    return {"hh_t": w_hh.t(), "b_hh": b_hh, "hr_t": None, "split": [2 * hidden_size, hidden_size]}


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.lstm_cell: one LSTM step; returns (h', c')."""
    if not isinstance(hx, (tuple, list)):
        raise TypeError(f"lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not {type(hx).__name__}")
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell(input, hx, w_ih, w_hh)
    gi = _input_projection("LSTM", input, (w_ih, w_hh, b_ih, b_hh), w_hh.size(1))
    return _lstm_step(gi, tuple(hx), _cell_weights(w_hh, b_hh))[1]


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.gru_cell: one GRU step; returns h'."""
    _check_cell(input, (hx,), w_ih, w_hh)
    gi = _input_projection("GRU", input, (w_ih, w_hh, b_ih, b_hh), w_hh.size(1))
    return _gru_step(gi, (hx,), _cell_weights(w_hh, b_hh))[0]


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_tanh_cell: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    _check_cell(input, (hx,), w_ih, w_hh)
    gi = _input_projection("RNN_TANH", input, (w_ih, w_hh, b_ih, b_hh), w_hh.size(1))
    return _rnn_tanh_step(gi, (hx,), _cell_weights(w_hh, b_hh))[0]


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """torch.rnn_relu_cell: relu(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    _check_cell(input, (hx,), w_ih, w_hh)
    gi = _input_projection("RNN_RELU", input, (w_ih, w_hh, b_ih, b_hh), w_hh.size(1))
    return _rnn_relu_step(gi, (hx,), _cell_weights(w_hh, b_hh))[0]


__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"]
