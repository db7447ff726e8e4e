"""Trains the shipped model on incident trajectories.

  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=4294967296 \\
  /usr/bin/python3 train.py --data work/train.jsonl --tokenizer work/tokenizer.json \\
      --out work/run --preset small --minutes 70 --seed 1

Loss: cross-entropy on assistant tokens only (train=true segments), tokens
that copy an identifier from the context weighted --copy-weight times more.
Schedule: AdamW, warmup-stable-decay learning rate over the budget
(--minutes wall clock, or --tokens; only a token budget is deterministic).
Curriculum: a step draws a window of transcripts of similar length (little
padding) and cuts each to its longest prefix of whole turns <= the current
length cap, which grows from --min-len to --max-len over the first
--curriculum fraction of the budget; every loss token keeps its real prefix.
Checkpoints (model, optimizer, step, RNG states: the data position is the
sampler's RNG state) every --ckpt-minutes to OUT/ckpt.pt; --resume goes on
from there with the same arguments.
"""

import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import data as D  # noqa: E402
from model import PRESETS, Config, Llama  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", action="append", required=True, help="trajectory JSONL (repeatable)")
    ap.add_argument("--val-data", action="append", help="JSONL with validation seeds (default: --data)")
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--out", required=True, help="folder for log, checkpoint and final model")
    ap.add_argument("--preset", default="small", choices=sorted(PRESETS))
    ap.add_argument("--dim", type=int)
    ap.add_argument("--n-layer", type=int)
    ap.add_argument("--n-head", type=int)
    ap.add_argument("--n-kv-head", type=int)
    ap.add_argument("--ffn-dim", type=int)
    ap.add_argument("--minutes", type=float, help="wall-clock budget of the training loop")
    ap.add_argument("--tokens", type=float, help="budget in tokens (deterministic)")
    ap.add_argument("--max-steps", type=int, help="stop after this many steps (measurements)")
    ap.add_argument("--batch-tokens", type=int, default=12288, help="padded tokens per step")
    ap.add_argument("--min-len", type=int, default=768, help="length cap at the start of the curriculum")
    ap.add_argument("--max-len", type=int, default=3072,
                    help="longest training sequence (transcripts are cut after the last whole turn that fits)")
    ap.add_argument("--ctx", type=int, default=4096, help="llama.context_length written to the model")
    ap.add_argument("--curriculum", type=float, default=0.3, help="budget fraction to reach --max-len")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.02)
    ap.add_argument("--warmup", type=float, default=0.03, help="budget fraction of linear warmup")
    ap.add_argument("--decay", type=float, default=0.25, help="budget fraction of final linear decay")
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--copy-weight", type=float, default=2.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="auto", help="auto, cpu or cuda")
    ap.add_argument("--checkpoint-attention", action="store_true",
                    help="recompute attention scores in backward (less memory, ~15%% slower; torch 1.x)")
    ap.add_argument("--ckpt-minutes", type=float, default=5.0)
    ap.add_argument("--eval-minutes", type=float, default=15.0, help="validation interval")
    ap.add_argument("--n-val", type=int, default=24, help="validation transcripts")
    ap.add_argument("--max-transcripts", type=int, help="read at most this many training transcripts")
    ap.add_argument("--log-every", type=int, default=10)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--init", help="start from the weights of this model.pt or ckpt.pt (same shape and "
                    "tokenizer; fresh optimizer and schedule): a continuation on new data")
    args = ap.parse_args(argv)
    if (args.minutes is None) == (args.tokens is None) and args.max_steps is None:
        ap.error("give exactly one of --minutes and --tokens (or --max-steps)")
    return args


def model_config(args, vocab_size):
    hp = dict(PRESETS[args.preset])
    for k in ("dim", "n_layer", "n_head", "n_kv_head", "ffn_dim"):
        if getattr(args, k) is not None:
            hp[k] = getattr(args, k)
    return Config(vocab_size=vocab_size, n_ctx=max(args.ctx, args.max_len), **hp)


class Logger:
    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8")

    def __call__(self, msg):
        line = time.strftime("%H:%M:%S ") + msg
        print(line, flush=True)
        self.f.write(line + "\n")
        self.f.flush()


def lr_at(args, p):
    """Warmup-stable-decay: linear up, flat, linear down to min_lr_ratio * lr."""
    if p < args.warmup:
        return args.lr * max(p / args.warmup, 0.01)
    if p < 1.0 - args.decay:
        return args.lr
    q = min(1.0, (p - (1.0 - args.decay)) / args.decay)
    return args.lr * (1.0 - q * (1.0 - args.min_lr_ratio))


class Sampler:
    """Windows of length-sorted transcripts, cut to the curriculum's cap."""

    def __init__(self, examples, batch_tokens, seed):
        self.examples = sorted(examples, key=len)
        self.batch_tokens = batch_tokens
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def next_batch(self, cap):
        n = len(self.examples)
        i = int(self.rng.integers(0, n))
        chosen, longest = [], 0
        # Walk from i over neighbours in length order (wrapping), as many as fit.
        for k in range(n):
            ex = self.examples[(i + k) % n]
            L = ex.cut(cap)
            if chosen and (len(chosen) + 1) * max(longest, L) > self.batch_tokens:
                break
            chosen.append((ex, L))
            longest = max(longest, L)
        return chosen

    def state(self):
        return self.rng.bit_generator.state

    def set_state(self, s):
        self.rng.bit_generator.state = s


def collate(chosen, pad_id, copy_weight, device):
    """inputs [B, T], targets [B, T], weight [B, T] (loss weight), mask [B, T] (assistant targets)."""
    T = max(L for _, L in chosen) - 1
    B = len(chosen)
    inp = np.full((B, T), pad_id, dtype=np.int64)
    tgt = np.full((B, T), pad_id, dtype=np.int64)
    mask = np.zeros((B, T), dtype=np.float32)
    copy = np.zeros((B, T), dtype=np.float32)
    for b, (ex, L) in enumerate(chosen):
        inp[b, :L - 1] = ex.ids[:L - 1]
        tgt[b, :L - 1] = ex.ids[1:L]
        mask[b, :L - 1] = ex.train[1:L]
        copy[b, :L - 1] = ex.copy[1:L]
    weight = mask * (1.0 + (copy_weight - 1.0) * copy)
    t = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    return t(inp), t(tgt), t(weight), t(mask)


def forward_loss(model, inp, tgt, weight, mask, autocast):
    """(weighted loss to optimize, plain assistant-token CE sum, correct count, token count)."""
    if autocast:
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits = model(inp)
    else:
        logits = model(inp)
    ce = F.cross_entropy(logits.float().flatten(0, 1), tgt.flatten(), reduction="none").view_as(mask)
    n = mask.sum()
    loss = (ce * weight).sum() / n.clamp(min=1)
    with torch.no_grad():
        correct = ((logits.argmax(-1) == tgt).float() * mask).sum()
        ce_sum = (ce * mask).sum()
    return loss, ce_sum.item(), correct.item(), n.item()


@torch.no_grad()
def evaluate(model, examples, args, pad_id, device, autocast):
    model.eval()
    ce, correct, n = 0.0, 0.0, 0.0
    for ex in examples:
        batch = collate([(ex, ex.cut(args.max_len))], pad_id, 1.0, device)
        _, c, k, m = forward_loss(model, *batch, autocast)
        ce, correct, n = ce + c, correct + k, n + m
    model.train()
    return ce / max(n, 1), correct / max(n, 1)


def save_checkpoint(path, model, opt, state):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), **state}, tmp)
    os.replace(tmp, path)


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    log = Logger(os.path.join(args.out, "train.log"))
    torch.set_num_threads(args.threads)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    autocast = device == "cuda"
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    tok = Tokenizer.load(args.tokenizer)
    pad_id = tok.special_ids["<|endoftext|>"]
    t0 = time.time()
    train_ex = D.load_examples(tok, args.data, D.is_training_seed, limit=args.max_transcripts, log=log)
    val_ex = D.load_examples(tok, args.val_data or args.data, D.is_validation_seed, limit=args.n_val)
    if not train_ex:
        raise SystemExit(f"no training transcripts in {args.data}")
    n_tok = sum(len(e) for e in train_ex)
    n_asst = sum(int(e.train.sum()) for e in train_ex)
    lens = sorted(len(e) for e in train_ex)
    log(f"data: {len(train_ex)} transcripts, {n_tok} tokens ({n_asst} assistant), length "
        f"min {lens[0]} median {lens[len(lens) // 2]} max {lens[-1]}; {len(val_ex)} validation; "
        f"tokenized in {time.time() - t0:.0f}s")

    cfg = model_config(args, tok.vocab_size)
    model = Llama(cfg).to(device)
    for layer in model.layers:
        layer.attn.checkpoint = args.checkpoint_attention
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt_kwargs = dict(lr=args.lr, betas=(0.9, 0.95), eps=1e-8)
    if device == "cuda":
        opt_kwargs["fused" if "fused" in torch.optim.AdamW.__init__.__code__.co_varnames else "foreach"] = True
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], **opt_kwargs)
    sampler = Sampler(train_ex, args.batch_tokens, args.seed)
    log(f"model: {cfg}, {model.n_params() / 1e6:.2f}M parameters, device {device}, threads {args.threads}")
    load = os.getloadavg()[0]
    if device == "cpu" and args.threads > 1 and load > 2 * (os.cpu_count() or 1):
        # Measured here at load ~15 on 2 cores: 1 thread trained ~6x faster than 2,
        # because each OpenMP region waits for the descheduled thread.
        log(f"warning: load average {load:.1f} on {os.cpu_count()} cores; --threads 1 is much faster "
            "on an oversubscribed machine")

    step, tokens_seen, elapsed = 0, 0, 0.0
    history = []
    ckpt_path = os.path.join(args.out, "ckpt.pt")
    if args.init and not (args.resume and os.path.exists(ckpt_path)):
        init = torch.load(args.init, map_location=device)
        model.load_state_dict(init["model"])
        history = [dict(h, init=args.init) for h in init.get("history", [])]
        log(f"initialised from {args.init}")
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path, map_location=device)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        step, tokens_seen, elapsed = ck["step"], ck["tokens_seen"], ck["elapsed"]
        history = ck.get("history", [])
        sampler.set_state(ck["sampler"])
        torch.set_rng_state(ck["torch_rng"])
        np.random.set_state(ck["numpy_rng"])
        random.setstate(ck["python_rng"])
        log(f"resumed from {ckpt_path} at step {step}, {tokens_seen} tokens, {elapsed / 60:.1f} min")

    def progress():
        ps = []
        if args.minutes is not None:
            ps.append(elapsed / (args.minutes * 60))
        if args.tokens is not None:
            ps.append(tokens_seen / args.tokens)
        if args.max_steps is not None and not ps:
            ps.append(step / args.max_steps)
        return max(ps)

    def checkpoint():
        save_checkpoint(ckpt_path, model, opt, {
            "step": step, "tokens_seen": tokens_seen, "elapsed": elapsed, "history": history,
            "sampler": sampler.state(), "torch_rng": torch.get_rng_state(),
            "numpy_rng": np.random.get_state(), "python_rng": random.getstate(),
            "config": cfg.__dict__, "args": vars(args)})

    model.train()
    win = {"ce": 0.0, "correct": 0.0, "n": 0.0, "tokens": 0, "time": 0.0, "steps": 0}
    last_ckpt = last_eval = elapsed
    while progress() < 1.0 and (args.max_steps is None or step < args.max_steps):
        t_step = time.time()
        p = progress()
        cap = int(args.min_len + (args.max_len - args.min_len) * min(1.0, p / max(args.curriculum, 1e-9)))
        lr = lr_at(args, p)
        for g in opt.param_groups:
            g["lr"] = lr
        chosen = sampler.next_batch(cap)
        inp, tgt, weight, mask = collate(chosen, pad_id, args.copy_weight, device)
        loss, ce_sum, correct, n = forward_loss(model, inp, tgt, weight, mask, autocast)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        step += 1
        real = sum(L - 1 for _, L in chosen)
        tokens_seen += real
        dt = time.time() - t_step
        elapsed += dt
        win["ce"] += ce_sum
        win["correct"] += correct
        win["n"] += n
        win["tokens"] += real
        win["time"] += dt
        win["steps"] += 1
        last = progress() >= 1.0 or (args.max_steps is not None and step >= args.max_steps)
        if step % args.log_every == 0 or last:  # the last step always logs: the card reads it
            p = progress()
            rate = win["tokens"] / max(win["time"], 1e-9)
            eta = (elapsed / p - elapsed) if p > 0 else float("nan")
            row = {"step": step, "tokens": tokens_seen, "loss": win["ce"] / max(win["n"], 1),
                   "acc": win["correct"] / max(win["n"], 1), "tok_s": rate, "lr": lr, "cap": cap,
                   "batch": len(chosen), "elapsed_min": elapsed / 60}
            history.append(row)
            log(f"step {step} tokens {tokens_seen} loss {row['loss']:.4f} acc {row['acc']:.4f} "
                f"lr {lr:.2e} cap {cap} batch {len(chosen)}x{inp.shape[1]} {rate:.0f} tok/s "
                f"elapsed {elapsed / 60:.1f}m eta {eta / 60:.1f}m")
            win = {k: 0.0 if isinstance(v, float) else 0 for k, v in win.items()}
        if val_ex and elapsed - last_eval >= args.eval_minutes * 60:
            t_eval = time.time()
            vl, va = evaluate(model, val_ex, args, pad_id, device, autocast)
            history.append({"step": step, "tokens": tokens_seen, "val_loss": vl, "val_acc": va})
            log(f"validation at step {step}: loss {vl:.4f} acc {va:.4f} ({time.time() - t_eval:.0f}s)")
            elapsed += time.time() - t_eval
            last_eval = elapsed
        if elapsed - last_ckpt >= args.ckpt_minutes * 60:
            checkpoint()
            last_ckpt = elapsed

    checkpoint()
    result = {"step": step, "tokens_seen": tokens_seen, "minutes": elapsed / 60,
              "n_params": model.n_params(), "config": cfg.__dict__, "args": vars(args),
              "n_train_transcripts": len(train_ex), "n_train_tokens": n_tok,
              "final_train_loss": next((h["loss"] for h in reversed(history) if "loss" in h), None)}
    if val_ex:
        vl, va = evaluate(model, val_ex, args, pad_id, device, autocast)
        result.update(val_loss=vl, val_acc=va)
        log(f"final validation: loss {vl:.4f} acc {va:.4f} on {len(val_ex)} transcripts")
    torch.save({"model": model.state_dict(), "config": cfg.__dict__}, os.path.join(args.out, "model.pt"))
    with open(os.path.join(args.out, "result.json"), "w") as f:
        json.dump({**result, "history": history}, f, indent=1)
    log(f"done: {step} steps, {tokens_seen} tokens, {elapsed / 60:.1f} min; model in {args.out}/model.pt")


if __name__ == "__main__":
    main()
