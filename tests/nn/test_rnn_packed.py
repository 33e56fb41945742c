"""nn.utils.rnn (pack_padded_sequence, pad_packed_sequence, pad_sequence, pack_sequence,
unpad/unpack, PackedSequence) and RNN/LSTM/GRU over packed input, against PyTorch 2.13.

Packing is compared field by field (data, batch_sizes, sorted/unsorted indices); the recurrent
layers over a packed batch must give torch's packed output and final states (sequences that end
early keep their own last state), and gradients flow through packing back to the padded input.
"""
import warnings

import numpy as np
import pytest
import torch

import ember
from oracle import check, check_raises, module_pair

LENGTHS = {"sorted": [5, 3, 3, 1], "unsorted": [2, 5, 1, 4], "equal": [4, 4, 4], "single": [3]}


def padded(lengths, batch_first, features=3, dtype="float64", seed=0):
    """A padded batch (T, B, F) (or (B, T, F)) whose padding positions hold garbage (not zeros), so
    a kernel that reads padding is caught."""
    rng = np.random.default_rng(seed)
    steps = max(lengths)
    x = rng.standard_normal((len(lengths), steps, features)).astype(dtype)
    return x if batch_first else np.ascontiguousarray(x.transpose(1, 0, 2))


def packed_fields(p):
    return (p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths", list(LENGTHS))
def test_pack_padded_sequence_fields_match_torch(lengths, batch_first):
    lens = LENGTHS[lengths]
    enforce = lengths != "unsorted"
    x = padded(lens, batch_first)
    for as_tensor in (False, True):
        check(lambda lib, x: packed_fields(lib.nn.utils.rnn.pack_padded_sequence(
            x, lib.tensor(lens) if as_tensor else lens, batch_first=batch_first, enforce_sorted=enforce)), x)
    # enforce_sorted=False on already sorted lengths still records the (identity) permutation
    check(lambda lib, x: packed_fields(lib.nn.utils.rnn.pack_padded_sequence(
        x, lens, batch_first=batch_first, enforce_sorted=False)), x)


@pytest.mark.parametrize("total_length", [None, 7])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths", list(LENGTHS))
def test_pad_packed_sequence_round_trip_matches_torch(lengths, batch_first, total_length):
    lens = LENGTHS[lengths]
    x = padded(lens, batch_first)

    def run(lib, x):
        rnn = lib.nn.utils.rnn
        p = rnn.pack_padded_sequence(x, lens, batch_first=batch_first, enforce_sorted=False)
        return rnn.pad_packed_sequence(p, batch_first=batch_first, padding_value=-7.5, total_length=total_length)
    out, out_lengths = check(run, x)
    assert out_lengths.tolist() == lens
    # the values inside each length are the input's (the rest is padding_value)
    values = out.numpy()
    for b, n in enumerate(lens):
        seq_in = x[b, :n] if batch_first else x[:n, b]
        seq_out = values[b] if batch_first else values[:, b]
        np.testing.assert_array_equal(seq_out[:n], seq_in)
        assert np.all(seq_out[n:] == -7.5)


@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_matches_torch(batch_first, padding_side):
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 2, 3)).astype(np.float32) for n in (2, 5, 1, 5)]
    check(lambda lib, *s: lib.nn.utils.rnn.pad_sequence(list(s), batch_first=batch_first, padding_value=9.0,
                                                         padding_side=padding_side), *seqs)
    # 1-D sequences, a generator, and a tensor (iterated along dim 0)
    check(lambda lib, a, b: lib.nn.utils.rnn.pad_sequence((s for s in (a, b)), batch_first=batch_first),
          np.arange(3.0), np.arange(5.0))
    check(lambda lib, m: lib.nn.utils.rnn.pad_sequence(m), rng.standard_normal((3, 4)))


def test_pack_sequence_and_unpack_and_unpad_match_torch():
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 3)) for n in (2, 4, 1)]
    check(lambda lib, *s: packed_fields(lib.nn.utils.rnn.pack_sequence(list(s), enforce_sorted=False)), *seqs)
    check(lambda lib, *s: lib.nn.utils.rnn.unpack_sequence(lib.nn.utils.rnn.pack_sequence(
        list(s), enforce_sorted=False)), *seqs)
    x = padded([4, 2, 1], batch_first=False)
    check(lambda lib, x: lib.nn.utils.rnn.unpad_sequence(x, lib.tensor([4, 2, 1])), x)
    check(lambda lib, x: lib.nn.utils.rnn.unpad_sequence(x, lib.tensor([4, 2, 1]), batch_first=True),
          np.ascontiguousarray(x.transpose(1, 0, 2)))


def test_invert_permutation_and_packed_sequence_methods():
    perm = np.array([2, 0, 3, 1])
    check(lambda lib, p: lib.nn.utils.rnn.invert_permutation(p), perm)
    assert ember.nn.utils.rnn.invert_permutation(None) is None
    p = ember.nn.utils.rnn.pack_sequence([ember.ones(3, 2), ember.ones(1, 2)])
    assert isinstance(p, tuple) and p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    q = p.double()
    assert q.data.dtype is ember.float64 and q.batch_sizes is p.batch_sizes and p.to(ember.float32) is p
    assert not p.is_cuda
    # the (data, batch_sizes) pair form
    r = ember.nn.utils.rnn.PackedSequence((p.data, p.batch_sizes))
    assert r.data is p.data and r.sorted_indices is None


def test_gradient_flows_through_pack_and_pad():
    x = padded([4, 3, 1], batch_first=True)
    grads = []
    for lib in (torch, ember):
        xt = lib.from_numpy(x.copy()).requires_grad_()
        rnn = lib.nn.utils.rnn
        p = rnn.pack_padded_sequence(xt * 2, [4, 3, 1], batch_first=True)
        out, _ = rnn.pad_packed_sequence(p, batch_first=True, padding_value=1.0)
        (out.sin() * lib.arange(12.0, dtype=lib.float64).reshape(1, 4, 3)).sum().backward()
        grads.append(xt.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12, atol=1e-14)
    assert np.all(grads[1][2, 1:] == 0)  # padding positions get no gradient


# ------------------------------------------------------------------------------ recurrent layers on packed input

MODULES = {
    "lstm": lambda nn: nn.LSTM(3, 4, num_layers=2, bidirectional=True),
    "lstm_proj": lambda nn: nn.LSTM(3, 4, proj_size=2, bidirectional=True),
    "gru": lambda nn: nn.GRU(3, 4, num_layers=2, bidirectional=True),
    "rnn_relu": lambda nn: nn.RNN(3, 4, nonlinearity="relu", bidirectional=True),
    "rnn_tanh_uni": lambda nn: nn.RNN(3, 4, num_layers=2),
}


@pytest.mark.parametrize("with_state", [False, True], ids=["zero-state", "h0"])
@pytest.mark.parametrize("lengths", ["sorted", "unsorted", "equal"])
@pytest.mark.parametrize("name", list(MODULES))
def test_recurrent_layers_over_packed_input_match_torch(name, lengths, with_state):
    """Packed output, final states (in the caller's batch order) and float64 gradients of the
    padded input, the initial states and every parameter."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tmod, emod = module_pair(MODULES[name], "float64")
    lens = LENGTHS[lengths]
    x = padded(lens, batch_first=True)
    is_lstm = isinstance(tmod, torch.nn.LSTM)
    rng = np.random.default_rng(1)
    layers = tmod.num_layers * (2 if tmod.bidirectional else 1)
    h_size = tmod.proj_size or tmod.hidden_size
    states = ([rng.standard_normal((layers, len(lens), h_size))]
              + ([rng.standard_normal((layers, len(lens), tmod.hidden_size))] if is_lstm else [])) if with_state else []
    results = []
    for lib, mod in ((torch, tmod), (ember, emod)):
        leaves = [lib.from_numpy(a.copy()).requires_grad_() for a in [x] + states]
        packed = lib.nn.utils.rnn.pack_padded_sequence(leaves[0], lens, batch_first=True,
                                                       enforce_sorted=lengths != "unsorted")
        hx = (tuple(leaves[1:]) if is_lstm else leaves[1]) if states else None
        out, hidden = mod(packed, hx)
        assert type(out).__name__ == "PackedSequence"
        hidden = list(hidden) if is_lstm else [hidden]
        padded_out, out_lens = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        flat = [out.data, padded_out] + hidden
        sum((v.cos() * (k + 1)).sum() for k, v in enumerate(flat)).backward()
        results.append((flat, [leaf.grad for leaf in leaves], [p.grad for p in mod.parameters()], out_lens))
    (t_vals, t_leaf, t_par, t_lens), (e_vals, e_leaf, e_par, e_lens) = results
    assert e_lens.tolist() == t_lens.tolist()
    for e, t in zip(e_vals + e_leaf + e_par, t_vals + t_leaf + t_par):
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_packed_output_keeps_indices_and_float32_matches():
    tmod, emod = module_pair(MODULES["gru"], "float32")
    x = padded(LENGTHS["unsorted"], batch_first=False, dtype="float32")
    outs = []
    for lib, mod in ((torch, tmod), (ember, emod)):
        p = lib.nn.utils.rnn.pack_padded_sequence(lib.from_numpy(x.copy()), LENGTHS["unsorted"],
                                                  enforce_sorted=False)
        out, h = mod(p)
        assert out.sorted_indices.tolist() == p.sorted_indices.tolist()
        assert out.unsorted_indices.tolist() == p.unsorted_indices.tolist()
        outs.append((out.data.detach().numpy(), h.detach().numpy()))
    for e, t in zip(outs[1], outs[0]):
        np.testing.assert_allclose(e, t, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ errors

def _pack(lib, x, lengths, **kw):
    return packed_fields(lib.nn.utils.rnn.pack_padded_sequence(x, lengths, **kw))


PACK_ERRORS = [  # (id, fn, arrays, match)
    ("unsorted", lambda lib, x: _pack(lib, x, [2, 3]), [np.zeros((3, 2, 4))], "must be sorted in decreasing order"),
    ("zero-length", lambda lib, x: _pack(lib, x, [3, 0]), [np.zeros((3, 2, 4))], "greater than 0"),
    ("negative-length", lambda lib, x: _pack(lib, x, [3, -1], enforce_sorted=False), [np.zeros((3, 2, 4))],
     "greater than 0"),
    ("lengths-count", lambda lib, x: _pack(lib, x, [3, 2, 1]), [np.zeros((3, 2, 4))], r"len\(lengths\)"),
    ("lengths-2d", lambda lib, x: _pack(lib, x, lib.tensor([[3, 2]])), [np.zeros((3, 2, 4))], "1D"),
    ("empty-input", lambda lib, x: _pack(lib, x, [0]), [np.zeros((0, 1, 4))], None),
    ("total-length", lambda lib, *s: lib.nn.utils.rnn.pad_packed_sequence(
        lib.nn.utils.rnn.pack_sequence(list(s)), total_length=2), [np.zeros((3, 2)), np.zeros((2, 2))],
     "Expected total_length to be at least"),
    ("pad-empty", lambda lib: lib.nn.utils.rnn.pad_sequence([]), [], "empty list of sequences"),
    ("pad-shapes", lambda lib, a, b: lib.nn.utils.rnn.pad_sequence([a, b]), [np.zeros((3, 2)), np.zeros((2, 3))],
     None),
    ("pad-side", lambda lib, a: lib.nn.utils.rnn.pad_sequence([a], padding_side="middle"), [np.zeros((3, 2))],
     "padding_side"),
    ("pad-scalar", lambda lib: lib.nn.utils.rnn.pad_sequence([lib.tensor(1.0)]), [], None),
    ("pad-not-iterable", lambda lib: lib.nn.utils.rnn.pad_sequence(3), [], "Expected iterable"),
    ("pack-sequence-unsorted", lambda lib, a, b: lib.nn.utils.rnn.pack_sequence([a, b]),
     [np.zeros((2, 2)), np.zeros((3, 2))], "sorted in decreasing order"),
    ("packed-hidden-size", lambda lib, a, b, h: lib.nn.GRU(2, 4)(lib.nn.utils.rnn.pack_sequence([a, b]), h),
     [np.zeros((3, 2), np.float32), np.zeros((2, 2), np.float32), np.zeros((1, 3, 4), np.float32)],
     "Expected hidden size"),
    ("packed-lstm-dtype", lambda lib, a: lib.nn.LSTM(2, 4)(lib.nn.utils.rnn.pack_sequence([a])),
     [np.zeros((3, 2))], None),
    ("packed-lstm-state-batch", lambda lib, a, b, h, c: lib.nn.LSTM(2, 4)(
        lib.nn.utils.rnn.pack_sequence([a, b]), (h, c)),
     [np.zeros((3, 2), np.float32), np.zeros((2, 2), np.float32), np.zeros((1, 3, 4), np.float32),
      np.zeros((1, 3, 4), np.float32)], None),
]


@pytest.mark.parametrize("fn, arrays, match", [e[1:] for e in PACK_ERRORS], ids=[e[0] for e in PACK_ERRORS])
def test_bad_packing_arguments_raise_torchs_exception_type(fn, arrays, match):
    check_raises(fn, *arrays, match=match)


def test_lengths_longer_than_the_input_are_refused():
    """PyTorch reads past the padded length here (its result holds other sequences' steps);
    ember refuses with a RuntimeError naming the lengths."""
    with pytest.raises(RuntimeError, match="longest length is 4 but the input has only 3 time steps"):
        ember.nn.utils.rnn.pack_padded_sequence(ember.zeros(3, 2, 4), [4, 2])
