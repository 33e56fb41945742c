"""AdaptiveLogSoftmaxWithLoss (Grave et al., "Efficient softmax approximation for GPUs"): a head
over the frequent classes plus one entry per cluster of rarer classes, each cluster a small
two-layer projection (torch/nn/modules/adaptive.py)."""
from __future__ import annotations

from collections import namedtuple

from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """log p(target | input) for every row (output) and its negated mean (loss)."""

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0, head_bias: bool = False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        kw = dict(device=device, dtype=dtype)
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // div_value ** (i + 1))
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, self.cutoffs[i + 1] - self.cutoffs[i], bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_, target_):
        import ember
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = targ_dim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and (int(target.min()) < 0 or int(target.max()) >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")
        # head column each row reads: its class in the shortlist, else its cluster's entry
        head_column = target.clone()
        output = ember.zeros(target.shape[0], dtype=input.dtype)
        for i, (low, high) in enumerate(zip(self.cutoffs, self.cutoffs[1:])):
            in_cluster = (target >= low) & (target < high)
            if not bool(in_cluster.any()):
                continue
            rows = in_cluster.nonzero().reshape(-1)
            cluster_logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            local = cluster_logprob.gather(1, (target[rows] - low).unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, local)
            head_column = ember.where(in_cluster, self.shortlist_size + i, head_column)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_column.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        import ember
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return ember.cat(parts, 1)

    def log_prob(self, input):
        """log p(class | input) for every class: (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input):
        """The most likely class of each row (the full distribution only where the head points to a cluster)."""
        import ember
        head_output = self.head(input)
        output = ember.argmax(head_output, dim=1)
        outside = output >= self.shortlist_size
        if not bool(outside.any()):
            return output
        full = ember.argmax(self._full_log_prob(input, head_output), dim=1)
        return ember.where(outside, full, output)
