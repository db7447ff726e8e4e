#!/usr/bin/env bash
# CTest: the official `openai` npm package against `tachyon serve`.
# usage: run_openai_node.sh TACHYON_BIN MODEL.gguf
# Exit 77 (skipped) only when node/npm are missing or npm cannot reach its registry.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$1
model=$2
source "$here/npm_packages.sh"
npm_packages "$here" "the openai package" openai/package.json
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
