"""The 64-byte aligned NumPy allocator the fuser installs (ember/_inductor/aligned_alloc.py).

Oracles: NumPy itself (values through every allocation path: empty, zeros, realloc by an in-place
resize, growth by append) and eager ember (a compiled graph's output). The fresh-process tests show
when it is installed (not at import, yes at the first CPU kernel) and that arrays allocated before
keep their allocator and their sharing with ember tensors.
"""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
from ember._inductor import aligned_alloc, codecache

pytestmark = pytest.mark.skipif(not codecache.compiler_available(), reason="no C compiler")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def _installed():
    aligned_alloc.install()


@pytest.mark.parametrize("n", [0, 1, 3, 15, 16, 17, 255, 4096, 100_003, 3_000_000])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float64, np.complex128])
def test_every_allocation_path_is_aligned_and_holds_numpys_values(n, dtype):
    assert aligned_alloc.current_handler_name() == aligned_alloc.HANDLER_NAME
    a = np.empty(n, dtype)
    z = np.zeros(n, dtype)                     # calloc
    r = np.arange(n, dtype=np.float64).astype(dtype)
    for arr in (a, z, r):
        assert arr.ctypes.data % 64 == 0
        assert aligned_alloc.current_handler_name(arr) == aligned_alloc.HANDLER_NAME
    assert not z.any()
    np.testing.assert_array_equal(r, np.array(range(n), dtype=np.float64).astype(dtype))


@pytest.mark.parametrize("start,grow", [(1, 100_000), (10, 11), (5000, 3), (1_000_000, 1_000_007), (64, 0)])
def test_in_place_resize_goes_through_realloc_and_keeps_the_data(start, grow):
    a = np.arange(start, dtype=np.float64)
    expected = np.arange(start, dtype=np.float64)
    a.resize(grow, refcheck=False)            # NumPy reallocates the data block in place
    assert a.ctypes.data % 64 == 0
    keep = min(start, grow)
    np.testing.assert_array_equal(a[:keep], expected[:keep])
    if grow > start:
        assert not a[start:].any()            # NumPy zero-fills the grown part


def test_growing_many_arrays_and_freeing_them_in_any_order():
    rng = np.random.default_rng(0)
    arrays = [np.full(int(s), i, np.int32) for i, s in enumerate(rng.integers(0, 50_000, 300))]
    for i in rng.permutation(len(arrays))[:200]:
        arrays[i] = None
    for i, arr in enumerate(arrays):
        if arr is not None:
            assert arr.ctypes.data % 64 == 0 and (arr == i).all()
    grown = np.zeros(0)
    for i in range(500):
        grown = np.append(grown, i)
    np.testing.assert_array_equal(grown, np.arange(500.0))


def test_ember_tensors_and_compiled_outputs_are_aligned_and_match_eager():
    x = ember.randn(64, 1024)
    assert x.numpy().ctypes.data % 64 == 0
    fn = ember.compile(lambda t: (t * 1.5).softmax(-1))
    out = fn(x)
    assert out.numpy().ctypes.data % 64 == 0
    np.testing.assert_allclose(out.numpy(), (x * 1.5).softmax(-1).numpy(), rtol=1e-6, atol=1e-7)


def test_a_new_thread_starts_with_numpys_allocator_and_can_install_it():
    seen = {}

    def body():
        seen["before"] = aligned_alloc.current_handler_name()
        aligned_alloc.install()
        seen["after"] = aligned_alloc.current_handler_name()
        seen["aligned"] = np.empty(1000, np.float32).ctypes.data % 64 == 0
    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == {"before": "default_allocator", "after": aligned_alloc.HANDLER_NAME, "aligned": True}


FRESH_PROCESS = r"""
import numpy as np, ember
from ember._inductor import aligned_alloc, config
config.align_allocations = {align}
print(aligned_alloc.current_handler_name())               # after import: NumPy's own
before = np.arange(100_000, dtype=np.float32)              # allocated by NumPy's own allocator
shared = ember.from_numpy(before)
out = ember.compile(lambda t: t * 2 + 1)(shared)
print(aligned_alloc.current_handler_name())               # after the first CPU kernel
print(aligned_alloc.current_handler_name(before))
before[7] = -1.0                                          # from_numpy still shares the array
print(float(shared[7]), np.array_equal(out.numpy(), np.arange(100_000, dtype=np.float32) * 2 + 1))
print(all(np.empty(n, np.float32).ctypes.data % 64 == 0 for n in (1, 100, 100_000)))
del before, shared                                        # freed by NumPy's own allocator
"""


@pytest.mark.parametrize("align", [True, False])
def test_installed_at_the_first_cpu_kernel_not_at_import(align):
    env = dict(os.environ, PYTHONPATH=ROOT)
    run = subprocess.run([sys.executable, "-c", FRESH_PROCESS.format(align=align)], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.split("\n")
    assert lines[0] == "default_allocator"
    assert lines[1] == (aligned_alloc.HANDLER_NAME if align else "default_allocator")
    assert lines[2] == "default_allocator"
    assert lines[3] == "-1.0 True"
    if align:                                 # without it, malloc's alignment is whatever it is
        assert lines[4] == "True"


def _huge_kib(arr) -> int:
    """AnonHugePages (kB) of the mapping holding `arr`'s middle byte (/proc/self/smaps; the advice
    splits the block's first page off into a mapping of its own)."""
    addr, inside = arr.ctypes.data + arr.nbytes // 2, False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and all(c in "0123456789abcdef-" for c in head):
                lo, hi = (int(v, 16) for v in head.split("-"))
                inside = lo <= addr < hi
            elif inside and head == "AnonHugePages:":
                return int(line.split()[1])
    return 0


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux only")
def test_large_blocks_get_huge_pages_where_numpys_own_allocator_does():
    """Oracle: NumPy's default allocator (a fresh thread's) on the same machine and kernel settings."""
    sizes = 64 << 20
    seen = {}

    def with_numpys_allocator():
        a = np.ones(sizes // 4, np.float32)
        seen["numpy"] = _huge_kib(a)
    t = threading.Thread(target=with_numpys_allocator)
    t.start()
    t.join()
    ours = np.ones(sizes // 4, np.float32)
    assert aligned_alloc.current_handler_name(ours) == aligned_alloc.HANDLER_NAME
    assert (_huge_kib(ours) > 0) == (seen["numpy"] > 0), (_huge_kib(ours), seen)
