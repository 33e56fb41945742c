"""Samplers: the index streams a DataLoader batches and fetches, with the arguments, checks and
messages of ``torch.utils.data.sampler``.

Random samplers draw from an ``ember.Generator``. With ``generator=None`` a RandomSampler seeds a
fresh generator from the global one at every epoch (as PyTorch does), so ``ember.manual_seed(s)``
makes a whole training run's shuffling reproducible.
"""
from __future__ import annotations

import itertools

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler"]


def _is_positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _epoch_generator(generator):
    """`generator`, or a new one seeded from the global generator (a fresh stream per epoch)."""
    if generator is not None:
        return generator
    from ..._core.random import Generator, rng
    return Generator().manual_seed(int(rng(None).integers(0, 1 << 63)))


class Sampler:
    """Base class: subclasses implement ``__iter__`` (indices) and usually ``__len__``."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self):
        raise NotImplementedError

    def __class_getitem__(cls, item):
        return cls


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Shuffled indices: whole permutations, cut off after `num_samples` (default: the dataset's
    length); with ``replacement=True`` `num_samples` independent uniform draws instead."""

    def __init__(self, data_source, replacement: bool = False, num_samples=None, generator=None) -> None:
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        count = self.num_samples
        if not isinstance(count, int) or count <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={count}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        import ember
        n, wanted = len(self.data_source), self.num_samples
        generator = _epoch_generator(self.generator)
        if self.replacement:
            # in chunks of 32 draws, as PyTorch does: num_samples may be far more than fits in memory
            for _ in range(wanted // 32):
                yield from ember.randint(high=n, size=(32,), dtype=ember.int64, generator=generator).tolist()
            if wanted % 32:
                yield from ember.randint(high=n, size=(wanted % 32,), dtype=ember.int64, generator=generator).tolist()
            return
        while wanted > 0:
            perm = ember.randperm(n, generator=generator).tolist()
            yield from perm[:wanted]
            wanted -= n

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given `indices` in a random order."""

    def __init__(self, indices, generator=None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self):
        import ember
        order = ember.randperm(len(self.indices), generator=self.generator).tolist()
        yield from (self.indices[i] for i in order)

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices drawn with probabilities proportional to `weights`."""

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None) -> None:
        import ember
        if not _is_positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights = ember.as_tensor(weights, dtype=ember.double)
        if weights.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights.shape)}")
        self.weights, self.num_samples = weights, num_samples
        self.replacement, self.generator = replacement, generator

    def __iter__(self):
        import ember
        drawn = ember.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` consecutive indices of `sampler` (the last one may be short unless
    `drop_last`)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not _is_positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        whole, rest = divmod(len(self.sampler), self.batch_size)
        return whole + (1 if rest and not self.drop_last else 0)
