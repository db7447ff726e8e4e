"""Exports a trained model: GGUF intermediate for incident-export, and golden logits.

  /usr/bin/python3 export.py --model work/run/model.pt --tokenizer work/tokenizer.json \\
      --out work/export/incident-analyst [--golden ../model/golden.json --golden-data held.jsonl]
  build/release/examples/incident/train/incident-export work/export/incident-analyst.json \\
      ../model/incident-analyst.gguf

Writes OUT.json (GGUF metadata in order, tensor list) and OUT.bin (tensors,
little-endian, already in their GGUF type: norms F32, matrices F16), so the
C++ side only validates and packages bytes.

Golden data: the logits of the model as exported (weights rounded to F16,
arithmetic in F32) for the first --golden-tokens tokens of three held-out
transcripts: the ids, the logits at the last position and the top-5 ids at
every position. tachyon's forward-pass test compares against them.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import data as D  # noqa: E402
from model import Config, Llama, gguf_tensors  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

MAX_FILE_BYTES = 16 * 1024 * 1024


def load_model(path):
    ck = torch.load(path, map_location="cpu")
    model = Llama(Config(**ck["config"]))
    model.load_state_dict(ck["model"])
    model.eval()
    return model


def round_to_f16(model):
    """Round the matrices exactly as the export stores them (norms stay F32)."""
    with torch.no_grad():
        for _, p in gguf_tensors(model):
            if p.dim() == 2:
                p.copy_(p.half().float())


def metadata(cfg, tok, name, template):
    sp = tok.special_ids
    token_type = [1] * tok.n_normal + [3] * len(tok.special_tokens)  # 1 normal, 3 control
    return [
        ("general.architecture", "string", "llama"),
        ("general.name", "string", name),
        ("general.description", "string",
         "incident-analysis agent model trained by tachyon's examples/incident/train pipeline"),
        ("general.file_type", "u32", 1),  # mostly F16
        ("llama.context_length", "u32", cfg.n_ctx),
        ("llama.embedding_length", "u32", cfg.dim),
        ("llama.block_count", "u32", cfg.n_layer),
        ("llama.feed_forward_length", "u32", cfg.ffn_dim),
        ("llama.attention.head_count", "u32", cfg.n_head),
        ("llama.attention.head_count_kv", "u32", cfg.n_kv_head),
        ("llama.rope.freq_base", "f32", cfg.rope_base),
        ("llama.attention.layer_norm_rms_epsilon", "f32", cfg.norm_eps),
        ("llama.rope.dimension_count", "u32", cfg.head_dim),
        ("llama.vocab_size", "u32", tok.vocab_size),
        ("tokenizer.ggml.model", "string", "gpt2"),
        ("tokenizer.ggml.pre", "string", "qwen2"),
        ("tokenizer.ggml.tokens", "string_array", tok.tokens),
        ("tokenizer.ggml.token_type", "i32_array", token_type),
        ("tokenizer.ggml.merges", "string_array", [a + " " + b for a, b in tok.merges]),
        ("tokenizer.ggml.bos_token_id", "u32", sp["<|endoftext|>"]),
        ("tokenizer.ggml.eos_token_id", "u32", sp["<|im_end|>"]),
        ("tokenizer.ggml.eot_token_id", "u32", sp["<|im_end|>"]),
        ("tokenizer.ggml.padding_token_id", "u32", sp["<|endoftext|>"]),
        ("tokenizer.ggml.add_bos_token", "bool", False),
        ("tokenizer.chat_template", "string", template),
    ]


def write_intermediate(model, tok, out, name):
    cfg = model.cfg
    with open(os.path.join(HERE, "chat_template.jinja"), encoding="utf-8") as f:
        template = f.read()
    tensors = []
    offset = 0
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out + ".bin", "wb") as f:
        for tname, p in gguf_tensors(model):
            a = p.detach().cpu().float().numpy()
            a = a.astype("<f2") if a.ndim == 2 else a.astype("<f4")
            raw = a.tobytes(order="C")
            f.write(raw)
            tensors.append({"name": tname, "shape": list(reversed(a.shape)),
                            "type": "f16" if a.ndim == 2 else "f32", "offset": offset, "n_bytes": len(raw)})
            offset += len(raw)
            pad = (-offset) % 32
            f.write(b"\0" * pad)
            offset += pad
    header = {"data_file": os.path.basename(out) + ".bin",
              "metadata": [{"key": k, "type": t, "value": v} for k, t, v in metadata(cfg, tok, name, template)],
              "tensors": tensors}
    with open(out + ".json", "w", encoding="utf-8") as f:
        json.dump(header, f, ensure_ascii=False)
    n_params = sum(int(np.prod(t["shape"])) for t in tensors)
    print(f"{out}.json/.bin: {len(tensors)} tensors, {n_params} parameters, {offset} data bytes")
    if offset > MAX_FILE_BYTES:
        raise SystemExit(f"tensor data {offset} bytes exceeds the {MAX_FILE_BYTES} byte limit of the shipped model")


@torch.no_grad()
def write_golden(model, tok, data_paths, out, n_tokens, n_cases):
    """Reference logits of the F16-rounded model in F32 arithmetic."""
    cases = []
    for rec in D.load_records(data_paths, lambda s: True):
        ex = D.tokenize_record(tok, rec)
        ids = [int(i) for i in ex.ids[:n_tokens]]
        logits = model(torch.tensor([ids]))[0]  # [T, vocab]
        cases.append({
            "seed": rec["seed"],
            "ids": ids,
            "last_logits": [float(f"{x:.6g}") for x in logits[-1].tolist()],
            "top5": logits.topk(5, dim=-1).indices.tolist(),
        })
        if len(cases) >= n_cases:
            break
    golden = {
        "model": "incident-analyst.gguf",
        "description": "logits of the exported model (F16 matrices, F32 norms, F32 arithmetic, PyTorch) "
                       "for the first tokens of held-out transcripts; ids are fed from position 0 without BOS",
        "tolerance": 1e-3,
        "cases": cases,
    }
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(golden, f, separators=(",", ":"))
    print(f"{out}: {len(cases)} cases of {n_tokens} tokens")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="model.pt written by train.py")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True, help="prefix of the intermediate: OUT.json and OUT.bin")
    ap.add_argument("--name", default="incident-analyst")
    ap.add_argument("--golden", help="write golden logits to this JSON file")
    ap.add_argument("--golden-data", action="append", help="held-out trajectory JSONL for --golden")
    ap.add_argument("--golden-tokens", type=int, default=64)
    ap.add_argument("--golden-cases", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = load_model(args.model)
    tok = Tokenizer.load(args.tokenizer)
    assert tok.vocab_size == model.cfg.vocab_size, "tokenizer and model disagree on the vocabulary size"
    round_to_f16(model)
    write_intermediate(model, tok, args.out, args.name)
    if args.golden:
        write_golden(model, tok, args.golden_data, args.golden, args.golden_tokens, args.golden_cases)


if __name__ == "__main__":
    main()
