#!/usr/bin/env bash
# Reproduces the shipped model from scratch: builds incident-world and
# incident-export, generates the trajectories, trains the tokenizer and the
# model, exports examples/incident/model/incident-analyst.gguf, golden.json and
# CARD.md, and evaluates on held-out seeds.
#
# usage: examples/incident/train/train.sh            (from anywhere)
#   env: N=3000 (training trajectories, seeds 0..N-1)  MINUTES=70 (training
#        budget, wall clock) or TOKENS=... (token budget, deterministic)
#        PRESET=base  SEED=1  THREADS=2  BUILD=<repo>/build/release
#        RESUME=1 (continue an interrupted training run from its checkpoint)
#        INIT=<model.pt> (start from these weights: a continuation on new data;
#        also LR=... for its learning rate)
#        MODEL_DIR=<repo>/examples/incident/model (where the outputs go)
# Work files (data, checkpoints) go to examples/incident/train/work/ (git-ignored).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
N="${N:-3000}"
MINUTES="${MINUTES:-70}"
TOKENS="${TOKENS:-}"
PRESET="${PRESET:-base}"
SEED="${SEED:-1}"
THREADS="${THREADS:-2}"
BUILD="${BUILD:-$root/build/release}"
work="$here/work"
model_dir="${MODEL_DIR:-$root/examples/incident/model}"
py=/usr/bin/python3
# glibc keeps large freed blocks instead of returning them to the OS on
# every step (measured 1.35x faster training here).
export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=4294967296
mkdir -p "$work" "$model_dir"

echo "== build"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  (cd "$root" && cmake --preset release -DTACHYON_BUILD_TESTS=OFF)
fi
cmake --build "$BUILD" --target incident-world incident-export -j2
world="$BUILD/examples/incident/incident-world"
exporter="$BUILD/examples/incident/train/incident-export"

echo "== trajectories"
gen() {  # gen SEEDS OUT: generated once, kept for reruns
  if [ ! -s "$2" ]; then
    "$world" trajectories --seeds "$1" --out "$2.tmp" --threads "$THREADS"
    mv "$2.tmp" "$2"
  fi
}
gen "0-$((N - 1))" "$work/train-$N.jsonl"
gen "90000-90099" "$work/val.jsonl"
gen "1000000-1000099" "$work/heldout.jsonl"

echo "== tokenizer"
$py "$here/tokenizer.py" train --data "$work/train-$N.jsonl" --vocab 2048 --out "$work/tokenizer.json"
$py "$here/test_tokenizer.py" --tokenizer "$work/tokenizer.json"

echo "== train"
budget=(--minutes "$MINUTES")
[ -n "$TOKENS" ] && budget=(--tokens "$TOKENS")
resume=()
[ -n "${RESUME:-}" ] && resume=(--resume)
[ -n "${INIT:-}" ] && resume+=(--init "$INIT")
[ -n "${LR:-}" ] && resume+=(--lr "$LR")
$py "$here/train.py" --data "$work/train-$N.jsonl" --val-data "$work/val.jsonl" \
  --tokenizer "$work/tokenizer.json" --out "$work/run" --preset "$PRESET" "${budget[@]}" \
  --seed "$SEED" --threads "$THREADS" "${resume[@]}"

echo "== export"
$py "$here/export.py" --model "$work/run/model.pt" --tokenizer "$work/tokenizer.json" \
  --out "$work/export/incident-analyst" --golden "$model_dir/golden.json" --golden-data "$work/heldout.jsonl" --threads "$THREADS"
"$exporter" "$work/export/incident-analyst.json" "$model_dir/incident-analyst.gguf"

# The C++ tokenizer must give the training ids (qwen2 pre-tokenizer, merge ranks).
if [ -x "$BUILD/runtime/tachyon" ]; then
  $py "$here/test_tokenizer.py" --tokenizer "$work/tokenizer.json" --tachyon "$BUILD/runtime/tachyon" \
    --model "$model_dir/incident-analyst.gguf" --data "$work/heldout.jsonl"
else
  echo "skipped: tachyon tokenize comparison ($BUILD/runtime/tachyon not built)"
fi

echo "== evaluate (teacher-forced, held-out seeds)"
$py "$here/eval_tf.py" --model "$work/run/model.pt" --tokenizer "$work/tokenizer.json" \
  --data "$work/heldout.jsonl" --out "$work/run/eval_tf.json" --threads "$THREADS"

[ -n "$TOKENS" ] && MINUTES=
$py "$here/card.py" --run "$work/run" --gguf "$model_dir/incident-analyst.gguf" \
  --command "N=$N MINUTES=$MINUTES TOKENS=$TOKENS PRESET=$PRESET SEED=$SEED examples/incident/train/train.sh" \
  --out "$model_dir/CARD.md"
echo "done: $model_dir/incident-analyst.gguf"
