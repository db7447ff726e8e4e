// What an MCP server of tachyon offers, made from the command line of
// `tachyon mcp serve` and `tachyon serve --mcp`: built-in tools, made as
// `tachyon tool` makes them, and agent files.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/agent/agent_def.h"
#include "tools/core/tool.h"

namespace tachyon {

// "a, b,c" -> {"a", "b", "c"} (blanks around names dropped, empty ones too).
std::vector<std::string> split_tool_names(const std::string& list);

// The built-in tools `names`, in order. `root` (empty: none) is where their
// files are: read_file's roots, the log tools' root, shell's cwd and
// cwd_roots. `settings` (tool name -> JSON object, as an agent file gives
// them) adds to or replaces those. Errors name the option, the tool and
// the setting; `option` names the option that listed the tools.
result<std::vector<std::shared_ptr<tools::tool>>> make_offered_tools(const std::vector<std::string>& names, const std::string& root,
                                                                     const std::map<std::string, std::string>& settings,
                                                                     const std::string& option);

// The agents of `dir` (every *.json but *.schema.json, by name; empty: none)
// and of `files`, in that order. Errors name the file.
result<std::vector<std::shared_ptr<const agent_definition>>> load_offered_agents(const std::string& dir,
                                                                                 const std::vector<std::string>& files);

}  // namespace tachyon
