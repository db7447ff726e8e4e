"""Checks model.py against an independent implementation.

  python3 test_model.py

Loads stories260K.gguf (../shared/conformance/models; skipped when absent),
a llama-architecture model converted for llama.cpp (GQA 8/4 heads, weights in
llama.cpp's layout), into model.Llama through the same tensor names
export.py writes, and compares its logits with llama2.c's reference
(stories260K_logits_llama2c_ref.txt) within 1e-4. This pins the RoPE pair
convention, the GQA head mapping, RMSNorm and SwiGLU to what llama.cpp and
tachyon compute, and the name/layout mapping of gguf_tensors().
"""

import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gguf_read import read_gguf  # noqa: E402
from model import Config, Llama, gguf_tensors  # noqa: E402

MODELS = os.path.join(HERE, "..", "..", "..", "..", "shared", "conformance", "models")


def check_blocked_attention():
    """causal_attention (query blocks, stacked GQA heads) equals plain masked attention
    (to f32 precision: its softmax runs in f32)."""
    from model import causal_attention
    torch.manual_seed(0)
    b, h, kv, t, d = 2, 6, 2, 600, 16
    q = torch.randn(b, h, t, d, dtype=torch.float64, requires_grad=True)
    k = torch.randn(b, kv, t, d, dtype=torch.float64, requires_grad=True)
    v = torch.randn(b, kv, t, d, dtype=torch.float64, requires_grad=True)
    y = causal_attention(q, k, v, block=128)
    kk = k.repeat_interleave(h // kv, dim=1)
    vv = v.repeat_interleave(h // kv, dim=1)
    s = (q @ kk.transpose(-2, -1)) / d ** 0.5
    s = s.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
    ref = torch.softmax(s, -1) @ vv
    assert torch.allclose(y, ref, atol=1e-5), (y - ref).abs().max()
    g = torch.autograd.grad(y.square().sum(), (q, k, v))
    g_ref = torch.autograd.grad(ref.square().sum(), (q, k, v))
    for a, r in zip(g, g_ref):
        assert torch.allclose(a, r, atol=1e-5), (a - r).abs().max()
    print("ok: blocked causal attention equals plain attention (values and gradients, T=600, GQA 6/2)")


def main():
    check_blocked_attention()
    path = os.path.join(MODELS, "stories260K.gguf")
    if not os.path.exists(path):
        print("skipped: stories260K conformance model absent")
        return
    g = read_gguf(path)
    m, tensors = g["metadata"], g["tensors"]
    cfg = Config(vocab_size=len(m["tokenizer.ggml.tokens"]), dim=m["llama.embedding_length"],
                 n_layer=m["llama.block_count"], n_head=m["llama.attention.head_count"],
                 n_kv_head=m["llama.attention.head_count_kv"], ffn_dim=m["llama.feed_forward_length"],
                 rope_base=m.get("llama.rope.freq_base", 10000.0),
                 norm_eps=m["llama.attention.layer_norm_rms_epsilon"])
    model = Llama(cfg)
    with torch.no_grad():
        for name, p in gguf_tensors(model):
            arr = tensors[name][2]
            assert tuple(arr.shape) == tuple(p.shape), f"{name}: {arr.shape} vs {tuple(p.shape)}"
            p.copy_(torch.from_numpy(np.array(arr, dtype=np.float32)))
        out_w = tensors["output.weight"][2]
        assert np.array_equal(out_w, tensors["token_embd.weight"][2]), "stories260K output is not tied"
    ids, ref = [], []
    with open(os.path.join(MODELS, "stories260K_logits_llama2c_ref.txt")) as f:
        for line in f:
            if line.startswith("pos "):
                parts = line.split()
                ids.append(int(parts[3]))
                ref.append([float(x) for x in parts[5:]])
    with torch.no_grad():
        logits = model(torch.tensor([ids]))[0].numpy()
    err = np.abs(logits - np.array(ref, dtype=np.float32)).max()
    assert err < 1e-4, f"logits differ from llama2.c by {err}"
    print(f"ok: stories260K logits match llama2.c at {len(ids)} positions (max abs err {err:.2e})")


if __name__ == "__main__":
    main()
