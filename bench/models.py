"""Milliseconds per training step of four small models, ember eager vs PyTorch eager (1 thread):

    .venv/bin/python bench/models.py [--rounds 7] [--number 3] [--models gpt cnn lstm vae] [--clock cpu]

The same weights in both libraries (copied from PyTorch) and the same batch:
  gpt   token + position embeddings, 2 pre-LayerNorm blocks (bench/_gpt_modules.gpt_block: d 128,
        4 heads, causal attention, GELU MLP), LayerNorm, linear head; 256 words, batch 8 x 32
        tokens, cross-entropy, AdamW(lr=1e-3)
  cnn   [conv3x3 -> BatchNorm2d -> ReLU -> maxpool2] x 2 (3->16->32 channels), linear(2048->10);
        3x32x32 images, batch 32, cross-entropy, SGD(lr=0.01, momentum=0.9)
  lstm  embedding 64 -> 1-layer LSTM 128 -> linear decoder, 500 words, 20 x 16 tokens,
        cross-entropy, SGD(lr=0.01, momentum=0.9), gradient clipping at 0.25 (word_language_model)
  vae   PyTorch's examples/vae: 784-400-(20, 20) encoder, reparameterisation, 20-400-784
        decoder, binary cross-entropy + KL, batch 64, Adam(lr=1e-3)
A step is zero_grad, forward, loss, backward, optimizer step. PyTorch and NumPy's BLAS run one
thread, rounds are interleaved (each round times every model in both libraries, in turn) and
the figures are medians. --clock cpu counts the process's CPU time rather than the wall clock:
on a shared machine the wall clock also counts the time spent waiting for a core.
"""
from __future__ import annotations

import os

# BLAS threads for NumPy as torch.set_num_threads (1 unless --threads N): set before NumPy loads
import sys  # noqa: E402
THREADS = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv[:-1] else 1
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(THREADS) if THREADS != 1 else os.environ.get(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from _gpt_modules import gpt_block  # noqa: E402
from _harness import header, interleaved  # noqa: E402


def gpt(lib, vocab=256, block=32, d=128, heads=4, layers=2):
    nn = lib.nn

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
            self.blocks = nn.ModuleList([gpt_block(lib, d=d, heads=heads) for _ in range(layers)])
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.wte(idx) + self.wpe(lib.arange(idx.shape[1]))
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln_f(x)).view(-1, vocab)
    return GPT()


def cnn(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 8 * 8, 10))


def lstm(lib, vocab=500, emsize=64, nhid=128):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.rnn = nn.Embedding(vocab, emsize), nn.LSTM(emsize, nhid)
            self.decoder = nn.Linear(nhid, vocab)

        def forward(self, tokens):
            return self.decoder(self.rnn(self.encoder(tokens))[0]).view(-1, vocab)
    return LM()


def vae(lib):
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc21, self.fc22 = nn.Linear(784, 400), nn.Linear(400, 20), nn.Linear(400, 20)
            self.fc3, self.fc4 = nn.Linear(20, 400), nn.Linear(400, 784)

        def forward(self, x):
            h = F.relu(self.fc1(x))
            mu, logvar = self.fc21(h), self.fc22(h)
            z = mu + lib.randn_like(mu) * lib.exp(0.5 * logvar)
            return lib.sigmoid(self.fc4(F.relu(self.fc3(z)))), mu, logvar
    return VAE()


def cross_entropy(lib, model, x, y):
    return lib.nn.functional.cross_entropy(model(x), y)


def vae_loss(lib, model, x, _):
    recon, mu, logvar = model(x)
    bce = lib.nn.functional.binary_cross_entropy(recon, x, reduction="sum")
    return bce - 0.5 * lib.sum(1 + logvar - mu.pow(2) - logvar.exp())


def sgd(lib, params):
    return lib.optim.SGD(params, lr=0.01, momentum=0.9)


def tokens(rng, shape, vocab, time_dim):
    """(x, y): token ids of `shape` and the next token of each along `time_dim`, flattened."""
    grown = list(shape)
    grown[time_dim] += 1
    stream = rng.integers(0, vocab, grown)
    return np.delete(stream, -1, time_dim), np.delete(stream, 0, time_dim).reshape(-1)


# name: (build(lib), data(rng) -> (x, y), loss(lib, model, x, y), optimizer(lib, params), clip)
MODELS = {
    "gpt": (gpt, lambda rng: tokens(rng, (8, 32), 256, time_dim=1), cross_entropy,
            lambda lib, p: lib.optim.AdamW(p, lr=1e-3), None),
    "cnn": (cnn, lambda rng: (rng.standard_normal((32, 3, 32, 32), dtype=np.float32), rng.integers(0, 10, 32)),
            cross_entropy, sgd, None),
    "lstm": (lstm, lambda rng: tokens(rng, (20, 16), 500, time_dim=0), cross_entropy, sgd, 0.25),
    "vae": (vae, lambda rng: (rng.random((64, 784), dtype=np.float32), None), vae_loss,
            lambda lib, p: lib.optim.Adam(p, lr=1e-3), None),
}


def training_step(lib, name, model, x, y):
    """One step written once against the PyTorch API: zero_grad, forward, loss, backward, (clip), step."""
    _, _, loss_fn, make_opt, clip = MODELS[name]
    opt = make_opt(lib, model.parameters())

    def step():
        opt.zero_grad()
        loss = loss_fn(lib, model, x, y)
        loss.backward()
        if clip:
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        return loss
    return step


def cases(models):
    import torch
    torch.set_num_threads(THREADS)
    ember.set_num_threads(THREADS)
    out = {}
    for name in models:
        build, data, *_ = MODELS[name]
        torch.manual_seed(0)
        tmodel, emodel = build(torch), build(ember)
        emodel.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tmodel.state_dict().items()})
        x, y = data(np.random.default_rng(0))
        ey, ty = (None, None) if y is None else (ember.from_numpy(y.copy()), torch.from_numpy(y.copy()))
        e_step = training_step(ember, name, emodel, ember.from_numpy(x.copy()), ey)
        t_step = training_step(torch, name, tmodel, torch.from_numpy(x.copy()), ty)
        if name != "vae":   # same weights, same batch: the first losses agree (the VAE draws its own noise)
            np.testing.assert_allclose(e_step().item(), t_step().item(), rtol=1e-4)
        out[(name, "ember")], out[(name, "torch")] = e_step, t_step
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=3, help="steps per timed sample")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    parser.add_argument("--threads", type=int, default=1, help="threads for both libraries (read before NumPy loads)")
    args = parser.parse_args()
    header(f"ms per training step, ember eager vs PyTorch eager ({args.threads} thread{'s' if args.threads > 1 else ''}), {args.clock} clock, "
           f"medians of {args.rounds} interleaved rounds of {args.number} steps")
    medians = interleaved(cases(args.models), rounds=args.rounds, number=args.number, clock=args.clock)
    ratios = []
    print(f"{'model':<6}{'ember ms':>11}{'torch ms':>11}{'ember/torch':>13}")
    for m in args.models:
        e, t = medians[(m, "ember")] / 1e3, medians[(m, "torch")] / 1e3
        ratios.append(e / t)
        print(f"{m:<6}{e:>11.2f}{t:>11.2f}{e / t:>12.2f}x")
    print(f"median ember/torch: {statistics.median(ratios):.2f}x   worst: {max(ratios):.2f}x")


if __name__ == "__main__":
    main()
