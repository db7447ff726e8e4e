#!/usr/bin/env bash
# CTest: tachyon's MCP client against @modelcontextprotocol/server-everything
# (the MCP project's reference server) over stdio.
# usage: run_everything.sh EVERYTHING_CLIENT_BIN
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/install.sh"
MCP_EVERYTHING="$(command -v node) $here/node_modules/@modelcontextprotocol/server-everything/dist/index.js" exec "$1"
