// The stdio transport of tachyon's MCP server (`tachyon mcp serve`): one
// JSON-RPC message per line on the input, one per line on the output,
// nothing else on the output (logs go to stderr). The session ends at the
// end of the input or when `stop_fd` becomes readable (the SIGTERM handler
// writes to it); the calls still running are then cancelled and awaited,
// so the process exits with nothing left behind.
#pragma once

#include <cstddef>

#include "base/result.h"
#include "runtime/mcp/mcp_server.h"

namespace tachyon {

struct mcp_stdio_options {
    int in_fd = 0;
    int out_fd = 1;
    int stop_fd = -1;                       // readable: stop; -1: none
    size_t max_line_bytes = 16u << 20;      // a longer line is answered with a parse error and skipped
};

// Serves until the end of input or a stop. Errors: the server cannot be
// made (two tools of one name), the input or output fails (a closed output
// ends the session too, as an error naming it).
status serve_mcp_stdio(mcp_server_options server, const mcp_stdio_options& io);

}  // namespace tachyon
