"""``ember.distributed.algorithms``: DDP communication hooks (``ddp_comm_hooks``)."""
