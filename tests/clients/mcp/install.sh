# Sourced by the MCP peer tests: installs the pinned npm packages of this
# folder (package-lock.json) on first use. Exits 77 (skipped) when node/npm
# are missing or npm cannot reach its registry.
mcp_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$mcp_here/../npm_packages.sh"
npm_packages "$mcp_here" "the MCP packages" @modelcontextprotocol/sdk/package.json @modelcontextprotocol/server-everything/package.json \
    @modelcontextprotocol/inspector-cli/package.json @modelcontextprotocol/conformance/package.json
