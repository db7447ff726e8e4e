#!/usr/bin/env bash
# CTest: the official MCP TypeScript SDK client (@modelcontextprotocol/sdk)
# against tachyon's MCP server, over stdio (`tachyon mcp serve`) and over
# Streamable HTTP (`tachyon serve --mcp`, /mcp behind an API key): tools
# listed and called, the incident-analyst agent run to a verified answer on
# the shipped model with progress and structuredContent, a cancelled call.
# usage: run_sdk_client.sh TACHYON_BIN MODEL.gguf INCIDENT_WORLD_BIN AGENTS_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$1
model=$2
world=$3
agents=$4
source "$here/install.sh"
source "$here/../serve.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/tachyon-mcp-sdk-XXXXXX")
"$world" generate --seed 1000003 --out "$work/incident" >/dev/null
rm -f "$work/incident/answer.json"
incident=$(cd "$work/incident" && pwd -P)
export INCIDENT=$incident
export TASK=$(tr -d '"\\\n' <"$incident/task.txt")

# stdio: the SDK starts `tachyon mcp serve` and ends it by closing stdin.
MCP_MODE=stdio TACHYON_BIN="$bin" \
TACHYON_ARGS=$(printf '["mcp","serve","--agents","%s","--tools","read_lines","--root","%s","--journal-dir","%s"]' \
    "$agents" "$incident" "$work/runs-stdio") \
    node "$here/sdk_client.mjs"

# Streamable HTTP: /mcp on `tachyon serve`, with an API key.
key="mcp-test-key-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$key" >"$work/key"
start_server "$bin" --model "$model" --agents "$agents" --journal-dir "$work/runs-http" --data-root "$incident" \
    --mcp --mcp-tools read_lines --api-key-file "$work/key"
rc=0
MCP_MODE=http MCP_URL="$BASE/mcp" TACHYON_KEY="$key" node "$here/sdk_client.mjs" || rc=$?
stop_server
rm -rf "$work"
exit $rc
