#include "runtime/mcp/mcp_offer.h"

#include <algorithm>
#include <filesystem>

#include "runtime/agent/tool_catalog.h"

namespace tachyon {
namespace {

// The settings `root` gives a built-in tool: its files are the root's.
std::map<std::string, std::string> offered_root_settings(const std::string& tool, const std::string& root) {
    if (root.empty() || tool == "http_get") return {};
    if (tool == "read_file") return {{"roots", root}};
    if (tool == "shell") return {{"cwd", root}, {"cwd_roots", root}};
    return {{"root", root}};  // the log tools: the incident directory
}

}  // namespace

std::vector<std::string> split_tool_names(const std::string& list) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        std::string name = list.substr(start, comma - start);
        name.erase(0, name.find_first_not_of(' '));
        name.erase(name.find_last_not_of(' ') + 1);
        if (!name.empty()) out.push_back(std::move(name));
        start = comma + 1;
    }
    return out;
}

result<std::vector<std::shared_ptr<tools::tool>>> make_offered_tools(const std::vector<std::string>& names, const std::string& root,
                                                                     const std::map<std::string, std::string>& settings,
                                                                     const std::string& option) {
    std::vector<tool_request> requests;
    for (const auto& name : names) {
        tool_request r{name, offered_root_settings(name, root)};
        if (auto it = settings.find(name); it != settings.end()) {
            auto s = parse_tool_settings(it->second);
            if (!s)
                return make_error(errc::invalid_argument, "--settings " + name + "=...: expected a JSON object of tool settings such as "
                                                          "'{\"allowed_programs\": [\"ls\"]}', got '" + it->second + "'");
            for (auto& [k, v] : *s) r.settings[k] = v;
        }
        if (auto st = check_builtin_settings(name, r.settings); !st) return make_error(st.err().code, option + ": " + st.err().message);
        requests.push_back(std::move(r));
    }
    for (const auto& [name, value] : settings)
        if (std::find(names.begin(), names.end(), name) == names.end())
            return make_error(errc::invalid_argument, "--settings " + name + "=...: '" + name + "' is not among " + option);
    auto made = make_builtin_tools(requests);
    if (!made) return make_error(made.err().code, option + ": " + made.err().message);
    return made;
}

result<std::vector<std::shared_ptr<const agent_definition>>> load_offered_agents(const std::string& dir,
                                                                                 const std::vector<std::string>& files) {
    std::vector<std::string> paths;
    if (!dir.empty()) {
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) return make_error(errc::invalid_argument, "--agents " + dir + ": not a directory");
        for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
            const std::string name = e.path().filename().string();
            if (e.path().extension() == ".json" && !name.ends_with(".schema.json")) paths.push_back(e.path().string());
        }
        std::sort(paths.begin(), paths.end());
        if (paths.empty()) return make_error(errc::invalid_argument, "--agents " + dir + ": no agent files (*.json) in it");
    }
    paths.insert(paths.end(), files.begin(), files.end());
    std::vector<std::shared_ptr<const agent_definition>> out;
    for (const auto& p : paths) {
        auto a = load_agent_file(p, builtin_tool_names());
        if (!a) return a.err();
        out.push_back(std::make_shared<const agent_definition>(std::move(a).value()));
    }
    return out;
}

}  // namespace tachyon
