// The general-purpose built-in tools (read_file, shell, http_get) and their
// settings. Each is registered only when its settings are given: a tool with
// no roots or allowlist would be either useless or unsafe.
#pragma once

#include <optional>

#include "base/result.h"
#include "tools/host/http_get.h"
#include "tools/host/read_file.h"
#include "tools/host/shell.h"
#include "tools/core/tool.h"

namespace tachyon::tools {

struct builtin_settings {
    std::optional<read_file_settings> read_file;
    std::optional<shell_settings> shell;
    std::optional<http_get_settings> http_get;
};

// Registers the tools whose settings are present, in the order read_file,
// shell, http_get. Fails (registering nothing) on bad settings or a name
// already in `tools`; the message names the tool and the setting.
status add_builtin_tools(registry& tools, const builtin_settings& settings);

}  // namespace tachyon::tools
