"""nn.Transformer, TransformerDecoderLayer and TransformerDecoder against PyTorch 2.13: the same parameter
names, and the same outputs and gradients once PyTorch's weights are loaded into ember."""
import numpy as np
import pytest
import torch

import ember
from oracle import as_numpy, make


def copy_weights(src_torch, dst_ember):
    dst_ember.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy()) for k, v in src_torch.state_dict().items()})


CONFIGS = [dict(), dict(batch_first=True), dict(norm_first=True), dict(activation="gelu"), dict(bias=False),
           dict(batch_first=True, norm_first=True, activation="gelu")]


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_transformer_matches_torch(config):
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=16, dropout=0.0)
    torch.manual_seed(0)
    t = torch.nn.Transformer(**kw, **config)
    e = ember.nn.Transformer(**kw, **config)
    assert list(e.state_dict()) == list(t.state_dict())
    assert {k: tuple(v.shape) for k, v in e.state_dict().items()} == {k: tuple(v.shape) for k, v in t.state_dict().items()}
    copy_weights(t, e)
    bf = config.get("batch_first", False)
    src, tgt = make((3, 5, 8) if bf else (5, 3, 8)), make((3, 4, 8) if bf else (4, 3, 8))
    pad = np.zeros((3, 5), dtype=bool)
    pad[1, 3:] = True
    outs = []
    for lib, m in ((ember, e), (torch, t)):
        s, g = lib.tensor(src, requires_grad=True), lib.tensor(tgt, requires_grad=True)
        mask = lib.nn.Transformer.generate_square_subsequent_mask(4)
        out = m(s, g, tgt_mask=mask, src_key_padding_mask=lib.from_numpy(pad),
                memory_key_padding_mask=lib.from_numpy(pad))
        (out * out).sum().backward()
        outs.append((as_numpy(out), as_numpy(s.grad), as_numpy(g.grad),
                     as_numpy(dict(m.named_parameters())["decoder.layers.1.multihead_attn.in_proj_weight"].grad)))
    for got, want in zip(*outs):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


def test_generate_square_subsequent_mask():
    for sz in (1, 4):
        np.testing.assert_array_equal(as_numpy(ember.nn.Transformer.generate_square_subsequent_mask(sz)),
                                      as_numpy(torch.nn.Transformer.generate_square_subsequent_mask(sz)))
    assert ember.nn.Transformer.generate_square_subsequent_mask(3, dtype=ember.float64).dtype == ember.float64


def test_decoder_alone_matches_torch():
    torch.manual_seed(1)
    tl = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0)
    t = torch.nn.TransformerDecoder(tl, 2, norm=torch.nn.LayerNorm(8))
    e = ember.nn.TransformerDecoder(ember.nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0), 2,
                                    norm=ember.nn.LayerNorm(8))
    assert list(e.state_dict()) == list(t.state_dict())
    copy_weights(t, e)
    tgt, mem = make((4, 2, 8)), make((6, 2, 8))
    got = e(ember.from_numpy(tgt), ember.from_numpy(mem), tgt_is_causal=False)
    want = t(torch.from_numpy(tgt), torch.from_numpy(mem), tgt_is_causal=False)
    np.testing.assert_allclose(as_numpy(got), as_numpy(want), rtol=1e-4, atol=1e-5)
    unbatched = e(ember.from_numpy(tgt[:, 0]), ember.from_numpy(mem[:, 0]))
    np.testing.assert_allclose(as_numpy(unbatched), as_numpy(t(torch.from_numpy(tgt[:, 0]), torch.from_numpy(mem[:, 0]))),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("src_shape, tgt_shape", [((5, 3, 8), (4, 2, 8)), ((5, 3, 8), (4, 3, 6))])
def test_bad_shapes_raise_as_torch(src_shape, tgt_shape):
    e = ember.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    t = torch.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
    with pytest.raises(RuntimeError) as got:
        e(ember.zeros(*src_shape), ember.zeros(*tgt_shape))
    with pytest.raises(RuntimeError) as want:
        t(torch.zeros(*src_shape), torch.zeros(*tgt_shape))
    assert str(got.value) == str(want.value)


WLM = '''
class TransformerModel(torch.nn.Transformer):
    """pytorch/examples word_language_model: subclasses nn.Transformer, replaces its decoder."""
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers):
        super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers, dropout=0.0)
        self.input_emb = torch.nn.Embedding(ntoken, ninp)
        self.decoder = torch.nn.Linear(ninp, ntoken)

    def forward(self, src):
        mask = torch.log(torch.tril(torch.ones(len(src), len(src))))
        src = self.input_emb(src)
        output = self.encoder(src, mask=mask)
        return torch.nn.functional.log_softmax(self.decoder(output), dim=-1)
'''


def test_word_language_model_subclass_runs_as_in_torch():
    models = []
    for lib in (ember, torch):
        namespace = {"torch": lib}
        exec(compile(WLM, "<wlm>", "exec"), namespace)
        models.append(namespace["TransformerModel"](20, 8, 2, 16, 2))
    e, t = models
    assert list(e.state_dict()) == list(t.state_dict())
    copy_weights(t, e)
    tokens = np.random.default_rng(0).integers(0, 20, size=(6, 3))
    np.testing.assert_allclose(as_numpy(e(ember.from_numpy(tokens))), as_numpy(t(torch.from_numpy(tokens))),
                               rtol=1e-4, atol=1e-5)
