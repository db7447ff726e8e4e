#include "tools/host/http_get.h"

#include <doctest/doctest.h>

#include <tuple>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>

using namespace tachyon;
using namespace tachyon::tools;

namespace {

// The error message of a failed result, for a check's message (evaluated
// even when the check passes, so it must not touch err() on a value).
template <class T>
std::string why(const tachyon::result<T>& r) {
    return r.ok() ? std::string() : r.err().message;
}

// A tiny HTTP server on 127.0.0.1 (a free port), one thread, plain sockets.
// It answers every connection with `response`, or, when `response` is empty,
// reads the request and never answers.
class loopback_server {
public:
    explicit loopback_server(std::string response) : response_(std::move(response)) {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(fd_, 8) == 0);
        socklen_t len = sizeof addr;
        REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
        port_ = ntohs(addr.sin_port);
        thread_ = std::thread([this] { serve(); });
    }
    ~loopback_server() {
        stop_ = true;
        thread_.join();
        ::close(fd_);
    }
    int port() const { return port_; }
    std::string url(const std::string& path = "/") const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
    std::string last_request() {
        std::lock_guard lock(mutex_);
        return request_;
    }

private:
    bool wait_readable(int fd) {
        while (!stop_) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 20) > 0) return true;
        }
        return false;
    }
    void serve() {
        while (wait_readable(fd_)) {
            const int c = ::accept(fd_, nullptr, nullptr);
            if (c < 0) continue;
            std::string req;
            char buf[4096];
            while (req.find("\r\n\r\n") == std::string::npos && wait_readable(c)) {
                const ssize_t n = ::read(c, buf, sizeof buf);
                if (n <= 0) break;
                req.append(buf, static_cast<size_t>(n));
            }
            {
                std::lock_guard lock(mutex_);
                request_ = req;
            }
            if (response_.empty()) {
                while (!stop_) ::poll(nullptr, 0, 20);  // never answer
            } else {
                size_t done = 0;
                while (done < response_.size()) {
                    const ssize_t n = ::write(c, response_.data() + done, response_.size() - done);
                    if (n <= 0) break;
                    done += static_cast<size_t>(n);
                }
            }
            ::close(c);
        }
    }

    std::string response_;
    int fd_ = -1;
    int port_ = 0;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::string request_;
    std::thread thread_;
};

std::string ok_response(const std::string& body) {
    return "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nConnection: close\r\n\r\n" + body;
}

std::shared_ptr<tool> make(http_get_settings s = {}) {
    auto t = make_http_get_tool(s);
    REQUIRE_MESSAGE(t.ok(), why(t));
    return *t;
}

// Settings that allow the one loopback port of a test server.
http_get_settings allowing(const loopback_server& server) {
    http_get_settings s;
    s.allowed_hosts = {"127.0.0.1:" + std::to_string(server.port())};
    return s;
}

result<std::string> get(tool& t, const std::string& url) { return t.invoke("{\"url\":\"" + url + "\"}", {}); }

}  // namespace

TEST_CASE("http_get: fetches from a loopback server, status, type and body in the result") {
    loopback_server server(ok_response("hello from loopback"));
    http_get_settings s = allowing(server);
    s.allowed_hosts.push_back("LocalHost:" + std::to_string(server.port()));  // case does not matter
    auto t = make(s);
    auto r = get(*t, server.url("/status?service=checkout"));
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(r->rfind("HTTP 200 OK\n", 0) == 0);
    CHECK(r->find("content-type: text/plain\n") != std::string::npos);
    CHECK(r->find("\n\nhello from loopback") != std::string::npos);
    const std::string req = server.last_request();
    CHECK(req.rfind("GET /status?service=checkout HTTP/1.1\r\n", 0) == 0);
    CHECK(req.find("Host: 127.0.0.1:" + std::to_string(server.port())) != std::string::npos);

    auto by_name = get(*t, "http://localhost:" + std::to_string(server.port()) + "/");
    REQUIRE_MESSAGE(by_name.ok(), why(by_name));
    CHECK(by_name->rfind("HTTP 200", 0) == 0);
}

TEST_CASE("http_get: the call's idempotency key goes out as an Idempotency-Key header, none without one") {
    loopback_server server(ok_response("ok"));
    auto t = make(allowing(server));
    CHECK(t->flags().read_only);
    call_context ctx;
    ctx.idempotency_key = "20261130T012233Z-7f3a2b:3:1";
    auto r = t->invoke("{\"url\":\"" + server.url("/") + "\"}", ctx);
    REQUIRE_MESSAGE(r.ok(), why(r));
    CHECK(server.last_request().find("Idempotency-Key: 20261130T012233Z-7f3a2b:3:1\r\n") != std::string::npos);
    REQUIRE(get(*t, server.url("/")).ok());
    CHECK(server.last_request().find("Idempotency-Key") == std::string::npos);
}

TEST_CASE("http_get: redirects are reported, not followed") {
    loopback_server server("HTTP/1.1 302 Found\r\nLocation: http://example.com/elsewhere\r\nContent-Length: 0\r\n\r\n");
    auto t = make(allowing(server));
    auto r = get(*t, server.url());
    REQUIRE(r.ok());
    CHECK(r->rfind("HTTP 302 Found\n", 0) == 0);
    CHECK(r->find("redirect not followed; location: http://example.com/elsewhere") != std::string::npos);
}

TEST_CASE("http_get: a body over the cap is an error") {
    loopback_server server(ok_response(std::string(5000, 'b')));
    http_get_settings s = allowing(server);
    s.max_body_bytes = 1000;
    auto t = make(s);
    auto r = get(*t, server.url());
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::resource_exhausted);
    CHECK(r.err().message.find("larger than 1000 bytes") != std::string::npos);
}

TEST_CASE("http_get: a server that never answers times out") {
    loopback_server server("");
    http_get_settings s = allowing(server);
    s.read_timeout_ms = 300;
    auto t = make(s);
    auto r = get(*t, server.url());
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::timeout);
    CHECK(r.err().message.find("within 300 ms") != std::string::npos);
}

TEST_CASE("http_get: the cancel flag stops a call in flight") {
    loopback_server server("");
    auto t = make(allowing(server));
    std::atomic<bool> cancel{false};
    std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cancel = true;
    });
    call_context ctx;
    ctx.cancel = &cancel;
    auto r = t->invoke("{\"url\":\"" + server.url() + "\"}", ctx);
    canceller.join();
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::cancelled);
}

TEST_CASE("http_get: hosts not in the allowlist and https are refused before any traffic") {
    http_get_settings s;
    s.allowed_hosts = {"example.com:8080"};  // that port only
    auto t = make(s);
    for (const char* url : {"http://10.1.2.3/", "http://example.org/x", "http://[2001:db8::1]:8080/", "http://0.0.0.0/",
                            "http://example.com/", "http://example.com:8081/"}) {
        auto r = get(*t, url);
        REQUIRE_MESSAGE(!r.ok(), url);
        CHECK(r.err().code == errc::invalid_argument);
        CHECK_MESSAGE(r.err().message.find("is not in the allowed hosts (allowed: example.com:8080)") != std::string::npos,
                      r.err().message);
        CHECK_MESSAGE(r.err().message.find(url) != std::string::npos, r.err().message);
    }
    auto r = get(*t, "http://example.com:8081/");
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.err().message.find("add 'example.com:8081' to the http_get setting allowed_hosts") != std::string::npos,
                  r.err().message);
    auto https = get(*t, "https://127.0.0.1/");
    REQUIRE_FALSE(https.ok());
    CHECK(https.err().code == errc::unsupported);
    CHECK(https.err().message.find("https is not supported") != std::string::npos);
    auto ftp = get(*t, "ftp://127.0.0.1/");
    REQUIRE_FALSE(ftp.ok());
    CHECK(ftp.err().message.find("only http://") != std::string::npos);
    auto bad_port = get(*t, "http://127.0.0.1:99999/");
    REQUIRE_FALSE(bad_port.ok());
    CHECK(bad_port.err().message.find("port") != std::string::npos);
}

TEST_CASE("http_get: a closed port is a clear connection error") {
    int port = 0;
    {
        loopback_server server(ok_response("x"));
        port = server.port();
    }  // closed: nothing listens there now
    http_get_settings s;
    s.allowed_hosts = {"127.0.0.1:" + std::to_string(port)};
    auto t = make(s);
    auto r = get(*t, "http://127.0.0.1:" + std::to_string(port) + "/");
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::io_error);
    CHECK(r.err().message.find("cannot connect") != std::string::npos);
}

TEST_CASE("http_get: loopback is refused unless allowlisted with its port") {
    loopback_server server(ok_response("local service"));
    const std::string port = std::to_string(server.port());
    auto none = get(*make(), server.url());
    REQUIRE_FALSE(none.ok());
    CHECK(none.err().code == errc::invalid_argument);
    CHECK_MESSAGE(none.err().message.find("'" + server.url() + "': host '127.0.0.1' port " + port + " is not in the allowed hosts") !=
                      std::string::npos,
                  none.err().message);
    CHECK(none.err().message.find("add '127.0.0.1:" + port + "' to the http_get setting allowed_hosts") != std::string::npos);

    auto t = make(allowing(server));
    auto ok = get(*t, server.url());
    REQUIRE_MESSAGE(ok.ok(), why(ok));
    CHECK(ok->find("local service") != std::string::npos);
    CHECK(t->description().find("127.0.0.1:" + port) != std::string_view::npos);  // the model reads where it may go

    // the allowed port only: another port of the same host stays refused
    loopback_server other(ok_response("another service"));
    auto refused = get(*t, other.url());
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.err().message.find("port " + std::to_string(other.port()) + " is not in the allowed hosts") != std::string::npos);
    CHECK(other.last_request().empty());
}

TEST_CASE("http_get: loopback in disguise never reaches a local server") {
    loopback_server server(ok_response("local service"));
    const std::string port = std::to_string(server.port());
    // Other spellings of this machine: IPv6 loopback, IPv4-mapped IPv6, the
    // unspecified address (which Linux connects to loopback), the name, and
    // the numeric forms inet_aton and getaddrinfo accept (decimal, hex, octal,
    // short dotted).
    const std::vector<std::string> hosts = {"[::1]", "[0:0:0:0:0:0:0:1]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::]",
                                            "0.0.0.0", "0", "localhost", "LOCALHOST", "localhost.", "a.localhost",
                                            "2130706433", "0x7f.1", "0x7f000001", "0177.0.0.1", "127.1", "127.0.0.2"};
    auto none = make();
    for (const auto& host : hosts) {
        const std::string url = "http://" + host + ":" + port + "/";
        auto r = get(*none, url);
        REQUIRE_MESSAGE(!r.ok(), url);
        CHECK_MESSAGE(r.err().message.find("is not in the allowed hosts") != std::string::npos, r.err().message);
    }
    // Allowlisted as plain hosts (public addresses, any port), they are
    // refused when the tool is made, or once the name resolves to loopback.
    for (const auto& host : hosts) {
        http_get_settings s;
        s.allowed_hosts = {host};
        auto made = make_http_get_tool(s);
        if (!made.ok()) {
            CHECK_MESSAGE(made.err().message.find("needs its port") != std::string::npos, made.err().message);
            continue;
        }
        const std::string url = "http://" + host + ":" + port + "/";
        auto r = get(**made, url);
        REQUIRE_MESSAGE(!r.ok(), url);
        CHECK_MESSAGE((r.err().message.find("refused unless allowlisted with its port") != std::string::npos ||
                       r.err().message.find("cannot resolve") != std::string::npos),
                      r.err().message);
    }
    CHECK_MESSAGE(server.last_request().empty(), server.last_request());
}

TEST_CASE("http_get: a name allowlisted without a port is checked on the addresses it resolves to") {
    // getaddrinfo reads "2130706433" as 127.0.0.1 without asking DNS: a name
    // whose answer is loopback, as a rebinding DNS server would give.
    loopback_server server(ok_response("local service"));
    const std::string port = std::to_string(server.port());
    http_get_settings s;
    s.allowed_hosts = {"2130706433"};
    auto r = get(*make(s), "http://2130706433:" + port + "/");
    REQUIRE_FALSE(r.ok());
    CHECK_MESSAGE(r.err().message.find("resolves to 127.0.0.1 (loopback), which is refused unless allowlisted with its port") !=
                      std::string::npos,
                  r.err().message);
    CHECK(r.err().message.find("add '2130706433:" + port + "'") != std::string::npos);
    s.allowed_hosts = {"2130706433:" + port};  // the port named: allowed, as for any loopback service
    auto ok = get(*make(s), "http://2130706433:" + port + "/");
    REQUIRE_MESSAGE(ok.ok(), why(ok));
    CHECK(ok->find("local service") != std::string::npos);
}

TEST_CASE("http_get: allowed_hosts entries are checked when the tool is made") {
    for (const char* good : {"example.com", "Example.COM:8080", "127.0.0.1:8080", "localhost:9000", "[::1]:8080",
                             "2606:4700::1111", "[2606:4700::1111]", "10.0.0.5:443"}) {
        http_get_settings s;
        s.allowed_hosts = {good};
        auto t = make_http_get_tool(s);
        CHECK_MESSAGE(t.ok(), good, ": ", why(t));
    }
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"127.0.0.1", "'127.0.0.1' is not a public address (loopback), so it needs its port: write '127.0.0.1:PORT'"},
        {"localhost", "write 'localhost:PORT'"},
        {"[::1]", "write '[::1]:PORT'"},
        {"::ffff:10.0.0.1", "is not a public address (private)"},
        {"169.254.169.254", "(link-local)"},
        {"0.0.0.0", "unspecified"},
        {"example.com:0", "port must be a number from 1 to 65535"},
        {"example.com:http", "port must be a number"},
        {"example.com:", "no port"},
        {"[::1", "no ']'"},
        {":80", "no host"},
        {"a/b", "not a host name or address"},
    };
    for (const auto& elem : bad) {
        // named parts, not structured bindings, which clang 14 cannot take into a lambda (CAPTURE)
        const auto& entry = std::get<0>(elem); const auto& expected = std::get<1>(elem);
        http_get_settings s;
        s.allowed_hosts = {entry};
        auto t = make_http_get_tool(s);
        REQUIRE_MESSAGE(!t.ok(), entry);
        CHECK_MESSAGE(t.err().message.find(expected) != std::string::npos, t.err().message);
        CHECK(t.err().message.find(entry) != std::string::npos);
    }
}

TEST_CASE("restricted_address_kind: loopback, private, link-local and the rest, also inside IPv6") {
    const std::vector<std::pair<const char*, const char*>> table = {
        {"127.0.0.1", "loopback"}, {"127.255.0.9", "loopback"}, {"::1", "loopback"}, {"::ffff:127.0.0.1", "loopback"},
        {"10.1.2.3", "private"}, {"172.16.0.1", "private"}, {"172.31.255.255", "private"}, {"192.168.1.1", "private"},
        {"::ffff:192.168.0.1", "private"}, {"100.64.0.1", "CGNAT"}, {"100.127.255.255", "CGNAT"},
        {"169.254.169.254", "link-local"}, {"fe80::1", "link-local"}, {"febf::1", "link-local"},
        {"::ffff:169.254.169.254", "link-local"}, {"fc00::1", "unique local"}, {"fd12:3456::1", "unique local"},
        {"0.0.0.0", "unspecified"}, {"0.1.2.3", "unspecified"}, {"::", "unspecified"}, {"224.0.0.1", "multicast"},
        {"239.255.255.250", "multicast"}, {"ff02::1", "multicast"}, {"255.255.255.255", "broadcast"},
        {"::127.0.0.1", "IPv4-compatible"}, {"64:ff9b::a00:1", "private"}, {"2002:7f00:1::", "loopback"},
        {"192.0.2.1", "documentation"}, {"2001:db8::1", "documentation"},
    };
    for (const auto& elem : table) {
        // named parts, not structured bindings, which clang 14 cannot take into a lambda (CAPTURE)
        const auto& address = std::get<0>(elem); const auto& kind = std::get<1>(elem);
        auto k = restricted_address_kind(address);
        REQUIRE_MESSAGE(k.ok(), address);
        CHECK_MESSAGE(k->find(kind) != std::string::npos, address, " is ", *k);
    }
    for (const char* address : {"8.8.8.8", "172.32.0.1", "172.15.255.255", "100.128.0.1", "100.63.255.255", "192.169.0.1",
                                "2606:4700::1111", "64:ff9b::808:808", "::ffff:8.8.8.8", "2002:808:808::"}) {
        auto k = restricted_address_kind(address);
        REQUIRE_MESSAGE(k.ok(), address);
        CHECK_MESSAGE(k->empty(), address, " is ", *k);
    }
    auto bad = restricted_address_kind("localhost");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.err().message.find("'localhost' is not an IPv4 or IPv6 address") != std::string::npos);
}
