"""The profiler's CUDA times: with ProfilerActivity.CUDA, operators on CUDA tensors get device time
from CUDA events, and key_averages().table() has PyTorch's CUDA columns and footer."""
import ember
from ember.profiler import ProfilerActivity, profile


def test_cuda_operators_get_device_time_and_the_table_shows_it():
    a = ember.randn(2048, 2048, device="cuda", dtype=ember.bfloat16)
    c = ember.ones(4)
    a @ a                                   # warm-up: cuBLAS picks its kernel on the first call
    ember.cuda.synchronize()
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        a @ a
    end.record()
    end.synchronize()
    alone_us = start.elapsed_time(end) * 1000
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(5):
            a @ a
        c + c
    rows = {e.key: e for e in p.key_averages()}
    mm, add = rows["aten::matmul"], rows["aten::add"]
    # each op's device time spans its own launches (the GPU waits for the host between them)
    assert mm.count == 5 and alone_us / 8 < mm.device_time_total < alone_us * 8    # (the same order, not host time)
    assert mm.self_device_time_total <= mm.device_time_total and mm.cuda_time_total == mm.device_time_total
    assert add.device_time_total == 0            # a CPU tensor: not timed on the device
    table = p.key_averages().table(sort_by="cuda_time_total", row_limit=5)
    header = table.splitlines()[1]
    for column in ("Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"):
        assert column in header
    assert "Self CUDA time total" in table and table.splitlines()[3].strip().startswith("aten::matmul")


def test_cpu_activity_alone_has_no_cuda_columns():
    a = ember.randn(64, 64, device="cuda")
    with profile(activities=[ProfilerActivity.CPU]) as p:
        a @ a
    assert all(e.device_time_total == 0 for e in p.events())
    assert "CUDA" not in p.key_averages().table()
