"""Small complete training programs in ember against PyTorch 2.13 (the tests/test_training.py style):
the same initial weights (torch's state_dict copied into ember), the same batches, the loss compared
at every step, the weights and buffers compared at the end.

(a) a GRU language model, batch_first, 2 layers (inter-layer dropout 0), an initial hidden state
    carried across batches and detached, Adam with clip_grad_norm_; and the same model with
    dropout 0.3 evaluated in eval mode (dropout inactive) after training;
(b) an LSTM language model, batch_first, 2 layers, with a projection (proj_size) and tied
    input/output embeddings, SGD-momentum;
(c) a DCGAN pair: a generator of ConvTranspose2d + BatchNorm2d + ReLU + Tanh and a discriminator of
    Conv2d + BatchNorm2d + LeakyReLU + Sigmoid, BCELoss, two Adam optimizers, the discriminator
    step (real then detached fake) and the generator step each iteration, as PyTorch's dcgan
    example does (DCGAN's normal(0, 0.02) init).

Each program is written once against the PyTorch API and run with ``lib`` = torch and ember.
(tests/test_training_rnn.py has the word_language_model LSTM and a packed bidirectional GRU.)
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from oracle import module_pair

STEPS = 10
VOCAB, SEQ, BATCH = 30, 10, 6


def _assert_same_state(tmodel, emodel, rtol=1e-3, atol=1e-5):
    t_state, e_state = tmodel.state_dict(), emodel.state_dict()
    assert list(e_state) == list(t_state)
    for k, v in t_state.items():
        assert tuple(e_state[k].shape) == tuple(v.shape), k
        np.testing.assert_allclose(e_state[k].numpy(), v.numpy(), rtol=rtol, atol=atol, err_msg=k)


def token_batches(seed=0):
    """(input, target) pairs of shape (BATCH, SEQ) from a noisy cyclic stream (learnable quickly)."""
    rng = np.random.default_rng(seed)
    stream = (np.arange(BATCH * (STEPS * SEQ + 1)) * 7 + rng.integers(0, 2, BATCH * (STEPS * SEQ + 1))) % VOCAB
    stream = stream.reshape(BATCH, -1)
    return [(np.ascontiguousarray(stream[:, i:i + SEQ]), np.ascontiguousarray(stream[:, i + 1:i + 1 + SEQ]))
            for i in range(0, STEPS * SEQ, SEQ)]


# ------------------------------------------------------------------------------ (a) GRU LM

def gru_lm(dropout):
    def build(nn):
        class GRULM(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(VOCAB, 12)
                self.rnn = nn.GRU(12, 20, num_layers=2, batch_first=True, dropout=dropout)
                self.out = nn.Linear(20, VOCAB)

            def forward(self, x, h):
                y, h = self.rnn(self.embed(x), h)
                return self.out(y).reshape(-1, VOCAB), h
        return GRULM()
    return build


def train_gru_lm(lib, model, batches):
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = lib.nn.CrossEntropyLoss()
    h = lib.zeros(2, BATCH, 20)
    losses = []
    for x, y in batches:
        h = h.detach()
        opt.zero_grad()
        logits, h = model(x, h)
        loss = loss_fn(logits, y.reshape(-1))
        loss.backward()
        lib.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return losses


def _lib_batches(lib, batches):
    return [(lib.from_numpy(x.copy()), lib.from_numpy(y.copy())) for x, y in batches]


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_gru_language_model_matches_torch_at_every_step(dropout):
    tmodel, emodel = module_pair(gru_lm(dropout))
    batches = token_batches()
    if dropout:  # random masks differ between the libraries: train in eval mode, dropout inactive
        tmodel.eval(), emodel.eval()
    t_losses = train_gru_lm(torch, tmodel, _lib_batches(torch, batches))
    e_losses = train_gru_lm(ember, emodel, _lib_batches(ember, batches))
    assert t_losses[-1] < t_losses[0]  # the program learns, so the comparison means something
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-4, atol=0)
    _assert_same_state(tmodel, emodel)
    x = ember.from_numpy(batches[0][0].copy())
    with torch.no_grad(), ember.no_grad():
        t_out, t_h = tmodel(torch.from_numpy(batches[0][0].copy()), torch.zeros(2, BATCH, 20))
        e_out, e_h = emodel(x, ember.zeros(2, BATCH, 20))
    np.testing.assert_allclose(e_out.numpy(), t_out.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(e_h.numpy(), t_h.numpy(), rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------ (b) LSTM LM

def lstm_lm_projected(nn):
    class LSTMLM(nn.Module):
        """Tied embeddings: the decoder's weight is the encoder's, so proj_size = embedding size."""
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(VOCAB, 8)
            self.rnn = nn.LSTM(8, 24, num_layers=2, batch_first=True, proj_size=8)
            self.decoder = nn.Linear(8, VOCAB)
            self.decoder.weight = self.encoder.weight

        def forward(self, x):
            y, _ = self.rnn(self.encoder(x))
            return self.decoder(y).reshape(-1, VOCAB)
    return LSTMLM()


def test_projected_lstm_language_model_with_tied_weights_matches_torch():
    tmodel, emodel = module_pair(lstm_lm_projected)
    assert emodel.decoder.weight is emodel.encoder.weight
    batches = token_batches(seed=1)
    losses = {}
    for lib, model in ((torch, tmodel), (ember, emodel)):
        opt = lib.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        loss_fn = lib.nn.CrossEntropyLoss()
        losses[lib.__name__] = []
        for x, y in _lib_batches(lib, batches):
            opt.zero_grad()
            loss = loss_fn(model(x), y.reshape(-1))
            loss.backward()
            opt.step()
            losses[lib.__name__].append(loss.item())
    assert losses["torch"][-1] < losses["torch"][0]
    np.testing.assert_allclose(losses["ember"], losses["torch"], rtol=1e-4, atol=0)
    _assert_same_state(tmodel, emodel)


# ------------------------------------------------------------------------------ (c) DCGAN

NZ, NGF, NDF, NC, IMAGE, GAN_BATCH = 8, 8, 8, 1, 16, 16


def dcgan_nets(nn):
    """(generator, discriminator) as one Module, so that module_pair copies both state dicts."""
    generator = nn.Sequential(
        nn.ConvTranspose2d(NZ, NGF * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(NGF * 4), nn.ReLU(True),
        nn.ConvTranspose2d(NGF * 4, NGF * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(NGF * 2), nn.ReLU(True),
        nn.ConvTranspose2d(NGF * 2, NC, 4, 2, 1, bias=False), nn.Tanh())
    discriminator = nn.Sequential(
        nn.Conv2d(NC, NDF, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(NDF, NDF * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(NDF * 2), nn.LeakyReLU(0.2, inplace=True),
        nn.Conv2d(NDF * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    pair = nn.ModuleDict({"G": generator, "D": discriminator})
    return pair


def dcgan_init(pair):
    """DCGAN's weights_init, in torch (module_pair then copies the result into ember)."""
    for m in pair.modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.ConvTranspose2d)):
            torch.nn.init.normal_(m.weight, 0.0, 0.02)
        elif isinstance(m, torch.nn.BatchNorm2d):
            torch.nn.init.normal_(m.weight, 1.0, 0.02)
            torch.nn.init.zeros_(m.bias)


def gan_batches(seed=0):
    rng = np.random.default_rng(seed)
    ramps = np.linspace(-1, 1, IMAGE, dtype=np.float32)
    real = [np.tanh(ramps[None, None, :, None] * rng.uniform(0.5, 2, (GAN_BATCH, NC, 1, 1))
                    + 0.3 * rng.standard_normal((GAN_BATCH, NC, IMAGE, IMAGE))).astype(np.float32)
            for _ in range(STEPS)]
    noise = [rng.standard_normal((GAN_BATCH, NZ, 1, 1)).astype(np.float32) for _ in range(STEPS)]
    return real, noise


def train_dcgan(lib, pair, real_batches, noise_batches):
    """The dcgan example's loop; returns per step (errD, errG, D(x), D(G(z)) before and after D's step)."""
    G, D = pair["G"], pair["D"]
    criterion = lib.nn.BCELoss()
    opt_d = lib.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_g = lib.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    history = []
    for real, noise in zip(real_batches, noise_batches):
        D.zero_grad()
        label = lib.full((GAN_BATCH,), 1.0)
        output = D(real).view(-1)
        err_real = criterion(output, label)
        err_real.backward()
        d_x = output.mean().item()
        fake = G(noise)
        label.fill_(0.0)
        output = D(fake.detach()).view(-1)
        err_fake = criterion(output, label)
        err_fake.backward()
        d_g_z1 = output.mean().item()
        opt_d.step()
        G.zero_grad()
        label.fill_(1.0)
        output = D(fake).view(-1)
        err_g = criterion(output, label)
        err_g.backward()
        d_g_z2 = output.mean().item()
        opt_g.step()
        history.append(((err_real + err_fake).item(), err_g.item(), d_x, d_g_z1, d_g_z2))
    return np.array(history)


def test_dcgan_pair_matches_torch_at_every_step():
    torch.manual_seed(0)

    def build(nn):
        pair = dcgan_nets(nn)
        if nn is torch.nn:
            dcgan_init(pair)
        return pair
    tpair, epair = module_pair(build)
    real, noise = gan_batches()
    t_hist = train_dcgan(torch, tpair, [torch.from_numpy(r) for r in real], [torch.from_numpy(z) for z in noise])
    e_hist = train_dcgan(ember, epair, [ember.from_numpy(r) for r in real], [ember.from_numpy(z) for z in noise])
    # the game moves: the discriminator's loss and its outputs change over the 10 steps
    assert np.ptp(t_hist[:, 0]) > 0.05 and np.ptp(t_hist[:, 2]) > 0.01
    np.testing.assert_allclose(e_hist, t_hist, rtol=1e-4, atol=1e-6)
    # weights, BatchNorm running statistics and num_batches_tracked (3 D passes, 1 G pass per step)
    _assert_same_state(tpair, epair)
    assert int(epair["D"][3].num_batches_tracked) == 3 * STEPS
    # the trained generator in eval mode (running statistics) draws the same images
    tpair.eval(), epair.eval()
    with torch.no_grad(), ember.no_grad():
        np.testing.assert_allclose(epair["G"](ember.from_numpy(noise[0])).numpy(),
                                   tpair["G"](torch.from_numpy(noise[0])).numpy(), rtol=1e-3, atol=1e-5)
