"""Run under ``mpiexec -n 2``: DistributedDataParallel against one process with the doubled batch.

Every rank also trains the single-process reference itself (rank 0's initial weights, the whole
batch), so each can compare its DDP replica with it after every step: the loss (DDP's averaged over
ranks) and every weight, in float64 to 1e-10. ``python ddp_worker.py OUT_DIR`` writes
``OUT_DIR/rank<r>.json``: {check name: "ok" or the failure}.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

import numpy as np

TOL = 1e-10
STEPS = 4


def mlp(nn):
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))


def cnn(nn):
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.ReLU(),
                         nn.Flatten(), nn.Linear(6 * 2 * 2, 5))


def batches(kind: str, per_rank: int, world: int, steps: int):
    rng = np.random.default_rng(7)
    shape = (per_rank * world, 6) if kind == "mlp" else (per_rank * world, 1, 8, 8)
    for _ in range(steps):
        x = rng.standard_normal(shape)
        y = rng.standard_normal((shape[0], 3)) if kind == "mlp" else rng.integers(0, 5, shape[0])
        yield x, y


def close(a, b, what: str) -> None:
    diff = float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))
    if not diff <= TOL:
        raise AssertionError(f"{what}: differs by {diff}")


def train_against_reference(kind: str, rank: int, world: int, *, bucket_cap_mb=None, wrap=None, optimizer="sgd",
                            hook=None):
    """DDP (each rank a different initialisation, half the batch) vs one process (rank 0's
    initialisation, the whole batch): equal loss and weights after every step."""
    import ember
    import ember.distributed as dist
    from ember import nn
    F = nn.functional
    build = mlp if kind == "mlp" else cnn
    ember.manual_seed(100)
    reference = build(nn).double()                 # rank 0's initial weights
    ember.manual_seed(100 + rank)                  # DDP must replace these with rank 0's weights
    local = build(nn).double()
    model = wrap(local) if callable(wrap) else local
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_cap_mb)
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    if wrap == "compile_outer":
        ddp = ember.compile(ddp)

    def opt(params):
        if optimizer == "adam":
            return ember.optim.Adam(params, lr=1e-2)
        return ember.optim.SGD(params, lr=0.1, momentum=0.9)
    opt_ddp, opt_ref = opt(local.parameters()), opt(reference.parameters())

    def loss_fn(out, y):
        return F.mse_loss(out, y) if kind == "mlp" else F.cross_entropy(out, y)
    per_rank = 4
    for step, (x, y) in enumerate(batches(kind, per_rank, world, STEPS)):
        X, Y = ember.from_numpy(x), ember.from_numpy(y)
        mine = slice(rank * per_rank, (rank + 1) * per_rank)
        loss = loss_fn(ddp(X[mine]), Y[mine])
        opt_ddp.zero_grad()
        loss.backward()
        opt_ddp.step()
        ref_loss = loss_fn(reference(X), Y)
        opt_ref.zero_grad()
        ref_loss.backward()
        opt_ref.step()
        averaged = loss.detach().clone()
        dist.all_reduce(averaged, op=dist.ReduceOp.AVG)
        close(averaged.item(), ref_loss.item(), f"{kind} loss at step {step}")
        for (name, p), q in zip(local.named_parameters(), reference.parameters()):
            close(p.detach().numpy(), q.detach().numpy(), f"{kind} {name} after step {step}")


def checks(rank: int, world: int):
    import ember
    import ember.distributed as dist
    from ember import nn
    F = nn.functional
    DDP = nn.parallel.DistributedDataParallel
    found = {}

    def check(fn):
        found[fn.__name__] = fn
        return fn

    @check
    def mlp_default_bucket():
        train_against_reference("mlp", rank, world)

    @check
    def mlp_small_buckets_adam():
        train_against_reference("mlp", rank, world, bucket_cap_mb=0.0005, optimizer="adam")

    @check
    def cnn_small_buckets():
        train_against_reference("cnn", rank, world, bucket_cap_mb=0.0002)

    @check
    def cnn_default_bucket():
        train_against_reference("cnn", rank, world)

    @check
    def mlp_compiled_inside():
        train_against_reference("mlp", rank, world, bucket_cap_mb=0.0005, wrap=ember.compile)

    @check
    def mlp_compiled_outside():
        train_against_reference("mlp", rank, world, bucket_cap_mb=0.0005, wrap="compile_outer")

    @check
    def buckets_reduce_during_backward():
        """When the first layer's gradient arrives (it comes last), the earlier buckets were
        already started."""
        ember.manual_seed(0)
        model = mlp(nn).double()
        ddp = DDP(model, bucket_cap_mb=0.0005)
        buckets = ddp.reducer.buckets
        assert len(buckets) >= 3 and buckets[0][0] == len(list(model.parameters())) - 1, buckets
        seen = {}
        first = next(model.parameters())

        def record(grad):
            seen["started"] = [w is not None for w in ddp.reducer.works]
        first.register_hook(record)
        ddp(ember.ones(2, 6, dtype=ember.float64)).sum().backward()
        assert seen["started"][:-1] == [True] * (len(buckets) - 1) and not seen["started"][-1], seen

    @check
    def no_sync_accumulates():
        ember.manual_seed(5)
        reference = mlp(nn).double()
        ember.manual_seed(5 + rank)
        local = mlp(nn).double()
        ddp = DDP(local, bucket_cap_mb=0.0005)
        data = list(batches("mlp", 3, world, 3))
        for i, (x, y) in enumerate(data):
            X, Y = ember.from_numpy(x), ember.from_numpy(y)
            mine = slice(rank * 3, (rank + 1) * 3)
            if i < 2:
                with ddp.no_sync():
                    F.mse_loss(ddp(X[mine]), Y[mine]).backward()
            else:
                F.mse_loss(ddp(X[mine]), Y[mine]).backward()
            F.mse_loss(reference(X), Y).backward()
        for (name, p), q in zip(local.named_parameters(), reference.parameters()):
            close(p.grad.numpy(), q.grad.numpy(), f"accumulated grad of {name}")

    class TwoBranches(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 2)
            self.b = nn.Linear(4, 2)
            self.never = nn.Linear(4, 2)

        def forward(self, x, use_b):
            return self.a(x) + self.b(x) if use_b else self.a(x)

    @check
    def find_unused_parameters():
        """Rank 0 uses branch b, rank 1 does not: b's gradient is rank 0's over the world size;
        ``never`` keeps grad None everywhere."""
        ember.manual_seed(0)
        reference = TwoBranches().double()
        ember.manual_seed(0)
        local = TwoBranches().double()
        ddp = DDP(local, find_unused_parameters=True)
        x = ember.from_numpy(np.random.default_rng(3).standard_normal((2 * world, 4)))
        mine = x[2 * rank:2 * rank + 2]
        ddp(mine, rank == 0).pow(2).sum().backward()
        total = sum(reference(x[2 * r:2 * r + 2], r == 0).pow(2).sum() for r in range(world)) / world
        total.backward()
        for name in ("a", "b"):
            for p, q in zip(getattr(local, name).parameters(), getattr(reference, name).parameters()):
                close(p.grad.numpy(), q.grad.numpy(), f"grad of {name}")
        assert local.never.weight.grad is None and local.never.bias.grad is None

    @check
    def unused_parameter_without_flag_is_reported():
        ember.manual_seed(0)
        ddp = DDP(TwoBranches().double())
        x = ember.ones(2, 4, dtype=ember.float64)
        ddp(x, True)                    # a forward no backward follows is forgotten (as in PyTorch)
        ddp(x, True).sum().backward()
        try:
            ddp(x, True)
        except RuntimeError as e:
            message = str(e)
            assert "Expected to have finished reduction in the prior iteration" in message, message
            assert "find_unused_parameters=True" in message and "never.weight" in message, message
        else:
            raise AssertionError("the next forward must report the parameters that got no gradient")

    @check
    def broadcast_at_construction_and_checkpoint_from_rank0():
        ember.manual_seed(rank)
        local = mlp(nn).double()
        ddp = DDP(local)
        path = os.path.join(OUT_DIR, "checkpoint.pt")
        if rank == 0:
            ember.save(ddp.module.state_dict(), path)
        dist.barrier()
        loaded = ember.load(path)
        for name, p in local.state_dict().items():
            close(p.numpy(), loaded[name].numpy(), f"{name} against rank 0's checkpoint")
        assert all(k.startswith("module.") for k in ddp.state_dict())

    @check
    def buffers_follow_rank0_at_each_forward():
        """BatchNorm's running statistics drift apart on different data; the next forward starts
        from rank 0's (broadcast_buffers=True)."""
        ember.manual_seed(0)
        local = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).double()
        ddp = DDP(local)
        with ember.no_grad():          # training mode: the statistics update; no backward follows
            ddp(ember.from_numpy(np.random.default_rng(rank).standard_normal((5, 3))))
        after_first = local[1].running_mean.clone()
        rank0 = after_first.clone()
        dist.broadcast(rank0, src=0)
        ddp.eval()
        with ember.no_grad():
            ddp(ember.ones(2, 3, dtype=ember.float64))
        close(local[1].running_mean.numpy(), rank0.numpy(), "running_mean after the next forward")
        if rank != 0:
            assert not np.allclose(after_first.numpy(), rank0.numpy()), "the ranks' statistics should differ"

    @check
    def different_models_are_refused():
        try:
            DDP(nn.Linear(3, 3 + rank))
        except RuntimeError as e:
            assert "same model across all ranks" in str(e), e
        else:
            raise AssertionError("DDP must refuse replicas of different shapes")

    @check
    def distributed_sampler_partitions_the_dataset():
        from ember.utils.data.distributed import DistributedSampler
        sampler = DistributedSampler(list(range(11)), shuffle=True, seed=3)
        sampler.set_epoch(2)
        mine = ember.tensor(list(sampler), dtype=ember.int64)
        everyone = [ember.zeros(len(sampler), dtype=ember.int64) for _ in range(world)]
        dist.all_gather(everyone, mine)
        indices = sorted(i for t in everyone for i in t.tolist())
        assert set(indices) == set(range(11)) and len(indices) == 6 * world, indices
    @check
    def second_backward_without_forward_stays_local():
        """As PyTorch (checked with gloo): the first backward of a forward is averaged; a second one
        through the retained graph accumulates this rank's own gradient without reduction and
        raises nothing; the next forward/backward is averaged again. Under no_sync both are local."""
        ember.manual_seed(3)
        reference, plain = mlp(nn).double(), mlp(nn).double()
        plain.load_state_dict(reference.state_dict())
        ember.manual_seed(3 + rank)
        local = mlp(nn).double()
        ddp = DDP(local, bucket_cap_mb=0.0005)
        x, y = next(batches("mlp", 3, world, 1))
        X, Y = ember.from_numpy(x), ember.from_numpy(y)
        mine = slice(rank * 3, (rank + 1) * 3)
        loss = F.mse_loss(ddp(X[mine]), Y[mine])
        loss.backward(retain_graph=True)
        loss.backward()
        F.mse_loss(reference(X), Y).backward()
        F.mse_loss(plain(X[mine]), Y[mine]).backward()
        for (name, p), q, r in zip(local.named_parameters(), reference.parameters(), plain.parameters()):
            close(p.grad.numpy(), q.grad.numpy() + r.grad.numpy(), f"averaged + local grad of {name}")
        for p in local.parameters():
            p.grad = None
        F.mse_loss(ddp(X[mine]), Y[mine]).backward()      # the reducer is ready for the next iteration
        for (name, p), q in zip(local.named_parameters(), reference.parameters()):
            close(p.grad.numpy(), q.grad.numpy(), f"next iteration's grad of {name}")
        for p in local.parameters():
            p.grad = None
        with ddp.no_sync():
            loss = F.mse_loss(ddp(X[mine]), Y[mine])
            loss.backward(retain_graph=True)
            loss.backward()
        for (name, p), r in zip(local.named_parameters(), plain.parameters()):
            close(p.grad.numpy(), 2 * r.grad.numpy(), f"no_sync double backward grad of {name}")

    from ember.distributed.algorithms.ddp_comm_hooks import default_hooks

    @check
    def allreduce_hook_equals_default():
        train_against_reference("mlp", rank, world, bucket_cap_mb=0.0005, hook=default_hooks.allreduce_hook)
        train_against_reference("cnn", rank, world, hook=default_hooks.allreduce_hook)

    @check
    def grad_bucket_api():
        """The hook sees each bucket once per backward, in order, with this rank's unreduced
        gradients; its parameters() are the model's, gradients() views of buffer()."""
        ember.manual_seed(0)
        local, plain = mlp(nn).double(), mlp(nn).double()
        plain.load_state_dict(local.state_dict())
        ddp = DDP(local, bucket_cap_mb=0.0005)
        seen = []

        def recording_hook(state, bucket):
            assert state == "my state", state
            grads = bucket.gradients()
            for p, g in zip(bucket.parameters(), grads):
                close(g.numpy(), p.grad.numpy(), "GradBucket.gradients() against the local .grad")
            grads[0].mul_(1.0)
            assert grads[0].data_ptr() == bucket.buffer().data_ptr(), "gradients() must view buffer()"
            seen.append((bucket.index(), bucket.is_last(), [id(p) for p in bucket.parameters()],
                         bucket.buffer().numel()))
            return default_hooks.allreduce_hook(None, bucket)
        ddp.register_comm_hook("my state", recording_hook)
        x = ember.from_numpy(np.random.default_rng(rank).standard_normal((3, 6)))
        ddp(x).sum().backward()
        plain(x).sum().backward()
        params = list(local.parameters())
        buckets = ddp.reducer.buckets
        assert [s[0] for s in seen] == list(range(len(buckets))), seen
        assert [s[1] for s in seen] == [False] * (len(buckets) - 1) + [True], seen
        assert [s[2] for s in seen] == [[id(params[i]) for i in b] for b in buckets], seen
        assert [s[3] for s in seen] == [sum(params[i].numel() for i in b) for b in buckets], seen
        for (name, p), q in zip(local.named_parameters(), plain.parameters()):
            mine = q.grad.detach().clone()
            dist.all_reduce(mine, op=dist.ReduceOp.AVG)
            close(p.grad.numpy(), mine.numpy(), f"grad of {name} through the recording hook")

    def compress_against_numpy(hook, to_low, from_low):
        """One backward with a compress hook against NumPy: every rank's gradient cast to the
        low-precision type and divided by the world size there, summed there, cast back."""
        ember.manual_seed(1)
        local, plain = mlp(nn).double(), mlp(nn).double()
        plain.load_state_dict(local.state_dict())
        ddp = DDP(local, bucket_cap_mb=0.0005)
        ddp.register_comm_hook(None, hook)
        x = ember.from_numpy(np.random.default_rng(10 + rank).standard_normal((3, 6)) * 50)
        ddp(x).pow(2).sum().backward()
        plain(x).pow(2).sum().backward()
        for (name, p), q in zip(local.named_parameters(), plain.parameters()):
            everyone = [ember.zeros_like(q.grad) for _ in range(world)]
            dist.all_gather(everyone, q.grad)
            low = [to_low(g.numpy()) / to_low(np.float64(world)) for g in everyone]
            total = low[0]
            for piece in low[1:]:
                total = total + piece
            expected = from_low(total)
            assert np.array_equal(p.grad.numpy(), expected), f"{name}: {p.grad.numpy()} vs {expected}"
            assert not np.array_equal(expected, np.mean([g.numpy() for g in everyone], axis=0)), \
                "the gradients should be large enough for float16 rounding to show"

    @check
    def fp16_compress_hook_matches_numpy():
        compress_against_numpy(default_hooks.fp16_compress_hook, lambda a: np.asarray(a).astype(np.float16),
                               lambda a: a.astype(np.float64))

    @check
    def bf16_compress_hook_matches_torch():
        import torch                    # the oracle for bfloat16 arithmetic (NumPy has no bfloat16)
        compress_against_numpy(default_hooks.bf16_compress_hook,
                               lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64)).to(torch.bfloat16),
                               lambda t: t.double().numpy())

    def join_against_reference(batches_per_rank, hook=None, find_unused=False):
        """Uneven inputs under join(): rank r trains on batches_per_rank[r] batches. The reference
        takes, at each step, the mean loss of every rank still training divided by the initial world
        size (PyTorch's divide_by_initial_world_size=True); afterwards every rank holds its weights."""
        ember.manual_seed(8)
        reference = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 3)).double()
        ember.manual_seed(8 + rank)
        local = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Tanh(), nn.Linear(5, 3)).double()
        ddp = DDP(local, bucket_cap_mb=0.0001, find_unused_parameters=find_unused)
        if hook is not None:
            ddp.register_comm_hook(None, hook)
        opt_ddp = ember.optim.SGD(local.parameters(), lr=0.1, momentum=0.9)
        opt_ref = ember.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        data = list(batches("mlp", 3, world, max(batches_per_rank)))
        with ddp.join():
            for step in range(batches_per_rank[rank]):
                x, y = data[step]
                mine = slice(rank * 3, (rank + 1) * 3)
                opt_ddp.zero_grad()
                F.mse_loss(ddp(ember.from_numpy(x[mine])), ember.from_numpy(y[mine])).backward()
                opt_ddp.step()
        for step in range(max(batches_per_rank)):
            x, y = data[step]
            opt_ref.zero_grad()
            losses = []
            for r in range(world):
                if step < batches_per_rank[r]:     # BatchNorm: each rank's own batch statistics
                    losses.append(F.mse_loss(reference(ember.from_numpy(x[r * 3:(r + 1) * 3])),
                                             ember.from_numpy(y[r * 3:(r + 1) * 3])))
            (sum(losses) / world).backward()
            opt_ref.step()
        for (name, p), q in zip(local.named_parameters(), reference.parameters()):
            close(p.detach().numpy(), q.detach().numpy(), f"{name} after join")

    @check
    def join_uneven_inputs():
        join_against_reference([3, 5])
        join_against_reference([4, 2])
        join_against_reference([1, 3], find_unused=True)
        join_against_reference([3, 1], hook=default_hooks.allreduce_hook)

    @check
    def comm_hook_errors():
        ddp = DDP(nn.Linear(2, 2).double())
        try:
            ddp.register_comm_hook(None, "not a hook")
        except TypeError as e:
            assert "must be callable" in str(e), e
        else:
            raise AssertionError("a non-callable hook must raise TypeError")
        ddp.register_comm_hook(None, default_hooks.allreduce_hook)
        try:
            ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
        except RuntimeError as e:
            assert "can only be called once" in str(e), e
        else:
            raise AssertionError("a second register_comm_hook must raise RuntimeError")

        def wrong_size_hook(state, bucket):
            fut = ember.futures.Future()
            fut.set_result(bucket.buffer()[:1] if bucket.buffer().numel() > 1 else "not a tensor")
            return fut
        model = nn.Linear(3, 2).double()
        ddp = DDP(model, bucket_cap_mb=0.00001)        # weight and bias in separate buckets
        ddp.register_comm_hook(None, wrong_size_hook)
        x = ember.ones(2, 3, dtype=ember.float64) * (rank + 1)
        try:
            ddp(x).sum().backward()
        except RuntimeError as e:
            assert "future of bucket" in str(e) and "must hold a Tensor of" in str(e), e
        else:
            raise AssertionError("a hook whose future holds the wrong value must raise RuntimeError")
        close(model.weight.grad.numpy(), np.full((2, 3), 2.0 * (rank + 1)), "no bucket written: the local grad")
        model.weight.grad = model.bias.grad = None
        ddp.reducer.comm_hook = (None, default_hooks.allreduce_hook)
        ddp(x).sum().backward()                         # the next iteration is not blocked
        close(model.weight.grad.numpy(), np.full((2, 3), sum(2.0 * (r + 1) for r in range(world)) / world),
              "averaged grad after a failed hook")
    return found


OUT_DIR = None


def run_checks(out_dir: str, checks) -> None:
    """Start the MPI process group, run each of ``checks(rank, world)``'s checks (only $ONLY_CHECK
    if set) with a barrier after each, write ``OUT_DIR/rank<r>.json``."""
    import datetime
    import ember.distributed as dist
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    results = {}
    only = os.environ.get("ONLY_CHECK")
    for name, fn in checks(rank, world).items():
        if only and name != only:
            continue
        try:
            fn()
            results[name] = "ok"
        except Exception:
            results[name] = traceback.format_exc()
        dist.barrier()
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)


def main(out_dir: str) -> None:
    global OUT_DIR
    OUT_DIR = out_dir
    run_checks(out_dir, checks)

CHECK_NAMES = ("mlp_default_bucket", "mlp_small_buckets_adam", "cnn_small_buckets", "cnn_default_bucket",
               "mlp_compiled_inside", "mlp_compiled_outside", "buckets_reduce_during_backward",
               "no_sync_accumulates", "find_unused_parameters", "unused_parameter_without_flag_is_reported",
               "broadcast_at_construction_and_checkpoint_from_rank0", "buffers_follow_rank0_at_each_forward",
               "different_models_are_refused",
               "distributed_sampler_partitions_the_dataset", "second_backward_without_forward_stays_local",
               "allreduce_hook_equals_default", "grad_bucket_api", "fp16_compress_hook_matches_numpy",
               "bf16_compress_hook_matches_torch", "comm_hook_errors",
               "join_uneven_inputs")

if __name__ == "__main__":
    main(sys.argv[1])
