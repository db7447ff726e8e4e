"""Checks train.py's determinism and resume on the fixture transcripts (CPU, seconds).

  /usr/bin/python3 test_train.py

1. Two runs with the same --seed and a token budget end with identical weights.
2. A run stopped after 3 steps and resumed with --resume to 6 steps ends with
   the weights of an uninterrupted 6-step run (model, optimizer, LR schedule,
   sampler position and RNG states all restored).
3. The loss goes down over the 6 steps.
"""

import contextlib
import io
import json
import os
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import tokenizer as T  # noqa: E402
import train  # noqa: E402

FIXTURE = os.path.join(HERE, "fixtures", "trajectories.jsonl")


def run(out, tok_path, extra):
    argv = ["--data", FIXTURE, "--tokenizer", tok_path, "--out", out, "--preset", "tiny",
            "--dim", "64", "--n-layer", "2", "--n-head", "4", "--n-kv-head", "2", "--ffn-dim", "96",
            "--tokens", "100000", "--batch-tokens", "2800", "--min-len", "500", "--log-every", "1",
            "--lr", "3e-3", "--seed", "7", "--threads", "1", "--ckpt-minutes", "0", "--eval-minutes", "1000"] + extra
    with contextlib.redirect_stdout(io.StringIO()):
        train.main(argv)
    return torch.load(os.path.join(out, "model.pt"))["model"]


def same(a, b):
    return all(torch.equal(a[k], b[k]) for k in a)


def main():
    with open(FIXTURE) as f:
        texts = ["".join(s["text"] for s in json.loads(l)["segments"]) for l in f if l.strip()]
    with tempfile.TemporaryDirectory() as d:
        tok_path = os.path.join(d, "tok.json")
        T.Tokenizer(T.train_bpe(T.count_words(texts), 300)).save(tok_path)
        a = run(os.path.join(d, "a"), tok_path, ["--max-steps", "6"])
        b = run(os.path.join(d, "b"), tok_path, ["--max-steps", "6"])
        assert same(a, b), "same seed, different weights"
        run(os.path.join(d, "c"), tok_path, ["--max-steps", "3"])
        c = run(os.path.join(d, "c"), tok_path, ["--max-steps", "6", "--resume"])
        assert same(a, c), "resumed run differs from the uninterrupted one"
        hist = [h for h in json.load(open(os.path.join(d, "a", "result.json")))["history"] if "loss" in h]
        assert hist[-1]["loss"] < hist[0]["loss"], [h["loss"] for h in hist]
        print(f"ok: deterministic, resume exact, loss {hist[0]['loss']:.3f} -> {hist[-1]['loss']:.3f}")


if __name__ == "__main__":
    main()
