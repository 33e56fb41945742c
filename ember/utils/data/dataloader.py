"""``DataLoader``: batches of samples from a dataset, as PyTorch's single-process loader.

An index sampler drives everything: a ``BatchSampler`` (lists of indices) when batching
automatically, else the plain sampler (one index per sample). Each index is fetched from the
dataset (``__getitems__`` when it has one) and handed to ``collate_fn``. Iterable datasets use an
endless sampler of ``None`` indices and are read in order, ``len(index)`` samples per batch.

Deviation from PyTorch: there are no worker processes. ``num_workers > 0`` loads in the main
process (with a warning), so results are the same as with ``num_workers=0``; ``worker_init_fn``
is not called and ``get_worker_info()`` returns None. ``pin_memory`` has no effect on CPU.
"""
from __future__ import annotations

import itertools
import warnings

from . import _utils
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "get_worker_info", "default_collate", "default_convert"]

default_collate = _utils.collate.default_collate
default_convert = _utils.collate.default_convert

_END = object()  # what a fetch returns once an iterable dataset is exhausted


def get_worker_info():
    """None: ember loads data in the main process (there are no workers)."""
    return None


class _InfiniteConstantSampler(Sampler):
    """``None`` forever: the index stream of an iterable dataset."""

    def __iter__(self):
        return itertools.repeat(None)


def _first_failure(checks):
    """Raise ValueError with the message of the first ``(failed, message)`` pair that failed."""
    for failed, message in checks:
        if failed:
            raise ValueError(message)


# attributes that define the index stream and so cannot change once the loader exists
_FROZEN = frozenset({"batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers"})


class DataLoader:
    """Iterate over `dataset` in batches. Arguments as ``torch.utils.data.DataLoader``."""

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers: int = 0, collate_fn=None, pin_memory: bool = False, drop_last: bool = False,
                 timeout: float = 0, worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        _first_failure([
            (num_workers < 0, "num_workers option should be non-negative; use num_workers=0 to disable "
                              "multiprocessing."),
            (timeout < 0, "timeout option should be non-negative"),
            (num_workers == 0 and prefetch_factor is not None,
             "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable "
             "multiprocessing, otherwise set prefetch_factor to None."),
            (prefetch_factor is not None and prefetch_factor < 0, "prefetch_factor option should be non-negative"),
            (persistent_workers and num_workers == 0, "persistent_workers option needs num_workers > 0"),
        ])
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            # an iterable dataset orders its own samples
            for name, value, given in (("shuffle", shuffle, shuffle not in {False, None}),
                                       ("sampler", sampler, sampler is not None),
                                       ("batch_sampler", batch_sampler, batch_sampler is not None)):
                if given:
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value}")
        else:
            shuffle = bool(shuffle)
        _first_failure([
            (sampler is not None and shuffle, "sampler option is mutually exclusive with shuffle"),
            (batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last),
             "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"),
            (batch_sampler is None and batch_size is None and drop_last,
             "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
        ])
        if batch_sampler is not None:
            batch_size, drop_last = None, False
        if sampler is None:
            sampler = (_InfiniteConstantSampler() if iterable
                       else RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset, self._dataset_kind = dataset, ("iterable" if iterable else "map")
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        self.num_workers, self.prefetch_factor, self.persistent_workers = num_workers, prefetch_factor, \
            persistent_workers
        self.pin_memory, self.pin_memory_device, self.timeout = pin_memory, pin_memory_device, timeout
        self.worker_init_fn, self.multiprocessing_context, self.in_order = worker_init_fn, \
            multiprocessing_context, in_order
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self._initialized = True

    def __setattr__(self, attr, val):
        if self._initialized and attr in _FROZEN:
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _fetcher(self):
        """A function from one index (or list of indices) to the data, or ``_END``."""
        dataset = self.dataset
        if self._dataset_kind == "iterable":
            stream = iter(dataset)
            if not self._auto_collation:
                return lambda _: next(stream, _END)

            def take(index):
                data = list(itertools.islice(stream, len(index)))
                short = len(data) < len(index)
                return _END if not data or (short and self.drop_last) else data
            return take
        if not self._auto_collation:
            return lambda index: dataset[index]
        getitems = getattr(dataset, "__getitems__", None)
        return getitems if callable(getitems) else (lambda index: [dataset[i] for i in index])

    def __iter__(self):
        """A fresh pass over the data (each call starts a new epoch, reshuffling if shuffled)."""
        if self.num_workers > 0:
            warnings.warn(f"ember DataLoader: num_workers={self.num_workers} is not supported; loading in the "
                          "main process instead (same batches, no parallelism).", stacklevel=2)
        # PyTorch draws a base seed for its workers from the loader's generator every epoch; drawing
        # it too keeps the generator's consumption in step with PyTorch's.
        from ..._core.random import rng
        rng(self.generator).integers(0, 1 << 63)
        return self._epoch(self._fetcher())

    def _epoch(self, fetch):
        collate = self.collate_fn
        for index in self._index_sampler:
            data = fetch(index)
            if data is _END:
                return
            yield collate(data)

    def __len__(self) -> int:
        if self._dataset_kind == "map":
            return len(self._index_sampler)
        samples, size = len(self.dataset), self.batch_size
        if size is None:
            return samples
        return samples // size if self.drop_last else -(-samples // size)
