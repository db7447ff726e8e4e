#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each one briefly: a smoke
# run for CI, not a fuzzing campaign. Exits non-zero when a target fails to
# build or finds a crash (its reproducer is left in the work folder).
#
# usage: tests/fuzz/run_fuzzers.sh [SECONDS_PER_TARGET]   (from the repository root; default 15)
# env:   BUILD_DIR (default build/fuzz), WORK_DIR (default a fresh temporary folder), JOBS (default 2),
#        FUZZERS (target names, default every fuzz/fuzz_*.cpp of inference/ and runtime/)
set -euo pipefail

seconds="${1:-15}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build/fuzz}"
work="${WORK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/tachyon-fuzz.XXXXXX")}"
jobs="${JOBS:-2}"

CXX="${CXX:-clang++}" cmake -S "$root" -B "$build" -DTACHYON_FUZZ=ON -DTACHYON_BUILD_TESTS=OFF \
    -DTACHYON_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$work/configure.log" ||
    { cat "$work/configure.log"; exit 1; }

# One target per fuzz/fuzz_*.cpp of each library folder (FUZZERS="a b" picks some).
targets=()
if [ -n "${FUZZERS:-}" ]; then
    read -r -a targets <<< "$FUZZERS"
else
    for f in "$root"/inference/fuzz/fuzz_*.cpp "$root"/runtime/fuzz/fuzz_*.cpp; do
        [ -e "$f" ] && targets+=("$(basename "$f" .cpp)")
    done
fi

status=0
for t in "${targets[@]}"; do
    mkdir -p "$work/$t"
    if ! cmake --build "$build" --target "$t" -j "$jobs" > "$work/$t/build.log" 2>&1; then
        echo "$t: BUILD FAILED; see $work/$t/build.log"
        grep -m 5 -E "error" "$work/$t/build.log" || true
        status=1
        continue
    fi
    exe="$(find "$build" -type f -name "$t" -perm -u+x | head -n 1)"
    corpus="$work/$t/corpus"
    mkdir -p "$corpus"
    echo "== $t: ${seconds}s"
    # The corpus lives in the work folder, never in the repository.
    if ! (cd "$work/$t" && "$exe" -max_total_time="$seconds" -print_final_stats=1 "$corpus" > log.txt 2>&1); then
        echo "$t: FAILED (crash or broken invariant); see $work/$t/log.txt and the crash-* file there"
        tail -n 40 "$work/$t/log.txt"
        status=1
    else
        grep -E "stat::number_of_executed_units" "$work/$t/log.txt" || true
    fi
done
exit "$status"
