#include "runtime/tool_catalog.h"

#include <filesystem>

#include "tools/builtin.h"

namespace tachyon {
namespace {

const std::vector<std::string> log_tool_names = {"list_services", "error_summary", "search_logs", "get_trace",
                                                  "recent_changes", "read_lines", "verify_root_cause"};

bool is_log_tool(const std::string& name) {
    for (const auto& n : log_tool_names)
        if (n == name) return true;
    return false;
}

}  // namespace

const std::vector<std::string>& builtin_tool_names() { return log_tool_names; }

result<std::vector<std::shared_ptr<tools::tool>>> make_builtin_tools(const std::vector<tool_request>& requests) {
    std::map<std::string, tools::registry> by_root;  // one store per incident root
    std::vector<std::shared_ptr<tools::tool>> out;
    for (const auto& [name, settings] : requests) {
        if (!is_log_tool(name)) return make_error(errc::not_found, "unknown tool '" + name + "'");
        for (const auto& [key, value] : settings) {
            if (key != "root") return make_error(errc::invalid_argument, "tool " + name + ": unknown setting '" + key + "' (expected: root)");
        }
        auto root = settings.find("root");
        if (root == settings.end()) return make_error(errc::invalid_argument, "tool " + name + ": setting 'root' (the incident directory) is required");
        if (!std::filesystem::is_directory(root->second)) {
            return make_error(errc::not_found, "tool " + name + ": root '" + root->second + "' is not a directory");
        }
        auto it = by_root.find(root->second);
        if (it == by_root.end()) {
            it = by_root.emplace(root->second, tools::registry{}).first;
            TACHYON_TRY(tools::add_log_tools(it->second, root->second));
        }
        out.push_back(it->second.find(name));
    }
    return out;
}

}  // namespace tachyon
