// The built-in tools an agent file may name, and how each is made from its
// settings (after {placeholder} substitution).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tools/core/tool.h"
#include "tools/mcp/mcp_client.h"

namespace tachyon {

// Names agent files may use, in a stable order.
const std::vector<std::string>& builtin_tool_names();

struct tool_request {
    std::string name;
    std::map<std::string, std::string> settings;  // e.g. {"root": "/incidents/42"} for the log tools
};

// The argument schema (JSON Schema text) a built-in tool declares, without
// making the tool; empty for a name that is not built in.
std::string_view builtin_tool_schema(std::string_view name);

// Checks a built-in tool's name and the keys of its settings without making
// it (values may still hold {placeholders}). Errors name the tool and the key.
status check_builtin_settings(const std::string& name, const std::map<std::string, std::string>& settings);

struct agent_definition;

// The MCP sessions of agents (agent_def.h, mcp_servers): a server is started
// on first use and shared by every run of the agent after it; all close
// (stdin, SIGTERM, SIGKILL of the process group) when the pool is destroyed.
class mcp_sessions {
public:
    // The tools of the agent's MCP servers, in order: each server's tools
    // (its `tools` subset, in that order), with their normalised inputSchema.
    // Errors name the server and the tool.
    result<std::vector<std::shared_ptr<tools::tool>>> tools_of(const agent_definition& agent);

private:
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<tools::mcp::client>> clients_;  // by agent file, server name and command
};

// Makes the requested tools, in order. Log tools over the same root share
// one loaded store. Errors name the tool and the missing or bad setting.
result<std::vector<std::shared_ptr<tools::tool>>> make_builtin_tools(const std::vector<tool_request>& requests);

}  // namespace tachyon
