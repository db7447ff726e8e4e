// The built-in tools of an incident root, registered in the order the model
// sees them.
#pragma once

#include <string>

#include "base/result.h"
#include "tools/core/tool.h"

namespace tachyon::tools {

// Registers list_services, error_summary, search_logs, get_trace,
// recent_changes, read_lines and verify_root_cause over `root` (the logs load
// on the first call, once, shared by the seven tools).
status add_log_tools(registry& tools, const std::string& root);

}  // namespace tachyon::tools
