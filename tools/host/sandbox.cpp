#include "tools/host/sandbox.h"

#include <elf.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace tachyon::tools {

namespace {

namespace fs = std::filesystem;

// Landlock access rights by the ABI that introduced them. The system header
// may be older than the kernel, so the later ones are spelled out here (their
// values are the kernel's ABI and never change).
constexpr uint64_t fs_execute = 1ull << 0;
constexpr uint64_t fs_write_file = 1ull << 1;
constexpr uint64_t fs_read_file = 1ull << 2;
constexpr uint64_t fs_read_dir = 1ull << 3;
constexpr uint64_t fs_remove_dir = 1ull << 4;
constexpr uint64_t fs_remove_file = 1ull << 5;
constexpr uint64_t fs_make_char = 1ull << 6;
constexpr uint64_t fs_make_dir = 1ull << 7;
constexpr uint64_t fs_make_reg = 1ull << 8;
constexpr uint64_t fs_make_sock = 1ull << 9;
constexpr uint64_t fs_make_fifo = 1ull << 10;
constexpr uint64_t fs_make_block = 1ull << 11;
constexpr uint64_t fs_make_sym = 1ull << 12;
constexpr uint64_t fs_refer = 1ull << 13;      // ABI 2
constexpr uint64_t fs_truncate = 1ull << 14;   // ABI 3
constexpr uint64_t fs_ioctl_dev = 1ull << 15;  // ABI 5
constexpr uint64_t net_bind_tcp = 1ull << 0;     // ABI 4
constexpr uint64_t net_connect_tcp = 1ull << 1;  // ABI 4
constexpr uint64_t scope_abstract_unix_socket = 1ull << 0;  // ABI 6
constexpr uint64_t scope_signal = 1ull << 1;                // ABI 6

// Rights a rule on a file (not a directory) may carry.
constexpr uint64_t fs_file_rights = fs_execute | fs_write_file | fs_read_file | fs_truncate | fs_ioctl_dev;
constexpr uint64_t fs_read = fs_read_file | fs_read_dir;
constexpr uint64_t fs_scratch = fs_read | fs_write_file | fs_remove_dir | fs_remove_file | fs_make_dir | fs_make_reg |
                                fs_make_sym | fs_make_fifo | fs_refer | fs_truncate;

// The kernel's struct landlock_ruleset_attr as of ABI 6; older kernels are
// given the prefix they know (ruleset_attr_size).
struct ruleset_attr {
    uint64_t handled_access_fs = 0;
    uint64_t handled_access_net = 0;  // ABI 4
    uint64_t scoped = 0;              // ABI 6
};

uint64_t handled_fs(int abi) {
    uint64_t r = fs_execute | fs_write_file | fs_read_file | fs_read_dir | fs_remove_dir | fs_remove_file | fs_make_char |
                 fs_make_dir | fs_make_reg | fs_make_sock | fs_make_fifo | fs_make_block | fs_make_sym;
    if (abi >= 2) r |= fs_refer;
    if (abi >= 3) r |= fs_truncate;
    if (abi >= 5) r |= fs_ioctl_dev;
    return r;
}

size_t ruleset_attr_size(int abi) {
    if (abi < 4) return offsetof(ruleset_attr, handled_access_net);
    if (abi < 6) return offsetof(ruleset_attr, scoped);
    return sizeof(ruleset_attr);
}

error sandbox_error(errc code, std::string message) { return make_error(code, "sandbox: " + std::move(message)); }

// ---- seccomp ----------------------------------------------------------------

#if defined(__x86_64__)
constexpr uint32_t native_arch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t native_arch = AUDIT_ARCH_AARCH64;
#else
constexpr uint32_t native_arch = 0;  // no filter: prepare() fails
#endif

sock_filter stmt(uint16_t code, uint32_t k) { return sock_filter{code, 0, 0, k}; }
sock_filter jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) { return sock_filter{code, jt, jf, k}; }

constexpr uint32_t ret_errno(int e) { return SECCOMP_RET_ERRNO | (static_cast<uint32_t>(e) & SECCOMP_RET_DATA); }

// The filter: foreign architecture -> kill; then each refused call gets an
// errno, everything else is allowed (Landlock does the file system).
std::vector<sock_filter> build_filter(int abi) {
    std::vector<sock_filter> f;
    f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, native_arch, 1, 0));
    f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
    f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
    // x32 system calls share the arch value; their numbers carry this bit and
    // would slip past every check below.
    f.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
    f.push_back(stmt(BPF_RET | BPF_K, ret_errno(EPERM)));
#endif
    auto refuse = [&f](long nr, int e) {
        f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
        f.push_back(stmt(BPF_RET | BPF_K, ret_errno(e)));
    };
    // The network: no sockets at all (see sandbox.h for AF_UNIX), and no
    // io_uring, which can open and connect sockets without those calls.
    refuse(__NR_socket, EACCES);
    refuse(__NR_io_uring_setup, EPERM);
    refuse(__NR_io_uring_enter, EPERM);
    refuse(__NR_io_uring_register, EPERM);
    // Namespaces: a new user namespace hands out capabilities inside it;
    // nothing a command-line tool needs. clone3 passes its flags in memory
    // the filter cannot read: ENOSYS makes libc fall back to clone, checked below.
    refuse(__NR_unshare, EPERM);
    refuse(__NR_setns, EPERM);
    refuse(__NR_clone3, ENOSYS);
    // Kernel attack surface and administration (matters when tachyon runs as
    // root in a container): modules, kexec, BPF, perf, keyrings, handles
    // that open files by inode number, userfaultfd.
    for (long nr : {static_cast<long>(__NR_bpf), static_cast<long>(__NR_perf_event_open),
                    static_cast<long>(__NR_init_module), static_cast<long>(__NR_finit_module),
                    static_cast<long>(__NR_delete_module), static_cast<long>(__NR_kexec_load),
                    static_cast<long>(__NR_kexec_file_load), static_cast<long>(__NR_reboot),
                    static_cast<long>(__NR_swapon), static_cast<long>(__NR_swapoff), static_cast<long>(__NR_keyctl),
                    static_cast<long>(__NR_add_key), static_cast<long>(__NR_request_key),
                    static_cast<long>(__NR_open_by_handle_at), static_cast<long>(__NR_userfaultfd),
                    static_cast<long>(__NR_mount), static_cast<long>(__NR_umount2), static_cast<long>(__NR_pivot_root)})
        refuse(nr, EPERM);
    // Owner, mode and extended attributes are not Landlock rights: without
    // this, a command running as root could chmod or chown any file it owns.
    for (long nr : {
#ifdef __NR_chmod
             static_cast<long>(__NR_chmod), static_cast<long>(__NR_chown), static_cast<long>(__NR_lchown),
#endif
             static_cast<long>(__NR_fchmod), static_cast<long>(__NR_fchmodat), static_cast<long>(__NR_fchown),
             static_cast<long>(__NR_fchownat), static_cast<long>(__NR_setxattr), static_cast<long>(__NR_lsetxattr),
             static_cast<long>(__NR_fsetxattr), static_cast<long>(__NR_removexattr),
             static_cast<long>(__NR_lremovexattr), static_cast<long>(__NR_fremovexattr)})
        refuse(nr, EPERM);
#ifdef __NR_fchmodat2
    refuse(__NR_fchmodat2, EPERM);
#endif
    // Before ABI 3 Landlock does not handle truncation: truncate(2) by path
    // could shorten any writable file. ftruncate needs an fd opened for
    // writing, which Landlock already limits to scratch.
    if (abi < 3) refuse(__NR_truncate, EPERM);
    // socketpair: AF_UNIX only.
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(__NR_socketpair), 0, 4));
    f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1));
    f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    f.push_back(stmt(BPF_RET | BPF_K, ret_errno(EACCES)));
    // clone: threads and processes, no new namespaces (flags are argument 0
    // on both architectures; the namespace bits lie in its low word).
    constexpr uint32_t new_namespaces = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                                        CLONE_NEWPID | CLONE_NEWNET;
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(__NR_clone), 0, 4));
    f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
    f.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, new_namespaces, 0, 1));
    f.push_back(stmt(BPF_RET | BPF_K, ret_errno(EPERM)));
    f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    return f;
}

// ---- executables ------------------------------------------------------------

bool read_at(int fd, void* buf, size_t n, off_t at) { return ::pread(fd, buf, n, at) == static_cast<ssize_t>(n); }

// PT_INTERP of an ELF file of this process's class; empty for a static
// executable or anything else.
template <class ehdr_type, class phdr_type>
std::string elf_interpreter(int fd) {
    ehdr_type eh{};
    if (!read_at(fd, &eh, sizeof eh, 0) || eh.e_phentsize != sizeof(phdr_type) || eh.e_phnum > 512) return {};
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        phdr_type ph{};
        if (!read_at(fd, &ph, sizeof ph, static_cast<off_t>(eh.e_phoff + i * sizeof ph))) return {};
        if (ph.p_type != PT_INTERP || ph.p_filesz < 2 || ph.p_filesz > PATH_MAX) continue;
        std::string s(ph.p_filesz, '\0');
        if (!read_at(fd, s.data(), s.size(), static_cast<off_t>(ph.p_offset))) return {};
        s.resize(std::strlen(s.c_str()));
        return s;
    }
    return {};
}

// The file the kernel loads to run `exe` (PT_INTERP or a #! path); empty if none.
std::string interpreter_of(const fs::path& exe) {
    const int fd = ::open(exe.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    std::string out;
    unsigned char ident[EI_NIDENT] = {};
    if (read_at(fd, ident, 2, 0) && ident[0] == '#' && ident[1] == '!') {
        char line[256] = {};
        const ssize_t n = ::pread(fd, line, sizeof line - 1, 2);
        size_t i = 0;
        while (n > 0 && i < static_cast<size_t>(n) && (line[i] == ' ' || line[i] == '\t')) ++i;
        while (n > 0 && i < static_cast<size_t>(n) && line[i] != ' ' && line[i] != '\t' && line[i] != '\n' &&
               line[i] != '\0')
            out += line[i++];
    } else if (read_at(fd, ident, EI_NIDENT, 0) && std::memcmp(ident, ELFMAG, SELFMAG) == 0) {
        if (ident[EI_CLASS] == ELFCLASS64) out = elf_interpreter<Elf64_Ehdr, Elf64_Phdr>(fd);
        if (ident[EI_CLASS] == ELFCLASS32) out = elf_interpreter<Elf32_Ehdr, Elf32_Phdr>(fd);
    }
    ::close(fd);
    return out;
}

}  // namespace

int landlock_abi() {
    const long v = ::syscall(__NR_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v < 0 ? 0 : static_cast<int>(v);
}

std::vector<fs::path> system_read_paths() {
    return {"/usr",           "/lib",           "/lib64",    "/lib32",     "/libx32",      "/bin",
            "/sbin",          "/etc/ld.so.cache", "/etc/localtime", "/dev/null", "/dev/zero", "/dev/random",
            "/dev/urandom"};
}

std::vector<fs::path> exec_dependencies(const fs::path& exe) {
    std::vector<fs::path> out;
    fs::path current = exe;
    // exe -> #! interpreter -> its ld.so: two steps at most (the kernel
    // allows nested #! scripts, no one uses them for command-line tools).
    for (int depth = 0; depth < 3; ++depth) {
        const std::string next = interpreter_of(current);
        std::error_code ec;
        if (next.empty() || next.front() != '/' || !fs::exists(next, ec)) break;
        out.emplace_back(next);
        current = next;
    }
    return out;
}

result<fs::path> make_scratch_dir() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string templ = (base / "tachyon-shell-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr)
        return sandbox_error(errc::io_error, "cannot create a scratch directory in '" + base.string() + "': " + std::strerror(errno));
    return fs::path(templ);
}

result<sandbox> sandbox::prepare(const sandbox_policy& policy, int abi) {
    const int kernel_abi = landlock_abi();
    if (kernel_abi < 1) return sandbox_error(errc::unsupported, "this kernel has no Landlock (needs Linux 5.13 or later, enabled)");
    if (abi < 1 || abi > kernel_abi)
        return sandbox_error(errc::invalid_argument, "Landlock ABI " + std::to_string(abi) + " asked for; the kernel has 1 to " +
                                                std::to_string(kernel_abi));
    if (native_arch == 0) return sandbox_error(errc::unsupported, "no seccomp filter for this CPU architecture");

    sandbox s;
    s.abi_ = abi;
    ruleset_attr attr;
    attr.handled_access_fs = handled_fs(abi);
    if (abi >= 4) attr.handled_access_net = net_bind_tcp | net_connect_tcp;  // no rule grants them: all denied
    if (abi >= 6) attr.scoped = scope_abstract_unix_socket | scope_signal;
    const long fd = ::syscall(__NR_landlock_create_ruleset, &attr, ruleset_attr_size(abi), 0u);
    if (fd < 0) return sandbox_error(errc::io_error, std::string("landlock_create_ruleset: ") + std::strerror(errno));
    s.ruleset_fd_ = static_cast<int>(fd);  // close-on-exec, as every ruleset fd is

    // One rule: `access` beneath `p` (for a file, its file rights only).
    // A path missing on this system (/lib32) is no rule, not an error.
    auto add = [&s, &attr](const fs::path& p, uint64_t access, bool required) -> status {
        const int pfd = ::open(p.c_str(), O_PATH | O_CLOEXEC);
        if (pfd < 0) {
            if (!required && errno == ENOENT) return {};
            return sandbox_error(errc::not_found, "cannot open '" + p.string() + "': " + std::strerror(errno));
        }
        struct stat st {};
        const bool is_dir = ::fstat(pfd, &st) == 0 && S_ISDIR(st.st_mode);
        landlock_path_beneath_attr rule{};
        rule.allowed_access = access & attr.handled_access_fs & (is_dir ? ~0ull : fs_file_rights);
        rule.parent_fd = pfd;
        const long r = ::syscall(__NR_landlock_add_rule, s.ruleset_fd_, LANDLOCK_RULE_PATH_BENEATH, &rule, 0u);
        const int err = errno;
        ::close(pfd);
        if (r != 0) return sandbox_error(errc::io_error, "landlock_add_rule '" + p.string() + "': " + std::strerror(err));
        return {};
    };
    for (const auto& p : policy.read_dirs) TACHYON_TRY(add(p, fs_read, false));
    for (const auto& p : policy.exec_files) TACHYON_TRY(add(p, fs_execute | fs_read_file, true));
    // Programs write to /dev/null as a matter of course.
    TACHYON_TRY(add("/dev/null", fs_read_file | fs_write_file, false));
    if (!policy.scratch.empty()) TACHYON_TRY(add(policy.scratch, fs_scratch, true));

    s.filter_ = build_filter(abi);
    s.program_.len = static_cast<unsigned short>(s.filter_.size());
    s.program_.filter = s.filter_.data();
    return s;
}

sandbox::sandbox(sandbox&& other) noexcept { *this = std::move(other); }

sandbox& sandbox::operator=(sandbox&& other) noexcept {
    if (this == &other) return *this;
    if (ruleset_fd_ >= 0) ::close(ruleset_fd_);
    abi_ = other.abi_;
    ruleset_fd_ = std::exchange(other.ruleset_fd_, -1);
    filter_ = std::move(other.filter_);
    program_.len = static_cast<unsigned short>(filter_.size());
    program_.filter = filter_.data();
    other.program_ = {};
    return *this;
}

sandbox::~sandbox() {
    if (ruleset_fd_ >= 0) ::close(ruleset_fd_);
}

int sandbox::enter() const noexcept {
    // no_new_privs: required for both steps without CAP_SYS_ADMIN, and it
    // keeps a setuid program from running with more rights than its caller.
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
    if (::syscall(__NR_landlock_restrict_self, ruleset_fd_, 0u) != 0) return errno;
    // Last: the filter must not stand in the way of the steps above.
    if (::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0u, &program_) != 0) return errno;
    return 0;
}

}  // namespace tachyon::tools
