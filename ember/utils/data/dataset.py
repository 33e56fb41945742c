"""Datasets: ``Dataset``, ``IterableDataset``, ``TensorDataset``, ``StackDataset``,
``ConcatDataset``, ``ChainDataset``, ``Subset`` and ``random_split``, with the behaviour, checks
and messages of ``torch.utils.data``.

Shuffling draws from ember's generators (``ember.Generator`` / ``ember.manual_seed``), so the
permutations differ from PyTorch's Mersenne Twister but are reproducible under a seed.
"""
from __future__ import annotations

import bisect
import itertools
import math
import warnings

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset",
           "ChainDataset", "Subset", "random_split"]


def _fetch_many(dataset, indices) -> list:
    """``dataset.__getitems__(indices)`` when the dataset batches its own reads, else one by one."""
    getitems = getattr(dataset, "__getitems__", None)
    return getitems(indices) if callable(getitems) else [dataset[i] for i in indices]


class Dataset:
    """A map-style dataset: subclasses implement ``__getitem__`` (and usually ``__len__``)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])

    def __class_getitem__(cls, item):  # ``Dataset[int]`` in annotations, as torch's Generic base allows
        return cls


class IterableDataset(Dataset):
    """A stream of samples: subclasses implement ``__iter__``."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; all tensors share their first dimension."""

    def __init__(self, *tensors) -> None:
        if len({t.size(0) for t in tensors}) > 1:
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Zips datasets of equal length: samples are tuples (positional datasets) or dicts (keyword ones)."""

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        members = list(args or kwargs.values())
        if not members:
            raise ValueError("At least one dataset should be passed")
        if len({len(d) for d in members}) > 1:
            raise ValueError("Size mismatch between datasets")
        self._length = len(members[0])
        self.datasets = args or kwargs

    def _named(self):
        """(key, dataset) pairs: dict keys, or positions for positional datasets."""
        return self.datasets.items() if isinstance(self.datasets, dict) else enumerate(self.datasets)

    def _assemble(self, parts: dict):
        return dict(parts) if isinstance(self.datasets, dict) else tuple(parts.values())

    def __getitem__(self, index):
        return self._assemble({key: d[index] for key, d in self._named()})

    def __getitems__(self, indices: list):
        columns = {}
        for key, d in self._named():
            column = _fetch_many(d, indices)
            if len(column) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(column)}")
            columns[key] = column
        return [self._assemble({key: column[row] for key, column in columns.items()})
                for row in range(len(indices))]

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after another."""

    @staticmethod
    def cumsum(sequence) -> list:
        """Running totals of the lengths: the end offset of each dataset."""
        return list(itertools.accumulate(len(d) for d in sequence))

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        total = len(self)
        if idx < 0:
            if idx < -total:
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += total
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


def _require_iterable(d):
    if not isinstance(d, IterableDataset):
        raise AssertionError("ChainDataset only supports IterableDataset")
    return d


class ChainDataset(IterableDataset):
    """Iterable datasets one after another, read lazily."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            yield from _require_iterable(d)

    def __len__(self) -> int:
        return sum(len(_require_iterable(d)) for d in self.datasets)


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices) -> None:
        cls = type(self)
        if cls.__getitem__ is not Subset.__getitem__ and cls.__getitems__ is Subset.__getitems__:
            # the DataLoader reads batches through __getitems__, which would bypass the override
            raise NotImplementedError(
                f"{cls.__name__} overrides __getitem__ but not __getitems__. When subclassing Subset "
                "and overriding __getitem__, you must also override __getitems__ to ensure DataLoader works "
                "correctly with your custom logic. A simple implementation:\n\n"
                "def __getitems__(self, indices):\n    return [self.__getitem__(idx) for idx in indices]")
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        return _fetch_many(self.dataset, [self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


def _sizes_from_fractions(n: int, fractions) -> list:
    """floor(f * n) per split, then the remainder handed out one by one from the first split."""
    for i, f in enumerate(fractions):
        if not 0 <= f <= 1:
            raise ValueError(f"Fraction at index {i} is not between 0 and 1")
    sizes = [math.floor(n * f) for f in fractions]
    for i in range(n - sum(sizes)):
        sizes[i % len(sizes)] += 1
    for i in (i for i, size in enumerate(sizes) if size == 0):
        warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.", stacklevel=3)
    return sizes


def random_split(dataset, lengths, generator=None):
    """Split `dataset` into non-overlapping random ``Subset``s of the given `lengths`.

    `lengths` are sizes summing to ``len(dataset)``, or fractions summing to 1. The permutation is
    ``ember.randperm(len, generator=generator)`` (default: the global generator, so
    ``ember.manual_seed`` makes it reproducible).
    """
    import ember
    total = sum(lengths)
    if math.isclose(total, 1) and total <= 1:
        lengths = _sizes_from_fractions(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    order = ember.randperm(sum(lengths), generator=generator).tolist()
    ends = list(itertools.accumulate(lengths))
    return [Subset(dataset, order[end - size:end]) for end, size in zip(ends, lengths)]
