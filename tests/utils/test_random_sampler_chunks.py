"""RandomSampler with a huge num_samples draws lazily, in chunks of 32 as PyTorch does (drawing every
index at once asked for a 74 GiB array)."""
import itertools
import tracemalloc

import pytest
import torch

import ember
from ember.utils import data as edata

HUGE = 10 ** 12


@pytest.mark.parametrize("replacement", [True, False])
def test_huge_num_samples_is_lazy(replacement):
    for lib, data in ((ember, edata), (torch, torch.utils.data)):
        sampler = data.RandomSampler(range(50), replacement=replacement, num_samples=HUGE)
        assert len(sampler) == HUGE
        tracemalloc.start()
        try:
            first = list(itertools.islice(iter(sampler), 1000))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert len(first) == 1000 and all(0 <= i < 50 for i in first)
        assert peak < 10 * 2 ** 20, f"{lib.__name__}: {peak} bytes to draw 1000 indices"


def test_draws_are_chunks_of_32_and_the_stream_is_the_generators(monkeypatch):
    sizes = []
    real = ember.randint

    def recording_randint(*args, **kwargs):
        sizes.append(tuple(kwargs["size"]))
        return real(*args, **kwargs)
    monkeypatch.setattr(ember, "randint", recording_randint)
    got = list(edata.RandomSampler(range(9), replacement=True, num_samples=70,
                                   generator=ember.Generator().manual_seed(5)))
    assert sizes == [(32,), (32,), (6,)]
    g = ember.Generator().manual_seed(5)
    want = [i for n in (32, 32, 6) for i in real(high=9, size=(n,), dtype=ember.int64, generator=g).tolist()]
    assert got == want


@pytest.mark.parametrize("num_samples", [1, 31, 32, 33, 64, 100])
def test_counts_match_torch(num_samples):
    for replacement in (True, False):
        e = list(edata.RandomSampler(range(10), replacement=replacement, num_samples=num_samples))
        t = list(torch.utils.data.RandomSampler(range(10), replacement=replacement, num_samples=num_samples))
        assert len(e) == len(t) == num_samples
        if not replacement and num_samples >= 10:   # whole permutations first, as in torch
            assert sorted(e[:10]) == sorted(t[:10]) == list(range(10))
