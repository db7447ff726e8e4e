// read_file {path, offset?, max_bytes?}: the bytes of a file under one of the
// configured roots. The path is resolved as realpath() does (every symlink
// and `..` followed), and the result must lie inside a root: `..` escapes,
// absolute paths elsewhere and symlinks pointing out are refused, as are
// directories, devices, FIFOs and sockets. Output is capped; a cut file says
// where to continue.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <vector>

#include "base/result.h"
#include "tools/tool.h"

namespace tachyon::tools {

struct read_file_settings {
    std::vector<std::filesystem::path> roots;  // relative paths in calls resolve against roots[0]
    size_t max_bytes = 64 * 1024;              // cap per call, whatever the call asks
};

// Fails when there is no root or a root is not an existing directory.
result<std::shared_ptr<tool>> make_read_file_tool(const read_file_settings& settings);

}  // namespace tachyon::tools
