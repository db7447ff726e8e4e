// The built-in tools of an incident root, registered in the order the model
// sees them.
#pragma once

#include <map>
#include <string>

#include "base/result.h"
#include "tools/core/tool.h"
#include "tools/logs/log_store.h"

namespace tachyon::tools {

// Registers list_services, error_summary, search_logs, get_trace,
// recent_changes, read_lines and verify_root_cause over `root`. They share
// the process's one store of that directory (log_store_cache::shared()),
// loaded on the first call and kept while the directory is unchanged.
status add_log_tools(registry& tools, const std::string& root, const log_store_options& options = {});

// The hints of the tools' settings: "year" (for stamps without one, e.g.
// "2017") and "tz" (the zone of stamps without one: "UTC", "+02:00",
// "-0700"). Other keys are left to the caller; a bad value is an error that
// names the setting.
result<log_store_options> log_store_options_from(const std::map<std::string, std::string>& settings);

}  // namespace tachyon::tools
