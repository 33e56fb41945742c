"""A small GPT built only from `lib.nn` modules (lib = ember or torch), for per-call overhead benchmarks
and guard tests: token + position embeddings, `n_layer` pre-LayerNorm blocks (causal self-attention from
two Linears, an MLP with GELU, dropout), a final LayerNorm and a tied-free head. ~8 modules per block.

`gpt_block` is the one pre-LayerNorm block the AOT/fuser benches and the compiled-training tests
share (tests/test_training_compiled.py and tests/functorch/test_aot_training.py import it)."""
from __future__ import annotations

import math


def gpt_classes(lib):
    nn, F = lib.nn, lib.nn.functional

    class CausalSelfAttention(nn.Module):
        def __init__(self, n_embd, n_head):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.attn_dropout = nn.Dropout(0.0)
            self.n_head = n_head
            self.n_embd = n_embd

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = self.attn_dropout(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self, n_embd):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU()
            self.c_proj = nn.Linear(4 * n_embd, n_embd)
            self.dropout = nn.Dropout(0.0)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, n_embd, n_head):
            super().__init__()
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention(n_embd, n_head)
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP(n_embd)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPT(nn.Module):
        def __init__(self, vocab_size=64, block_size=16, n_layer=12, n_head=2, n_embd=32):
            super().__init__()
            self.block_size = block_size
            self.wte = nn.Embedding(vocab_size, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.drop = nn.Dropout(0.0)
            self.h = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            for block in self.h:   # the causal mask: a buffer of every attention module
                block.attn.register_buffer("bias", lib.tril(lib.ones(block_size, block_size))
                                           .view(1, 1, block_size, block_size))

        def forward(self, idx):
            b, t = idx.size()
            pos = lib.arange(0, t, dtype=lib.long)
            x = self.drop(self.wte(idx) + self.wpe(pos))
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return GPT


def count_modules(model) -> int:
    return sum(1 for _ in model.modules())


def gpt_block(lib, dropout=0.0, d=256, heads=4):
    """One pre-LayerNorm block with causal attention (qkv in one Linear, mask built in forward), an MLP
    with GELU and, when `dropout` > 0, dropout after attention, projection and MLP."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.drop = nn.Dropout(dropout) if dropout else nn.Identity()

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q = q.view(B, T, heads, C // heads).transpose(1, 2)     # (no generator expression: dynamo
            k = k.view(B, T, heads, C // heads).transpose(1, 2)     # would run the frame eagerly)
            v = v.view(B, T, heads, C // heads).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // heads))
            att = att.masked_fill(~lib.tril(lib.ones(T, T, dtype=lib.bool)), float("-inf"))
            att = self.drop(F.softmax(att, dim=-1))
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            x = x + self.drop(self.proj(y))
            return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))
    return Block()


def gpt2_classes(lib):
    """GPT-2 (Radford et al. 2019) written once for `lib` (ember or torch): learned position
    embeddings, pre-LayerNorm blocks with causal `F.scaled_dot_product_attention` and a tanh-GELU
    MLP, a final LayerNorm and an LM head tied to the token embedding. GPT-2 small: the defaults."""
    nn, F = lib.nn, lib.nn.functional

    class Attention(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.c_attn, self.c_proj, self.heads = nn.Linear(d, 3 * d), nn.Linear(d, d), heads

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(d), Attention(d, heads), nn.LayerNorm(d)
            self.c_fc, self.gelu, self.c_proj = nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))

    class GPT2(nn.Module):
        def __init__(self, vocab_size=50257, block_size=1024, n_layer=12, n_head=12, n_embd=768):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab_size, n_embd), nn.Embedding(block_size, n_embd)
            self.h = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight      # tied, as GPT-2's
            for name, p in self.named_parameters():    # GPT-2's initialisation
                if p.dim() == 2:
                    nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * n_layer) if name.endswith("c_proj.weight") else 0.02)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx, targets):
            pos = lib.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            logits = self.lm_head(self.ln_f(x))
            return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.reshape(-1))

    return GPT2
