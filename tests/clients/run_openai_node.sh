#!/usr/bin/env bash
# CTest: the official `openai` npm package against `tachyon serve`.
# usage: run_openai_node.sh TACHYON_BIN MODEL.gguf
# Exit 77 (skipped) only when node/npm are missing or npm cannot reach its registry.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$1
model=$2
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "SKIP: node and npm are not installed (./tachyon.sh test installs them)"
    exit 77
fi
if [ ! -f "$here/node_modules/openai/package.json" ]; then
    if ! (cd "$here" && timeout 300 npm ci --no-audit --no-fund >&2); then
        if ! timeout 30 npm ping >/dev/null 2>&1; then
            echo "SKIP: npm cannot reach its registry to install the openai package"
            exit 77
        fi
        echo "FAIL: npm ci failed in $here" >&2
        exit 1
    fi
fi
source "$here/serve.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/tachyon-node-XXXXXX")
key="node-test-key-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$key" >"$work/key"
start_server "$bin" --model "$model" --journal-dir "$work/runs" --api-key-file "$work/key"
rc=0
TACHYON_URL="$BASE/v1" TACHYON_KEY="$key" TACHYON_MODEL="$(basename "$model" .gguf)" node "$here/openai_client.mjs" || rc=$?
stop_server
rm -rf "$work"
exit $rc
