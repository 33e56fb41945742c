"""Train a small CNN on handwritten digits with ember.compile, save a checkpoint, reload it.

    make demo        (or: .venv/bin/python demo.py [--epochs 6] [--torch] [--eager] [--show-kernels])

The data is scikit-learn's bundled `load_digits` (1797 8x8 images, works offline), split
80/20 with a fixed seed. Everything below is PyTorch code: `--torch` runs the very same
program with ``import torch`` instead of ``import ember as torch``.

The model is trained through ``torch.compile(model)`` (ember's default backend: AOT autograd, the
fuser's generated C kernels for the forward and the backward; `--eager` trains without it). Before
training the demo times one step eagerly and compiled on the same batch, and the compile time
cold (an empty kernel cache) and cached (a second model compiled from the on-disk cache).
`--show-kernels` prints the generated wrapper and C kernels (EMBER_LOGS=output_code does too).

On a machine with a GPU (``torch.cuda.is_available()``) the demo trains there, eagerly (the
compiler's generated kernels are C for the CPU), and says so; `--cpu` keeps it on the CPU.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--batch-size", type=int, default=32)
parser.add_argument("--torch", action="store_true", help="run the same program with PyTorch")
parser.add_argument("--eager", action="store_true", help="train without compiling the model")
parser.add_argument("--show-kernels", action="store_true", help="print the generated C kernels")
parser.add_argument("--cpu", action="store_true", help="stay on the CPU even where a GPU is available")
args = parser.parse_args()

if args.torch:
    import torch
    torch.set_num_threads(1)
else:
    import ember as torch
    torch.set_num_threads(1)            # the generated kernels' OpenMP threads
from tqdm import tqdm

DEVICE = "cuda" if torch.cuda.is_available() and not args.cpu else "cpu"
nn = torch.nn  # not `from torch import nn`: that would import the real torch by its module name
DataLoader, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.TensorDataset


def load_data(seed=0):
    """Digits as (N, 1, 8, 8) float32 standardised with the training set's statistics; 80/20 split."""
    from sklearn.datasets import load_digits
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(x))
    n_train = int(0.8 * len(x))
    train_idx, test_idx = order[:n_train], order[n_train:]
    mean, std = x[train_idx].mean(), x[train_idx].std()
    x = ((x - mean) / std).astype(np.float32).reshape(-1, 1, 8, 8)
    y = y.astype(np.int64)
    as_tensors = lambda idx: (torch.from_numpy(x[idx]).to(DEVICE), torch.from_numpy(y[idx]).to(DEVICE))  # noqa: E731
    return as_tensors(train_idx), as_tensors(test_idx)


class DigitsCNN(nn.Module):
    """conv(1->16) -> ReLU -> maxpool -> conv(16->32) -> ReLU -> maxpool -> linear(128->10).
    (No BatchNorm: a graph that updates running statistics in place still runs eagerly under
    ember.compile until functionalisation is integrated.)"""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),           # 16 x 4 x 4
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),          # 32 x 2 x 2
        )
        self.classifier = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def evaluate(model, x, y):
    """Predicted classes and accuracy on (x, y), in eval mode without building a graph."""
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    return pred, (pred == y).float().mean().item()


def train_step(model, forward, optimizer, loss_fn, xb, yb):
    optimizer.zero_grad()
    loss = loss_fn(forward(xb), yb)
    loss.backward()
    optimizer.step()
    return loss


def ms_per_step(step, number=20):
    t0 = time.perf_counter()
    for _ in range(number):
        step()
    return (time.perf_counter() - t0) / number * 1e3


def first_call_overhead(step):
    """Seconds the first step takes beyond a steady one (capture and compilation)."""
    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    step()
    return first - (time.perf_counter() - t0)


def compare_eager_and_compiled(xb, yb):
    """Time one training step eagerly and compiled (fresh models, the same batch), and the compile
    time with an empty kernel cache and again from the on-disk cache. Returns nothing; prints."""
    from ember._inductor import codecache, config
    loss_fn = nn.CrossEntropyLoss()

    def make(compiled):
        model = DigitsCNN()
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
        forward = torch.compile(model) if compiled else model
        return lambda: train_step(model, forward, opt, loss_fn, xb, yb)

    user_cache = config.cache_dir
    with tempfile.TemporaryDirectory() as cold_dir:
        config.cache_dir = cold_dir                     # cold: nothing compiled before
        codecache.reset_counters()
        cold = first_call_overhead(make(True))
        compiles = codecache.counters["compile"]
        codecache.clear_memory_cache()                  # cached: the .so files come from disk
        codecache.reset_counters()
        compiled = make(True)
        cached = first_call_overhead(compiled)
        disk_hits, recompiles = codecache.counters["disk_hit"], codecache.counters["compile"]
        config.cache_dir = user_cache
    eager = make(False)
    eager()
    t_eager, t_compiled = ms_per_step(eager), ms_per_step(compiled)
    print(f"one training step, batch {len(xb)}: eager {t_eager:.2f} ms, compiled {t_compiled:.2f} ms "
          f"({t_eager / t_compiled:.2f}x)")
    print(f"compile time: cold {cold * 1e3:.0f} ms ({compiles} C compiler run(s)), "
          f"cached {cached * 1e3:.0f} ms ({disk_hits} kernel librar(ies) from disk, {recompiles} compiler runs)")


def main():
    torch.manual_seed(0)
    (x_train, y_train), (x_test, y_test) = load_data()
    print(f"{'PyTorch' if args.torch else 'ember'}: digits, {len(x_train)} train / {len(x_test)} test images of 8x8")
    if DEVICE == "cuda":
        print(f"device: GPU ({torch.cuda.get_device_name()}), training eagerly on it")
    else:
        print("device: CPU" + (" (--cpu)" if args.cpu else " (no GPU available)"))
    generator = torch.Generator().manual_seed(0)
    # drop_last: every batch has one shape, so the compiled graphs are specialised once
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=args.batch_size, shuffle=True,
                        generator=generator, drop_last=True)
    compiling = not (args.torch or args.eager) and DEVICE == "cpu"
    if compiling:
        compare_eager_and_compiled(x_train[:args.batch_size], y_train[:args.batch_size])
        torch.manual_seed(0)
    model = DigitsCNN().to(DEVICE)
    print(model)
    forward = torch.compile(model) if compiling else model
    if args.show_kernels and compiling:
        torch._logging.set_logs(output_code=True)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs * len(loader))

    total = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        model.train()
        losses, t0 = [], time.perf_counter()
        bar = tqdm(loader, desc=f"epoch {epoch}/{args.epochs}", leave=False, file=sys.stdout)
        for xb, yb in bar:
            loss = train_step(model, forward, optimizer, loss_fn, xb, yb)
            if args.show_kernels and compiling:
                torch._logging.set_logs()          # the kernels of the first step only
            scheduler.step()
            losses.append(loss.item())
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
        ms_per_step = (time.perf_counter() - t0) / len(loader) * 1e3
        _, acc = evaluate(model, x_test, y_test)
        print(f"epoch {epoch}: loss {np.mean(losses):.4f}  test accuracy {acc:6.2%}  {ms_per_step:5.1f} ms/step")
    print(f"trained {'compiled' if compiling else 'eagerly'} in {time.perf_counter() - total:.1f} s")

    # checkpoint: save the state dict, load it into a fresh model, compare predictions
    path = os.path.join(tempfile.gettempdir(), "digits_cnn_torch.pt" if args.torch else "digits_cnn_ember.pt")
    torch.save(model.state_dict(), path)
    reloaded = DigitsCNN().to(DEVICE)
    reloaded.load_state_dict(torch.load(path, map_location=DEVICE))
    pred, acc = evaluate(model, x_test, y_test)
    pred2, acc2 = evaluate(reloaded, x_test, y_test)
    same = bool((pred == pred2).all())
    print(f"saved {path} ({os.path.getsize(path) / 1024:.1f} KiB); reloaded model: test accuracy {acc2:.2%}, "
          f"predictions identical to the trained model's: {same}")
    if acc < 0.95 or not same:
        sys.exit("the demo did not reach 95% test accuracy or the checkpoint did not round-trip")


if __name__ == "__main__":
    main()
