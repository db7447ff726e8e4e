#include "tools/host/shell.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include <simdjson.h>

#include "tools/host/command_policy.h"
#include "tools/host/sandbox.h"

namespace tachyon::tools {

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr std::string_view shell_schema =
    R"js({"type":"object","properties":{)js"
    R"js("program":{"type":"string","description":"name of an allowed program"},)js"
    R"js("args":{"type":"array","items":{"type":"string"},"description":"arguments, passed as they are (no shell)"},)js"
    R"js("cwd":{"type":"string","description":"working directory"},)js"
    R"js("timeout_ms":{"type":"integer","minimum":1}},)js"
    R"js("required":["program"],"additionalProperties":false})js";

// How often a running child's call checks its cancel flag.
constexpr int poll_interval_ms = 20;
constexpr size_t max_args = 256;

error shell_error(errc code, std::string message) { return make_error(code, "shell: " + std::move(message)); }

bool is_executable_file(const fs::path& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

result<fs::path> real_dir(const fs::path& p) {
    char buf[PATH_MAX];
    if (::realpath(p.c_str(), buf) == nullptr) return make_error(errc::not_found, std::strerror(errno));
    std::error_code ec;
    if (!fs::is_directory(buf, ec)) return make_error(errc::invalid_argument, "not a directory");
    return fs::path(buf);
}

// What the child tells the parent through its close-on-exec pipe: one byte
// for the network isolation it got, then, only if it could not exec, a byte
// for the step that failed and its errno.
constexpr char net_isolated = 'I';
constexpr char net_shared = 'S';
constexpr char step_setup = 'u';    // stdin, stdout, cwd
constexpr char step_sandbox = 's';  // sandbox::enter
constexpr char step_exec = 'x';

struct run_outcome {
    bool exited = false;
    int exit_code = 0;
    int signal = 0;
    bool timed_out = false;
    bool cancelled = false;
    bool network_isolated = false;
    int sandbox_abi = 0;  // Landlock ABI it ran under; 0: not sandboxed
    std::string output;
    size_t n_dropped = 0;  // output bytes past the cap
};

class shell_tool final : public tool {
public:
    shell_tool(shell_settings settings, std::map<std::string, fs::path, std::less<>> programs, fs::path cwd,
               std::vector<fs::path> roots, std::vector<fs::path> exec_files)
        : settings_(std::move(settings)), programs_(std::move(programs)), cwd_(std::move(cwd)),
          roots_(std::move(roots)), exec_files_(std::move(exec_files)) {
        for (const auto& [name, path] : programs_) allowed_text_ += (allowed_text_.empty() ? "" : ", ") + name;
    }

    std::string_view name() const override { return "shell"; }
    std::string_view description() const override {
        return "Run an allowed program with arguments (no shell). Returns its exit status and output.";
    }
    std::string_view parameters_schema() const override { return shell_schema; }
    tool_flags flags() const override { return {false, false}; }

    result<std::string> invoke(std::string_view arguments_json, const call_context& ctx) override {
        simdjson::dom::parser parser;
        simdjson::dom::object args;
        if (parser.parse(arguments_json.data(), arguments_json.size()).get_object().get(args) != simdjson::SUCCESS)
            return shell_error(errc::invalid_argument, "arguments must be a JSON object");
        std::string_view program;
        if (args["program"].get_string().get(program) != simdjson::SUCCESS)
            return shell_error(errc::invalid_argument, "'program' must be a string");
        const fs::path* exe = find_program(program);
        if (exe == nullptr)
            return shell_error(errc::invalid_argument,
                        "program '" + std::string(program) + "' is not allowed; allowed: " + allowed_text_);

        std::vector<std::string> argv{exe->filename().string()};
        if (auto v = args["args"]; v.error() != simdjson::NO_SUCH_FIELD) {
            simdjson::dom::array arr;
            if (v.get_array().get(arr) != simdjson::SUCCESS)
                return shell_error(errc::invalid_argument, "'args' must be an array of strings");
            for (auto item : arr) {
                std::string_view s;
                if (item.get_string().get(s) != simdjson::SUCCESS)
                    return shell_error(errc::invalid_argument, "'args' must be an array of strings");
                if (s.find('\0') != std::string_view::npos)
                    return shell_error(errc::invalid_argument, "an argument contains a NUL byte");
                if (argv.size() > max_args)
                    return shell_error(errc::out_of_range, "more than " + std::to_string(max_args) + " arguments");
                argv.emplace_back(s);
            }
        }
        fs::path cwd = cwd_;
        if (auto v = args["cwd"]; v.error() != simdjson::NO_SUCH_FIELD) {
            std::string_view s;
            if (v.get_string().get(s) != simdjson::SUCCESS || s.empty() || s.find('\0') != std::string_view::npos)
                return shell_error(errc::invalid_argument, "'cwd' must be a directory path");
            auto real = real_dir(fs::path(s).is_absolute() ? fs::path(s) : cwd_ / fs::path(s));
            if (!real.ok()) return shell_error(errc::invalid_argument, "cwd '" + std::string(s) + "': " + real.err().message);
            cwd = *real;
        }
        bool inside = false;
        for (const auto& root : roots_) inside = inside || is_inside(cwd, root);
        if (!inside) return shell_error(errc::invalid_argument, "cwd '" + cwd.string() + "' is outside the allowed directories");
        int64_t timeout_ms = settings_.default_timeout_ms;
        if (auto v = args["timeout_ms"]; v.error() != simdjson::NO_SUCH_FIELD) {
            if (v.get_int64().get(timeout_ms) != simdjson::SUCCESS || timeout_ms < 1)
                return shell_error(errc::invalid_argument, "'timeout_ms' must be an integer >= 1");
            timeout_ms = std::min(timeout_ms, settings_.max_timeout_ms);
        }

        // Defence in depth before the sandbox: options that run programs or
        // write files, paths outside the roots. Checked under the name called
        // and the name of the file it is (awk -> mawk) alike.
        const std::vector<std::string> call_args(argv.begin() + 1, argv.end());
        std::error_code ec;
        const fs::path real_exe = fs::canonical(*exe, ec);
        for (const std::string& name : {exe->filename().string(), ec ? std::string() : real_exe.filename().string()}) {
            if (name.empty()) continue;
            if (auto checked = check_exec_options(name, call_args); !checked.ok())
                return shell_error(checked.err().code, checked.err().message);
        }
        if (auto checked = check_path_arguments(call_args, cwd, roots_); !checked.ok())
            return shell_error(checked.err().code, checked.err().message);

        std::optional<sandbox> box;
        auto scratch = make_scratch_dir();
        if (!scratch.ok()) return shell_error(scratch.err().code, scratch.err().message);
        if (settings_.sandbox == shell_sandbox::landlock) {
            const int abi = settings_.assume_no_landlock ? 0 : landlock_abi();
            if (abi < 1) {
                remove_scratch(*scratch);
                return shell_error(errc::unsupported,
                            "this kernel has no Landlock (Linux 5.13 or later, enabled at boot), so '" +
                                std::string(program) +
                                "' cannot run sandboxed; set \"sandbox\": \"none\" in the tool's settings to run "
                                "commands with the allowlist and argument checks only");
            }
            sandbox_policy policy;
            policy.read_dirs = roots_;
            for (auto& p : system_read_paths()) policy.read_dirs.push_back(std::move(p));
            policy.exec_files = exec_files_;
            policy.scratch = *scratch;
            auto prepared = sandbox::prepare(policy, abi);
            if (!prepared.ok()) {
                remove_scratch(*scratch);
                return shell_error(prepared.err().code, prepared.err().message);
            }
            box.emplace(std::move(prepared).value());
        }
        auto ran = run(*exe, argv, cwd, *scratch, box ? &*box : nullptr, timeout_ms, ctx);
        remove_scratch(*scratch);
        if (!ran.ok()) return ran.err();
        // A killed program is an error (the model must not read its partial
        // output as an answer); the message still carries that output.
        if (ran->timed_out) return shell_error(errc::timeout, std::string("'").append(program) + "' " + describe(*ran, timeout_ms));
        if (ran->cancelled) return shell_error(errc::cancelled, std::string("'").append(program) + "' " + describe(*ran, timeout_ms));
        return describe(*ran, timeout_ms);
    }

private:
    const fs::path* find_program(std::string_view program) const {
        if (auto it = programs_.find(program); it != programs_.end()) return &it->second;
        for (const auto& [name, path] : programs_)
            if (path.string() == program) return &path;
        return nullptr;
    }

    // Everything in it goes, whatever the command left there (its process
    // group is dead by now).
    static void remove_scratch(const fs::path& scratch) {
        std::error_code ec;
        fs::remove_all(scratch, ec);
    }

    result<run_outcome> run(const fs::path& exe, const std::vector<std::string>& args, const fs::path& cwd,
                            const fs::path& scratch, const sandbox* box, int64_t timeout_ms,
                            const call_context& ctx) const {
        // Everything the child needs is built before fork(): between fork and
        // exec only async-signal-safe calls are allowed (other threads may hold
        // the allocator's locks).
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        const std::string env_path = "PATH=" + settings_.search_path;
        // HOME and TMPDIR: the only places a sandboxed command can write.
        const std::string env_home = "HOME=" + (box != nullptr ? scratch.string() : cwd.string());
        const std::string env_tmp = "TMPDIR=" + scratch.string();
        std::vector<char*> envp{const_cast<char*>(env_path.c_str()), const_cast<char*>(env_home.c_str()),
                                const_cast<char*>(env_tmp.c_str()),  const_cast<char*>("LANG=C.UTF-8"),
                                const_cast<char*>("LC_ALL=C.UTF-8"), nullptr};
        const std::string exe_path = exe.string();
        const std::string cwd_path = cwd.string();
        // The sandbox keeps sockets away already; the namespace is for sandbox none.
        const bool isolate = settings_.isolate_network && box == nullptr;

        int out_pipe[2];
        int status_pipe[2];
        if (::pipe2(out_pipe, O_CLOEXEC) != 0) return shell_error(errc::io_error, std::string("pipe: ") + std::strerror(errno));
        if (::pipe2(status_pipe, O_CLOEXEC) != 0) {
            ::close(out_pipe[0]);
            ::close(out_pipe[1]);
            return shell_error(errc::io_error, std::string("pipe: ") + std::strerror(errno));
        }
        const pid_t pid = ::fork();
        if (pid < 0) {
            for (int fd : {out_pipe[0], out_pipe[1], status_pipe[0], status_pipe[1]}) ::close(fd);
            return shell_error(errc::io_error, std::string("fork: ") + std::strerror(errno));
        }
        if (pid == 0)
            child(exe_path.c_str(), argv.data(), envp.data(), cwd_path.c_str(), out_pipe[1], status_pipe[1], isolate, box);

        // Also here: the group must exist before any kill(-pid), whichever of
        // parent and child runs first.
        ::setpgid(pid, pid);
        ::close(out_pipe[1]);
        ::close(status_pipe[1]);
        run_outcome o;
        o.sandbox_abi = box != nullptr ? box->abi() : 0;
        const auto deadline = clock_type::now() + std::chrono::milliseconds(timeout_ms);
        bool out_open = true;
        bool reaped = false;
        bool killed = false;
        int wait_status = 0;
        char buf[16 * 1024];
        while (out_open || !reaped) {
            if (!killed && (ctx.cancelled() || clock_type::now() >= deadline)) {
                (ctx.cancelled() ? o.cancelled : o.timed_out) = true;
                ::kill(-pid, SIGKILL);  // the group: children of the child too
                killed = true;
            }
            if (!reaped) {
                // Peek first (WNOWAIT): while the leader is not reaped its pid
                // cannot be reused, so killing the group is safe. Leftover
                // members (a backgrounded grandchild) would hold the pipe open.
                siginfo_t info{};
                if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                    info.si_pid == pid) {
                    ::kill(-pid, SIGKILL);
                    ::waitpid(pid, &wait_status, 0);
                    reaped = true;
                }
            }
            if (!out_open) {
                if (!reaped) ::poll(nullptr, 0, 5);
                continue;
            }
            pollfd p{out_pipe[0], POLLIN, 0};
            const int r = ::poll(&p, 1, poll_interval_ms);
            if (r < 0 && errno != EINTR) break;
            if (r <= 0) continue;
            const ssize_t n = ::read(out_pipe[0], buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                out_open = false;
                continue;
            }
            const size_t room = settings_.max_output_bytes - std::min(settings_.max_output_bytes, o.output.size());
            const size_t keep = std::min(room, static_cast<size_t>(n));
            o.output.append(buf, keep);
            o.n_dropped += static_cast<size_t>(n) - keep;
        }
        ::close(out_pipe[0]);
        if (!reaped) {
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &wait_status, 0);
        }

        // The child's report: isolation byte, then step and errno if it could not exec.
        char report[2 + sizeof(int)];
        size_t n_report = 0;
        for (;;) {
            const ssize_t n = ::read(status_pipe[0], report + n_report, sizeof report - n_report);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            n_report += static_cast<size_t>(n);
            if (n_report == sizeof report) break;
        }
        ::close(status_pipe[0]);
        o.network_isolated = box != nullptr || (n_report >= 1 && report[0] == net_isolated);
        if (n_report == sizeof report) {
            int err = 0;
            std::memcpy(&err, report + 2, sizeof err);
            const char* step = report[1] == step_sandbox ? "entering the sandbox: "
                               : report[1] == step_setup ? "setting up stdin, stdout or the cwd: "
                                                         : "";
            return shell_error(errc::io_error,
                        "cannot run '" + exe_path + "' in '" + cwd_path + "': " + step + std::strerror(err));
        }
        if (WIFEXITED(wait_status)) {
            o.exited = true;
            o.exit_code = WEXITSTATUS(wait_status);
        } else if (WIFSIGNALED(wait_status)) {
            o.signal = WTERMSIG(wait_status);
        }
        return o;
    }

    // In the forked child: async-signal-safe calls only, then exec.
    [[noreturn]] static void child(const char* exe, char* const* argv, char* const* envp, const char* cwd, int out_fd,
                                   int status_fd, bool isolate, const sandbox* box) {
        ::setpgid(0, 0);
        char net = net_shared;
        if (isolate) {
            if (::unshare(CLONE_NEWNET) == 0 || ::unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) net = net_isolated;
        }
        const int devnull = ::open("/dev/null", O_RDONLY);
        bool ok = devnull >= 0 && ::dup2(devnull, 0) == 0 && ::dup2(out_fd, 1) == 1 && ::dup2(out_fd, 2) == 2 &&
                  ::chdir(cwd) == 0;
        int err = ok ? 0 : errno;
        // Every other descriptor the process had stays behind: close-on-exec
        // for all from 3 up (the status pipe closes at exec, telling the parent
        // exec worked).
        if (::syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) != 0) {
            for (int fd = 3; fd < 4096; ++fd)  // kernels before 5.11 (kept open: the sandbox's fd is among them)
                ::fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
        ssize_t unused = ::write(status_fd, &net, 1);
        char report[1 + sizeof(int)] = {step_setup};
        // Last before exec: the sandbox covers everything the program does.
        if (ok && box != nullptr) {
            err = box->enter();
            if (err != 0) {
                ok = false;
                report[0] = step_sandbox;
            }
        }
        if (ok) {
            ::execve(exe, argv, envp);
            err = errno;
            report[0] = step_exec;
        }
        std::memcpy(report + 1, &err, sizeof err);
        unused = ::write(status_fd, report, sizeof report);
        (void)unused;
        ::_exit(127);
    }

    std::string describe(const run_outcome& o, int64_t timeout_ms) const {
        std::string out;
        if (o.timed_out) {
            out = "killed: timed out after " + std::to_string(timeout_ms) + " ms";
        } else if (o.cancelled) {
            out = "killed: call cancelled";
        } else if (o.exited) {
            out = "exit status " + std::to_string(o.exit_code);
        } else {
            out = "killed by signal " + std::to_string(o.signal);
        }
        if (o.sandbox_abi > 0) {
            out += " (sandbox: landlock ABI " + std::to_string(o.sandbox_abi) + ", network: isolated)\n";
        } else {
            out += o.network_isolated ? " (sandbox: none, network: isolated)\n" : " (sandbox: none, network: not isolated)\n";
        }
        out += o.output;
        if (!o.output.empty() && o.output.back() != '\n') out += '\n';
        if (o.n_dropped > 0)
            out += "[shell: output cut at " + std::to_string(settings_.max_output_bytes) + " bytes; " +
                   std::to_string(o.n_dropped) + " more bytes dropped]\n";
        return out;
    }

    shell_settings settings_;
    std::map<std::string, fs::path, std::less<>> programs_;  // name -> absolute path, resolved once
    fs::path cwd_;
    std::vector<fs::path> roots_;       // canonical: cwd_roots, or the default cwd
    std::vector<fs::path> exec_files_;  // the programs, their ld.so and #! interpreters
    std::string allowed_text_;
};

}  // namespace

std::string_view shell_parameters_schema() { return shell_schema; }

result<shell_sandbox> parse_shell_sandbox(std::string_view text) {
    if (text == "landlock") return shell_sandbox::landlock;
    if (text == "none") return shell_sandbox::none;
    return make_error(errc::invalid_argument,
                      "shell: sandbox '" + std::string(text) + "' is not known (expected \"landlock\" or \"none\")");
}

result<std::shared_ptr<tool>> make_shell_tool(const shell_settings& settings) {
    if (settings.allowed_programs.empty()) return make_error(errc::invalid_argument, "shell: no allowed programs given");
    if (settings.max_output_bytes == 0 || settings.default_timeout_ms < 1 || settings.max_timeout_ms < 1)
        return make_error(errc::invalid_argument, "shell: caps and timeouts must be positive");
    std::map<std::string, fs::path, std::less<>> programs;
    for (const auto& name : settings.allowed_programs) {
        fs::path found;
        if (name.find('/') != std::string::npos) {
            if (fs::path(name).is_absolute() && is_executable_file(name)) found = name;
        } else {
            std::stringstream dirs(settings.search_path);
            std::string dir;
            while (found.empty() && std::getline(dirs, dir, ':'))
                if (!dir.empty() && is_executable_file(fs::path(dir) / name)) found = fs::path(dir) / name;
        }
        if (found.empty())
            return make_error(errc::not_found, "shell: allowed program '" + name + "' is not an executable on " +
                                                   (name.find('/') != std::string::npos ? "that path" : settings.search_path));
        programs[fs::path(name).filename().string()] = found;
    }
    auto cwd = real_dir(settings.default_cwd);
    if (!cwd.ok())
        return make_error(errc::not_found, "shell: default cwd '" + settings.default_cwd.string() + "': " + cwd.err().message);
    std::vector<fs::path> roots;
    for (const auto& root : settings.cwd_roots) {
        auto real = real_dir(root);
        if (!real.ok()) return make_error(errc::not_found, "shell: cwd root '" + root.string() + "': " + real.err().message);
        roots.push_back(*real);
    }
    if (roots.empty()) roots.push_back(*cwd);
    std::vector<fs::path> exec_files;
    for (const auto& [name, path] : programs) {
        exec_files.push_back(path);
        for (auto& dep : exec_dependencies(path)) exec_files.push_back(std::move(dep));
    }
    return std::shared_ptr<tool>(
        std::make_shared<shell_tool>(settings, std::move(programs), *cwd, std::move(roots), std::move(exec_files)));
}

}  // namespace tachyon::tools
