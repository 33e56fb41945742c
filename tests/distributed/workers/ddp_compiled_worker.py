"""Run under ``mpiexec -n 2``: DistributedDataParallel with ``ember.compile`` (inside and outside DDP),
its graph cut at the gradient buckets (ember/_dynamo/backends/distributed.py), against one
process with the doubled batch (float64, 1e-10, every step), plus what the cut must give: several
pieces, each compiled once, no recompile across steps, and buckets all-reduced while the earlier
pieces' backward still runs. ``python ddp_compiled_worker.py OUT_DIR`` writes
``OUT_DIR/rank<r>.json``: {check name: "ok" or the failure}.
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_worker import close, run_checks  # noqa: E402

STEPS = 4
CAP_MB = 0.002           # ~2 KB buckets: several pieces even for these small models


def block_model(nn, F):
    """A pre-LayerNorm GPT block over embeddings, a head: the shape of the GPU benchmark's model."""
    import ember

    class Block(nn.Module):
        def __init__(self, width=8, heads=2):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.fc1, self.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
            att = F.softmax((q @ k.transpose(-2, -1)) * (C // self.heads) ** -0.5, dim=-1)
            x = x + self.proj((att @ v).transpose(1, 2).reshape(B, T, C))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(11, 8)
            self.h = nn.ModuleList([Block(), Block()])
            self.head = nn.Linear(8, 11)

        def forward(self, idx):
            x = self.wte(idx)
            for b in self.h:
                x = b(x)
            return self.head(x)
    return Tiny()


def checks(rank: int, world: int):
    import ember
    import ember.distributed as dist
    from ember import nn
    from ember._dynamo import eval_frame, config
    from ember._dynamo.backends import distributed as ddp_backend
    F = nn.functional
    DDP = nn.parallel.DistributedDataParallel
    found = {}

    def check(fn):
        found[fn.__name__] = fn
        return fn

    class Recorder:
        """Every split the DDP backend made, and every frame dynamo captured."""

        def __init__(self):
            self.splits, self.captures = [], []

        def __enter__(self):
            original = ddp_backend.DDPOptimizer.compile_fn

            def recording(opt, gm, example_inputs):
                out = original(opt, gm, example_inputs)
                self.splits.append(out)
                return out
            self._original = original
            ddp_backend.DDPOptimizer.compile_fn = recording
            self._observer = lambda code, result, error: self.captures.append(code.co_name)
            eval_frame.compile_observers.append(self._observer)
            return self

        def __exit__(self, *exc):
            ddp_backend.DDPOptimizer.compile_fn = self._original
            eval_frame.compile_observers.remove(self._observer)

    def make(kind):
        if kind == "block":
            return block_model(nn, F)
        from ddp_worker import mlp, cnn
        return (mlp if kind == "mlp" else cnn)(nn)

    def data(kind, rows, steps):
        rng = np.random.default_rng(11)
        for _ in range(steps):
            if kind == "block":
                tokens = rng.integers(0, 11, (rows, 6))
                yield ember.from_numpy(tokens), ember.from_numpy(rng.integers(0, 11, (rows, 6)))
            elif kind == "mlp":
                yield ember.from_numpy(rng.standard_normal((rows, 6))), ember.from_numpy(rng.standard_normal((rows, 3)))
            else:
                yield (ember.from_numpy(rng.standard_normal((rows, 1, 8, 8))),
                       ember.from_numpy(rng.integers(0, 5, rows)))

    def loss_of(kind, out, y):
        if kind == "block":
            return F.cross_entropy(out.reshape(-1, 11), y.reshape(-1))
        return F.mse_loss(out, y) if kind == "mlp" else F.cross_entropy(out, y)

    def train(kind, where, backend="inductor", expect_split=True):
        """Compiled DDP vs the single-process reference, every step; returns the Recorder."""
        ember._dynamo.reset()
        ember.manual_seed(200)
        reference = make(kind).double()
        ember.manual_seed(200 + rank)
        local = make(kind).double()
        if where == "inside":
            ddp = DDP(ember.compile(local, backend=backend), bucket_cap_mb=CAP_MB)
        else:
            ddp = ember.compile(DDP(local, bucket_cap_mb=CAP_MB), backend=backend)
        opt_ddp = ember.optim.Adam(local.parameters(), lr=1e-2)
        opt_ref = ember.optim.Adam(reference.parameters(), lr=1e-2)
        per_rank = 3
        with Recorder() as rec:
            for step, (x, y) in enumerate(data(kind, per_rank * world, STEPS)):
                mine = slice(rank * per_rank, (rank + 1) * per_rank)
                loss = loss_of(kind, ddp(x[mine]), y[mine])
                opt_ddp.zero_grad()
                loss.backward()
                opt_ddp.step()
                ref_loss = loss_of(kind, reference(x), y)
                opt_ref.zero_grad()
                ref_loss.backward()
                opt_ref.step()
                averaged = loss.detach().clone()
                dist.all_reduce(averaged, op=dist.ReduceOp.AVG)
                close(averaged.item(), ref_loss.item(), f"{kind} ({where}) loss at step {step}")
                for (name, p), q in zip(local.named_parameters(), reference.parameters()):
                    close(p.detach().numpy(), q.detach().numpy(), f"{kind} ({where}) {name} after step {step}")
                if step == 0:
                    captured = len(rec.captures)
        assert len(rec.captures) == captured, f"recompiled after the first step: {rec.captures}"
        split = [s for s in rec.splits if isinstance(s, ddp_backend.SplitGraph)]
        if expect_split:
            assert split and all(len(s.pieces) > 1 for s in split), rec.splits
            for s in split:
                for piece in s.pieces:
                    assert getattr(piece.run, "fallback_reason", None) is None, piece.run.fallback_reason
        return rec

    for kind in ("mlp", "cnn", "block"):
        for where in ("inside", "outside"):
            def run(kind=kind, where=where):
                train(kind, where)
            run.__name__ = f"{kind}_compiled_{where}_split_equals_doubled_batch"
            check(run)

    @check
    def aot_eager_backend_split_equals_doubled_batch():
        train("block", "outside", backend="aot_eager")

    @check
    def optimize_ddp_off_is_one_graph_and_equal():
        with config.patch(optimize_ddp=False):
            rec = train("block", "inside", expect_split=False)
        assert rec.splits == [], rec.splits

    @check
    def buckets_reduce_while_earlier_pieces_run_backward():
        """Each piece is its own autograd node: the first bucket (the head's gradient, made by the
        last piece's backward) starts its all-reduce before the first piece's output has its
        gradient, i.e. while the earlier pieces' backward has still to run; when the first layer's
        gradient arrives every bucket but the last has started."""
        ember._dynamo.reset()
        ember.manual_seed(0)
        model = block_model(nn, F).double()
        ddp = ember.compile(DDP(model, bucket_cap_mb=CAP_MB))
        buckets = ddp.reducer.buckets
        x = ember.from_numpy(np.random.default_rng(rank).integers(0, 11, (2, 6)))
        with Recorder() as rec:
            ddp(x).sum().backward()                   # compiles every piece
        (split,) = rec.splits
        arrived, launches, seen = set(), [], {}

        def watch(i, run):
            def watched(*args):
                outputs = run(*args)
                for t in outputs:
                    if t.requires_grad:
                        t.register_hook(lambda g: arrived.add(i))
                return outputs
            return watched
        for i, piece in enumerate(split.pieces):
            piece.run = watch(i, piece.run)
        launch = ddp.reducer._launch

        def recording_launch(b):
            launches.append((b, set(arrived)))
            launch(b)
        ddp.reducer._launch = recording_launch

        def record(grad):
            seen.setdefault("started", [w is not None for w in ddp.reducer.works])
        model.wte.weight.register_hook(record)
        ddp(x).sum().backward()
        assert len(buckets) >= 4 and len(split.pieces) >= 4, (buckets, split.ddp_pieces)
        assert [b for b, _ in launches] == list(range(len(buckets))), launches
        assert 0 not in launches[0][1] and len(launches[0][1]) <= 1, launches[0]
        assert seen["started"][:-1] == [True] * (len(buckets) - 1) and not seen["started"][-1], seen

    @check
    def unused_parameters_with_the_cut():
        """find_unused_parameters=True with a compiled model whose branch is not taken."""
        class TwoBranches(nn.Module):
            def __init__(self):
                super().__init__()
                self.a, self.b, self.never = nn.Linear(4, 8), nn.Linear(8, 4), nn.Linear(4, 4)

            def forward(self, x):
                return self.b(F.relu(self.a(x)))
        ember._dynamo.reset()
        ember.manual_seed(1)
        reference = TwoBranches().double()
        local = TwoBranches().double()
        local.load_state_dict(reference.state_dict())
        ddp = ember.compile(DDP(local, bucket_cap_mb=0.0002, find_unused_parameters=True))
        x = ember.from_numpy(np.random.default_rng(5).standard_normal((2 * world, 4)))
        mine = slice(rank * 2, (rank + 1) * 2)
        for _ in range(2):
            local.zero_grad()
            reference.zero_grad()
            ddp(x[mine]).pow(2).sum().backward()
            (reference(x).pow(2).sum() / world).backward()
        for (name, p), q in zip(local.named_parameters(), reference.parameters()):
            if name.startswith("never"):
                assert p.grad is None, name
            else:
                close(p.grad.numpy(), q.grad.numpy(), f"grad of {name}")
    @check
    def nccl_path_of_the_reducer_on_mpi_equals_doubled_batch():
        """The reducer's NCCL path (its own all-reduce Work per bucket, Work.wait_stream, settled at
        the next forward) run on MPI, where wait_stream declines and the host waits: the same
        training as one process with the doubled batch."""
        from ddp_worker import train_against_reference
        from ember.distributed.reducer import Reducer
        original = Reducer.__init__

        def stream_ordered(self, *args, **kwargs):
            original(self, *args, **kwargs)
            self._stream_ordered = True
        Reducer.__init__ = stream_ordered
        try:
            train_against_reference("mlp", rank, world, bucket_cap_mb=0.0005)
            train_against_reference("cnn", rank, world)
        finally:
            Reducer.__init__ = original

    @check
    def stream_ordered_work_is_settled_at_the_next_forward():
        """A Work left to the stream is owed: the next forward completes it on the host, and one
        that never completes raises the collective's timeout error there (no hang)."""
        import datetime
        import types
        from ember.distributed.c10d import Work, DistBackendError

        class StreamPending:
            def __init__(self, finishes):
                self.finishes, self.stream_waits = finishes, 0

            def test(self):
                return self.finishes

            def stream_wait(self):
                self.stream_waits += 1

            def abandon(self):
                return True
        group = types.SimpleNamespace(timeout=datetime.timedelta(seconds=0.3), seq=1, name="test_pg",
                                      backend="nccl", ranks=list(range(world)))
        ddp = DDP(nn.Linear(2, 2).double())
        done, stuck = StreamPending(True), StreamPending(False)
        for pending in (done, stuck):
            ddp.reducer.defer(Work(pending, None, group, lambda: "all_reduce(ReduceOp.SUM) on float32[8]"))
        assert done.stream_waits == stuck.stream_waits == 1 and len(ddp.reducer.owed) == 2
        try:
            ddp(ember.ones(1, 2, dtype=ember.float64))
        except DistBackendError as e:
            assert f"[rank {rank}] all_reduce(ReduceOp.SUM) on float32[8] timed out" in str(e), e
        else:
            raise AssertionError("the owed work that never completes must time out at the next forward")
        assert ddp.reducer.owed == []
        ddp(ember.ones(1, 2, dtype=ember.float64)).sum().backward()     # the next iteration runs
        mpi_work = dist.all_reduce(ember.ones(3, dtype=ember.float64), async_op=True)
        assert not mpi_work.wait_stream()        # MPI: the host must wait
        mpi_work.wait()
    return found


def main(out_dir: str) -> None:
    run_checks(out_dir, checks)

CHECK_NAMES = tuple(f"{kind}_compiled_{where}_split_equals_doubled_batch" for kind in ("mlp", "cnn", "block")
                    for where in ("inside", "outside")) + (
    "aot_eager_backend_split_equals_doubled_batch", "optimize_ddp_off_is_one_graph_and_equal",
    "buckets_reduce_while_earlier_pieces_run_backward", "unused_parameters_with_the_cut",
    "nccl_path_of_the_reducer_on_mpi_equals_doubled_batch", "stream_ordered_work_is_settled_at_the_next_forward")

if __name__ == "__main__":
    main(sys.argv[1])
