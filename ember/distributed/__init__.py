"""``ember.distributed``: ``torch.distributed`` on existing transports — MPI (mpi4py) for CPU
tensors, NCCL (``cupy.cuda.nccl``) for CUDA tensors, with the NCCL unique id broadcast over MPI.

Processes are started by ``mpiexec -n N python script.py`` or by the launcher
``python -m ember.distributed.run --nproc-per-node N script.py`` (torchrun's interface). Nothing
here imports mpi4py until ``init_process_group`` runs, and ``import ember`` does not import this
package at all (``ember.distributed`` loads on first use).
"""
from __future__ import annotations

from .c10d import (ReduceOp, Work, ProcessGroup, GroupMember, DistError, DistBackendError, init_process_group,
                   destroy_process_group, is_initialized, is_available, is_mpi_available, is_nccl_available,
                   get_rank, get_world_size, get_backend, new_group, get_process_group_ranks, default_pg_timeout)
from .collectives import (all_reduce, broadcast, all_gather, all_gather_into_tensor, reduce_scatter_tensor, reduce,
                          gather, scatter, barrier, send, recv, isend, irecv)
from .objects import all_gather_object, broadcast_object_list
from .reducer import GradBucket

group = GroupMember  # ``dist.group.WORLD``, as in PyTorch
