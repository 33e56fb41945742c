"""ember's own Transformer modules compile without graph breaks (issue 20: an import inside a function
of nn/modules/transformer.py used to add two breaks to every Transformer model), in training and in
eval mode, and the compiled forward and backward give eager's values.

Models: the full encoder-decoder nn.Transformer, a post-norm TransformerDecoder with masks, and
PyTorch's word_language_model TransformerModel (a subclass of nn.Transformer building its causal
mask inside forward with torch.log(torch.tril(...))). tests/dynamo/test_compile_imports.py covers
TransformerEncoder under every masking form. Oracle: the same module run eagerly.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

nn = ember.nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = ember.zeros(max_len, d_model)
        position = ember.arange(0, max_len, dtype=ember.float).unsqueeze(1)
        div_term = ember.exp(ember.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = ember.sin(position * div_term)
        pe[:, 1::2] = ember.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0), :])


class TransformerModel(nn.Transformer):
    """word_language_model's model, as published (dropout set to 0 for a deterministic comparison)."""
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.0):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers,
                         dropout=dropout)
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

    def _generate_square_subsequent_mask(self, sz):
        return ember.log(ember.tril(ember.ones(sz, sz)))

    def forward(self, src, has_mask=True):
        if has_mask:
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                self.src_mask = self._generate_square_subsequent_mask(len(src)).to(src.device)
        else:
            self.src_mask = None
        src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
        output = self.decoder(self.encoder(src, mask=self.src_mask))
        return nn.functional.log_softmax(output, dim=-1)


def _word_lm():
    return TransformerModel(40, 16, 2, 32, 2), lambda: (ember.randint(0, 40, (7, 3)),), {}


def _full_transformer():
    model = nn.Transformer(16, 4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=32, dropout=0.0,
                           batch_first=True)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(4)
    return model, lambda: (ember.randn(2, 5, 16), ember.randn(2, 4, 16)), {"tgt_mask": tgt_mask,
                                                                           "tgt_is_causal": True}


def _decoder():
    layer = nn.TransformerDecoderLayer(16, 4, 32, dropout=0.0)
    model = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(16))
    padding = ember.tensor([[False] * 5, [False] * 3 + [True] * 2])
    return model, lambda: (ember.randn(4, 2, 16), ember.randn(5, 2, 16)), {"memory_key_padding_mask": padding}


MODELS = {"word_language_model": _word_lm, "nn.Transformer": _full_transformer, "TransformerDecoder": _decoder}


def _close(a, b):
    # float32 rounding: eager attention's native softmax sums in double, the captured graph's
    # decomposition in float32 (outputs of magnitude ~3 differ by a few ulps)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=5e-6)


@pytest.mark.parametrize("mode", ["train", "eval"])
@pytest.mark.parametrize("name", list(MODELS))
def test_transformer_models_compile_to_one_graph(name, mode):
    ember.manual_seed(0)
    model, make_args, kwargs = MODELS[name]()
    getattr(model, mode)()
    args = make_args()
    explanation = ember._dynamo.explain(model)(*args, **kwargs)
    assert explanation.graph_break_count == 0, [str(b.reason) for b in explanation.break_reasons]
    assert explanation.graph_count == 1

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward
    ember._dynamo.reset()
    compiled = ember.compile(model, backend=backend)
    for _ in range(2):   # a second call with new inputs reuses the graph
        args = make_args()
        expected = model(*args, **kwargs)
        eager_grads = ember.autograd.grad(expected.sum(), list(model.parameters()), allow_unused=True)
        got = compiled(*args, **kwargs)
        _close(got, expected)
        compiled_grads = ember.autograd.grad(got.sum(), list(model.parameters()), allow_unused=True)
        for e, c in zip(eager_grads, compiled_grads):
            assert (e is None) == (c is None)
            if e is not None:
                _close(c, e)
    assert len(graphs) == 1
