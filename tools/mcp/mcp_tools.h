// The tools of an MCP session as tachyon tools: each keeps the name,
// description and (normalised) inputSchema the server lists, is read-only
// when the server annotates it readOnlyHint (or the agent file says so), and
// calls the server from invoke(). A result with isError is an error result
// the model reads (the tool's own text); a failed request (JSON-RPC error,
// timeout, a dead server) is an error naming the server.
#pragma once

#include <memory>
#include <vector>

#include "base/result.h"
#include "tools/core/tool.h"
#include "tools/mcp/mcp_client.h"

namespace tachyon::tools::mcp {

// One tool per tool the session offers (its config's subset, in that order).
result<std::vector<std::shared_ptr<tool>>> make_mcp_tools(const std::shared_ptr<client>& session);

}  // namespace tachyon::tools::mcp
