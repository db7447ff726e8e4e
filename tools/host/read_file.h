// read_file {path, offset?, max_bytes?}: the bytes of a file under one of the
// configured roots. The path is opened beneath the root's directory
// descriptor in one race-free step (openat2 with RESOLVE_BENEATH, or a walk
// of O_NOFOLLOW opens where the kernel lacks it): `..` may move about inside
// the root and relative symlinks are followed while they stay inside, but
// nothing resolves above the root, whatever renames or symlink swaps happen
// meanwhile. Absolute symlinks, /proc magic links, `..` past the root and
// absolute paths elsewhere are refused, as are directories, devices, FIFOs
// and sockets. Output is capped; a cut file says where to continue.
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tools/core/tool.h"

namespace tachyon::tools {

// How a path is resolved beneath a root. Both ways accept and refuse the same
// paths; `automatic` is the one to use, the others exist so that tests can
// run each.
enum class resolve_mode {
    automatic,  // openat2 where the kernel has it (Linux >= 5.6), else walk
    openat2,    // only openat2: ENOSYS where the kernel lacks it
    walk,       // component by component, O_NOFOLLOW, symlinks expanded here
};

struct read_file_settings {
    std::vector<std::filesystem::path> roots;  // relative paths in calls resolve against roots[0]
    size_t max_bytes = 64 * 1024;              // cap per call, whatever the call asks
    resolve_mode resolve = resolve_mode::automatic;
};

// The argument schema every read_file tool declares (agent files check their
// grounding against it without making the tool).
std::string_view read_file_parameters_schema();
// Fails when there is no root or a root is not an existing directory.
result<std::shared_ptr<tool>> make_read_file_tool(const read_file_settings& settings);

// Opens `relative` for reading (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
// beneath the directory `root_fd`, as RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
// define it. Returns the new descriptor (the caller closes it) or -errno:
// EXDEV when the path would leave the root (`..` past it, an absolute path or
// symlink), ELOOP for too many symlinks or a magic link, ENOSYS for
// resolve_mode::openat2 on a kernel without it, else what open(2) says.
int open_beneath(int root_fd, std::string_view relative, resolve_mode mode);

}  // namespace tachyon::tools
