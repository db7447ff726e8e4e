// shell {program, args: [...], cwd?, timeout_ms?}: runs one allowlisted
// program with an argument vector (never through a shell, so `;`, `$()` and
// globs reach it literally), a minimal environment, stdin from /dev/null and
// stdout+stderr captured together up to a cap. The child leads its own
// process group; a timeout or a cancelled call kills the whole group.
//
// Each call, in this order:
//  1. the program must be on the allowlist;
//  2. its arguments must pass check_exec_options (no option that runs
//     another program or writes files: find -exec, sed e, awk system(), ...)
//     and check_path_arguments (no path outside the roots), see
//     command_policy.h;
//  3. it runs in a kernel sandbox (sandbox.h, the real boundary): Landlock
//     lets it, and everything it starts, read only beneath the roots and the
//     system directories programs need (system_read_paths), execute only the
//     allowed programs (and their ld.so / #! interpreter), and write only in
//     a fresh scratch directory made for the call and removed after it
//     (also its HOME and TMPDIR); a seccomp filter refuses sockets, io_uring,
//     new namespaces and a few administrative calls.
// The roots are `cwd_roots`, or the default cwd when none are given.
//
// Where the kernel has no Landlock, calls are refused with the reason,
// unless `sandbox` is `none`: then only steps 1 and 2 apply, and the child
// gets a fresh network namespace when the kernel lets it (the result says
// "network: isolated" or "network: not isolated").
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "tools/core/tool.h"

namespace tachyon::tools {

enum class shell_sandbox {
    landlock,  // Landlock + seccomp; refuse to run where the kernel has no Landlock
    none,      // allowlist and argument checks only: set explicitly, never a fallback
};

struct shell_settings {
    // Names ("grep") found on `search_path` when the tool is made, or absolute
    // paths. Calls name a program by its name ("grep") or that absolute path.
    std::vector<std::string> allowed_programs;
    std::string search_path = "/usr/local/bin:/usr/bin:/bin";  // also the child's PATH
    std::filesystem::path default_cwd = ".";
    // A call's cwd, and every file it reads, must lie inside one of these;
    // when empty, inside default_cwd.
    std::vector<std::filesystem::path> cwd_roots;
    int64_t default_timeout_ms = 10'000;
    int64_t max_timeout_ms = 60'000;
    size_t max_output_bytes = 64 * 1024;  // stdout+stderr kept; the rest is counted and dropped
    bool isolate_network = true;  // sandbox none: try a network namespace
    shell_sandbox sandbox = shell_sandbox::landlock;
    // For tests: behave as on a kernel without Landlock. It can only make the
    // tool stricter (calls are refused unless sandbox is none).
    bool assume_no_landlock = false;
};

// "landlock" or "none"; an error naming the value otherwise.
result<shell_sandbox> parse_shell_sandbox(std::string_view text);

// The argument schema every shell tool declares (agent files check their
// grounding against it without making the tool).
std::string_view shell_parameters_schema();
// Fails when a program cannot be found or is not executable, or the
// default cwd is not a directory.
result<std::shared_ptr<tool>> make_shell_tool(const shell_settings& settings);

}  // namespace tachyon::tools
