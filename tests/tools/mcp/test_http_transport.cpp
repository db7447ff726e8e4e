#include "tools/mcp/http_transport.h"

#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tools/mcp/mcp_client.h"
#include "tools/mcp/mcp_tools.h"

using namespace tachyon;
using namespace tachyon::tools::mcp;

namespace {

// The fake Streamable HTTP server, on a port of its choosing, for one test.
struct http_server {
    pid_t pid = -1;
    std::string port;
    http_server() {
        int out[2];
        REQUIRE(::pipe(out) == 0);
        pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::dup2(out[1], 1);
            ::close(out[0]);
            const std::string script = std::string(TACHYON_SOURCE_DIR) + "/tests/tools/mcp/fake_mcp_http_server.py";
            ::execl("/usr/bin/python3", "python3", script.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(out[1]);
        char c;
        while (::read(out[0], &c, 1) == 1 && c != '\n') port += c;
        ::close(out[0]);
        REQUIRE_FALSE(port.empty());
    }
    ~http_server() {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
    std::string url() const { return "http://127.0.0.1:" + port + "/mcp"; }
};

server_config config(const http_server& s) {
    server_config c;
    c.name = "fake-http";
    c.url = s.url();
    c.request_timeout = std::chrono::milliseconds(3000);
    return c;
}

}  // namespace

TEST_CASE("parse_http_url: host, port and target, credentials and https are refused") {
    auto u = parse_http_url("http://127.0.0.1:8080/mcp");
    REQUIRE(u.ok());
    CHECK(u->host == "127.0.0.1");
    CHECK(u->port == "8080");
    CHECK(u->target == "/mcp");
    CHECK(parse_http_url("http://example.org")->port == "80");
    CHECK(parse_http_url("http://[::1]:9/x")->host == "::1");
    CHECK(parse_http_url("https://example.org/mcp").err().message.find("https is not supported") != std::string::npos);
    CHECK(parse_http_url("http://user:pw@example.org/").err().message.find("credentials do not belong in a URL") != std::string::npos);
    CHECK_FALSE(parse_http_url("http://host:port/").ok());
}

TEST_CASE("Streamable HTTP: JSON and event-stream answers, session and version headers, bearer from the environment") {
    http_server s;
    ::setenv("TACHYON_TEST_MCP_TOKEN", "s3cret", 1);
    auto cfg = config(s);
    cfg.headers = {{"X-Team", "blue"}};
    cfg.bearer_env = "TACHYON_TEST_MCP_TOKEN";
    auto c = client::connect(cfg);
    REQUIRE_MESSAGE(c.ok(), c.err().message);
    CHECK((*c)->protocol_version() == "2025-11-25");
    CHECK((*c)->tools()->size() == 4);

    auto echo = (*c)->call_tool("echo", R"({"text":"over http"})");
    REQUIRE_MESSAGE(echo.ok(), echo.err().message);
    CHECK(echo->text == "over http");

    int reports = 0;
    auto slow = (*c)->call_tool("slow", R"({"steps":3})", nullptr, [&](double, std::optional<double>, std::string_view) { ++reports; });
    REQUIRE_MESSAGE(slow.ok(), slow.err().message);
    CHECK(slow->text == "streamed 3");
    CHECK(reports == 3);

    auto headers = (*c)->call_tool("headers", "{}");
    REQUIRE(headers.ok());
    CHECK(headers->text == "auth=Bearer s3cret x=blue version=2025-11-25 deletes=0");

    // A 404 for the session: initialized again, and the call is asked once more.
    REQUIRE((*c)->call_tool("expire", "{}").ok());
    auto after = (*c)->call_tool("echo", R"({"text":"again"})");
    REQUIRE_MESSAGE(after.ok(), after.err().message);
    CHECK(after->text == "again");
    CHECK((*c)->n_starts() == 2);

    // The end of a session is a DELETE.
    (*c)->close();
    auto probe = client::connect(cfg);
    REQUIRE(probe.ok());
    CHECK((*probe)->call_tool("headers", "{}")->text.find("deletes=1") != std::string::npos);
}

TEST_CASE("Streamable HTTP: a traced call sends its traceparent header, an untraced one none") {
    http_server s;
    auto c = client::connect(config(s));
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.err().message));
    auto listed = make_mcp_tools(*c);
    REQUIRE(listed.ok());
    std::shared_ptr<tools::tool> headers;
    for (const auto& t : *listed)
        if (t->name() == "headers") headers = t;
    REQUIRE(headers);
    const std::string traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    tools::call_context traced;
    traced.traceparent = traceparent;
    auto r = headers->invoke("{}", traced);
    REQUIRE_MESSAGE(r.ok(), (r.ok() ? "" : r.err().message));
    CHECK(r->find(" traceparent=" + traceparent) != std::string::npos);
    auto plain = headers->invoke("{}", tools::call_context{});
    REQUIRE(plain.ok());
    CHECK(plain->find("traceparent") == std::string::npos);
}

TEST_CASE("Streamable HTTP: a missing token and an unreachable server are named") {
    server_config cfg;
    cfg.name = "remote";
    cfg.url = "http://127.0.0.1:9/mcp";
    cfg.bearer_env = "TACHYON_TEST_MCP_NO_SUCH_VAR";
    auto c = client::connect(cfg);
    REQUIRE_FALSE(c.ok());
    CHECK(c.err().message.find("mcp server remote: bearer_env 'TACHYON_TEST_MCP_NO_SUCH_VAR' is not set") != std::string::npos);
    cfg.bearer_env.clear();
    auto down = client::connect(cfg);
    REQUIRE_FALSE(down.ok());
    CHECK(down.err().message.find("mcp server remote: initialize failed: cannot connect to http://127.0.0.1:9/mcp") != std::string::npos);
}
