"""The CUDA default generator follows PyTorch's seeding without touching CuPy: ember.manual_seed
seeds it too (torch.manual_seed seeds every device), ember.random.fork_rng restores it, and
ember.cuda.manual_seed leaves the CPU generator alone. Runs on any machine: the generator's
state lives on the host (ember/_cuda/random.py seeds cuRAND from it per draw)."""
import numpy as np

import ember


def _next_words(gen, n=4):
    return [gen._rng.bit_generator.random_raw() for _ in range(n)]


def test_manual_seed_seeds_the_cuda_generator_made_later_and_earlier():
    ember.manual_seed(11)
    gen = ember.cuda.default_generator()
    assert gen.initial_seed() == 11
    first = _next_words(gen)
    ember.manual_seed(11)
    assert _next_words(gen) == first and gen.device.type == "cuda"


def test_fork_rng_restores_the_cuda_generator():
    ember.manual_seed(3)
    gen = ember.cuda.default_generator()
    expected = _next_words(gen)
    ember.manual_seed(3)
    cpu = ember.rand(3).numpy()
    ember.manual_seed(3)
    with ember.random.fork_rng():
        gen.manual_seed(99)
        _next_words(gen)
        ember.rand(5)
    assert _next_words(gen) == expected
    np.testing.assert_array_equal(ember.rand(3).numpy(), cpu)


def test_negative_and_huge_seeds_wrap_like_the_cpu_generator():
    ember.manual_seed(-1)
    assert ember.cuda.default_generator().initial_seed() == ember.initial_seed() == 2 ** 64 - 1
