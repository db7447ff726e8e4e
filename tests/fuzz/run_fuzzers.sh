#!/usr/bin/env bash
# Builds the libFuzzer targets (they are part of the sanitize preset's build:
# clang, ASan + UBSan, coverage-instrumented libraries) and runs each one
# briefly: a smoke run for CI, not a fuzzing campaign. Exits non-zero when a
# target fails to build or finds a crash (its reproducer is left in the work
# folder).
#
# usage: tests/fuzz/run_fuzzers.sh [SECONDS_PER_TARGET]   (from the repository root; default 15)
# env:   WORK_DIR (default a fresh temporary folder), JOBS (default 2),
#        FUZZERS (target names, default every fuzz/fuzz_*.cpp of inference/, tools/ and runtime/),
#        FUZZ_SEED (libFuzzer's -seed, default 1: the same mutations on every
#        run, so a smoke run that fails fails again here; "random" for a new
#        seed each run, for a campaign)
set -euo pipefail

seconds="${1:-15}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$root/build/sanitize"
work="${WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tachyon-fuzz.XXXXXX")}"
jobs="${JOBS:-2}"

(cd "$root" && cmake --preset sanitize > "$work/configure.log") || { cat "$work/configure.log"; exit 1; }

# One target per fuzz/fuzz_*.cpp of each library folder (FUZZERS="a b" picks some).
targets=()
if [ -n "${FUZZERS:-}" ]; then
    read -r -a targets <<< "$FUZZERS"
else
    for f in "$root"/inference/fuzz/fuzz_*.cpp "$root"/tools/fuzz/fuzz_*.cpp "$root"/runtime/fuzz/fuzz_*.cpp; do
        [ -e "$f" ] && targets+=("$(basename "$f" .cpp)")
    done
fi

# All targets in one build, so that both cores work on it; when that fails,
# each target is built again alone, one after another (two builds in one tree
# would race on the libraries they share), and one that fails is named with
# its errors.
failed=0
built=()
if cmake --build "$build" --target "${targets[@]}" -j "$jobs" -- -k > "$work/build.log" 2>&1; then
    built=("${targets[@]}")
else
    for t in "${targets[@]}"; do
        mkdir -p "$work/$t"
        if cmake --build "$build" --target "$t" -j "$jobs" > "$work/$t/build.log" 2>&1; then
            built+=("$t")
        else
            echo "$t: BUILD FAILED; see $work/$t/build.log"
            grep -m 5 -E "error" "$work/$t/build.log" || true
            failed=1
        fi
    done
fi

# Each built target runs in the background, JOBS at a time (libFuzzer itself
# uses one core); its result is printed when it ends, and a failure makes the
# exit status 1.
fuzz_one() {
    local t=$1
    mkdir -p "$work/$t"
    local exe corpus
    exe="$(find "$build" -type f -name "$t" -perm -u+x | head -n 1)"
    corpus="$work/$t/corpus"
    mkdir -p "$corpus"
    # The corpus lives in the work folder, never in the repository; a seed
    # corpus in tests/fuzz/corpus/<target>/ is read, never written.
    local seeds=() seed_arg=()
    [ -d "$root/tests/fuzz/corpus/$t" ] && seeds=("$root/tests/fuzz/corpus/$t")
    [ "${FUZZ_SEED:-1}" != random ] && seed_arg=(-seed="${FUZZ_SEED:-1}")
    if ! (cd "$work/$t" && "$exe" "${seed_arg[@]}" -max_total_time="$seconds" -print_final_stats=1 "$corpus" "${seeds[@]}" > log.txt 2>&1); then
        echo "$t: FAILED (crash or broken invariant); see $work/$t/log.txt and the crash-* file there"
        tail -n 40 "$work/$t/log.txt"
        return 1
    fi
    echo "== $t: ${seconds}s, $(grep -E "stat::number_of_executed_units" "$work/$t/log.txt" || echo "no stats")"
}
pids=()
for t in "${built[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 0.2; done
    fuzz_one "$t" &
    pids+=("$!")
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
exit "$failed"
