"""Run under ``mpiexec -n 2``: every collective on every dtype, checked against NumPy on each rank.

``python collectives_worker.py OUT_DIR [nccl]`` writes ``OUT_DIR/rank<r>.json``: {check name: "ok" or the
failure}. Every rank builds every rank's inputs from the same seeds, so each can compute the
expected result with NumPy. ``CHECK_NAMES`` (no MPI needed) lets pytest parametrize over them.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

import numpy as np

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128")
REAL_OPS = ("SUM", "AVG", "PRODUCT", "MIN", "MAX")


def ops_for(dtype: str, backend: str = "mpi"):
    if backend == "nccl" and dtype == "int16":
        return ()                                      # NCCL cannot reduce int16 (refused, as in PyTorch)
    if backend == "nccl" and dtype.startswith("complex"):
        return ("SUM", "AVG")                          # reduced as pairs of reals
    if dtype == "bool":
        return ("SUM", "PRODUCT", "MIN", "MAX")        # AVG is refused for bool, as in PyTorch's NCCL
    if dtype.startswith("complex"):
        return ("SUM", "AVG", "PRODUCT")               # MIN/MAX are refused for complex, as in PyTorch
    return REAL_OPS


COLLECTIVES = ("broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor", "reduce", "gather",
               "scatter", "send_recv", "isend_irecv_any_source")
CHECK_NAMES = ([f"all_reduce[{op}-{d}]" for d in DTYPES for op in ops_for(d)]
               + [f"all_reduce_noncontiguous[{d}]" for d in DTYPES]
               + [f"{c}[{d}]" for d in DTYPES for c in COLLECTIVES])


def np_dtype(name: str):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype("bool" if name == "bool" else name)


def data(name: str, shape, rank: int, salt: int) -> np.ndarray:
    """Rank `rank`'s input: small values, exact in every dtype (products and sums of two stay exact)."""
    rng = np.random.default_rng(1000 * salt + rank)
    if name == "bool":
        return rng.random(shape) > 0.5
    values = rng.integers(0 if name == "uint8" else -4, 5, size=shape)
    if name.startswith("complex"):
        values = values + 1j * rng.integers(-4, 5, size=shape)
    return values.astype(np_dtype(name))


def reference(op: str, arrays):
    """NumPy's reduction of the ranks' arrays (bool: SUM/MAX = or, PRODUCT/MIN = and)."""
    a = arrays[0]
    if a.dtype == np.bool_:
        fn = np.logical_or if op in ("SUM", "MAX") else np.logical_and
    else:
        fn = {"SUM": np.add, "AVG": np.add, "PRODUCT": np.multiply, "MIN": np.minimum, "MAX": np.maximum}[op]
    out = a.copy()
    for b in arrays[1:]:
        out = fn(out, b).astype(a.dtype)
    if op == "AVG":
        n = len(arrays)
        if a.dtype.kind in "iu":     # integer average rounds toward zero (NCCL's ncclAvg)
            out = (np.sign(out) * (np.abs(out) // n)).astype(a.dtype)
        else:
            out = (out / np.asarray(n, dtype=a.dtype)).astype(a.dtype)
    return out


def same(tensor, expected: np.ndarray, what: str) -> None:
    got = tensor.cpu().numpy()
    if got.dtype != expected.dtype or got.shape != expected.shape or not np.array_equal(got, expected):
        raise AssertionError(f"{what}: got {got!r}, expected {expected!r}")


def checks(rank: int, world: int, backend: str = "mpi"):
    import ember
    import ember.distributed as dist
    found = {}

    def T(array):
        t = ember.from_numpy(np.ascontiguousarray(array))
        return t.to(f"cuda:{os.environ.get('LOCAL_RANK', 0)}") if backend == "nccl" else t

    def check(name):
        def register(fn):
            found[name] = fn
            return fn
        return register

    def inputs(d, shape, salt):
        return [data(d, shape, r, salt) for r in range(world)]

    for d in DTYPES:
        for op in ops_for(d, backend):
            @check(f"all_reduce[{op}-{d}]")
            def _(d=d, op=op):
                xs = inputs(d, (3, 4), 1)
                t = T(xs[rank].copy())
                version = t._version
                dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
                same(t, reference(op, xs), "all_reduce")
                assert t._version > version, "all_reduce must bump the version counter (it writes in place)"

        @check(f"all_reduce_noncontiguous[{d}]")
        def _(d=d):
            if not ops_for(d, backend):
                return
            xs = inputs(d, (4, 3), 2)
            base = T(xs[rank].copy())
            view = base.t()                     # a transposed view: sent through a contiguous copy
            dist.all_reduce(view)
            same(base, reference("SUM", xs), "all_reduce through a transposed view")

        @check(f"broadcast[{d}]")
        def _(d=d):
            xs = inputs(d, (5,), 3)
            t = T(xs[rank].copy())
            dist.broadcast(t, src=world - 1)
            same(t, xs[world - 1], "broadcast")

        @check(f"all_gather[{d}]")
        def _(d=d):
            xs = inputs(d, (2, 3), 4)
            out = [T(np.zeros((2, 3), np_dtype(d))) for _ in range(world)]
            dist.all_gather(out, T(xs[rank]))
            for r in range(world):
                same(out[r], xs[r], f"all_gather row {r}")

        @check(f"all_gather_into_tensor[{d}]")
        def _(d=d):
            xs = inputs(d, (2, 3), 5)
            out = T(np.zeros((2 * world, 3), np_dtype(d)))
            dist.all_gather_into_tensor(out, T(xs[rank]))
            same(out, np.concatenate(xs), "all_gather_into_tensor")

        @check(f"reduce_scatter_tensor[{d}]")
        def _(d=d):
            if not ops_for(d, backend):
                return
            xs = inputs(d, (2 * world, 3), 6)
            out = T(np.zeros((2, 3), np_dtype(d)))
            dist.reduce_scatter_tensor(out, T(xs[rank]))
            same(out, reference("SUM", xs)[2 * rank:2 * rank + 2], "reduce_scatter_tensor")

        @check(f"reduce[{d}]")
        def _(d=d):
            if not ops_for(d, backend):
                return
            xs = inputs(d, (4,), 7)
            t = T(xs[rank].copy())
            dist.reduce(t, dst=world - 1)
            same(t, reference("SUM", xs) if rank == world - 1 else xs[rank], "reduce")

        @check(f"gather[{d}]")
        def _(d=d):
            xs = inputs(d, (3,), 8)
            out = [T(np.zeros(3, np_dtype(d))) for _ in range(world)] if rank == 0 else None
            dist.gather(T(xs[rank]), out, dst=0)
            if rank == 0:
                for r in range(world):
                    same(out[r], xs[r], f"gather row {r}")

        @check(f"scatter[{d}]")
        def _(d=d):
            xs = inputs(d, (3,), 9)
            t = T(np.zeros(3, np_dtype(d)))
            dist.scatter(t, [T(x) for x in xs] if rank == world - 1 else None, src=world - 1)
            same(t, xs[rank], "scatter")

        @check(f"send_recv[{d}]")
        def _(d=d):
            xs = inputs(d, (2, 2), 10)
            if rank == 0:
                for r in range(1, world):
                    dist.send(T(xs[r]), dst=r, tag=7)
            else:
                t = T(np.zeros((2, 2), np_dtype(d)))
                assert dist.recv(t, src=0, tag=7) == 0
                same(t, xs[rank], "recv")

        @check(f"isend_irecv_any_source[{d}]")
        def _(d=d):
            if backend == "nccl":
                return                                  # NCCL has no receive from any source
            xs = inputs(d, (3,), 11)
            if rank == 0:
                for _ in range(1, world):
                    t = T(np.zeros(3, np_dtype(d)))
                    work = dist.irecv(t)
                    work.wait()
                    sender = work.result()
                    same(t, xs[sender], f"irecv from rank {sender}")
            else:
                dist.isend(T(xs[rank]), dst=0).wait()
    return found


# Calls PyTorch refuses; each fails the same way on every rank (so no rank is left inside a
# collective). ``lib`` is ember or torch, ``dist`` its distributed module. pytest runs them on
# torch (gloo, one process) and compares the exception types with ember's from the MPI run.
BAD_CALLS = {
    "all_reduce_complex_max": lambda lib, dist, world: dist.all_reduce(lib.ones(2, dtype=lib.complex64),
                                                                       op=dist.ReduceOp.MAX),
    "all_reduce_list": lambda lib, dist, world: dist.all_reduce([lib.ones(2)]),
    "all_reduce_op_string": lambda lib, dist, world: dist.all_reduce(lib.ones(2), op="sum"),
    "all_gather_wrong_length": lambda lib, dist, world: dist.all_gather([lib.empty(2) for _ in range(world + 1)],
                                                                        lib.ones(2)),
    "all_gather_wrong_shape": lambda lib, dist, world: dist.all_gather([lib.empty(3) for _ in range(world)],
                                                                       lib.ones(2)),
    "all_gather_into_tensor_wrong_size": lambda lib, dist, world: dist.all_gather_into_tensor(
        lib.empty(2 * world + 1), lib.ones(2)),
    "all_gather_into_tensor_wrong_dtype": lambda lib, dist, world: dist.all_gather_into_tensor(
        lib.empty(2 * world, dtype=lib.float64), lib.ones(2)),
    "reduce_scatter_tensor_wrong_size": lambda lib, dist, world: dist.reduce_scatter_tensor(
        lib.empty(2), lib.ones(2 * world + 1)),
    # each rank names itself the root, so every rank refuses before any message moves
    "gather_list_wrong_length": lambda lib, dist, world: dist.gather(
        lib.ones(2), [lib.empty(2) for _ in range(world + 1)], dst=dist.get_rank()),
    "gather_list_wrong_shape": lambda lib, dist, world: dist.gather(
        lib.ones(2), [lib.empty(3) for _ in range(world)], dst=dist.get_rank()),
    "scatter_list_missing_on_source": lambda lib, dist, world: dist.scatter(lib.empty(2), None,
                                                                            src=dist.get_rank()),
    "broadcast_bad_src": lambda lib, dist, world: dist.broadcast(lib.ones(2), src=world + 3),
    "send_to_self": lambda lib, dist, world: dist.send(lib.ones(2), dst=dist.get_rank()),
    "init_twice": lambda lib, dist, world: dist.init_process_group("gloo"),
}


def misc_checks(rank: int, world: int):
    """Work handles, groups, version counters: {name: fn}."""
    import datetime
    import ember
    import ember.distributed as dist

    def async_all_reduce():
        t = ember.ones(3) * (rank + 1)
        work = dist.all_reduce(t, async_op=True)
        assert work.wait() is True and work.is_completed()
        same(t, np.full(3, sum(range(1, world + 1)), np.float32), "async all_reduce")

    def subgroup():
        g = dist.new_group([world - 1])
        t = ember.ones(2) * (rank + 1)
        result = dist.all_reduce(t, group=g)
        assert result is None
        same(t, np.full(2, rank + 1, np.float32), "all_reduce on a group of one (or outside it)")
        assert dist.get_rank(g) == (0 if rank == world - 1 else -1)
        assert dist.get_world_size(g) == (1 if rank == world - 1 else -1)

    def whole_group_and_group_src():
        g = dist.new_group(list(range(world)))
        t = ember.full((2,), float(rank))
        dist.broadcast(t, group=g, group_src=world - 1)
        same(t, np.full(2, world - 1, np.float32), "broadcast with group_src")
        dist.all_reduce(t, group=g)
        same(t, np.full(2, world * (world - 1), np.float32), "all_reduce on a new group of every rank")
        dist.destroy_process_group(g)

    def reduce_keeps_other_ranks():
        t = ember.full((2,), float(rank + 1))
        dist.reduce(t, dst=0, op=dist.ReduceOp.MAX)
        same(t, np.full(2, world if rank == 0 else rank + 1, np.float32), "reduce(MAX) result only on dst")

    def barrier_async():
        work = dist.barrier(async_op=True)
        assert work.wait()

    def recv_timeout_is_cancelled_and_the_group_goes_on():
        t = ember.zeros(3)
        work = dist.irecv(t, src=(rank + 1) % world, tag=99)       # nobody sends with tag 99
        try:
            work.wait(timeout=datetime.timedelta(seconds=0.3))
        except dist.DistBackendError as e:
            text = str(e)
            assert f"[rank {rank}] recv(src={(rank + 1) % world}, tag=99) on float32[3] timed out" in text, text
            assert "abort" not in text, text
        else:
            raise AssertionError("a receive nobody answers must time out")
        async_all_reduce()                                          # the group still works

    def object_collectives():
        everyone = [None] * world
        dist.all_gather_object(everyone, {"rank": rank, "text": "x" * (rank * 50)})
        assert everyone == [{"rank": r, "text": "x" * (r * 50)} for r in range(world)], everyone
        objects = [("from", rank), [rank] * 3] if rank == world - 1 else [None, None]
        dist.broadcast_object_list(objects, src=world - 1)
        assert objects == [("from", world - 1), [world - 1] * 3], objects

    def saved_tensor_overwritten():
        x = ember.ones(3, requires_grad=True)
        y = x * 2
        z = y * y                     # saves y
        dist.all_reduce(y)
        try:
            z.sum().backward()
        except RuntimeError as e:
            assert "modified by an inplace operation" in str(e), e
        else:
            raise AssertionError("backward through a tensor all_reduce overwrote must raise")

    return {"async_all_reduce": async_all_reduce, "subgroup": subgroup,
            "whole_group_and_group_src": whole_group_and_group_src,
            "reduce_keeps_other_ranks": reduce_keeps_other_ranks, "barrier_async": barrier_async,
            "recv_timeout_is_cancelled_and_the_group_goes_on": recv_timeout_is_cancelled_and_the_group_goes_on,
            "object_collectives": object_collectives,
            "saved_tensor_overwritten": saved_tensor_overwritten}


MISC_NAMES = ("async_all_reduce", "subgroup", "whole_group_and_group_src", "reduce_keeps_other_ranks",
              "barrier_async", "recv_timeout_is_cancelled_and_the_group_goes_on", "object_collectives",
              "saved_tensor_overwritten")


def main(out_dir: str, backend: str = "mpi") -> None:
    import datetime
    import ember.distributed as dist
    results = {}
    if backend == "mpi":            # no GPU or NCCL here: a clear refusal, and MPI still starts afterwards
        try:
            dist.init_process_group("nccl")
            results["nccl_without_gpu"] = "no error"
        except Exception as e:
            results["nccl_without_gpu"] = f"{type(e).__name__}: {e}"
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    every = dict(checks(rank, world, backend))
    if backend == "mpi":
        every.update(misc_checks(rank, world))
    for name, fn in every.items():
        if os.environ.get("EMBER_TEST_TRACE"):
            print(rank, name, file=sys.stderr, flush=True)
        try:
            fn()
            results[name] = "ok"
        except Exception:
            results[name] = traceback.format_exc()
        dist.barrier()          # a failed check must not leave the ranks out of step
    import ember
    for name, call in BAD_CALLS.items() if backend == "mpi" else ():
        try:
            call(ember, dist, world)
            results["bad:" + name] = "no error"
        except Exception as e:
            results["bad:" + name] = f"{type(e).__name__}: {e}"
    dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main(*sys.argv[1:3])
