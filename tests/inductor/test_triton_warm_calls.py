"""How a warm process builds the launchers of a cached Triton module (compile_triton.kernel_calls on
"cuda"), checked without a GPU: the tuned block sizes stored next to the module are read once for
all its kernels and applied (grid recomputed), a kernel with no stored winner is still tuned, a
tampered or foreign tuning file is ignored, and Triton's module is never imported on the way."""
import math

import pytest

import ember
from ember._functorch import make_fx
from ember._functorch.fake_tensor import FakeTensorMode
from ember._inductor import compile_triton, diskstore, triton_launch
from ember._inductor.compile_fx import lower_and_schedule


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    # no GPU here: the stored cubins' file names carry the compute capability; none are stored
    monkeypatch.setattr(triton_launch, "_capability", lambda: "90")
    diskstore.forget_roots()
    yield tmp_path
    diskstore.forget_roots()


def _launch_facts(fn, *shapes):
    """{kernel name: launch meta} the Triton generator gives `fn` over CUDA inputs of `shapes`."""
    with FakeTensorMode():
        fakes = [ember.empty(shape, dtype=ember.float32, device="cuda") for shape in shapes]
    aten_gm = make_fx(fn, tracing_mode="fake")(*fakes)
    g, groups, reads, kept = lower_and_schedule(aten_gm, fakes, "cuda")
    return compile_triton.generate_module(groups, reads)[2]


def _never_loaded():
    raise AssertionError("the Triton module was imported while building the launchers")


def _two_flat_kernels():
    # two pointwise kernels (different sizes keep them apart) and a reduction
    launch = _launch_facts(lambda x, y: ((x * 2 + 1).tanh(), (y - 1).exp(), x.sum()), (1 << 18,), (3 << 16,))
    flat = sorted(name for name, meta in launch.items() if meta["flat"] and meta["numel"] >= 1 << 16)
    assert len(flat) >= 2, launch
    return launch, flat


def _key(launch, name):
    return triton_launch.tuning_key(name, launch[name])


def _tune_path(cache):
    return str(cache / "ember_triton_test.py.tune.json")


def test_stored_winners_set_block_warps_and_grid(cache):
    launch, flat = _two_flat_kernels()
    tuned, untuned = flat[0], flat[1]
    path = _tune_path(cache)
    diskstore.write_json(path, {_key(launch, tuned): [4096, 8]})
    calls = compile_triton.kernel_calls(_never_loaded, launch, "cuda", path)
    assert set(calls) == set(launch)
    numel = launch[tuned]["numel"]
    assert calls[tuned].options == {"num_warps": 8, "XBLOCK": 4096}
    assert calls[tuned].grid_x == math.ceil(numel / 4096)
    assert not calls[tuned].needs_tuning
    # no winner stored: the generator's block, tuned on the first call
    assert calls[untuned].needs_tuning
    assert calls[untuned].options == {"num_warps": launch[untuned]["num_warps"],
                                      "XBLOCK": launch[untuned].get("xblock", 1024)}
    assert calls[untuned].grid_x == launch[untuned]["grid"]


def test_the_tuning_file_is_read_once_per_module(cache, monkeypatch):
    launch, flat = _two_flat_kernels()
    path = _tune_path(cache)
    diskstore.write_json(path, {_key(launch, name): [2048, 8] for name in flat})
    reads = []
    real = triton_launch.read_tuning
    monkeypatch.setattr(triton_launch, "read_tuning", lambda p: reads.append(p) or real(p))
    calls = compile_triton.kernel_calls(_never_loaded, launch, "cuda", path)
    assert reads == [path]
    for name in flat:
        assert calls[name].options == {"num_warps": 8, "XBLOCK": 2048}
        assert calls[name].grid_x == math.ceil(launch[name]["numel"] / 2048)


def test_a_launcher_built_alone_reads_the_same_winners(cache):
    launch, flat = _two_flat_kernels()
    path = _tune_path(cache)
    diskstore.write_json(path, {_key(launch, flat[0]): [512, 4]})
    alone = triton_launch.KernelCall(_never_loaded, flat[0], launch[flat[0]], path)
    together = compile_triton.kernel_calls(_never_loaded, launch, "cuda", path)[flat[0]]
    assert (alone.options, alone.grid_x, alone.needs_tuning) == \
        (together.options, together.grid_x, together.needs_tuning) == ({"num_warps": 4, "XBLOCK": 512},
                                                                       math.ceil(launch[flat[0]]["numel"] / 512),
                                                                       False)


@pytest.mark.parametrize("tamper", ["digest", "not_a_dict", "missing"])
def test_a_bad_tuning_file_is_ignored_and_the_kernels_tune_again(cache, tamper):
    launch, flat = _two_flat_kernels()
    path = _tune_path(cache)
    if tamper == "digest":
        diskstore.write_json(path, {_key(launch, flat[0]): [4096, 8]})
        with open(path, "r+b") as f:          # the body no longer matches the digest line
            data = f.read()
            f.seek(len(data) - 3)
            f.write(b"16]")
    elif tamper == "not_a_dict":
        diskstore.write_json(path, [[4096, 8]])
    assert triton_launch.read_tuning(path) == {}
    calls = compile_triton.kernel_calls(_never_loaded, launch, "cuda", path)
    for name in flat:
        assert calls[name].needs_tuning
        assert calls[name].grid_x == launch[name]["grid"]


def test_no_tune_path_means_no_tuning(cache):
    launch, flat = _two_flat_kernels()
    calls = compile_triton.kernel_calls(_never_loaded, launch, "cuda", None)
    for name in flat:
        assert not calls[name].needs_tuning and calls[name].binary is None
        assert calls[name].grid_x == launch[name]["grid"]


def test_a_row_kernel_tunes_its_warps_unless_row_tuning_is_off(cache, monkeypatch):
    # softmax over rows of 1024: one program per row. On (the default): the tuner tries half, the
    # same and twice the generator's warps, and a stored winner ([None, warps]) changes the warps,
    # not the grid. Off: the generator's warps
    launch = _launch_facts(lambda x: (x * 2).softmax(-1), (256, 1024))
    (name, meta), = [(n, m) for n, m in launch.items() if not m["flat"]]
    assert meta["grid"] == 256 and meta["rblock"] == 1024
    path = _tune_path(cache)
    call = triton_launch.KernelCall(_never_loaded, name, meta, path)
    assert call.needs_tuning and call.options == {"num_warps": meta["num_warps"]}
    w = meta["num_warps"]
    assert call._configs() == [(None, w // 2), (None, w), (None, 2 * w)]
    diskstore.write_json(path, {_key(launch, name): [None, 2 * w]})
    tuned = compile_triton.kernel_calls(_never_loaded, launch, "cuda", path)[name]
    assert (tuned.options, tuned.grid_x, tuned.needs_tuning) == ({"num_warps": 2 * w}, 256, False)
    # the same kernel over 4096 rows (the same source, one program a row) is tuned for itself
    more = _launch_facts(lambda x: (x * 2).softmax(-1), (4096, 1024))
    assert set(more) == set(launch) and more[name]["grid"] == 4096
    again = compile_triton.kernel_calls(_never_loaded, more, "cuda", path)[name]
    assert again.needs_tuning and again.options == {"num_warps": w}
    monkeypatch.setattr(triton_launch, "ROW_TUNING", 0)
    assert not triton_launch.KernelCall(_never_loaded, name, meta, _tune_path(cache)).needs_tuning


def test_small_rows_and_column_kernels_are_not_tuned(cache, monkeypatch):
    monkeypatch.setattr(triton_launch, "ROW_TUNING", 1)
    small = _launch_facts(lambda x: x.softmax(-1), (8, 1024))          # 8K lanes: not worth a tuning
    columns = _launch_facts(lambda x: x.sum(0), (4096, 256))          # a column reduction: no "rblock"
    for launch in (small, columns):
        for name, meta in launch.items():
            assert not triton_launch.KernelCall(_never_loaded, name, meta, _tune_path(cache)).needs_tuning, meta


def test_warm_up_compiles_every_configuration_a_kernel_will_tune(cache):
    # the tuner's configurations compile with the graph's other kernels, in threads; a kernel with a
    # stored winner (no tuning) compiles its one block only
    launch, flat = _two_flat_kernels()
    path = _tune_path(cache)
    diskstore.write_json(path, {_key(launch, flat[1]): [2048, 8]})
    compiled = []

    class FakeJit:
        def warmup(self, *mocks, grid, **options):
            compiled.append(tuple(sorted(options.items())))
            return None

    calls = {name: triton_launch.KernelCall(FakeJit, name, launch[name], path) for name in flat}
    for call in calls.values():
        call._compiled_now = lambda c: None             # nothing to store from the fake
    triton_launch.warm_up([(calls[name], [ember.float32] * len(launch[name]["dtypes"])) for name in flat])
    tuned = calls[flat[0]]
    blocks = {tuple(sorted(triton_launch._block_options(*c).items())) for c in
              [(tuned.options["XBLOCK"], tuned.options["num_warps"]), *triton_launch.TUNE_CONFIGS]}
    stored = (("XBLOCK", 2048), ("num_warps", 8))                         # flat[1]'s winner
    assert sorted(compiled) == sorted(list(blocks) + [stored])             # each block once
