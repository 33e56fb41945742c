"""AOT traces run on copies of the inputs that keep their strides: a reshape of a sliced,
transposed or expanded input is a copy at run time, so the graph must not record a view there
(it did: clones made every trace input contiguous, and the compiled call raised "view size is
not compatible" on the real input). Oracle: eager ember."""
import pytest

import ember

F = ember.nn.functional


def _layouts():
    base = ember.randn(4, 6)
    return {
        "sliced_columns": base[:, :5],
        "strided_step": base[:, ::2],
        "transposed": base.t(),
        "offset_rows": base[1:],
        "expanded_rows": ember.randn(4, 1).expand(4, 6),
        "expanded_cols": ember.randn(1, 6).expand(4, 6),
        "expanded_then_sliced": ember.randn(2, 1, 3).expand(2, 4, 3)[:, :, 1:],
    }


@pytest.mark.parametrize("name", list(_layouts()))
def test_reshape_of_a_non_contiguous_input_matches_eager(name):
    x = _layouts()[name]
    fn = ember.compile(lambda x: (x.reshape(-1) * 2).view(-1, 2).sum(1))
    assert ember.equal(fn(x), (x.reshape(-1) * 2).view(-1, 2).sum(1))


@pytest.mark.parametrize("name", ["sliced_columns", "transposed", "offset_rows", "expanded_rows"])
def test_backward_through_a_non_contiguous_input(name):
    x = _layouts()[name]
    w = ember.randn(x.numel(), 3, requires_grad=True)
    fn = ember.compile(lambda x, w: (x.reshape(1, -1) @ w).tanh().sum())
    fn(x, w).backward()
    compiled = w.grad.clone()
    w.grad = None
    (x.reshape(1, -1) @ w).tanh().sum().backward()
    assert ember.allclose(compiled, w.grad, rtol=1e-5, atol=1e-6)


def test_embedding_backward_with_sliced_indices():
    # the failing program: token ids sliced off a longer row (inputs = tokens[:, :-1])
    w = ember.randn(10, 4, requires_grad=True)
    tokens = ember.randint(0, 10, (2, 7))
    for idx in (tokens[:, :-1], tokens[:, 1:], tokens.t()[1:], tokens[:1].expand(3, 7)):
        fn = ember.compile(lambda w, idx: (F.embedding(idx, w) ** 2).sum())
        fn(w, idx).backward()
        compiled = w.grad.clone()
        w.grad = None
        (F.embedding(idx, w) ** 2).sum().backward()
        assert ember.allclose(compiled, w.grad)
        w.grad = None
