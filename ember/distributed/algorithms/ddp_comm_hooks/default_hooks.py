"""PyTorch's default DDP communication hooks: ``hook(process_group, bucket) -> Future[Tensor]``.

``allreduce_hook`` is what DDP does without a hook (average the bucket by all-reduce). The compress
hooks cast the bucket to float16 / bfloat16, divide by the group size in that type, all-reduce the
smaller buffer and cast the sum back into the bucket, trading precision for half the bytes sent.
"""
from __future__ import annotations

from ...c10d import _group
from ...collectives import all_reduce

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def allreduce_hook(process_group, bucket):
    """Average the bucket over the group: the result DDP gives without a hook."""
    buffer = bucket.buffer()
    buffer.div_(_group(process_group).size())
    return all_reduce(buffer, group=process_group, async_op=True).get_future().then(lambda fut: fut.value()[0])


def _compress_hook(dtype, process_group, bucket):
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(_group(process_group).size())

    def decompress(fut):
        buffer.copy_(fut.value()[0])
        return buffer
    return all_reduce(compressed, group=process_group, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group, bucket):
    """All-reduce the bucket in float16 (divided by the group size first), cast back on arrival."""
    from .... import float16
    return _compress_hook(float16, process_group, bucket)


def bf16_compress_hook(process_group, bucket):
    """As ``fp16_compress_hook`` in bfloat16 (float32's range, 8 bits of mantissa)."""
    from .... import bfloat16
    return _compress_hook(bfloat16, process_group, bucket)
