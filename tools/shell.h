// shell {program, args: [...], cwd?, timeout_ms?}: runs one allowlisted
// program with an argument vector (never through a shell, so `;`, `$()` and
// globs reach it literally), a minimal environment, stdin from /dev/null and
// stdout+stderr captured together up to a cap. The child leads its own
// process group; a timeout or a cancelled call kills the whole group.
//
// Network: the child is put into a fresh, empty network namespace when the
// kernel lets it (unshare(CLONE_NEWNET) as root, else inside a new user
// namespace). Where neither is allowed (containers often forbid both),
// isolation is best-effort and the allowlist is the protection; the result
// says which one applied ("network: isolated" / "network: not isolated").
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "tools/tool.h"

namespace tachyon::tools {

struct shell_settings {
    // Names ("grep") found on `search_path` when the tool is made, or absolute
    // paths. Calls name a program by its name ("grep") or that absolute path.
    std::vector<std::string> allowed_programs;
    std::string search_path = "/usr/local/bin:/usr/bin:/bin";  // also the child's PATH
    std::filesystem::path default_cwd = ".";
    // When non-empty, a call's cwd must lie inside one of these.
    std::vector<std::filesystem::path> cwd_roots;
    int64_t default_timeout_ms = 10'000;
    int64_t max_timeout_ms = 60'000;
    size_t max_output_bytes = 64 * 1024;  // stdout+stderr kept; the rest is counted and dropped
    bool isolate_network = true;
};

// Fails when a program cannot be found or is not executable, or the
// default cwd is not a directory.
result<std::shared_ptr<tool>> make_shell_tool(const shell_settings& settings);

}  // namespace tachyon::tools
