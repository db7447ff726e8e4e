#!/usr/bin/env bash
# tachyon's two set-up commands (see README.md, "Quick start"):
#   ./tachyon.sh demo   install what is missing, build (release), run the incident-analysis demo
#   ./tachyon.sh test   install what is missing, build (release), run the whole test suite
# and, for CI and contributors:
#   ./tachyon.sh sanitize  build the sanitize preset (clang, ASan + UBSan, the libFuzzer targets) and run the whole suite on it
#   ./tachyon.sh fuzz [S]  build the libFuzzer targets (sanitize preset) and run each for S seconds (default 20)
# Both are safe to re-run: packages already present are not reinstalled and
# the build is incremental.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$root"

# lld: CMake links with it where installed, in a fraction of GNU ld's time (over a hundred test executables).
build_packages=(g++ cmake make lld libboost1.81-dev libboost-system1.81-dev libsimdjson-dev libtbb-dev doctest-dev libpq-dev)
# The client tests (tests/clients/) drive `tachyon serve` with curl, wrk and the openai npm package
# (tests/clients/mcp/: the MCP SDK and server-everything npm packages; tests/clients/otel/: the OpenTelemetry
# JS exporter; each test runs npm ci on first use);
# the runs-in-PostgreSQL tests (tests/runtime/db/) need a PostgreSQL server.
test_packages=(curl wrk postgresql-15)
# The sanitize preset builds with clang (its sanitizers compile template-heavy code in half g++'s
# time) and its libFuzzer runtime.
clang_packages=(clang libclang-rt-14-dev)

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

# The local PostgreSQL cluster for tests/runtime/db/: started, with a role
# for the current user, and passed to the tests as TACHYON_TEST_PG. A
# TACHYON_TEST_PG already set names a server to use instead.
start_test_database() {
    [ -n "${TACHYON_TEST_PG:-}" ] && return 0
    command -v pg_ctlcluster >/dev/null || { log "no PostgreSQL here: the database tests will say they are skipped"; return 0; }
    local sudo=()
    [ "$(id -u)" -ne 0 ] && sudo=(sudo)
    if ! pg_lsclusters -h 2>/dev/null | grep -q '^15 *main .*online'; then
        pg_lsclusters -h 2>/dev/null | grep -q '^15 *main' || "${sudo[@]}" pg_createcluster 15 main >&2
        "${sudo[@]}" pg_ctlcluster 15 main start >&2 || { log "PostgreSQL did not start: the database tests will say they are skipped"; return 0; }
    fi
    local me
    me=$(id -un)
    if [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null; then
        local as_postgres=(su postgres -c)
        [ "$(id -u)" -ne 0 ] && as_postgres=(sudo -u postgres sh -c)
        "${as_postgres[@]}" "psql -qtAc \"SELECT 1 FROM pg_roles WHERE rolname = '$me'\" | grep -q 1 || psql -qc 'CREATE ROLE \"$me\" LOGIN CREATEDB'" >&2 || true
    fi
    export TACHYON_TEST_PG="host=/var/run/postgresql dbname=postgres"
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
        start_test_database
        log "running the test suite"
        ctest --preset release
        ;;
    sanitize)
        ensure_packages "${build_packages[@]}" "${test_packages[@]}" "${clang_packages[@]}"
        ensure_node
        start_test_database
        log "configuring and building (sanitize preset: clang, ASan + UBSan)"
        cmake --preset sanitize >/dev/null
        cmake --build --preset sanitize -j"$(nproc)"
        # The sanitize test preset leaves out the longest end-to-end sweeps
        # (50 kills of a run, the fast path on every kernel level, the
        # 2048-token references, the database acceptance script, 1,000 runs
        # for KV leaks, the 50k vocabulary, the kernel tests again on the
        # other vendor's routes): the release suite runs them, and under ASan
        # they would take half the phase's time.
        log "running the test suite under ASan + UBSan"
        ctest --preset sanitize
        ;;
    fuzz)
        ensure_packages "${build_packages[@]}" "${clang_packages[@]}"
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
