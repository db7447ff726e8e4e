#include "tools/core/tool.h"

namespace tachyon::tools {

status registry::add(std::shared_ptr<tool> t) {
    TACHYON_ASSERT(t != nullptr, "registry::add of a null tool");
    if (find(t->name()) != nullptr)
        return make_error(errc::invalid_argument, "tool '" + std::string(t->name()) + "' is registered twice");
    tools_.push_back(std::move(t));
    return {};
}

std::shared_ptr<tool> registry::find(std::string_view name) const {
    for (const auto& t : tools_)
        if (t->name() == name) return t;
    return nullptr;
}

}  // namespace tachyon::tools
