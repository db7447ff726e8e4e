// tachyon C++ SDK: MCP servers an agent uses. Their tools join the agent's
// tools (after agent_spec::tools), with the server's names, descriptions and
// input schemas; agents/README.md ("MCP servers") says how a server is
// started, stopped, restarted and called.
//
//   tachyon::sdk::mcp_server files;
//   files.name = "files";
//   files.command = {"npx", "-y", "@modelcontextprotocol/server-filesystem", "/data"};
//   files.tools = {"read_text_file"};
//   spec.mcp_servers = {files};
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tachyon::sdk {

struct mcp_server {
    std::string name;                             // required, unique within the agent
    // Exactly one of: a process spoken to over stdio ...
    std::vector<std::string> command;             // argv
    std::map<std::string, std::string> env;       // added to a minimal environment
    std::string cwd;                              // empty: the current directory
    // ... or a Streamable HTTP endpoint.
    std::string url;                              // http://host[:port]/path
    std::map<std::string, std::string> headers;   // sent with every request
    std::string bearer_env;                       // environment variable holding a bearer token
    std::vector<std::string> tools;               // the tools to use, in order; empty: all
    std::vector<std::string> read_only;           // may run speculatively, beside those annotated readOnlyHint
    std::map<std::string, std::vector<std::string>> grounded;  // tool -> arguments whose values are grounded
    std::optional<int64_t> timeout_ms;            // per request; progress extends it (default 30000)
};

}  // namespace tachyon::sdk
