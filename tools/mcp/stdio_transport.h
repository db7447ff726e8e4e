// MCP over stdio: the server is a child process that reads messages from its
// stdin and writes them to its stdout, one JSON object per line; what it
// writes to stderr goes to the log, a line at a time.
//
// The child leads its own process group, so that close() ends whatever it
// started too: stdin is closed first (a well-behaved server exits), then the
// group gets SIGTERM, then SIGKILL. Each stage waits a grace period.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tools/mcp/transport.h"

namespace tachyon::tools::mcp {

struct stdio_options {
    std::string server;                       // names the server in messages and log lines
    std::vector<std::string> command;         // argv; argv[0] found on PATH unless it holds a '/'
    std::map<std::string, std::string> env;   // added to a minimal environment (PATH, HOME, USER, LANG, TERM)
    std::string cwd;                          // empty: the current directory
    std::chrono::milliseconds grace{2000};    // each shutdown stage waits this long for the exit
    std::chrono::milliseconds write_timeout{10000};  // a server that stops reading its stdin
    size_t max_line_bytes = size_t{16} << 20; // a longer line is garbage: the channel closes
};

std::unique_ptr<transport> make_stdio_transport(stdio_options options);

}  // namespace tachyon::tools::mcp
