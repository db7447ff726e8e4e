"""Writes examples/incident/model/CARD.md from a finished training run.

  /usr/bin/python3 card.py --run work/run --gguf ../model/incident-analyst.gguf --command "..." --out ../model/CARD.md
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gguf_read import read_gguf  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True, help="train.py --out folder")
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--command", required=True, help="the command that reproduces the model")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    r = json.load(open(os.path.join(args.run, "result.json")))
    ev_path = os.path.join(args.run, "eval_tf.json")
    ev = json.load(open(ev_path)) if os.path.exists(ev_path) else None
    c, a = r["config"], r["args"]
    g = read_gguf(args.gguf, load_tensors=False)
    size = os.path.getsize(args.gguf)
    curve = [h for h in r["history"] if "loss" in h]
    picks = curve[:: max(1, len(curve) // 8)]
    if curve and picks[-1] is not curve[-1]:
        picks.append(curve[-1])
    lines = [
        "# incident-analyst",
        "",
        "A small llama-architecture chat model trained by tachyon's own pipeline",
        "(`examples/incident/train/`) on transcripts of the scripted expert solving",
        "simulated incidents with the real tools (`incident-world trajectories`).",
        "Prompt format: ChatML with Hermes-style `<tool_call>` blocks (DESIGN.md).",
        "",
        "## Architecture",
        "",
        f"- llama: dim {c['dim']}, {c['n_layer']} layers, {c['n_head']} heads "
        f"({c['n_kv_head']} KV heads, head_dim {c['dim'] // c['n_head']}), SwiGLU FFN {c['ffn_dim']}, "
        f"RMSNorm eps {c['norm_eps']}, RoPE base {c['rope_base']:g} (normal/LLAMA pairs), tied output",
        f"- {r['n_params']:,} parameters; context {c['n_ctx']}; vocabulary {c['vocab_size']} "
        "(byte-level BPE, qwen2 pre-tokenizer, 7 control tokens)",
        f"- file: `{os.path.basename(args.gguf)}`, {size:,} bytes, F16 matrices, F32 norms, "
        f"{len(g['tensors'])} tensors",
        "",
        "## Training",
        "",
        f"- data: {r['n_train_transcripts']:,} transcripts, {r['n_train_tokens']:,} tokens "
        "(loss on assistant turns only; copied identifiers weighted "
        f"{a['copy_weight']}x); held-out seeds >= 1,000,000 never trained on, "
        "validation seeds 90,000-90,099",
        f"- {r['step']:,} steps, {r['tokens_seen']:,} tokens seen, {r['minutes']:.1f} minutes, "
        f"AdamW lr {a['lr']} warmup-stable-decay, {a['batch_tokens']} padded tokens per step, "
        f"lengths {a['min_len']} -> {a['max_len']} (curriculum over the first {a['curriculum']:.0%})",
        f"- seed {a['seed']}, {a['threads']} CPU threads",
        (f"- final training loss (assistant tokens) {r['final_train_loss']:.4f}"
         if r["final_train_loss"] is not None else "- final training loss: not logged")
        + (f"; validation loss {r['val_loss']:.4f}, token accuracy {r['val_acc']:.4f}" if "val_loss" in r else ""),
        "",
        "Loss curve (assistant-token cross-entropy, accuracy):",
        "",
        "| step | tokens | loss | accuracy |",
        "|---:|---:|---:|---:|",
    ]
    lines += [f"| {h['step']} | {h['tokens']:,} | {h['loss']:.3f} | {h['acc']:.3f} |" for h in picks]
    if ev:
        lines += ["", "## Held-out teacher-forced exact match (eval_tf.py)", "",
                  f"{ev['n_transcripts']} transcripts, seeds >= 1,000,000, F16 weights.", "",
                  "| turn kind | exact match | n |", "|---|---:|---:|"]
        lines += [f"| {k} | {v['exact']:.1%} | {v['n']} |" for k, v in ev.items() if isinstance(v, dict)]
        lines += [f"| assistant tokens | {ev['assistant_token_accuracy']:.1%} | |"]
    lines += ["", "## Reproduce", "", "```", args.command, "```", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    print(f"{args.out} written")


if __name__ == "__main__":
    main()
