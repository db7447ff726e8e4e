#!/usr/bin/env bash
# CTest: the MCP project's own tools against tachyon's MCP server.
#  - @modelcontextprotocol/inspector-cli: tools/list and tools/call over
#    stdio (`tachyon mcp serve`) and Streamable HTTP (/mcp);
#  - @modelcontextprotocol/conformance: the server scenarios that apply to a
#    server offering tools only (the others need the suite's own fixture
#    tools, or resources, prompts, logging and completions, which tachyon
#    does not offer).
# usage: run_inspector_conformance.sh TACHYON_BIN MODEL.gguf INCIDENT_WORLD_BIN
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
model=$2
world=$3
source "$here/install.sh"
source "$here/../serve.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/tachyon-mcp-conf-XXXXXX")
"$world" generate --seed 1000003 --out "$work/incident" >/dev/null
incident=$(cd "$work/incident" && pwd -P)
service=$(ls "$incident/logs" | sed -n 1p | sed 's/\.log$//')
# (run from this folder: the CLI finds its package files from the working directory)
inspector() { (cd "$here" && node node_modules/.bin/mcp-inspector-cli "$@" 2>/dev/null); }

listed=$(inspector --cli "$bin" mcp serve --tools read_lines --root "$incident" --method tools/list)
grep -q '"name": "read_lines"' <<<"$listed" || fail "inspector-cli (stdio) tools/list: $listed"
called=$(inspector --cli "$bin" mcp serve --tools read_lines --root "$incident" --method tools/call --tool-name read_lines --tool-arg "id=$service:1")
grep -q '"isError": false' <<<"$called" && grep -q "> $service:1 " <<<"$called" || fail "inspector-cli (stdio) tools/call: $called"
echo "inspector-cli stdio: tools/list, tools/call ok"

start_server "$bin" --model "$model" --journal-dir "$work/runs" --data-root "$incident" --mcp --mcp-tools read_lines
listed=$(inspector --cli "$BASE/mcp" --transport http --method tools/list)
grep -q '"name": "read_lines"' <<<"$listed" || fail "inspector-cli (http) tools/list: $listed"
called=$(inspector --cli "$BASE/mcp" --transport http --method tools/call --tool-name read_lines --tool-arg "id=$service:1")
grep -q '"isError": false' <<<"$called" || fail "inspector-cli (http) tools/call: $called"
echo "inspector-cli http: tools/list, tools/call ok"

for scenario in server-initialize ping tools-list server-sse-multiple-streams; do
    out=$("$here/node_modules/.bin/conformance" server --url "$BASE/mcp" --scenario "$scenario" 2>&1) ||
        fail "conformance $scenario: $out"
    grep -q "0 failed" <<<"$out" || fail "conformance $scenario: $out"
    echo "conformance $scenario: passed"
done
stop_server
rm -rf "$work"
echo ok
