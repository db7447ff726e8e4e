"""The shipped model: llama architecture computed as llama.cpp's "llama" arch does.

  h = token_embd[ids]
  per layer:  h += attn_output(attention(rope(attn_q(norm(h))), rope(attn_k(norm(h))), attn_v(norm(h))))
              h += ffn_down(silu(ffn_gate(norm(h))) * ffn_up(norm(h)))
  logits = output_norm(h) @ token_embd^T          (tied output)

RoPE follows llama.cpp's LLAMA ("normal") mode: consecutive pairs
(x[2i], x[2i+1]) rotate by pos * base^(-2i/head_dim). Training in that
convention means the exported attn_q/attn_k need no permutation (Hugging
Face's rotate-half layout is what the usual converters permute for).
Grouped-query attention: query head h reads kv head h // (n_head / n_kv_head),
as ggml's broadcast in llama.cpp does.
"""

import dataclasses
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


@dataclasses.dataclass
class Config:
    vocab_size: int = 2048
    dim: int = 192
    n_layer: int = 6
    n_head: int = 6
    n_kv_head: int = 3
    ffn_dim: int = 512
    n_ctx: int = 2048
    rope_base: float = 10000.0
    norm_eps: float = 1e-5

    @property
    def head_dim(self):
        return self.dim // self.n_head


# Sizes measured in the README; "small" is what train.sh uses unless told.
PRESETS = {
    "tiny": dict(dim=128, n_layer=4, n_head=4, n_kv_head=2, ffn_dim=352),
    "small": dict(dim=192, n_layer=6, n_head=6, n_kv_head=3, ffn_dim=512),
    "base": dict(dim=256, n_layer=6, n_head=4, n_kv_head=2, ffn_dim=688),
}


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * self.weight.float()).type_as(x)


def rope_tables(n_pos, head_dim, base, device):
    """cos, sin: [n_pos, head_dim/2] for pair i at position p: angle p * base^(-2i/head_dim)."""
    inv = base ** (-torch.arange(0, head_dim, 2, device=device, dtype=torch.float32) / head_dim)
    ang = torch.arange(n_pos, device=device, dtype=torch.float32)[:, None] * inv[None, :]
    return torch.cos(ang), torch.sin(ang)


def apply_rope(x, cos, sin):
    """x: [B, T, H, D]; rotates (x[2i], x[2i+1]) pairs."""
    xf = x.float()
    x0 = xf[..., 0::2]  # [B, T, H, D/2]
    x1 = xf[..., 1::2]
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    out = torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1)  # [B, T, H, D/2, 2]
    return out.flatten(-2).type_as(x)


def causal_attention(q, k, v, block=256):
    """q: [B, H, T, D], k, v: [B, KV, T, D] -> [B, H, T, D]; query head h reads kv head h // (H / KV).

    Queries go in blocks of `block` rows, each against the keys up to its
    last row only: the upper triangle of the [T, T] scores is never computed
    (half the work of a full causal matmul), and the query heads sharing a kv
    head are stacked into one matmul instead of copying k and v per head.
    Softmax in f32.
    """
    b, h, t, d = q.shape
    kv = k.shape[1]
    rep = h // kv
    q = (q * (1.0 / math.sqrt(d))).reshape(b, kv, rep, t, d)
    out = []
    for s, q_block in zip(range(0, t, block), q.split(block, dim=3)):  # split: no zero-filled grads
        e = min(t, s + block)
        qb = q_block.reshape(b, kv, rep * (e - s), d)                        # [B, KV, rep*c, D]
        scores = (qb @ k[:, :, :e].transpose(-2, -1)).float()                # [B, KV, rep*c, e]
        scores = scores.view(b, kv, rep, e - s, e)
        mask = torch.ones(e - s, e, dtype=torch.bool, device=q.device).triu(s + 1)  # key j > query s+i
        scores.masked_fill_(mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1).type_as(v).view(b, kv, rep * (e - s), e)
        out.append((probs @ v[:, :, :e]).view(b, kv, rep, e - s, d))       # [B, KV, rep, c, D]
    return torch.cat(out, dim=3).reshape(b, h, t, d)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head, self.n_kv_head, self.head_dim = cfg.n_head, cfg.n_kv_head, cfg.head_dim
        self.wq = nn.Linear(cfg.dim, cfg.n_head * cfg.head_dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_head * cfg.head_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_head * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_head * cfg.head_dim, cfg.dim, bias=False)
        self.checkpoint = False  # set by train.py --checkpoint-attention

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = apply_rope(self.wq(x).view(b, t, self.n_head, self.head_dim), cos, sin)
        k = apply_rope(self.wk(x).view(b, t, self.n_kv_head, self.head_dim), cos, sin)
        v = self.wv(x).view(b, t, self.n_kv_head, self.head_dim)
        q = q.transpose(1, 2)   # [B, H, T, D]
        k = k.transpose(1, 2)   # [B, KV, T, D]
        v = v.transpose(1, 2)   # [B, KV, T, D]
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if sdpa is not None:  # torch 2.x: fused kernel, no [T, T] score tensor kept
            rep = self.n_head // self.n_kv_head
            y = sdpa(q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1), is_causal=True)
        elif self.checkpoint and self.training and torch.is_grad_enabled():
            # Recompute the scores in backward instead of keeping the softmax
            # output of every layer ([B, H, T, T/2] f32 each): costs one more
            # attention forward per layer.
            y = checkpoint(causal_attention, q, k, v, use_reentrant=False)
        else:
            y = causal_attention(q, k, v)
        return self.wo(y.transpose(1, 2).reshape(b, t, self.n_head * self.head_dim))


class FeedForward(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)  # ffn_gate
        self.w3 = nn.Linear(cfg.dim, cfg.ffn_dim, bias=False)  # ffn_up
        self.w2 = nn.Linear(cfg.ffn_dim, cfg.dim, bias=False)  # ffn_down

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.ffn = FeedForward(cfg)

    def forward(self, x, cos, sin):
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.ffn(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self._init_weights()

    def _init_weights(self):
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02
                if name.endswith("wo.weight") or name.endswith("w2.weight"):
                    std = 0.02 / math.sqrt(2 * self.cfg.n_layer)  # residual outputs (GPT-2)
                nn.init.normal_(p, mean=0.0, std=std)

    def forward(self, ids):
        """ids: [B, T] -> logits [B, T, vocab]."""
        t = ids.shape[1]
        cos, sin = rope_tables(t, self.cfg.head_dim, self.cfg.rope_base, ids.device)
        h = self.tok_embeddings(ids)
        for layer in self.layers:
            h = layer(h, cos, sin)
        h = self.norm(h)
        return h @ self.tok_embeddings.weight.t().type_as(h)

    def n_params(self):
        return sum(p.numel() for p in self.parameters())


def gguf_tensors(model):
    """[(gguf name, torch tensor)] in llama.cpp's names; Linear weights are
    [out, in] row-major, which is GGUF's [ne0 = in, ne1 = out]."""
    out = [("token_embd.weight", model.tok_embeddings.weight)]
    for i, L in enumerate(model.layers):
        p = f"blk.{i}."
        out += [
            (p + "attn_norm.weight", L.attn_norm.weight),
            (p + "attn_q.weight", L.attn.wq.weight),
            (p + "attn_k.weight", L.attn.wk.weight),
            (p + "attn_v.weight", L.attn.wv.weight),
            (p + "attn_output.weight", L.attn.wo.weight),
            (p + "ffn_norm.weight", L.ffn_norm.weight),
            (p + "ffn_gate.weight", L.ffn.w1.weight),
            (p + "ffn_up.weight", L.ffn.w3.weight),
            (p + "ffn_down.weight", L.ffn.w2.weight),
        ]
    out.append(("output_norm.weight", model.norm.weight))
    return out
