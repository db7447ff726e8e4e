"""Held-out teacher-forced evaluation, per kind of assistant turn.

  /usr/bin/python3 eval_tf.py --model work/run/model.pt --tokenizer work/tokenizer.json \\
      --data work/heldout.jsonl [--out work/run/eval_tf.json]

Every transcript is fed whole (true prefix at every position); a turn counts
as an exact match when the argmax prediction equals the expert's token at
every position of the turn (its closing <|im_end|> included). A final-answer
field matches when every token overlapping its value does. Only seeds >=
1,000,000 are read (never trained on). Weights are rounded to F16 first, as
the exported model has them (--f32 keeps them as trained).

Kinds: first_call (the first assistant turn), get_trace_call (a turn calling
get_trace), parallel_calls (a turn with 2+ tool calls), any_call (every turn
with a tool call), final_answer (the last turn, whole) and its fields
root_cause_service, fault_type, first_bad_timestamp, evidence.
"""

import argparse
import json
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import data as D  # noqa: E402
from export import load_model, round_to_f16  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402

FIELDS = {
    "root_cause_service": re.compile(rb'"root_cause_service":\s*("[^"]*")'),
    "fault_type": re.compile(rb'"fault_type":\s*("[^"]*")'),
    "first_bad_timestamp": re.compile(rb'"first_bad_timestamp":\s*("[^"]*")'),
    "evidence": re.compile(rb'"evidence":\s*(\[[^\]]*\])'),
}


def token_range_of(ends, a, b):
    """Indices of tokens (byte ends `ends`) overlapping bytes [a, b)."""
    out, start = [], 0
    for i, e in enumerate(ends):
        if start < b and e > a:
            out.append(i)
        start = e
    return out


@torch.no_grad()
def evaluate(model, tok, records, log=print):
    stats = {}

    def add(kind, ok):
        n, k = stats.get(kind, (0, 0))
        stats[kind] = (n + 1, k + int(ok))

    n_tok = n_ok = 0
    for rec in records:
        ids, turns = [], []  # turns: (start, end, text, byte ends)
        for seg in rec["segments"]:
            if seg["train"]:
                seg_ids, ends = tok.encode_with_offsets(seg["text"])
                turns.append((len(ids), len(ids) + len(seg_ids), seg["text"], ends))
                ids += seg_ids
            else:
                ids += tok.encode(seg["text"])
        n_ctx = model.cfg.n_ctx
        logits = model(torch.tensor([ids[:n_ctx]]))[0]
        pred = logits.argmax(-1).tolist()
        correct = [False] + [pred[t - 1] == ids[t] for t in range(1, min(len(ids), n_ctx))]
        for i, (s, e, text, ends) in enumerate(turns):
            if e > n_ctx:
                add("beyond_context", False)
                continue
            ok = all(correct[s:e])
            n_tok += e - s
            n_ok += sum(correct[s:e])
            n_calls = text.count("<tool_call>")
            if i == 0:
                add("first_call", ok)
            if n_calls:
                add("any_call", ok)
            if n_calls >= 2:
                add("parallel_calls", ok)
            if '"name": "get_trace"' in text:
                add("get_trace_call", ok)
            if i == len(turns) - 1 and n_calls == 0:
                add("final_answer", ok)
                raw = text.encode("utf-8")
                for field, rx in FIELDS.items():
                    m = rx.search(raw)
                    if m is None:
                        add(field, False)
                        continue
                    toks = token_range_of(ends, m.start(1), m.end(1))
                    add(field, all(correct[s + j] for j in toks))
    result = {kind: {"n": n, "exact": k / n if n else 0.0} for kind, (n, k) in sorted(stats.items())}
    result["assistant_token_accuracy"] = n_ok / max(n_tok, 1)
    for kind, r in result.items():
        if isinstance(r, dict):
            log(f"{kind:22s} {r['exact'] * 100:6.1f}%  (n={r['n']})")
    log(f"{'assistant tokens':22s} {result['assistant_token_accuracy'] * 100:6.1f}%")
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--data", action="append", required=True)
    ap.add_argument("--limit", type=int, default=100, help="transcripts to evaluate")
    ap.add_argument("--f32", action="store_true", help="keep the trained F32 weights")
    ap.add_argument("--out", help="write the rates as JSON")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model = load_model(args.model)
    if not args.f32:
        round_to_f16(model)
    tok = Tokenizer.load(args.tokenizer)
    records = []
    for rec in D.load_records(args.data, D.is_heldout_seed):
        records.append(rec)
        if len(records) >= args.limit:
            break
    if not records:
        raise SystemExit(f"no held-out transcripts (seed >= 1,000,000) in {args.data}")
    print(f"{len(records)} held-out transcripts")
    result = evaluate(model, tok, records)
    result["n_transcripts"] = len(records)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
