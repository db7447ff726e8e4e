"""Self-test of tokenizer.py.

  python3 test_tokenizer.py [--tokenizer tok.json] [--tachyon BIN --model M.gguf]

Checks:
  1. the BPE core and byte map reproduce Hugging Face's ids on llama.cpp's
     gpt-2 conformance vectors (../shared/conformance/tokenizer; skipped when
     absent), using the gpt-2 pre-tokenizer;
  2. the ASCII fast path and the unicodedata matcher of the qwen2
     pre-tokenizer split the same way (fixture transcripts, edge cases);
  3. special tokens are whole tokens; decode(encode(x)) == x;
  4. with --tachyon and --model: `tachyon tokenize -m M.gguf -f FILE
     --parse-special` gives the same ids as this tokenizer, file by file
     (fixture transcripts and edge cases): the check that the C++ qwen2
     pre-tokenizer and merge order agree with the training side.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tokenizer as T  # noqa: E402
from gguf_read import read_gguf  # noqa: E402

CONFORMANCE = os.path.join(HERE, "..", "..", "..", "..", "shared", "conformance", "tokenizer")
FIXTURE = os.path.join(HERE, "fixtures", "trajectories.jsonl")

EDGE_CASES = [
    "", " ", "  ", "\n", "\n\n", " \n ", "\t\n", "a  b", "a   \n  b", "Hello world", " Hello, world!",
    "I'm don't we'LL they'Re", "x=4bf92f3577b34da6", "trace=bf92f35", '{"evidence": ["payments:1842"]}',
    "2026-03-14T14:05:12.345Z", "  leading", "trailing  ", "a\r\nb", "..\n\n\nx", "!!\r\n\r\n",
    "payments-db api-gateway", "123abc 4567", "Führer ½ 🦙.cpp нещо", "x\u00a0y\u3000z", "'s's",
]


def check_gpt2_conformance():
    path = os.path.join(CONFORMANCE, "ggml-vocab-gpt-2.gguf")
    if not os.path.exists(path):
        print("skipped: gpt-2 conformance vectors absent")
        return
    g = read_gguf(path, load_tensors=False)["metadata"]
    merges = [tuple(m.split(" ", 1)) for m in g["tokenizer.ggml.merges"]]
    tok = T.Tokenizer(merges, special_tokens=["<|endoftext|>"], pre_tokenizer="gpt2",
                      tokens=g["tokenizer.ggml.tokens"])
    with open(path + ".inp", encoding="utf-8") as f:
        inputs = f.read().split("\n__ggml_vocab_test__\n")[:-1]
    with open(path + ".out", encoding="utf-8") as f:
        outputs = f.read().split("\n")
    n_bad = 0
    for text, want in zip(inputs, outputs):
        got = tok.encode(text, parse_special=False)
        if got != [int(x) for x in want.split()]:
            n_bad += 1
            print(f"gpt-2 mismatch for {text!r}: got {got} want {want}")
    assert n_bad == 0, f"{n_bad} gpt-2 conformance inputs differ"
    print(f"ok: gpt-2 conformance, {len(inputs)} inputs")


def fixture_texts():
    with open(FIXTURE, encoding="utf-8") as f:
        return ["".join(s["text"] for s in json.loads(line)["segments"]) for line in f if line.strip()]


def check_pre_tokenizer_paths():
    texts = fixture_texts() + [t for t in EDGE_CASES if t.isascii()]
    for t in texts:
        fast = T.pre_tokenize_spans(t)
        slow = T.pre_tokenize_spans_unicode(t)
        assert fast == slow, f"qwen2 paths differ on {t[:80]!r}: {fast[:20]} vs {slow[:20]}"
    # Expected splits written out by hand from the regex.
    assert T.pre_tokenize("a   \n  b") == ["a", "   \n", " ", " b"]
    assert T.pre_tokenize("Hello  world") == ["Hello", " ", " world"]
    assert T.pre_tokenize("x=4bf9") == ["x", "=", "4", "bf", "9"]
    assert T.pre_tokenize("I'm") == ["I", "'m"]
    assert T.pre_tokenize(' {"a": 12}\n\n') == [" {\"", "a", "\":", " ", "1", "2", "}\n\n"]
    print(f"ok: qwen2 pre-tokenizer, ASCII and unicode paths agree on {len(texts)} texts")


def check_tokenizer(tok):
    for s in T.SPECIAL_TOKENS:
        assert tok.encode("x" + s + "y") == tok.encode("x") + [tok.special_ids[s]] + tok.encode("y"), s
    for t in EDGE_CASES + fixture_texts():
        assert tok.decode(tok.encode(t)) == t, f"round trip fails on {t[:60]!r}"
    for name in ("payments-db", "api-gateway", "checkout"):
        print(f"  {name!r}: {len(tok.encode(' ' + name))} tokens (with leading space), "
              f"{len(tok.encode(chr(34) + name + chr(34)))} in quotes")
    tid = "4bf92f3577b34da6"
    print(f"  trace id {tid}: {len(tok.encode(tid))} tokens")
    print("ok: special tokens whole, round trip exact")


def check_against_tachyon(tok, tachyon, model, data=None):
    texts = fixture_texts()[:3] + [t for t in EDGE_CASES if t]
    if data:
        with open(data, encoding="utf-8") as f:
            texts += ["".join(s["text"] for s in json.loads(line)["segments"]) for line in f if line.strip()][:20]
    n_bad = 0
    with tempfile.TemporaryDirectory() as d:
        for i, t in enumerate(texts):
            p = os.path.join(d, f"in{i}.txt")
            with open(p, "w", encoding="utf-8") as f:
                f.write(t)
            r = subprocess.run([tachyon, "tokenize", "-m", model, "-f", p, "--parse-special"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"tachyon tokenize failed: {r.stderr.strip()}")
            got = [int(x) for x in r.stdout.split()]  # "id id id\n"
            want = tok.encode(t)
            if got != want:
                n_bad += 1
                print(f"tachyon differs on {t[:60]!r}: {got[:20]} vs {want[:20]}")
    assert n_bad == 0, f"{n_bad} texts tokenize differently in tachyon"
    print(f"ok: tachyon tokenize agrees on {len(texts)} texts")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokenizer", help="tok.json to check (default: train one on the fixture)")
    ap.add_argument("--tachyon", help="path of the tachyon executable")
    ap.add_argument("--model", help="GGUF holding the same tokenizer")
    ap.add_argument("--data", help="trajectory JSONL: its first 20 transcripts join the tachyon comparison")
    args = ap.parse_args()
    check_gpt2_conformance()
    check_pre_tokenizer_paths()
    if args.tokenizer:
        tok = T.Tokenizer.load(args.tokenizer)
    else:
        tok = T.Tokenizer(T.train_bpe(T.count_words(fixture_texts()), 400))
    check_tokenizer(tok)
    if args.tachyon and args.model:
        check_against_tachyon(tok, args.tachyon, args.model, args.data)
    else:
        print("skipped: comparison with tachyon tokenize (pass --tachyon and --model)")


if __name__ == "__main__":
    main()
