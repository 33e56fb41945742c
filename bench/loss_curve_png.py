"""Plot the loss curves `bench/gpt2_cuda.py --loss-curve N --loss-csv FILE` wrote (one column per
library), with each compiled column's relative difference from its eager column on a second axis:

    python bench/loss_curve_png.py FILE.csv docs/gpt2_loss_curve.png [--title TEXT]
"""
from __future__ import annotations

import argparse
import csv


def main():
    p = argparse.ArgumentParser()
    p.add_argument("csv")
    p.add_argument("png")
    p.add_argument("--title", default="GPT-2 small, bf16 autocast, AdamW: loss per step")
    args = p.parse_args()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(args.csv) as f:
        rows = list(csv.DictReader(f))
    columns = [c for c in rows[0] if c != "step"]
    steps = [int(r["step"]) for r in rows]
    fig, (ax, gap) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    for c in columns:
        ax.plot(steps, [float(r[c]) for r in rows], label=c, lw=1)
    ax.set_ylabel("loss")
    ax.set_title(args.title)
    ax.legend()
    for compiled in columns:       # each compiled column (ember.compile, torch.compile(ro) ...) against its eager one
        eager = compiled.split(".")[0]
        if compiled != eager and eager in columns:
            gap.plot(steps, [abs(float(r[compiled]) - float(r[eager])) / float(r[eager]) for r in rows], lw=1,
                     label=f"{compiled} vs {eager}")
    gap.set_ylabel("|compiled - eager|\n/ eager")
    gap.legend()
    gap.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(args.png, dpi=110)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
