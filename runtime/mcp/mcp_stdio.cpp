#include "runtime/mcp/mcp_stdio.h"

#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "base/log.h"
#include "tools/mcp/json_rpc.h"

namespace tachyon {
namespace {

constexpr int64_t k_stdio_parse_error = -32700;

// Writes all of `data`; false when the fd refuses (closed pipe).
bool stdio_write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

// A pipe the writer side pokes to wake the reading loop (the output failed).
struct stdio_wake_pipe {
    int fds[2] = {-1, -1};
    stdio_wake_pipe() {
        if (::pipe(fds) != 0) fds[0] = fds[1] = -1;
    }
    ~stdio_wake_pipe() {
        for (int fd : fds)
            if (fd >= 0) ::close(fd);
    }
    void poke() const {
        if (fds[1] >= 0) (void)!::write(fds[1], "x", 1);
    }
};

}  // namespace

status serve_mcp_stdio(mcp_server_options server_options, const mcp_stdio_options& io) {
    stdio_wake_pipe wake;
    if (wake.fds[0] < 0) return make_error(errc::io_error, std::string("mcp serve: cannot make a pipe: ") + std::strerror(errno));
    std::atomic<bool> out_failed{false};
    const int out_fd = io.out_fd;
    std::mutex out_mutex;
    const mcp_server::sender send = [&out_failed, &out_mutex, &wake, out_fd](std::string m) {
        std::lock_guard lock(out_mutex);
        if (out_failed.load()) return;
        m += '\n';
        if (!stdio_write_all(out_fd, m)) {
            out_failed = true;
            wake.poke();
        }
    };
    auto made = mcp_server::make(std::move(server_options), send);
    if (!made) return made.err();
    std::unique_ptr<mcp_server> server = std::move(made).value();

    status outcome;
    std::string line;
    bool skipping = false;  // inside a line that passed max_line_bytes
    char buf[64 * 1024];
    for (;;) {
        pollfd fds[3] = {{io.in_fd, POLLIN, 0}, {wake.fds[0], POLLIN, 0}, {io.stop_fd, POLLIN, 0}};
        const nfds_t n_fds = io.stop_fd >= 0 ? 3 : 2;
        if (::poll(fds, n_fds, -1) < 0) {
            if (errno == EINTR) continue;
            outcome = make_error(errc::io_error, std::string("mcp serve: poll: ") + std::strerror(errno));
            break;
        }
        if (out_failed.load()) {
            outcome = make_error(errc::io_error, "mcp serve: the output (stdout) is closed; the client is gone");
            break;
        }
        if (n_fds == 3 && fds[2].revents != 0) break;  // SIGTERM
        if (fds[0].revents == 0) continue;
        const ssize_t n = ::read(io.in_fd, buf, sizeof buf);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) {
            outcome = make_error(errc::io_error, std::string("mcp serve: reading stdin: ") + std::strerror(errno));
            break;
        }
        if (n == 0) break;  // end of input: the client closed the session
        std::string_view chunk(buf, static_cast<size_t>(n));
        while (!chunk.empty()) {
            const size_t nl = chunk.find('\n');
            const std::string_view part = chunk.substr(0, nl);
            if (!skipping) line.append(part);
            if (!skipping && line.size() > io.max_line_bytes) {
                send(tools::mcp::make_error_response("null", k_stdio_parse_error, "a message longer than " +
                                                          std::to_string(io.max_line_bytes) + " bytes (the limit of one line)"));
                line.clear();
                skipping = true;
            }
            if (nl == std::string_view::npos) break;
            chunk.remove_prefix(nl + 1);
            if (!skipping) {
                if (!line.empty() && line.back() == '\r') line.pop_back();
                if (line.find_first_not_of(" \t") != std::string::npos) server->handle(line);
            }
            line.clear();
            skipping = false;
        }
    }
    // Cancels what is still running and waits for it: nothing is left behind.
    server->shutdown();
    return outcome;
}

}  // namespace tachyon
