"""Training throughput of a model size on this machine (random tokens).

  GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=4294967296 \\
  /usr/bin/python3 bench.py --preset small --batch 8 --seq 1500 --steps 3

The machine is shared: wall-clock figures depend on the load, so the CPU
time of the process is reported too (with --threads 1 it is the uncontended
single-core time; two threads reach at most twice that).

One step = forward, backward and AdamW update of a [batch, seq] batch, as
train.py runs it; the first step is a warm-up and not counted.
"""

import argparse
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from model import PRESETS, Config, Llama  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="small", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1500)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cpu-bf16", action="store_true", help="bf16 autocast on the CPU (oneDNN)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = Config(vocab_size=2048, **PRESETS[args.preset])
    model = Llama(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq + 1))
    times, cpu = [], []
    for i in range(args.steps + 1):
        t = time.time()
        c = time.process_time()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.cpu_bf16):
            logits = model(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), ids[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.time() - t)
        cpu.append(time.process_time() - c)
    dt = sum(times[1:]) / args.steps
    dc = sum(cpu[1:]) / args.steps
    print(f"{args.preset}: {model.n_params() / 1e6:.2f}M params, batch {args.batch}x{args.seq}, "
          f"{'bf16' if args.cpu_bf16 else 'f32'}, {args.threads} threads: {dt:.2f} s/step wall, "
          f"{args.batch * args.seq / dt:.0f} tokens/s wall, {args.batch * args.seq / dc:.0f} tokens per CPU-second "
          f"(load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
