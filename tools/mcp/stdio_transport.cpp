#include "tools/mcp/stdio_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "base/log.h"

extern char** environ;

namespace tachyon::tools::mcp {
namespace {

using clock = std::chrono::steady_clock;

void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

// argv[0] on `path` (a PATH value), or as given when it holds a '/'.
std::string find_program(const std::string& name, const std::string& path) {
    if (name.find('/') != std::string::npos) return name;
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find(':', start);
        if (end == std::string::npos) end = path.size();
        std::string dir = path.substr(start, end - start);
        if (dir.empty()) dir = ".";
        const std::string candidate = dir + "/" + name;
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) return candidate;
        start = end + 1;
    }
    return {};
}

std::string describe_exit(const siginfo_t& info) {
    if (info.si_code == CLD_EXITED) return "exited with status " + std::to_string(info.si_status);
    return "was killed by signal " + std::to_string(info.si_status) + " (" + strsignal(info.si_status) + ")";
}

class stdio_transport final : public transport {
public:
    explicit stdio_transport(stdio_options o) : options_(std::move(o)) {}
    ~stdio_transport() override { close(); }

    status open(transport_handlers handlers) override {
        TACHYON_ASSERT(pid_ < 0, "stdio_transport::open twice");
        handlers_ = std::move(handlers);
        const std::string& who = options_.server;
        if (options_.command.empty()) return make_error(errc::invalid_argument, "mcp server " + who + ": command is empty (expected [program, args...])");
        if (!options_.cwd.empty()) {
            struct stat st {};
            if (::stat(options_.cwd.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
                return make_error(errc::not_found, "mcp server " + who + ": cwd '" + options_.cwd + "' is not a directory");
        }
        // A minimal environment, as a shell tool's child gets: the server's own settings come from `env`.
        std::map<std::string, std::string> env;
        for (const char* key : {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "SHELL", "TMPDIR"})
            if (const char* v = std::getenv(key)) env[key] = v;
        for (const auto& [k, v] : options_.env) env[k] = v;
        const std::string path = env.count("PATH") ? env["PATH"] : "/usr/local/bin:/usr/bin:/bin";
        const std::string program = find_program(options_.command[0], path);
        if (program.empty())
            return make_error(errc::not_found, "mcp server " + who + ": command '" + options_.command[0] + "' not found on PATH (" + path + ")");

        int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
        auto undo = [&] {
            for (int* p : {in, out, err}) close_fd(p[0]), close_fd(p[1]);
        };
        if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
            const int e = errno;
            undo();
            return make_error(errc::io_error, "mcp server " + who + ": cannot make pipes (" + std::strerror(e) + ")");
        }
        wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (wake_ < 0) {
            undo();
            return make_error(errc::io_error, "mcp server " + who + ": cannot make an eventfd (" + std::strerror(errno) + ")");
        }

        std::vector<std::string> env_text;
        for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
        std::vector<char*> envp, argv;
        for (auto& s : env_text) envp.push_back(s.data());
        envp.push_back(nullptr);
        std::vector<std::string> args = options_.command;
        for (auto& s : args) argv.push_back(s.data());
        argv.push_back(nullptr);

        posix_spawn_file_actions_t actions;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&actions);
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_adddup2(&actions, in[0], 0);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        posix_spawn_file_actions_adddup2(&actions, err[1], 2);
        if (!options_.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options_.cwd.c_str());
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setpgroup(&attr, 0);  // its own group: shutdown signals reach what it starts
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        pid_t pid = -1;
        const int rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), envp.data());
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) {
            undo();
            close_fd(wake_);
            return make_error(errc::io_error, "mcp server " + who + ": cannot start '" + program + "' (" + std::strerror(rc) + ")");
        }
        pid_ = pid;
        close_fd(in[0]);
        close_fd(out[1]);
        close_fd(err[1]);
        stdin_ = in[1];
        stdout_ = out[0];
        stderr_ = err[0];
        ::fcntl(stdin_, F_SETFL, ::fcntl(stdin_, F_GETFL) | O_NONBLOCK);  // writes wait with a timeout, not forever
        TACHYON_LOG(debug, "mcp server " << who << ": started pid " << pid_);
        reader_ = std::thread([this] { read_loop(); });
        return {};
    }

    status send(std::string_view message) override {
        std::lock_guard lock(write_mutex_);
        const std::string& who = options_.server;
        if (stdin_ < 0) return make_error(errc::io_error, "mcp server " + who + ": not running");
        std::string data(message);
        data += '\n';
        // A write to a pipe whose reader is gone raises SIGPIPE, which would
        // end this process: block it in this thread and take back one we caused.
        sigset_t pipe_set, old, pending;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        sigpending(&pending);
        const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
        status st;
        const auto deadline = clock::now() + options_.write_timeout;
        size_t done = 0;
        while (done < data.size()) {
            const ssize_t n = ::write(stdin_, data.data() + done, data.size() - done);
            if (n > 0) {
                done += static_cast<size_t>(n);
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) {
                const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
                pollfd p{stdin_, POLLOUT, 0};
                if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) == 0) {
                    st = make_error(errc::timeout, "mcp server " + who + ": does not read its stdin (a write waited " +
                                                       std::to_string(options_.write_timeout.count()) + " ms)");
                    break;
                }
                continue;
            }
            st = make_error(errc::io_error, "mcp server " + who + ": cannot write to its stdin (" + std::strerror(errno) + ")");
            break;
        }
        if (!was_pending) {
            const timespec zero{0, 0};
            while (::sigtimedwait(&pipe_set, nullptr, &zero) == SIGPIPE) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
        return st;
    }

    void close() override {
        if (pid_ < 0 || closing_.exchange(true)) return;
        {
            std::lock_guard lock(write_mutex_);
            close_fd(stdin_);  // stage 1: end of input; a well-behaved server exits
        }
        bool exited = wait_exit(options_.grace);
        if (!exited) {
            TACHYON_LOG(warn, "mcp server " << options_.server << ": still running " << options_.grace.count()
                                            << " ms after its stdin closed; sending SIGTERM");
            ::kill(-pid_, SIGTERM);
            exited = wait_exit(options_.grace);
        }
        if (!exited) TACHYON_LOG(warn, "mcp server " << options_.server << ": ignored SIGTERM; sending SIGKILL");
        // Whatever the group still holds goes too. The leader is not reaped
        // yet, so its group id cannot have been reused.
        ::kill(-pid_, SIGKILL);
        int st = 0;
        while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
        }
        const uint64_t one = 1;
        [[maybe_unused]] const ssize_t w = ::write(wake_, &one, sizeof one);
        if (reader_.joinable()) reader_.join();
        close_fd(stdout_);
        close_fd(stderr_);
        close_fd(wake_);
        pid_ = -1;
    }

private:
    // True once the child has exited (not reaped: the caller reaps it).
    bool wait_exit(std::chrono::milliseconds limit) {
        const auto deadline = clock::now() + limit;
        auto nap = std::chrono::microseconds(200);
        while (true) {
            siginfo_t info{};
            if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_) return true;
            if (clock::now() >= deadline) return false;
            std::this_thread::sleep_for(nap);
            nap = std::min(nap * 2, std::chrono::microseconds(20000));
        }
    }

    // Lines of stdout become messages, lines of stderr log lines, until
    // stdout ends or close() wakes the thread.
    void read_loop() {
        std::string out_buf, err_buf;
        std::string why;
        bool err_open = true;
        char chunk[65536];
        auto flush_err = [&](bool all) {
            size_t nl;
            while ((nl = err_buf.find('\n')) != std::string::npos) {
                TACHYON_LOG(info, "mcp server " << options_.server << " (stderr): " << err_buf.substr(0, nl));
                err_buf.erase(0, nl + 1);
            }
            if (all && !err_buf.empty()) TACHYON_LOG(info, "mcp server " << options_.server << " (stderr): " << err_buf);
            if (all || err_buf.size() > 4096) err_buf.clear();
        };
        while (true) {
            pollfd fds[3] = {{stdout_, POLLIN, 0}, {err_open ? stderr_ : -1, POLLIN, 0}, {wake_, POLLIN, 0}};
            if (::poll(fds, 3, -1) < 0) {
                if (errno == EINTR) continue;
                why = std::string("cannot poll its pipes (") + std::strerror(errno) + ")";
                break;
            }
            if (fds[2].revents) break;  // close()
            if (fds[1].revents) {
                const ssize_t n = ::read(stderr_, chunk, sizeof chunk);
                if (n > 0) {
                    err_buf.append(chunk, static_cast<size_t>(n));
                    flush_err(false);
                } else if (n == 0 || errno != EINTR) {
                    err_open = false;
                }
            }
            if (fds[0].revents) {
                const ssize_t n = ::read(stdout_, chunk, sizeof chunk);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) break;  // end of its stdout: it exited or closed it
                out_buf.append(chunk, static_cast<size_t>(n));
                size_t start = 0, nl;
                while ((nl = out_buf.find('\n', start)) != std::string::npos) {
                    std::string_view line(out_buf.data() + start, nl - start);
                    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
                    if (!line.empty() && handlers_.message) handlers_.message(line);
                    start = nl + 1;
                }
                out_buf.erase(0, start);
                if (out_buf.size() > options_.max_line_bytes) {
                    why = "wrote a line longer than " + std::to_string(options_.max_line_bytes) +
                          " bytes to its stdout (expected newline-delimited JSON-RPC)";
                    break;
                }
            }
        }
        flush_err(true);
        if (closing_.load()) return;
        if (why.empty()) {
            // Give an exiting server a moment, so the reason names its status.
            if (wait_exit(std::chrono::milliseconds(200))) {
                siginfo_t info{};
                ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
                why = describe_exit(info);
            } else {
                why = "closed its stdout";
            }
        }
        if (handlers_.closed) handlers_.closed(std::move(why));
    }

    stdio_options options_;
    transport_handlers handlers_;
    pid_t pid_ = -1;
    int stdin_ = -1, stdout_ = -1, stderr_ = -1, wake_ = -1;
    std::mutex write_mutex_;
    std::atomic<bool> closing_{false};
    std::thread reader_;
};

}  // namespace

std::unique_ptr<transport> make_stdio_transport(stdio_options options) {
    return std::make_unique<stdio_transport>(std::move(options));
}

}  // namespace tachyon::tools::mcp
