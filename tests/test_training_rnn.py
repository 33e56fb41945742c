"""Recurrent training programs in ember against PyTorch 2.13 (the tests/test_training.py style):
the same models, weights and batches, the loss compared at every step.

(a) a word-language-model LSTM (embedding -> 2-layer LSTM -> linear decoder, cross-entropy, plain
    SGD with clip_grad_norm_, the hidden state carried across batches and detached, as PyTorch's
    word_language_model example does);
(b) a sequence classifier: a bidirectional GRU over a packed batch of variable-length sequences
    (pack_padded_sequence, enforce_sorted=False), its final states concatenated into a linear
    head, trained with Adam.

Each program is written once against the PyTorch API and run with ``lib`` = torch and ember.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from oracle import module_pair

STEPS = 10
VOCAB, BPTT, BATCH = 40, 12, 8


def markov_tokens(n, seed=0):
    """Tokens from a sparse random Markov chain: a stream an LSTM can learn within a few steps."""
    rng = np.random.default_rng(seed)
    successors = rng.integers(0, VOCAB, size=(VOCAB, 3))
    tokens = [0]
    for _ in range(n - 1):
        tokens.append(successors[tokens[-1], rng.integers(0, 3)])
    return np.array(tokens, dtype=np.int64)


def lm_batches():
    """(input, target) pairs of shape (BPTT, BATCH): the stream cut into BATCH columns, as
    word_language_model's batchify/get_batch do."""
    stream = markov_tokens(BATCH * (STEPS * BPTT + 1)).reshape(BATCH, -1).T  # (length, BATCH)
    return [(np.ascontiguousarray(stream[i:i + BPTT]), np.ascontiguousarray(stream[i + 1:i + 1 + BPTT]))
            for i in range(0, STEPS * BPTT, BPTT)]


def lstm_lm(nn):
    class RNNModel(nn.Module):
        def __init__(self, ntoken=VOCAB, ninp=16, nhid=32, nlayers=2):
            super().__init__()
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers)
            self.decoder = nn.Linear(nhid, ntoken)
            self.nlayers, self.nhid = nlayers, nhid

        def forward(self, input, hidden):
            output, hidden = self.rnn(self.encoder(input), hidden)
            return self.decoder(output).view(-1, VOCAB), hidden

        def init_hidden(self, lib, bsz):
            return (lib.zeros(self.nlayers, bsz, self.nhid), lib.zeros(self.nlayers, bsz, self.nhid))
    return RNNModel()


def train_lm(lib, model, batches, lr=2.0, clip=0.25):
    """word_language_model's train(): SGD by hand after clip_grad_norm_, hidden repackaged."""
    criterion = lib.nn.CrossEntropyLoss()
    model.train()
    hidden = model.init_hidden(lib, BATCH)
    losses, norms = [], []
    for data, targets in batches:
        hidden = tuple(h.detach() for h in hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets.view(-1))
        loss.backward()
        norms.append(float(lib.nn.utils.clip_grad_norm_(model.parameters(), clip)))
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    return losses, norms


def test_lstm_language_model_matches_torch_at_every_step():
    tmodel, emodel = module_pair(lstm_lm)
    batches = lm_batches()
    t_losses, t_norms = train_lm(torch, tmodel, [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches])
    e_losses, e_norms = train_lm(ember, emodel, [(ember.from_numpy(x), ember.from_numpy(y)) for x, y in batches])
    assert t_losses[-1] < t_losses[0]  # the program learns, so the comparison means something
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-4, atol=0)
    np.testing.assert_allclose(e_norms, t_norms, rtol=1e-4, atol=0)
    t_state, e_state = tmodel.state_dict(), emodel.state_dict()
    assert list(e_state) == list(t_state)
    for k, v in t_state.items():
        np.testing.assert_allclose(e_state[k].numpy(), v.numpy(), rtol=1e-3, atol=1e-5, err_msg=k)


# ------------------------------------------------------------------------------ (b) GRU classifier

FEATURES, CLASSES = 6, 3


def gru_classifier(nn):
    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(FEATURES, 12, num_layers=2, batch_first=True, bidirectional=True)
            self.head = nn.Linear(2 * 12, CLASSES)

        def forward(self, packed):
            _, h_n = self.gru(packed)
            last = h_n.view(2, 2, -1, 12)[-1]  # the top layer's two directions
            return self.head(last.transpose(0, 1).reshape(-1, 2 * 12))
    return Classifier()


def classifier_batches(seed=0):
    """Sequences of lengths 2..9 whose class is the sign pattern of their mean features."""
    rng = np.random.default_rng(seed)
    prototypes = rng.standard_normal((CLASSES, FEATURES))
    out = []
    for _ in range(STEPS):
        y = rng.integers(0, CLASSES, BATCH)
        lengths = rng.integers(2, 10, BATCH)
        x = np.zeros((BATCH, lengths.max(), FEATURES), dtype=np.float32)
        for b, n in enumerate(lengths):
            x[b, :n] = prototypes[y[b]] + 0.7 * rng.standard_normal((n, FEATURES))
        out.append((x, lengths, y.astype(np.int64)))
    return out


def train_classifier(lib, model, batches):
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = lib.nn.CrossEntropyLoss()
    losses = []
    for x, lengths, y in batches:
        packed = lib.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        opt.zero_grad()
        loss = loss_fn(model(packed), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("lengths_as", ["tensor", "list"])
def test_packed_gru_classifier_matches_torch_at_every_step(lengths_as):
    tmodel, emodel = module_pair(gru_classifier)
    batches = classifier_batches()

    def convert(lib):
        return [(lib.from_numpy(x.copy()), lib.from_numpy(n.copy()) if lengths_as == "tensor" else n.tolist(),
                 lib.from_numpy(y.copy())) for x, n, y in batches]
    t_losses = train_classifier(torch, tmodel, convert(torch))
    e_losses = train_classifier(ember, emodel, convert(ember))
    assert t_losses[-1] < t_losses[0]
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-4, atol=0)
