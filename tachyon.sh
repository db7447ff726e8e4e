#!/usr/bin/env bash
# tachyon's two set-up commands (see README.md, "Quick start"):
#   ./tachyon.sh demo   install what is missing, build (release), run the incident-analysis demo
#   ./tachyon.sh test   install what is missing, build (release), run the whole test suite
# and, for CI and contributors:
#   ./tachyon.sh sanitize  build the sanitize preset (ASan + UBSan) and run the whole suite on it
#   ./tachyon.sh fuzz [S]  build the libFuzzer targets with clang and run each for S seconds (default 20)
# Both are safe to re-run: packages already present are not reinstalled and
# the build is incremental.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$root"

build_packages=(g++ cmake make libboost1.81-dev libboost-system1.81-dev libsimdjson-dev libtbb-dev doctest-dev)
# The client tests (tests/clients/) drive `tachyon serve` with curl, wrk and the openai npm package.
test_packages=(curl wrk)
# The fuzz targets need clang with its libFuzzer runtime.
fuzz_packages=(clang libclang-rt-14-dev)

log() { printf '\033[1m== %s\033[0m\n' "$*" >&2; }

is_installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

ensure_packages() {
    local missing=()
    for p in "$@"; do is_installed "$p" || missing+=("$p"); done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    # Boost 1.74's dev packages conflict with 1.81's; the project needs 1.81.
    if is_installed libboost1.74-dev; then
        log "removing libboost1.74-dev (conflicts with libboost1.81-dev)"
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get remove -y libboost1.74-dev >&2
    fi
    log "installing: ${missing[*]}"
    "${sudo[@]}" apt-get update >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
}

# node and npm: Debian's nodejs and npm packages, unless a node with npm is already there (NodeSource ships both in one).
ensure_node() {
    command -v node >/dev/null && command -v npm >/dev/null && return 0
    ensure_packages nodejs npm
}

build() {
    ensure_packages "${build_packages[@]}"
    log "configuring and building (release preset)"
    cmake --preset release >/dev/null
    cmake --build --preset release -j"$(nproc)"
}

# The main job: a fresh incident from the incident world, analysed by the
# shipped model through the agent runtime, ending with a verified root cause.
demo() {
    local bin="$root/build/release/runtime/tachyon"
    local world="$root/build/release/examples/incident/incident-world"
    local model="$root/examples/incident/model/incident-analyst.gguf"
    [ -f "$model" ] || { echo "missing $model (see examples/incident/train/README.md)" >&2; exit 1; }
    local seed=${SEED:-$((2000000 + RANDOM * 32768 + RANDOM))}
    local work
    work=$(mktemp -d "${TMPDIR:-/tmp}/tachyon-demo-XXXXXX")
    "$world" generate --seed "$seed" --out "$work/incident" >/dev/null
    # The generator's answer is for checking only: it leaves the directory the tools read.
    mv "$work/incident/answer.json" "$work/answer.json"
    log "incident seed $seed in $work/incident"
    printf 'task: %s\n\n' "$(cat "$work/incident/task.txt")"
    local rc=0
    "$bin" run "$root/agents/incident-analyst.json" --task "$(cat "$work/incident/task.txt")" \
        --input "incident_dir=$work/incident" --journal-dir "$root/runs" || rc=$?
    printf '\nthe generator'"'"'s hidden answer: %s\n' "$(cat "$work/answer.json")"
    log "timeline: $bin runs show <run-id> --dir $root/runs [--svg timeline.svg]"
    return $rc
}

case "${1:-}" in
    demo)
        build
        demo
        ;;
    test)
        build
        ensure_packages "${test_packages[@]}"
        ensure_node
        log "running the test suite"
        ctest --preset release
        ;;
    sanitize)
        ensure_packages "${build_packages[@]}" "${test_packages[@]}"
        ensure_node
        log "configuring and building (sanitize preset: ASan + UBSan)"
        cmake --preset sanitize >/dev/null
        cmake --build --preset sanitize -j"$(nproc)"
        log "running the test suite under ASan + UBSan"
        ctest --preset sanitize
        ;;
    fuzz)
        ensure_packages "${build_packages[@]}" "${fuzz_packages[@]}"
        log "building and running the fuzz targets"
        tests/fuzz/run_fuzzers.sh "${2:-20}"
        ;;
    *)
        echo "usage: $0 demo|test|sanitize|fuzz [SECONDS]" >&2
        echo "  demo  build and run the incident-analysis demo on the shipped model" >&2
        echo "  test  build and run the whole test suite" >&2
        echo "  sanitize  build the sanitize preset and run the whole suite on it" >&2
        echo "  fuzz  build the libFuzzer targets and run each briefly" >&2
        exit 2
        ;;
esac
