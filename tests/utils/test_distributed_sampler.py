"""DistributedSampler against torch.utils.data.distributed.DistributedSampler (no process group
needed: num_replicas and rank are given)."""
import pytest
from torch.utils.data.distributed import DistributedSampler as TorchSampler

from ember.utils.data.distributed import DistributedSampler


@pytest.mark.parametrize("n", [0, 1, 2, 5, 7, 8, 13])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4, 9])
@pytest.mark.parametrize("drop_last", [False, True])
def test_unshuffled_shares_match_torch(n, replicas, drop_last):
    data = list(range(n))
    for rank in range(replicas):
        ours = DistributedSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(data, replicas, rank, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


@pytest.mark.parametrize("n, replicas, drop_last", [(10, 3, False), (10, 3, True), (2, 5, False), (12, 4, False)])
def test_shuffled_shares_partition_like_torch(n, replicas, drop_last):
    """Shuffled: the ranks' shares together are the same multiset of indices as torch's (the
    permutation itself comes from ember's generator), the same seed and epoch give the same
    shares, and another epoch another order."""
    data = list(range(n))

    def shares(cls, epoch):
        out = []
        for rank in range(replicas):
            s = cls(data, replicas, rank, shuffle=True, seed=4, drop_last=drop_last)
            s.set_epoch(epoch)
            out.append(list(s))
        return out
    ours, theirs = shares(DistributedSampler, 1), shares(TorchSampler, 1)
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    if not drop_last:
        assert set(i for s in ours for i in s) == set(range(n))
    else:
        assert len(set(i for s in ours for i in s)) == sum(len(s) for s in ours)
    assert shares(DistributedSampler, 1) == ours
    if n >= 10:
        assert shares(DistributedSampler, 2) != ours


@pytest.mark.parametrize("rank, replicas", [(2, 2), (-1, 2), (5, 3)])
def test_bad_rank_is_refused_like_torch(rank, replicas):
    with pytest.raises(ValueError) as theirs:
        TorchSampler(list(range(4)), replicas, rank)
    with pytest.raises(ValueError) as ours:
        DistributedSampler(list(range(4)), replicas, rank)
    assert str(ours.value) == str(theirs.value)


def test_without_a_process_group_like_torch():
    with pytest.raises(ValueError) as theirs:
        TorchSampler(list(range(4)))
    with pytest.raises(ValueError) as ours:
        DistributedSampler(list(range(4)))
    assert "init_process_group" in str(ours.value) and "init_process_group" in str(theirs.value)
