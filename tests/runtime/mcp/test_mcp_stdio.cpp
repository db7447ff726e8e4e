#include "runtime/mcp/mcp_stdio.h"
#include "tests/runtime/mcp/waiting_tool.h"

#include <doctest/doctest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <future>
#include <string>
#include <thread>

using namespace tachyon;

namespace {

using mcp_test::waiting_tool;

struct pipe_pair {
    int r = -1, w = -1;
    pipe_pair() {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        r = fds[0];
        w = fds[1];
    }
    ~pipe_pair() {
        close_read();
        close_write();
    }
    void close_read() {
        if (r >= 0) ::close(r);
        r = -1;
    }
    void close_write() {
        if (w >= 0) ::close(w);
        w = -1;
    }
    void write(std::string_view s) const { REQUIRE(::write(w, s.data(), s.size()) == static_cast<ssize_t>(s.size())); }
    // One line (without '\n'); empty at the end of the stream or after 5 s.
    std::string read_line() {
        std::string out;
        char c;
        for (;;) {
            pollfd p{r, POLLIN, 0};
            if (::poll(&p, 1, 5000) <= 0) return out;
            if (::read(r, &c, 1) != 1 || c == '\n') return out;
            out += c;
        }
    }
};

// The server on pipes, in a thread of its own.
struct session {
    pipe_pair in, out, stop;
    std::future<status> done;
    explicit session(mcp_server_options o, size_t max_line = 16u << 20) {
        mcp_stdio_options io;
        io.in_fd = in.r;
        io.out_fd = out.w;
        io.stop_fd = stop.r;
        io.max_line_bytes = max_line;
        done = std::async(std::launch::async, [o = std::move(o), io] { return serve_mcp_stdio(o, io); });
    }
    bool ended() { return done.wait_for(std::chrono::seconds(5)) == std::future_status::ready; }
};

}  // namespace

TEST_CASE("mcp stdio: initialize, tools/list and a call, the end of input cancels the running call and ends the session") {
    auto wait = std::make_shared<waiting_tool>();
    mcp_server_options o;
    o.tools = {wait};
    session s(o);
    s.in.write("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}\r\n\n");
    const std::string init = s.out.read_line();
    CHECK(init.find("\"id\":1") != std::string::npos);
    CHECK(init.find("\"protocolVersion\":\"2025-06-18\"") != std::string::npos);
    s.in.write("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n");
    const std::string list = s.out.read_line();
    CHECK(list.find("\"id\":2") != std::string::npos);
    CHECK(list.find("\"name\":\"wait\"") != std::string::npos);
    // A message split across writes is one line.
    s.in.write("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/");
    s.in.write("call\",\"params\":{\"name\":\"wait\",\"arguments\":{}}}\n");
    for (int i = 0; i < 1000 && !wait->started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(wait->started);
    s.in.close_write();  // the client is gone
    REQUIRE(s.ended());
    CHECK(s.done.get().ok());
    CHECK(wait->saw_cancel);
    s.out.close_write();  // the server is done with it: what it wrote is all there is
    CHECK(s.out.read_line().empty());  // the cancelled call is not answered
}

TEST_CASE("mcp stdio: the stop fd (SIGTERM) ends the session and cancels running calls") {
    auto wait = std::make_shared<waiting_tool>();
    mcp_server_options o;
    o.tools = {wait};
    session s(o);
    s.in.write("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{\"name\":\"wait\"}}\n");
    for (int i = 0; i < 1000 && !wait->started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(wait->started);
    s.stop.write("x");
    REQUIRE(s.ended());
    CHECK(s.done.get().ok());
    CHECK(wait->saw_cancel);
}

TEST_CASE("mcp stdio: a line over the limit is a parse error, and the next line is read again") {
    mcp_server_options o;
    o.tools = {std::make_shared<waiting_tool>()};
    session s(o, 64);
    s.in.write("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"pad\":\"" + std::string(200, 'x') + "\"}}\n");
    const std::string err = s.out.read_line();
    CHECK(err.find("-32700") != std::string::npos);
    CHECK(err.find("longer than 64 bytes") != std::string::npos);
    s.in.write("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
    CHECK(s.out.read_line() == R"({"jsonrpc":"2.0","id":2,"result":{}})");
    s.in.write("not json\n");
    CHECK(s.out.read_line().find("-32700") != std::string::npos);
    s.in.close_write();
    REQUIRE(s.ended());
}

TEST_CASE("mcp stdio: a closed output ends the session with an error naming it") {
    mcp_server_options o;
    o.tools = {std::make_shared<waiting_tool>()};
    ::signal(SIGPIPE, SIG_IGN);  // as `tachyon mcp serve` does: a write to a closed pipe fails instead
    session s(o);
    s.out.close_read();
    s.in.write("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    REQUIRE(s.ended());
    auto st = s.done.get();
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().message.find("stdout") != std::string::npos);
}
