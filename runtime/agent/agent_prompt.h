// What an agent run starts from: the agent's tools (custom tools from code,
// else built-ins made from the agent's settings) and the rendered system
// prompt and task, in the chat format of the model (DESIGN.md: one renderer
// for serving and training data).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/agent/agent_def.h"
#include "runtime/agent/tool_catalog.h"
#include "runtime/chat/model_host.h"
#include "tools/core/tool.h"

namespace tachyon {

// The system prompt and user turn the agent starts from (rendered, before
// tokenization); exposed so tests can check it against the training data.
result<std::string> render_initial_prompt(const agent_definition& agent, const model_host& host,
                                          const std::map<std::string, std::string>& inputs, const std::string& task,
                                          const std::vector<std::shared_ptr<tools::tool>>& custom_tools = {},
                                          mcp_sessions* mcp = nullptr);

// The agent's tools, in its order: custom tools by name first, else built-ins
// made from the agent's settings with {placeholders} filled from `inputs`;
// then the tools of its MCP servers, from `mcp` (a pool made for the call
// when null). Two tools of one name are an error naming both origins.
result<std::vector<std::shared_ptr<tools::tool>>> make_agent_tools(const agent_definition& agent,
                                                                   const std::map<std::string, std::string>& inputs,
                                                                   const std::vector<std::shared_ptr<tools::tool>>& custom_tools = {},
                                                                   mcp_sessions* mcp = nullptr);

// The tool list as the model reads it: one {"type": "function", ...} JSON
// object per tool, in the agent's order.
std::vector<std::string> tool_definitions(const std::vector<std::shared_ptr<tools::tool>>& tools);

}  // namespace tachyon
