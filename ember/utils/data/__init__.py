"""ember.utils.data: datasets, samplers, DataLoader and collation, as torch.utils.data.

Single-process only (see `dataloader`); random shuffling uses ember's generators.
"""
from . import _utils  # noqa: F401
from .dataset import (Dataset, IterableDataset, TensorDataset, StackDataset, ConcatDataset, ChainDataset,
                      Subset, random_split)
from .sampler import (Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler,
                      BatchSampler)
from .dataloader import DataLoader, get_worker_info, default_collate, default_convert

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset",
           "Subset", "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DataLoader", "get_worker_info", "default_collate",
           "default_convert"]
