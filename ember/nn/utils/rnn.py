"""Variable-length sequences for the recurrent layers: PackedSequence, pack/pad and back.

A PackedSequence holds the time steps of a batch of sequences sorted by decreasing length,
interleaved step by step: ``data`` is (sum(lengths), *) and ``batch_sizes[t]`` counts the sequences
still running at step t. Packing and padding are each one gather (``index_select`` with an index
computed in NumPy from the lengths), so autograd flows through them to the values.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ... import arange, as_tensor, cat, empty_like, full, sort, from_numpy
from ..._core.dtype import float16, float32, float64, int8, int16, int32, int64, uint8
from ..._core.tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """(data, batch_sizes, sorted_indices, unsorted_indices); made by pack_padded_sequence and
    pack_sequence, consumed by RNN/LSTM/GRU and pad_packed_sequence."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes)), as PyTorch accepts
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """``data.to(...)``; the index tensors follow data's device; batch_sizes stays on CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))  # noqa: E731
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cpu(self):
        return self.to("cpu")

    def double(self):
        return self.to(dtype=float64)

    def float(self):
        return self.to(dtype=float32)

    def half(self):
        return self.to(dtype=float16)

    def long(self):
        return self.to(dtype=int64)

    def int(self):
        return self.to(dtype=int32)

    def short(self):
        return self.to(dtype=int16)

    def char(self):
        return self.to(dtype=int8)

    def byte(self):
        return self.to(dtype=uint8)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda

    def is_pinned(self) -> bool:
        return self.data.is_pinned()


def invert_permutation(permutation):
    """The permutation p' with p'[p[i]] = i (None stays None)."""
    if permutation is None:
        return None
    output = empty_like(permutation)
    output.scatter_(0, permutation, arange(0, permutation.numel(), device=permutation.device))
    return output


def _index(values) -> Tensor:
    return from_numpy(np.ascontiguousarray(values, dtype=np.int64))


def pack_padded_sequence(input, lengths, batch_first: bool = False, enforce_sorted: bool = True):
    """Pack a padded batch (T, B, *) ((B, T, *) with batch_first) of sequences of the given
    lengths. With enforce_sorted=True the lengths must be decreasing; otherwise the batch is
    sorted here and the PackedSequence records the permutation."""
    if not isinstance(lengths, Tensor):
        lengths = as_tensor(lengths, dtype=int64, device="cpu")
    else:
        lengths = lengths.to(dtype=int64)
    sorted_indices = None
    if not enforce_sorted:
        lengths, sorted_indices = sort(lengths, descending=True)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    if lengths.dim() != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got {lengths.dim()}D cpu "
                           "Long tensor")
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.shape[0], input.shape[1]
    lens = np.asarray(lengths.tolist(), dtype=np.int64)
    if len(lens) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
                           f"(batch_size={batch})")
    if lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if np.any(lens[1:] > lens[:-1]):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                           "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to "
                           "sidestep this requirement if you do not need ONNX exportability.")
    if lens[0] > steps:  # PyTorch reads past the padded length here; refuse instead
        raise RuntimeError(f"pack_padded_sequence: the longest length is {lens[0]} but the input has only "
                           f"{steps} time steps")
    live = lens[None, :] > np.arange(lens[0])[:, None]  # (steps, batch): sequence b runs at step t
    rows = np.nonzero(live.reshape(-1))[0]  # row t * batch + b of the (steps * batch, *) view
    data = input.reshape((steps * batch,) + tuple(input.shape[2:])).index_select(0, _index(rows))
    batch_sizes = _index(live.sum(1))
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def pad_packed_sequence(sequence, batch_first: bool = False, padding_value: float = 0.0, total_length=None):
    """The inverse of pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths (B,))."""
    sizes = np.asarray(sequence.batch_sizes.tolist(), dtype=np.int64)
    max_seq_length = len(sizes)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_seq_length}")
        max_seq_length = total_length
    data = sequence.data
    batch = int(sizes[0])
    live = np.arange(batch)[None, :] < sizes[:, None]  # (steps, batch)
    gather = np.full((max_seq_length, batch), data.shape[0], dtype=np.int64)  # the padding row by default
    gather[:len(sizes)][live] = np.arange(data.shape[0])
    pad_row = full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device)
    padded = cat([data, pad_row]).index_select(0, _index(gather.reshape(-1)))
    padded = padded.reshape((max_seq_length, batch) + tuple(data.shape[1:]))
    lengths = _index(live.sum(0))
    if batch_first:
        padded = padded.transpose(0, 1)
    if sequence.unsorted_indices is not None:
        return (padded.index_select(0 if batch_first else 1, sequence.unsorted_indices),
                lengths[sequence.unsorted_indices])
    return padded, lengths


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0, padding_side: str = "right"):
    """Stack sequences of shapes (L_i, *) into (max L, B, *) ((B, max L, *) with batch_first),
    padded with `padding_value` on the right (or left) of each; the dtype is the first one's."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f"pad_sequence: Expected iterable for input sequences, but got arg of type: "
                           f"{type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    first = sequences[0]
    for seq in sequences:
        if seq.dim() == 0 or tuple(seq.shape[1:]) != tuple(first.shape[1:]):
            raise RuntimeError(f"pad_sequence: every sequence must have shape (L, *{tuple(first.shape[1:])}), "
                               f"got {tuple(seq.shape)}")
    lens = np.array([s.shape[0] for s in sequences], dtype=np.int64)
    max_len, total = int(lens.max()), int(lens.sum())
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    t = np.arange(max_len)[None, :]  # (batch, max_len)
    offset = t if padding_side == "right" else t - (max_len - lens[:, None])
    gather = np.where((offset >= 0) & (offset < lens[:, None]), starts[:, None] + offset, total)
    rows = cat([s.to(first.dtype) for s in sequences]
               + [full((1,) + tuple(first.shape[1:]), padding_value, dtype=first.dtype, device=first.device)])
    index = gather if batch_first else gather.T
    out = rows.index_select(0, _index(index.reshape(-1)))
    return out.reshape(index.shape + tuple(first.shape[1:]))


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False):
    """The list of sequences, each cut to its length (the caller's tensor is left as it is)."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(length)] for seq, length in zip(padded_sequences, lengths.tolist())]


def pack_sequence(sequences, enforce_sorted: bool = True):
    """pack_padded_sequence(pad_sequence(sequences), their lengths)."""
    lengths = as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences a PackedSequence holds, in their original order."""
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
