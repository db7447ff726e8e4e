// The kernel sandbox a shell command runs in: a Landlock domain that limits
// which files it (and everything it executes) may read, write and execute,
// and a seccomp filter that keeps it off the network and away from a few
// administrative system calls. Both are inherited across fork and exec and
// cannot be lifted by the sandboxed process.
//
// What a sandboxed process may touch (Landlock, beneath each path):
//   read_dirs   read files, list directories (the call's roots, and the
//               system directories programs need to start: system_read_paths)
//   exec_files  execute (and read) exactly these files: the allowed programs,
//               their ELF interpreter (ld.so) and a script's #! interpreter.
//               Nothing else can be executed, so `find -exec`, `awk system()`
//               or a shell started by a program fail with EACCES.
//   scratch     read, write, create, rename and remove (a private temp dir)
// Everything else is denied; where the kernel's Landlock ABI is >= 4, TCP
// bind and connect are denied too, and from ABI 6 signals and abstract unix
// sockets cannot reach processes outside the sandbox.
//
// The seccomp filter (raw BPF, see sandbox.cpp for the list) refuses socket()
// with EACCES for every address family, AF_UNIX included: Landlock does not
// govern connect() to a named unix socket, so one would be a way to any daemon
// listening on the file system. socketpair(AF_UNIX) stays (it reaches only
// itself). A system call of a foreign architecture kills the process.
#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/result.h"

namespace tachyon::tools {

// The running kernel's Landlock ABI version; 0 when it has none (not built
// in, or disabled at boot).
int landlock_abi();

struct sandbox_policy {
    std::vector<std::filesystem::path> read_dirs;   // files or directories; read beneath
    std::vector<std::filesystem::path> exec_files;  // may be executed
    std::filesystem::path scratch;                  // read+write beneath; empty: none
};

// What dynamically linked programs read to start and run (shared libraries,
// ld.so.cache, locales, time zones, /dev/null): /usr, /lib*, /bin, /sbin,
// /etc/ld.so.cache, /etc/localtime, /dev/{null,zero,random,urandom}. Not /etc
// as a whole (passwd, shadow, keys), not /proc, not /home, /root, /tmp.
std::vector<std::filesystem::path> system_read_paths();

// The files the kernel must execute besides `exe` itself: the ELF
// interpreter (PT_INTERP) of a dynamic executable; for a `#!` script, its
// interpreter and that one's ELF interpreter. Paths that do not exist are
// left out.
std::vector<std::filesystem::path> exec_dependencies(const std::filesystem::path& exe);

// A fresh directory, mode 0700, under the system temp directory.
result<std::filesystem::path> make_scratch_dir();

// A sandbox prepared in the parent: the Landlock ruleset (an open file
// descriptor with its rules) and the seccomp program. The child then only
// makes system calls: enter() allocates nothing and is async-signal-safe,
// as it must be between fork() and execve() in a threaded process.
class sandbox {
public:
    // Fails when the kernel has no Landlock (abi < 1), when a path of the
    // policy cannot be opened, or when this architecture has no filter.
    // `abi` may be lowered below landlock_abi() to exercise older kernels'
    // rights; never raised past it.
    static result<sandbox> prepare(const sandbox_policy& policy, int abi = landlock_abi());

    sandbox(sandbox&& other) noexcept;
    sandbox& operator=(sandbox&& other) noexcept;
    sandbox(const sandbox&) = delete;
    sandbox& operator=(const sandbox&) = delete;
    ~sandbox();

    // In the child, just before execve: no_new_privs, the Landlock domain,
    // the seccomp filter. Returns 0, or the errno of the step that failed
    // (the child must then not exec).
    int enter() const noexcept;

    int abi() const { return abi_; }

private:
    sandbox() = default;

    int abi_ = 0;
    int ruleset_fd_ = -1;
    std::vector<sock_filter> filter_;
    sock_fprog program_{};  // points into filter_
};

}  // namespace tachyon::tools
