#include "tools/logs/builtin.h"

#include <memory>

#include "tools/logs/log_store.h"
#include "tools/logs/log_tools.h"

namespace tachyon::tools {

status add_log_tools(registry& tools, const std::string& root) {
    auto store = std::make_shared<log_store>(root);
    TACHYON_TRY(tools.add(std::make_shared<list_services_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<error_summary_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<search_logs_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<get_trace_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<recent_changes_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<read_lines_tool>(store)));
    TACHYON_TRY(tools.add(std::make_shared<verify_root_cause_tool>(store)));
    return {};
}

}  // namespace tachyon::tools
