"""nn.RNN / LSTM / GRU and their cells against PyTorch 2.13.

Every module is built in both libraries with torch's initial weights copied into ember; the same
inputs then give the same outputs and final states for every combination of layers (1, 2),
directions, batch_first, with/without initial state and batched/unbatched input, in float32 and
float64; in float64 the gradients of the input, the initial states and every parameter agree to
1e-10. State dicts have PyTorch's key names and load both ways; bad arguments raise PyTorch's
exception types. (Packed sequences: test_rnn_packed.py.)
"""
import itertools
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import ember
from oracle import check, check_raises, module_pair

INPUT, HIDDEN, PROJ, STEPS, BATCH = 5, 4, 3, 6, 3

# name -> (constructor in `nn` taking num_layers/bidirectional/batch_first, h size, c size or None)
MODULES = {
    "rnn_tanh": (lambda nn, **kw: nn.RNN(INPUT, HIDDEN, **kw), HIDDEN, None),
    "rnn_relu": (lambda nn, **kw: nn.RNN(INPUT, HIDDEN, nonlinearity="relu", **kw), HIDDEN, None),
    "lstm": (lambda nn, **kw: nn.LSTM(INPUT, HIDDEN, **kw), HIDDEN, HIDDEN),
    "lstm_proj": (lambda nn, **kw: nn.LSTM(INPUT, HIDDEN, proj_size=PROJ, **kw), PROJ, HIDDEN),
    "gru": (lambda nn, **kw: nn.GRU(INPUT, HIDDEN, **kw), HIDDEN, None),
}
CONFIGS = list(itertools.product([1, 2], [False, True], [False, True]))  # layers, bidirectional, batch_first


def config_id(c):
    layers, bidir, batch_first = c
    return f"l{layers}{'-bi' if bidir else ''}{'-bf' if batch_first else ''}"


def build_pair(name, config, dtype):
    layers, bidir, batch_first = config
    ctor = MODULES[name][0]
    with warnings.catch_warnings():  # LSTM with projections is not supported with oneDNN (torch's note)
        warnings.simplefilter("ignore")
        return module_pair(lambda nn: ctor(nn, num_layers=layers, bidirectional=bidir, batch_first=batch_first),
                           dtype)


def make_inputs(name, config, with_state, batched, dtype, seed=0):
    """(x, states) as NumPy arrays; states is None or a tuple (h0,) / (h0, c0)."""
    layers, bidir, batch_first = config
    rng = np.random.default_rng(seed)
    x_shape = (BATCH, STEPS, INPUT) if batch_first else (STEPS, BATCH, INPUT)
    x = rng.standard_normal(x_shape if batched else (STEPS, INPUT)).astype(dtype)
    if not with_state:
        return x, None
    _, h_size, c_size = MODULES[name]
    lead = (layers * (2 if bidir else 1),) + ((BATCH,) if batched else ())
    states = [rng.standard_normal(lead + (h_size,)).astype(dtype)]
    if c_size is not None:
        states.append(rng.standard_normal(lead + (c_size,)).astype(dtype))
    return x, tuple(states)


def to_lib(lib, arr, requires_grad=False):
    t = lib.from_numpy(arr.copy())
    return t.requires_grad_() if requires_grad else t


def call(lib, module, name, x, states, requires_grad=False):
    """Run the module; returns (leaves, [output, h_n(, c_n)])."""
    xt = to_lib(lib, x, requires_grad)
    leaves = [xt]
    args = [xt]
    if states is not None:
        st = [to_lib(lib, s, requires_grad) for s in states]
        leaves += st
        args.append(tuple(st) if MODULES[name][2] is not None else st[0])
    out, hidden = module(*args)
    return leaves, [out] + (list(hidden) if isinstance(hidden, tuple) else [hidden])


def assert_close(e, t, rtol, atol, what=""):
    assert tuple(e.shape) == tuple(t.shape), f"{what}: shape {tuple(e.shape)} != torch {tuple(t.shape)}"
    assert e.dtype.name == str(t.dtype).replace("torch.", ""), what
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol, err_msg=what)


# ------------------------------------------------------------------------------ forward

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "h0"])
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
@pytest.mark.parametrize("name", list(MODULES))
def test_forward_matches_torch(name, config, with_state, batched, dtype):
    tmod, emod = build_pair(name, config, dtype)
    x, states = make_inputs(name, config, with_state, batched, dtype)
    _, t_out = call(torch, tmod, name, x, states)
    _, e_out = call(ember, emod, name, x, states)
    rtol, atol = (1e-5, 1e-6) if dtype == "float32" else (1e-12, 1e-13)
    for what, e, t in zip(("output", "h_n", "c_n"), e_out, t_out):
        assert_close(e, t, rtol, atol, what)


# ------------------------------------------------------------------------------ backward

@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "h0"])
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
@pytest.mark.parametrize("name", list(MODULES))
def test_gradients_match_torch(name, config, with_state, batched):
    """float64: d(sum of outputs and final states, each weighted at random) w.r.t. the input,
    the initial states and every parameter."""
    tmod, emod = build_pair(name, config, "float64")
    x, states = make_inputs(name, config, with_state, batched, "float64")
    grads = {}
    for lib, mod in ((torch, tmod), (ember, emod)):
        leaves, outs = call(lib, mod, name, x, states, requires_grad=True)
        rng = np.random.default_rng(1)
        loss = sum((o * lib.from_numpy(rng.standard_normal(tuple(o.shape)))).sum() for o in outs)
        loss.backward()
        grads[lib.__name__] = ([leaf.grad for leaf in leaves], {k: p.grad for k, p in mod.named_parameters()})
    (e_leaves, e_params), (t_leaves, t_params) = grads["ember"], grads["torch"]
    for k, (e, t) in enumerate(zip(e_leaves, t_leaves)):
        assert_close(e, t, 1e-10, 1e-12, f"grad of {'input' if k == 0 else f'state {k - 1}'}")
    assert list(e_params) == list(t_params)
    for key in t_params:
        assert_close(e_params[key], t_params[key], 1e-10, 1e-12, f"grad of {key}")


@pytest.mark.parametrize("name", list(MODULES))
def test_without_bias_forward_and_gradients_match_torch(name):
    """bias=False: no bias_* parameters (torch's names), and the kernels run without them."""
    ctor = MODULES[name][0]
    config = (2, True, False)
    tmod, emod = module_pair(lambda nn: ctor(nn, num_layers=2, bidirectional=True, bias=False), "float64")
    assert list(emod.state_dict()) == list(tmod.state_dict())
    assert not any("bias" in k for k in emod.state_dict())
    x, states = make_inputs(name, config, True, True, "float64")
    results = []
    for lib, mod in ((torch, tmod), (ember, emod)):
        leaves, outs = call(lib, mod, name, x, states, requires_grad=True)
        sum((o.tanh() * (k + 1)).sum() for k, o in enumerate(outs)).backward()
        results.append(outs + [leaf.grad for leaf in leaves] + [p.grad for p in mod.parameters()])
    for e, t in zip(results[1], results[0]):
        assert_close(e, t, 1e-10, 1e-12)


def test_double_backward_through_lstm():
    """The kernels are ember ops, so grad-of-grad works: d/dx of |dL/dx|^2, float64."""
    tmod, emod = build_pair("lstm", (1, False, False), "float64")
    x, _ = make_inputs("lstm", (1, False, False), False, True, "float64")
    results = []
    for lib, mod in ((torch, tmod), (ember, emod)):
        xt = to_lib(lib, x, True)
        (g,) = lib.autograd.grad(mod(xt)[0].pow(2).sum(), xt, create_graph=True)
        (gg,) = lib.autograd.grad(g.pow(2).sum(), xt)
        results.append(gg)
    assert_close(results[1], results[0], 1e-9, 1e-11)


# ------------------------------------------------------------------------------ parameters

@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
@pytest.mark.parametrize("name", list(MODULES))
def test_state_dict_keys_shapes_and_repr_are_torchs(name, config):
    tmod, emod = build_pair(name, config, "float32")
    t_state, e_state = tmod.state_dict(), emod.state_dict()
    assert list(e_state) == list(t_state)
    assert [tuple(v.shape) for v in e_state.values()] == [tuple(v.shape) for v in t_state.values()]
    assert emod._flat_weights_names == tmod._flat_weights_names
    assert [[tuple(w.shape) for w in ws] for ws in emod.all_weights] == \
        [[tuple(w.shape) for w in ws] for ws in tmod.all_weights]
    assert repr(emod) == repr(tmod)


@pytest.mark.parametrize("name", list(MODULES))
def test_ember_state_dict_loads_into_torch(name):
    """ember's own init, loaded into torch, gives ember's outputs (the other direction of the
    round trip; torch -> ember is what every other test does)."""
    layers, bidir, batch_first = config = (2, True, False)
    ember.manual_seed(5)
    ctor = MODULES[name][0]
    emod = ctor(ember.nn, num_layers=layers, bidirectional=bidir, batch_first=batch_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmod = ctor(torch.nn, num_layers=layers, bidirectional=bidir, batch_first=batch_first)
    result = tmod.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in emod.state_dict().items()})
    assert not result.missing_keys and not result.unexpected_keys
    x, _ = make_inputs(name, config, False, True, "float32")
    _, t_out = call(torch, tmod, name, x, None)
    _, e_out = call(ember, emod, name, x, None)
    for e, t in zip(e_out, t_out):
        assert_close(e, t, 1e-5, 1e-6)


@pytest.mark.parametrize("build", [lambda nn: nn.LSTM(7, 16, 2, bidirectional=True, proj_size=5),
                                   lambda nn: nn.GRUCell(7, 16), lambda nn: nn.RNN(3, 25, bias=False)])
def test_init_is_uniform_in_one_over_sqrt_hidden_and_seeded(build):
    ember.manual_seed(11)
    first = build(ember.nn)
    ember.manual_seed(11)
    again = build(ember.nn)
    bound = 1 / np.sqrt(first.hidden_size)
    values = np.concatenate([p.detach().numpy().ravel() for p in first.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert values.std() == pytest.approx(bound / np.sqrt(3), rel=0.15)  # U(-b, b) has std b/sqrt(3)
    for (k, p), (k2, q) in zip(first.named_parameters(), again.named_parameters()):
        assert k == k2
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    # reset_parameters draws again
    before = values.copy()
    first.reset_parameters()
    after = np.concatenate([p.detach().numpy().ravel() for p in first.parameters()])
    assert not np.array_equal(before, after)


def test_flatten_parameters_and_module_conversion():
    tmod, emod = build_pair("lstm", (2, True, True), "float32")
    assert emod.flatten_parameters() is None and tmod.flatten_parameters() is None
    emod.double()
    assert all(p.dtype is ember.float64 for p in emod._flat_weights)
    x, _ = make_inputs("lstm", (2, True, True), False, True, "float64")
    _, t_out = call(torch, tmod.double(), "lstm", x, None)
    _, e_out = call(ember, emod, "lstm", x, None)
    for e, t in zip(e_out, t_out):
        assert_close(e, t, 1e-12, 1e-13)


def test_replaced_parameter_is_used():
    """_flat_weights follows the attribute (PyTorch re-reads it when weights change)."""
    tmod, emod = build_pair("gru", (1, False, False), "float64")
    w = np.random.default_rng(3).standard_normal((3 * HIDDEN, HIDDEN))
    tmod.weight_hh_l0 = torch.nn.Parameter(torch.from_numpy(w.copy()))
    emod.weight_hh_l0 = ember.nn.Parameter(ember.from_numpy(w.copy()))
    x, _ = make_inputs("gru", (1, False, False), False, True, "float64")
    for e, t in zip(call(ember, emod, "gru", x, None)[1], call(torch, tmod, "gru", x, None)[1]):
        assert_close(e, t, 1e-12, 1e-13)


# ------------------------------------------------------------------------------ dropout between layers

@pytest.mark.parametrize("name", ["lstm", "gru", "rnn_tanh"])
def test_dropout_one_matches_torch_and_eval_ignores_dropout(name):
    """p=1 zeroes the second layer's input: deterministic, so torch is the oracle; in eval mode
    dropout is off and both equal the plain network."""
    ctor = MODULES[name][0]
    tmod, emod = module_pair(lambda nn: ctor(nn, num_layers=2, dropout=1.0), "float64")
    x, _ = make_inputs(name, (2, False, False), False, True, "float64")
    for train in (True, False):
        tmod.train(train), emod.train(train)
        for e, t in zip(call(ember, emod, name, x, None)[1], call(torch, tmod, name, x, None)[1]):
            assert_close(e, t, 1e-12, 1e-13)


def test_dropout_is_reproducible_with_the_seed_and_only_in_training():
    emod = ember.nn.LSTM(INPUT, HIDDEN, num_layers=3, dropout=0.5)
    x = ember.from_numpy(make_inputs("lstm", (3, False, False), False, True, "float32")[0])
    runs = []
    for seed in (1, 1, 2):
        ember.manual_seed(seed)
        runs.append(emod(x)[0].detach().numpy())
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])
    emod.eval()
    plain = emod(x)[0].detach().numpy()
    assert not np.array_equal(plain, runs[0])
    np.testing.assert_array_equal(emod(x)[0].detach().numpy(), plain)


def test_dropout_on_one_layer_warns_as_torch():
    for lib in (torch, ember):
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
            lib.nn.GRU(3, 4, dropout=0.2)


# ------------------------------------------------------------------------------ cells

CELLS = {
    "rnn_cell_tanh": (lambda nn, bias: nn.RNNCell(INPUT, HIDDEN, bias=bias), False),
    "rnn_cell_relu": (lambda nn, bias: nn.RNNCell(INPUT, HIDDEN, bias=bias, nonlinearity="relu"), False),
    "lstm_cell": (lambda nn, bias: nn.LSTMCell(INPUT, HIDDEN, bias=bias), True),
    "gru_cell": (lambda nn, bias: nn.GRUCell(INPUT, HIDDEN, bias=bias), False),
}


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "hx"])
@pytest.mark.parametrize("name", list(CELLS))
def test_cells_forward_and_gradients_match_torch(name, with_state, batched, bias):
    ctor, is_lstm = CELLS[name]
    tmod, emod = module_pair(lambda nn: ctor(nn, bias), "float64")
    assert list(emod.state_dict()) == list(tmod.state_dict()) and repr(emod) == repr(tmod)
    rng = np.random.default_rng(0)
    lead = (BATCH,) if batched else ()
    x = rng.standard_normal(lead + (INPUT,))
    states = [rng.standard_normal(lead + (HIDDEN,)) for _ in range(2 if is_lstm else 1)] if with_state else []
    results = []
    for lib, mod in ((torch, tmod), (ember, emod)):
        leaves = [to_lib(lib, a, True) for a in [x] + states]
        args = [leaves[0]] + ([tuple(leaves[1:]) if is_lstm else leaves[1]] if states else [])
        out = mod(*args)
        outs = list(out) if is_lstm else [out]
        sum((o * (k + 1.5)).sin().sum() for k, o in enumerate(outs)).backward()
        results.append((outs, [leaf.grad for leaf in leaves], [p.grad for p in mod.parameters()]))
    (t_outs, t_leaf, t_par), (e_outs, e_leaf, e_par) = results
    for e, t in zip(e_outs + e_leaf + e_par, t_outs + t_leaf + t_par):
        assert_close(e, t, 1e-10, 1e-12)


@pytest.mark.parametrize("fn", ["lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"])
@pytest.mark.parametrize("bias", [True, False])
def test_functional_cells_match_torch(fn, bias):
    chunks = {"lstm_cell": 4, "gru_cell": 3}.get(fn, 1)
    rng = np.random.default_rng(0)
    x, h, c = rng.standard_normal((3, INPUT)), rng.standard_normal((3, HIDDEN)), rng.standard_normal((3, HIDDEN))
    w_ih, w_hh = rng.standard_normal((chunks * HIDDEN, INPUT)), rng.standard_normal((chunks * HIDDEN, HIDDEN))
    b_ih, b_hh = rng.standard_normal(chunks * HIDDEN), rng.standard_normal(chunks * HIDDEN)

    def run(lib, x, h, c, w_ih, w_hh, b_ih, b_hh):
        hx = (h, c) if fn == "lstm_cell" else h
        return getattr(lib, fn)(x, hx, w_ih, w_hh, *((b_ih, b_hh) if bias else ()))
    check(run, x, h, c, w_ih, w_hh, b_ih, b_hh)


@pytest.mark.parametrize("fn", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_functional_rnn_matches_torch(fn):
    """torch.lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first), the call nn.LSTM makes through _VF."""
    name = fn
    tmod, _ = build_pair(name, (2, True, True), "float64")
    params = [p.detach().numpy().copy() for p in tmod._flat_weights]
    x, states = make_inputs(name, (2, True, True), True, True, "float64")

    def run(lib, x, *rest):
        hx = rest[:len(states)]
        return getattr(lib, fn)(x, hx if fn == "lstm" else hx[0], list(rest[len(states):]), True, 2, 0.0, False,
                                True, True)
    check(run, x, *states, *params, rtol=1e-12, atol=1e-13)


# ------------------------------------------------------------------------------ errors

def _seq(*shape, dtype="float32"):
    return np.zeros(shape, dtype=dtype)


ERRORS = [  # (id, fn(lib, *arrays), arrays, message ember's error must match)
    ("input-size", lambda lib, x: lib.nn.LSTM(10, 4, 2)(x), [_seq(3, 2, 5)],
     r"input.size\(-1\) must be equal to input_size. Expected 10, got 5"),
    ("input-size-gru-unbatched", lambda lib, x: lib.nn.GRU(10, 4)(x), [_seq(3, 5)], "Expected 10, got 5"),
    ("input-dtype", lambda lib, x: lib.nn.LSTM(10, 4)(x), [_seq(3, 2, 10, dtype="float64")], "does not match"),
    ("input-4d-lstm", lambda lib, x: lib.nn.LSTM(10, 4)(x), [_seq(3, 2, 10, 1)], "LSTM: Expected input to be 2D"),
    ("input-4d-rnn", lambda lib, x: lib.nn.RNN(10, 4)(x), [_seq(3, 2, 10, 1)], "RNN: Expected input to be 2D"),
    ("input-1d-gru", lambda lib, x: lib.nn.GRU(10, 4)(x), [_seq(10)], "GRU: Expected input to be 2D"),
    ("empty-sequence", lambda lib, x: lib.nn.LSTM(10, 4, 2)(x), [_seq(0, 2, 10)], "sequence length"),
    ("hidden-size", lambda lib, x, h: lib.nn.GRU(10, 4)(x, h), [_seq(3, 2, 10), _seq(1, 3, 4)],
     r"Expected hidden size \(1, 2, 4\), got \[1, 3, 4\]"),
    ("hidden-layers", lambda lib, x, h: lib.nn.RNN(10, 4, 2)(x, h), [_seq(3, 2, 10), _seq(1, 2, 4)],
     "Expected hidden size"),
    ("lstm-cell-size", lambda lib, x, h, c: lib.nn.LSTM(10, 4, 2)(x, (h, c)),
     [_seq(3, 2, 10), _seq(2, 2, 4), _seq(2, 3, 4)], r"Expected hidden\[1\] size \(2, 2, 4\), got \[2, 3, 4\]"),
    ("lstm-proj-hidden-size", lambda lib, x, h, c: lib.nn.LSTM(10, 4, proj_size=2)(x, (h, c)),
     [_seq(3, 2, 10), _seq(1, 2, 4), _seq(1, 2, 4)], r"Expected hidden\[0\] size \(1, 2, 2\)"),
    ("lstm-2d-states-batched", lambda lib, x, h, c: lib.nn.LSTM(10, 4)(x, (h, c)),
     [_seq(3, 2, 10), _seq(2, 4), _seq(2, 4)], "hx and cx should also be 3-D"),
    ("lstm-3d-states-unbatched", lambda lib, x, h, c: lib.nn.LSTM(10, 4)(x, (h, c)),
     [_seq(3, 10), _seq(1, 1, 4), _seq(1, 1, 4)], "hx and cx should also be 2-D"),
    ("lstm-one-state", lambda lib, x, h: lib.nn.LSTM(10, 4)(x, (h,)), [_seq(3, 2, 10), _seq(1, 2, 4)], None),
    ("gru-2d-state-batched", lambda lib, x, h: lib.nn.GRU(10, 4)(x, h), [_seq(3, 2, 10), _seq(2, 4)],
     "hx should also be 3-D"),
    ("rnn-3d-state-unbatched", lambda lib, x, h: lib.nn.RNN(10, 4)(x, h), [_seq(3, 10), _seq(1, 1, 4)],
     "hx should also be 2-D"),
    ("state-dtype", lambda lib, x, h: lib.nn.GRU(10, 4)(x, h), [_seq(3, 2, 10), _seq(1, 2, 4, dtype="float64")],
     None),
    ("proj-too-big", lambda lib: lib.nn.LSTM(10, 4, proj_size=4), [], "proj_size has to be smaller"),
    ("proj-negative", lambda lib: lib.nn.LSTM(10, 4, proj_size=-1), [], "proj_size should be a positive"),
    ("proj-on-gru", lambda lib: lib.nn.GRU(10, 4, proj_size=2), [], "only supported for LSTM"),
    ("proj-on-rnn", lambda lib: lib.nn.RNN(10, 4, proj_size=2), [], "only supported for LSTM"),
    ("dropout-range", lambda lib: lib.nn.GRU(10, 4, 2, dropout=2), [], "dropout should be a number"),
    ("dropout-bool", lambda lib: lib.nn.GRU(10, 4, 2, dropout=True), [], "dropout should be a number"),
    ("hidden-float", lambda lib: lib.nn.LSTM(10, 4.0), [], "hidden_size should be of type int"),
    ("hidden-zero", lambda lib: lib.nn.LSTM(10, 0), [], "hidden_size must be greater than zero"),
    ("input-zero", lambda lib: lib.nn.RNN(0, 4), [], "input_size must be greater than zero"),
    ("layers-zero", lambda lib: lib.nn.GRU(10, 4, num_layers=0), [], "num_layers must be greater than zero"),
    ("bias-int", lambda lib: lib.nn.GRU(10, 4, bias=1), [], "bias should be of type bool"),
    ("batch-first-int", lambda lib: lib.nn.GRU(10, 4, batch_first=1), [], "batch_first should be of type bool"),
    ("nonlinearity", lambda lib: lib.nn.RNN(10, 4, nonlinearity="sigmoid"), [], "Unknown nonlinearity 'sigmoid'"),
    ("nonlinearity-positional", lambda lib: lib.nn.RNN(10, 4, 1, "gelu"), [], "Unknown nonlinearity 'gelu'"),
    ("cell-input-size", lambda lib, x: lib.nn.LSTMCell(5, 4)(x), [_seq(3, 6)],
     "input has inconsistent input_size: got 6 expected 5"),
    ("cell-batch", lambda lib, x, h, c: lib.nn.LSTMCell(5, 4)(x, (h, c)), [_seq(3, 5), _seq(2, 4), _seq(2, 4)],
     "Input batch size 3 doesn't match hidden0 batch size 2"),
    ("cell-hidden-size", lambda lib, x, h: lib.nn.GRUCell(5, 4)(x, h), [_seq(3, 5), _seq(3, 3)],
     "hidden0 has inconsistent hidden_size: got 3, expected 4"),
    ("cell-unbatched-state-mismatch", lambda lib, x, h: lib.nn.GRUCell(5, 4)(x, h), [_seq(3, 5), _seq(4)],
     "batch size"),
    ("cell-3d-input", lambda lib, x: lib.nn.RNNCell(5, 4)(x), [_seq(1, 3, 5)], "RNNCell: Expected input to be 1D"),
    ("cell-3d-hidden", lambda lib, x, h: lib.nn.GRUCell(5, 4)(x, h), [_seq(3, 5), _seq(1, 3, 4)],
     "GRUCell: Expected hidden to be 1D"),
    ("lstm-cell-3d-hx", lambda lib, x, h, c: lib.nn.LSTMCell(5, 4)(x, (h, c)), [_seq(3, 5), _seq(3, 4), _seq(1, 3, 4)],
     r"LSTMCell: Expected hx\[1\] to be 1D or 2D"),
    ("lstm-cell-tensor-state", lambda lib, x, h: lib.nn.LSTMCell(5, 4)(x, h), [_seq(3, 5), _seq(3, 4)],
     "must be tuple of Tensors"),
    ("lstm-cell-one-state", lambda lib, x, h: lib.nn.LSTMCell(5, 4)(x, (h,)), [_seq(3, 5), _seq(3, 4)],
     "expects two hidden states"),
    ("cell-dtype", lambda lib, x: lib.nn.RNNCell(5, 4)(x), [_seq(3, 5, dtype="float64")], None),
    ("rnn-cell-nonlinearity", lambda lib, x: lib.nn.RNNCell(5, 4, nonlinearity="foo")(x), [_seq(3, 5)],
     "Unknown nonlinearity: foo"),
]


@pytest.mark.parametrize("fn, arrays, match", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_bad_arguments_raise_torchs_exception_type(fn, arrays, match):
    check_raises(fn, *arrays, match=match)


def test_zero_batch_runs_as_in_torch():
    check(lambda lib, x: lib.nn.GRU(5, 4, 2)(x)[0].shape, _seq(3, 0, 5))


# ------------------------------------------------------------------------------ capture

def _lstm_head_model(nn):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(INPUT, HIDDEN, 2, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(2 * HIDDEN, 2)

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.fc(out[:, -1])
    return Model()


def test_symbolic_trace_keeps_the_lstm_a_leaf_and_compile_has_no_graph_break():
    tmod, emod = module_pair(_lstm_head_model)
    x = make_inputs("lstm", (2, True, True), False, True, "float32")[0]
    expected = tmod(torch.from_numpy(x.copy())).detach().numpy()
    gm = ember.fx.symbolic_trace(emod)
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == ["rnn", "fc"]
    explained = ember._dynamo.explain(emod)(ember.from_numpy(x.copy()))
    assert explained.graph_break_count == 0
    compiled = ember.compile(emod)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "backend 'inductor' is not built yet"
        for fn in (gm, compiled, emod):
            np.testing.assert_allclose(fn(ember.from_numpy(x.copy())).detach().numpy(), expected,
                                       rtol=1e-5, atol=1e-6)


def test_runs_under_no_grad_and_inference_mode():
    tmod, emod = build_pair("gru", (2, True, False), "float32")
    x, _ = make_inputs("gru", (2, True, False), False, True, "float32")
    expected = tmod(torch.from_numpy(x))[0].detach().numpy()
    for ctx in (ember.no_grad, ember.inference_mode):
        with ctx():
            out, h = emod(ember.from_numpy(x.copy()))
        assert not out.requires_grad and out.grad_fn is None
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_import_ember_does_not_load_the_recurrent_modules_and_first_use_does():
    code = ("import sys, ember; rnn = ('ember.nn.modules.rnn', 'ember.nn._vf_rnn', 'ember.nn.utils.rnn'); "
            "print(sorted(m for m in rnn if m in sys.modules)); ember.nn.LSTM; ember.nn.utils.rnn; "
            "print(sorted(m for m in rnn if m in sys.modules)); print(ember.lstm_cell.__module__, "
            "'RNNCell' in dir(ember.nn), ember.nn.modules.GRU is ember.nn.GRU)")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.splitlines() == [
        "[]", "['ember.nn._vf_rnn', 'ember.nn.modules.rnn', 'ember.nn.utils.rnn']", "ember.nn._vf_rnn True True"]
    with pytest.raises(AttributeError):
        ember.nn.NoSuchLayer  # noqa: B018  (the lazy lookup still refuses unknown names)
