#!/usr/bin/env bash
# CTest: a load test with wrk on loopback: chat completions and /healthz
# under 64 connections for a few seconds each. Passes with 0 socket errors,
# 0 non-2xx answers, a server still healthy afterwards and a clean exit.
# Prints requests/s and latency percentiles.
# usage: run_wrk.sh TACHYON_BIN MODEL.gguf [SECONDS]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$1
model=$2
seconds=${3:-3}
command -v wrk >/dev/null || { echo "SKIP: wrk is not installed (./tachyon.sh test installs it)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl is not installed"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$here/serve.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/tachyon-wrk-XXXXXX")
start_server "$bin" --model "$model" --journal-dir "$work/runs"
export TACHYON_MODEL
TACHYON_MODEL=$(basename "$model" .gguf)

check() {
    local what=$1 out=$2
    cat "$out"
    local summary
    summary=$(grep '^summary: ' "$out") || fail "$what: no summary from wrk"
    grep -q 'Socket errors' "$out" && fail "$what: socket errors"
    grep -q 'Non-2xx' "$out" && fail "$what: non-2xx answers"
    grep -q ' errors=0 non2xx=0' <<<"$summary" || fail "$what: errors in $summary"
    grep -q ' requests=0 ' <<<"$summary" && fail "$what: no request completed"
    echo "$what: ${summary#summary: }"
}

wrk -t2 -c64 -d"${seconds}s" --timeout 10s --latency -s "$here/wrk_chat.lua" "$BASE/v1/chat/completions" >"$work/chat.txt" 2>&1 || fail "wrk failed: $(cat "$work/chat.txt")"
check "POST /v1/chat/completions (64 connections, max_tokens 8)" "$work/chat.txt"
wrk -t2 -c64 -d"${seconds}s" --timeout 10s --latency -s "$here/wrk_get.lua" "$BASE/healthz" >"$work/healthz.txt" 2>&1 || fail "wrk failed: $(cat "$work/healthz.txt")"
check "GET /healthz (64 connections)" "$work/healthz.txt"

[ "$(curl -sS -o /dev/null -w '%{http_code}' "$BASE/healthz")" = 200 ] || fail "server unhealthy after the load"
curl -sS "$BASE/metrics" | grep -E '^tachyon_(chat_completions_total|completion_tokens_total|chat_requests_in_flight|chat_queue_depth) '
stop_server
rm -rf "$work"
echo "ok"
