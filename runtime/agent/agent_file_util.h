// Pieces of the agent-file reader that the run-input checks share
// (agent_def.cpp, agent_inputs.cpp); not part of the agent API.
#pragma once

#include <sys/types.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tachyon::agent_file {

// "a directory", "a FIFO", ... for a file that is not a regular one.
std::string file_kind(mode_t mode);
// A tool root setting's directories: "root" is one path; "roots" a JSON
// array of paths or one path (as tool_catalog reads it).
std::vector<std::string> root_paths(const std::string& key, const std::string& value);
bool is_root_key(const std::string& key);
// Every directory of a root setting exists; `where` and `from` name the setting in the error.
status check_root_dirs(const std::string& where, const std::string& key, const std::string& value, const std::string& from);
// The {name} placeholders of text.
void collect_placeholders(std::string_view text, std::set<std::string>& out);

}  // namespace tachyon::agent_file
