"""Checks the export path end to end.

  python3 test_export.py --exporter build/release/examples/incident/train/incident-export

Builds a small random model and a tokenizer trained on the fixture, runs
export.py's intermediate and golden writers and incident-export, then reads
the GGUF back (gguf_read.py, an independent reader): every metadata value and
every tensor's bytes must equal what export.py meant to write, the required
llama/tokenizer keys must be there, and the model rebuilt from the GGUF's
tensors must reproduce the golden logits (so golden.json describes the file).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import export as E  # noqa: E402
import tokenizer as T  # noqa: E402
from gguf_read import read_gguf  # noqa: E402
from model import Config, Llama, gguf_tensors  # noqa: E402

REQUIRED = ["general.architecture", "general.name", "llama.context_length", "llama.embedding_length",
            "llama.block_count", "llama.feed_forward_length", "llama.attention.head_count",
            "llama.attention.head_count_kv", "llama.rope.freq_base", "llama.attention.layer_norm_rms_epsilon",
            "llama.rope.dimension_count", "llama.vocab_size", "tokenizer.ggml.model", "tokenizer.ggml.pre",
            "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges",
            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
            "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.chat_template"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exporter", required=True, help="path of the incident-export executable")
    args = ap.parse_args()
    torch.manual_seed(0)
    fixture = os.path.join(HERE, "fixtures", "trajectories.jsonl")
    texts = ["".join(s["text"] for s in json.loads(l)["segments"]) for l in open(fixture) if l.strip()]
    tok = T.Tokenizer(T.train_bpe(T.count_words(texts), 300))
    model = Llama(Config(vocab_size=tok.vocab_size, dim=64, n_layer=2, n_head=4, n_kv_head=2, ffn_dim=96))
    model.eval()
    E.round_to_f16(model)
    with tempfile.TemporaryDirectory() as d:
        prefix = os.path.join(d, "m")
        E.write_intermediate(model, tok, prefix, "test-model")
        E.write_golden(model, tok, [fixture], os.path.join(d, "golden.json"), 32, 2)
        r = subprocess.run([args.exporter, prefix + ".json", prefix + ".gguf"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        g = read_gguf(prefix + ".gguf")
        header = json.load(open(prefix + ".json"))
        raw = open(prefix + ".bin", "rb").read()
        golden = json.load(open(os.path.join(d, "golden.json")))
        # A broken header is refused with a message naming the tensor.
        header_bad = dict(header, tensors=[dict(header["tensors"][0], n_bytes=3)])
        json.dump(header_bad, open(prefix + "_bad.json", "w"))
        os.symlink(prefix + ".bin", prefix + "_bad.bin")
        r_bad = subprocess.run([args.exporter, prefix + "_bad.json", prefix + "_bad.gguf"], capture_output=True, text=True)
    meta = g["metadata"]
    for k in REQUIRED:
        assert k in meta, f"missing {k}"
    for kv in header["metadata"]:
        v = meta[kv["key"]]
        ok = abs(v - kv["value"]) <= 1e-6 * abs(kv["value"]) if kv["type"] == "f32" else v == kv["value"]
        assert ok, f"metadata {kv['key']} differs"
    assert meta["tokenizer.ggml.tokens"][meta["tokenizer.ggml.eos_token_id"]] == "<|im_end|>"
    assert meta["tokenizer.ggml.add_bos_token"] is False
    assert "output.weight" not in g["tensors"], "output must be tied to token_embd"
    for t in header["tensors"]:
        shape, ttype, arr = g["tensors"][t["name"]]
        assert shape == t["shape"], t["name"]
        assert ttype == (1 if t["type"] == "f16" else 0), t["name"]
        assert arr.tobytes() == raw[t["offset"]:t["offset"] + t["n_bytes"]], t["name"]
    # Rebuild from the file and compare with the golden logits.
    m2 = Llama(model.cfg)
    m2.eval()
    with torch.no_grad():
        for name, p in gguf_tensors(m2):
            p.copy_(torch.from_numpy(np.array(g["tensors"][name][2], dtype=np.float32)))
        for case in golden["cases"]:
            logits = m2(torch.tensor([case["ids"]]))[0]
            err = np.abs(logits[-1].numpy() - np.array(case["last_logits"])).max()
            assert err < 1e-4, f"golden logits differ by {err}"
            assert logits.topk(5, dim=-1).indices.tolist() == case["top5"]
    assert r_bad.returncode != 0 and "token_embd.weight" in r_bad.stderr, r_bad.stderr
    print(f"ok: GGUF round trip ({len(header['metadata'])} keys, {len(header['tensors'])} tensors), "
          f"golden logits reproduced from the file, bad header refused: {r_bad.stderr.strip()}")


if __name__ == "__main__":
    main()
