"""ember.nn.functional.ctc_loss: the Connectionist Temporal Classification loss (Graves et al. 2006).

The forward (alpha) recursion over the blank-extended label sequence, written with ember ops and
batched over the samples: one step per time frame, each a three-way log-sum-exp. Autograd through
those ops gives the gradient. Unreachable states hold a large finite negative number instead of
-inf, so that log-sum-exp's backward never computes inf - inf; a sample whose target cannot be
reached in its input length gets an infinite loss (or 0 with zero_infinity) as in PyTorch.

PyTorch's kernel returns, as the gradient with respect to ``log_probs``, the gradient with respect
to the logits of a log_softmax (its documented use); ember returns the exact derivative. The two
agree for what programs do -- backpropagate through ``log_softmax`` -- and that is what is tested.
"""
from ..ops.registry import export as _export
from .functional import _reduction

__all__ = ["ctc_loss"]


def _lengths(value, n, what, ember):
    if isinstance(value, ember.Tensor):
        value = value.reshape(-1).tolist()
    elif not isinstance(value, (tuple, list)):
        raise TypeError(f"ctc_loss(): argument '{what}' must be a Tensor or a tuple of ints, not "
                        f"{type(value).__name__}")
    value = [int(v) for v in value]
    if len(value) != n:
        raise RuntimeError(f"ctc_loss: {what} must be of size batch_size ({n}), got {len(value)}")
    return value


def _padded_targets(targets, target_lengths, n, unbatched, ember):
    """(N, S) int64 targets: the padded form as given, the concatenated 1-D form split by lengths."""
    if targets.dim() == 2 or unbatched:
        t = targets.reshape(n, -1)
        if t.shape[1] < max(target_lengths, default=0):
            raise RuntimeError(f"ctc_loss: Expected tensor to have size at least {max(target_lengths)} at dimension "
                               f"1, but got size {t.shape[1]} for targets")
        return t.to(ember.int64)
    if targets.dim() != 1:
        raise RuntimeError(f"ctc_loss: targets must be 1-D (concatenated) or 2-D (padded), got {targets.dim()}-D")
    if targets.numel() < sum(target_lengths):
        raise RuntimeError("ctc_loss: targets is shorter than the sum of target_lengths")
    flat = targets.tolist()
    width = max(target_lengths, default=0)
    rows, start = [], 0
    for length in target_lengths:
        rows.append(flat[start:start + length] + [0] * (width - length))
        start += length
    return ember.tensor(rows, dtype=ember.int64).reshape(n, width)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """-log p(target | input) summed over all alignments; log_probs (T, N, C) or (T, C)."""
    import ember
    enum = _reduction(reduction)
    unbatched = log_probs.dim() == 2
    if log_probs.dim() not in (2, 3):
        raise RuntimeError(f"ctc_loss: expected log_probs to be 2-D or 3-D, got {log_probs.dim()}-D")
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    steps, n, classes = lp.shape
    if not 0 <= blank < classes:
        raise RuntimeError("ctc_loss: blank must be in label range")
    in_lens = _lengths(input_lengths, n, "input_lengths", ember)
    tgt_lens = _lengths(target_lengths, n, "target_lengths", ember)
    for length in in_lens:
        if length > steps or length < 0:
            raise RuntimeError(f"ctc_loss: Expected input_lengths to have value at most {steps}, but got value "
                               f"{length}")
    if any(length < 0 for length in tgt_lens):
        raise RuntimeError("ctc_loss: target_lengths must be non-negative")
    tgt = _padded_targets(targets, tgt_lens, n, unbatched, ember)
    width = tgt.shape[1]
    if width and (int(tgt.min()) < 0 or int(tgt.max()) >= classes):
        raise RuntimeError("ctc_loss: targets must be class indices in [0, C)")

    # blank-extended labels (N, 2S+1): blank, l1, blank, l2, ..., blank
    ext = ember.full((n, 2 * width + 1), blank, dtype=ember.int64)
    if width:
        ext[:, 1::2] = tgt
    skip = ember.zeros(ext.shape, dtype=ember.bool)   # s-2 -> s allowed: a label differing from l[s-2]
    if width > 1:
        skip[:, 3::2] = tgt[:, 1:] != tgt[:, :-1]
    neg = float(ember.finfo(lp.dtype).min) / 8          # "log 0", finite: see the module docstring
    index = ext.unsqueeze(0).expand(steps, n, -1)
    emit = lp.gather(2, index)                          # (T, N, 2S+1): log p of each state's label
    reachable = ember.zeros(ext.shape, dtype=ember.bool)
    reachable[:, 0] = True
    if width:
        reachable[:, 1] = ember.tensor(tgt_lens) > 0
    alpha = ember.where(reachable, emit[0], neg)
    frames = ember.tensor(in_lens)
    pad1 = ember.full((n, 1), neg, dtype=lp.dtype)
    pad2 = ember.full((n, 2), neg, dtype=lp.dtype)
    for t in range(1, steps):
        stay, step = alpha, ember.cat([pad1, alpha[:, :-1]], 1)
        jump = ember.where(skip, ember.cat([pad2, alpha[:, :-2]], 1), neg)
        top = ember.maximum(ember.maximum(stay, step), jump).detach()
        summed = (stay - top).exp() + (step - top).exp() + (jump - top).exp()
        alpha = ember.where((frames > t).unsqueeze(1), top + summed.log() + emit[t], alpha)
    ends = ember.tensor(tgt_lens).unsqueeze(1) * 2
    last = alpha.gather(1, ends).squeeze(1)
    before = ember.where(ends.squeeze(1) > 0, alpha.gather(1, (ends - 1).clamp_min(0)).squeeze(1), neg)
    top = ember.maximum(last, before).detach()
    loglik = top + ((last - top).exp() + (before - top).exp()).log()
    no_frames, no_labels = frames == 0, ends.squeeze(1) == 0
    impossible = (loglik < neg / 2) | (no_frames & ~no_labels)
    loss = ember.where(impossible, 0.0 if zero_infinity else float("inf"), -loglik)
    loss = ember.where(no_frames & no_labels, 0.0, loss)  # nothing to emit in no time: probability 1
    if enum == 1:
        return (loss / ember.tensor(tgt_lens).clamp_min(1).to(loss.dtype)).mean()
    if enum == 2:
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


_export("nn.functional", "ctc_loss", ctc_loss)
