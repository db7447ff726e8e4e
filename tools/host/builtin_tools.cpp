#include "tools/host/builtin_tools.h"

namespace tachyon::tools {

status add_builtin_tools(registry& tools, const builtin_settings& settings) {
    // Make all first, then register: bad settings leave the registry as it was.
    std::vector<std::shared_ptr<tool>> made;
    if (settings.read_file) {
        auto t = make_read_file_tool(*settings.read_file);
        if (!t.ok()) return t.err();
        made.push_back(std::move(*t));
    }
    if (settings.shell) {
        auto t = make_shell_tool(*settings.shell);
        if (!t.ok()) return t.err();
        made.push_back(std::move(*t));
    }
    if (settings.http_get) {
        auto t = make_http_get_tool(*settings.http_get);
        if (!t.ok()) return t.err();
        made.push_back(std::move(*t));
    }
    for (const auto& t : made)
        if (tools.find(t->name()) != nullptr)
            return make_error(errc::invalid_argument, "tool '" + std::string(t->name()) + "' is already registered");
    for (auto& t : made) TACHYON_TRY(tools.add(std::move(t)));
    return {};
}

}  // namespace tachyon::tools
