"""Milliseconds per training step (forward, backward, optimizer step), ember vs PyTorch eager;
with --compiled, ember.compile and torch.compile too.

    .venv/bin/python bench/train_step.py [--rounds 7] [--number 10]
    .venv/bin/python bench/train_step.py --compiled [--models mlp gpt] [--fused-optim] [--clock cpu]

Three models, the same weights in both libraries (copied from PyTorch), the same batch:
  mlp  784-512-512-10, ReLU, batch 64, cross-entropy, SGD(lr=0.01, momentum=0.9)
  cnn  conv(1->16,3)+ReLU+maxpool, conv(16->32,3)+ReLU+maxpool, linear(1568->10);
       1x28x28 images, batch 64, cross-entropy, SGD(lr=0.01, momentum=0.9)
  lstm PyTorch's word_language_model at its defaults (embedding 200, 2-layer LSTM 200, bptt 35,
       batch 20) with a 1000-word vocabulary: embedding -> LSTM -> linear decoder, cross-entropy
       over the 700 next-token predictions, SGD(lr=0.01, momentum=0.9)
Each model is timed in three phases: the forward with its graph ("forward"), forward and
backward ("fwd+bwd"), and the whole step ("step"); the differences show where time goes.
PyTorch runs with one thread (the harness sets it), and NumPy's BLAS is limited to one thread
as well, so the comparison is single-core against single-core. Rounds are interleaved (each
round times every case once, in turn) and the figures are medians. The README's figure comes
from this script.
"""
from __future__ import annotations

import os

# one BLAS thread for NumPy, like torch.set_num_threads(1); must be set before NumPy loads
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ember  # noqa: E402
from _harness import header, interleaved, table  # noqa: E402
from train_step_compiled import compiled_main  # noqa: E402


def mlp(nn):
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def cnn(nn):
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def lstm_lm(nn, vocab=1000, emsize=200, nhid=200, nlayers=2):
    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Embedding(vocab, emsize)
            self.rnn = nn.LSTM(emsize, nhid, nlayers)
            self.decoder = nn.Linear(nhid, vocab)

        def forward(self, tokens):
            output, _ = self.rnn(self.encoder(tokens))
            return self.decoder(output).view(-1, vocab)
    return RNNModel()


def images(rng, shape):
    """(x, y): standard normal inputs, 10 classes."""
    return rng.standard_normal(shape, dtype=np.float32), rng.integers(0, 10, shape[0])


def tokens(rng, shape, vocab=1000):
    """(x, y): (bptt, batch) token ids and the next token of each, flattened as the loss wants."""
    stream = rng.integers(0, vocab, (shape[0] + 1, shape[1]))
    return stream[:-1], stream[1:].reshape(-1)


MODELS = {"mlp": (mlp, (64, 784), images), "cnn": (cnn, (64, 1, 28, 28), images), "lstm": (lstm_lm, (35, 20), tokens)}


PHASES = ("forward", "fwd+bwd", "step")


def step_fns(lib, model, x, y):
    """{phase: fn}: the forward (graph recorded), forward + backward, and the whole training
    step (zero_grad, forward, backward, optimizer step), written once against the PyTorch API."""
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = lib.nn.CrossEntropyLoss()

    def forward():
        return loss_fn(model(x), y)

    def forward_backward():
        opt.zero_grad()
        loss_fn(model(x), y).backward()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return dict(zip(PHASES, (forward, forward_backward, step)))


def cases(models):
    import torch
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    out = {}
    for name in models:
        build, shape, data = MODELS[name]
        torch.manual_seed(0)
        tmodel, emodel = build(torch.nn), build(ember.nn)
        emodel.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in tmodel.state_dict().items()})
        x, y = data(rng, shape)
        e_fns = step_fns(ember, emodel, ember.from_numpy(x.copy()), ember.from_numpy(y.copy()))
        t_fns = step_fns(torch, tmodel, torch.from_numpy(x.copy()), torch.from_numpy(y.copy()))
        for phase in PHASES:
            out[(f"{name} {phase}", "ember")] = e_fns[phase]
            out[(f"{name} {phase}", "torch")] = t_fns[phase]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--number", type=int, default=10, help="steps per timed sample")
    parser.add_argument("--fused-optim", action="store_true",
                        help="--compiled: every column's optimizer with fused=True")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the process's CPU time (steadier on a shared machine; one thread)")
    parser.add_argument("--models", nargs="+", default=None,
                        help=f"eager: {list(MODELS)}; --compiled: mlp gpt")
    parser.add_argument("--compiled", action="store_true",
                        help="the whole step: ember eager, ember.compile, torch eager, torch.compile")
    args = parser.parse_args()
    if args.compiled:
        return compiled_main(args)
    args.models = args.models or list(MODELS)
    header("ms per training step (forward + backward + SGD-momentum step), batch 64 (lstm: 35 x 20 tokens)")
    medians = interleaved(cases(args.models), rounds=args.rounds, number=args.number, clock=args.clock)
    rows = [f"{m} {p}" for m in args.models for p in PHASES]
    print(table(rows, ["ember", "torch"], medians, ratio=("ember", "torch")))
    print("\nms per training step (the 'step' rows):")
    for m in args.models:
        e, t = medians[(f"{m} step", "ember")] / 1e3, medians[(f"{m} step", "torch")] / 1e3
        print(f"  {m:<4} ember {e:7.2f} ms   torch {t:7.2f} ms   ember/torch {e / t:5.2f}x")


if __name__ == "__main__":
    main()
