"""The fuser's differential fuzzer: random pointwise / reduction / view / indexing programs of three
(5, 7) inputs (contiguous, transposed, broadcast), compiled by compile_fx and compared with eager
ember on the same device. The CPU run is tests/inductor/test_compile_fx.py's, the GPU run
tests/cuda/test_fuzzer_cuda.py's (issue 18: the same programs through the Triton generator).

    mismatches = fuzz(ember.float32, device="cpu", seed=1234, graphs=4)     # [] when all agree
"""
import random
import zlib

import numpy as np

import ember
from ember._functorch import make_fx
from ember._inductor.compile_fx import compile_fx

FLOAT_UNARY = ["exp", "tanh", "sigmoid", "neg", "abs", "sin", "relu", "sqrt", "log1p", "floor", "square"]
BINARY = ["add", "sub", "mul", "maximum", "minimum", "div"]
INT_BINARY = ["add", "sub", "mul", "maximum", "minimum"]


def random_program(rng, nin, dtype):
    """A function of `nin` inputs of shape (5, 7) built from random ops."""
    steps = []
    for _ in range(rng.randint(2, 7)):
        kind = rng.choice(["unary", "binary", "scalar", "reduce", "view", "where", "cat", "pad", "index", "scatter"])
        steps.append((kind, rng.choice(FLOAT_UNARY), rng.choice(BINARY if dtype.is_floating_point else INT_BINARY),
                      rng.randrange(nin), rng.choice([0, 1, -1]), rng.random() < 0.5, rng.choice([-2, 0.5, 3])))

    def program(*xs):
        v = xs[0]
        for kind, u, b, other, dim, keep, scalar in steps:
            if v.dim() == 0 and kind in ("reduce", "view"):
                kind = "scalar"
            dim = dim if v.dim() > 1 else 0
            if kind == "unary" and v.dtype.is_floating_point:
                v = getattr(ember, u)(v.clamp(-4, 4) if u == "exp" else (v.abs() if u in ("sqrt", "log1p") else v))
            elif kind == "binary":
                o = xs[other]
                o = o.sum(0) if v.dim() == 1 else (o.amax() if v.dim() == 0 else o)
                v = getattr(ember, b)(v, o) if b != "div" else v / (o.abs() + 1)
            elif kind == "scalar":
                v = v * scalar if v.dtype.is_floating_point else v * int(scalar) + 1
            elif kind == "reduce":
                v = [v.sum, v.amax, v.amin][abs(dim) % 3](dim, keepdim=keep)
            elif kind == "view":
                v = v.transpose(0, 1) if keep else v[::2]
            elif kind == "cat":               # with a computed value and an input slice of v's shape
                o = xs[other][tuple(slice(0, n) for n in v.shape)] if v.dim() == 2 else v.neg()
                v = ember.cat([v, o * 2 if o.dtype.is_floating_point else o], dim if v.dim() else 0) \
                    if v.dim() else ember.stack([v, o])
            elif kind == "pad":
                v = ember.nn.functional.pad(v, (1, 2) if keep else (-1, 1, 2, 0)[:2 * min(v.dim(), 2)],
                                            value=int(scalar))
            elif kind == "index" and v.dim():  # gather / index / index_select with wrapped indices
                n = v.shape[dim]
                picks = ember.tensor([n - 1, 0, n // 2, -1 if keep else 0], device=v.device)
                v = v[picks] if dim == 0 else (v.index_select(dim, picks % n) if keep else
                                               ember.gather(v, dim, (picks % n).expand(*v.shape[:-1], 4)
                                                            if v.dim() > 1 else picks % n))
            elif kind == "scatter" and v.dim():  # duplicate rows: accumulated or the last one written
                v = v.index_put((ember.tensor([0, -1, 0], device=v.device),), v[:1] * 2, accumulate=keep) if scalar != 3 else \
                    v.scatter_add(v.dim() - 1, (v[..., :2] > 0).long(), v[..., :2])
            elif kind == "where":
                v = ember.where(v > 0, v, xs[other].sum() if v.dim() == 0 else xs[other][..., :1])
        return v
    return program


def fuzz_inputs(dtype, device, contiguous=False):
    """Three 5x7 inputs: contiguous, transposed and broadcast (all contiguous with `contiguous`, the
    layouts a CUDA copy of them has)."""
    gen = np.random.default_rng(7)
    base = [gen.uniform(-3, 3, size=(5, 7)) for _ in range(3)]
    xs = [ember.from_numpy(b.astype(dtype.np) if dtype.is_floating_point else (b * 3).astype(np.int64)) for b in base]
    xs[1] = ember.from_numpy(np.ascontiguousarray(xs[1].numpy().T)).t()        # transposed layout
    xs[2] = xs[2][:1].expand(5, 7)                                              # broadcast layout
    return [(x.contiguous() if contiguous else x).to(device) for x in xs]


def fuzz(dtype, device="cpu", graphs=4, programs_per_graph=12, check=None, contiguous=False):
    """[(graph, output, got, want)] for every output of the compiled programs that differs from
    eager (shape, dtype, or values beyond rtol 1e-4 / atol 1e-5 of the output's scale).
    `check(compiled)`, if given, runs on each compiled graph (e.g. that it did not fall back)."""
    rng = random.Random(1234 + zlib.crc32(str(dtype).encode()) % 1000)     # not hash(): PYTHONHASHSEED varies
    xs = fuzz_inputs(dtype, device, contiguous)
    mismatches = []
    for graph in range(graphs):
        programs = []
        while len(programs) < programs_per_graph:
            program = random_program(rng, len(xs), dtype)
            try:
                program(*xs)
            except (RuntimeError, IndexError):   # shapes or dims the program cannot use: eager refuses too
                continue
            programs.append(program)
        everything = lambda *t: tuple(p(*t) for p in programs)      # noqa: E731
        want = everything(*xs)
        compiled = compile_fx(make_fx(everything)(*xs), xs)
        if check is not None:
            check(compiled)
        got = compiled(*xs)
        for i, (g, w) in enumerate(zip(got, want)):
            a, b = g.cpu().numpy(), w.cpu().numpy()
            scale = max(1.0, float(np.nanmax(np.abs(np.where(np.isinf(b), 0, b)))) if b.size else 1.0)
            if g.shape != w.shape or g.dtype != w.dtype or g.device != w.device or \
                    not np.allclose(a, b, rtol=1e-4, atol=1e-5 * scale, equal_nan=True):
                mismatches.append((graph, i, a, b))
    return mismatches
