"""ember.cuda's runtime API against torch.cuda on the same machine: devices, streams, events,
memory statistics of the caching allocator (CuPy's pool), and the TF32 switch of matmul."""
import numpy as np
import torch

import ember


def test_device_queries_match_torch():
    assert ember.cuda.is_available() and ember.cuda.device_count() == torch.cuda.device_count()
    assert ember.cuda.current_device() == torch.cuda.current_device() == 0
    assert ember.cuda.get_device_name() == torch.cuda.get_device_name()
    assert ember.cuda.get_device_capability() == torch.cuda.get_device_capability()
    assert ember.cuda.is_bf16_supported() == torch.cuda.is_bf16_supported()
    with ember.cuda.device(0):
        assert ember.cuda.current_device() == 0
    ember.cuda.set_device("cuda:0")
    ember.cuda.synchronize()


def test_events_time_work_on_a_stream():
    s = ember.cuda.Stream()
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    a = ember.randn(1024, 1024, device="cuda")
    with ember.cuda.stream(s):
        start.record(s)
        for _ in range(5):
            b = a @ a
        end.record(s)
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0
    s.synchronize()
    assert b.device.type == "cuda"


def test_memory_statistics_follow_allocations():
    ember.cuda.empty_cache()
    ember.cuda.reset_peak_memory_stats()
    base = ember.cuda.memory_allocated()
    # what other tests of this worker keep cached (a CUDA graph's private pool is not emptied)
    slack = ember.cuda.memory_reserved() - base
    x = ember.empty(1 << 20, device="cuda")            # 4 MiB
    assert ember.cuda.memory_allocated() - base >= 4 << 20
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    y = ember.empty(1 << 21, device="cuda")            # 8 MiB more
    del x, y
    assert ember.cuda.memory_allocated() == base
    assert ember.cuda.max_memory_allocated() - base >= 12 << 20
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == base
    ember.cuda.empty_cache()
    assert ember.cuda.memory_reserved() <= ember.cuda.memory_allocated() + slack + (2 << 20)


def test_tf32_switch_changes_float32_matmul_like_torch():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((512, 512)).astype(np.float32), rng.standard_normal((512, 512)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    errors = {}
    for allow in (False, True):
        ember.backends.cuda.matmul.allow_tf32 = allow
        try:
            got = (ember.tensor(a, device="cuda") @ ember.tensor(b, device="cuda")).cpu().numpy()
        finally:
            ember.backends.cuda.matmul.allow_tf32 = False
        errors[allow] = np.abs(got - exact).max()
    assert errors[False] < 1e-3 < errors[True]    # TF32 keeps 10 mantissa bits: visibly coarser
    ember.set_float32_matmul_precision("high")
    assert ember.backends.cuda.matmul.allow_tf32 and ember.get_float32_matmul_precision() == "high"
    ember.set_float32_matmul_precision("highest")
    assert not ember.backends.cuda.matmul.allow_tf32


def test_cuda_seed_does_not_touch_the_cpu_generator():
    ember.manual_seed(1)
    a = ember.rand(5)
    ember.manual_seed(1)
    ember.cuda.manual_seed(99)
    ember.rand(3, device="cuda")
    np.testing.assert_array_equal(ember.rand(5).numpy(), a.numpy())
