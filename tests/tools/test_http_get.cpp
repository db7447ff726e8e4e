#include "tools/http_get.h"

#include <doctest/doctest.h>

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
    REQUIRE(t.ok());
    return *t;
}

result<std::string> get(tool& t, const std::string& url) { return t.invoke("{\"url\":\"" + url + "\"}", {}); }

}  // namespace

TEST_CASE("http_get: fetches from a loopback server, status, type and body in the result") {
    loopback_server server(ok_response("hello from loopback"));
    auto t = make();
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

TEST_CASE("http_get: redirects are reported, not followed") {
    loopback_server server("HTTP/1.1 302 Found\r\nLocation: http://example.com/elsewhere\r\nContent-Length: 0\r\n\r\n");
    auto t = make();
    auto r = get(*t, server.url());
    REQUIRE(r.ok());
    CHECK(r->rfind("HTTP 302 Found\n", 0) == 0);
    CHECK(r->find("redirect not followed; location: http://example.com/elsewhere") != std::string::npos);
}

TEST_CASE("http_get: a body over the cap is an error") {
    loopback_server server(ok_response(std::string(5000, 'b')));
    http_get_settings s;
    s.max_body_bytes = 1000;
    auto t = make(s);
    auto r = get(*t, server.url());
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::resource_exhausted);
    CHECK(r.err().message.find("larger than 1000 bytes") != std::string::npos);
}

TEST_CASE("http_get: a server that never answers times out") {
    loopback_server server("");
    http_get_settings s;
    s.read_timeout_ms = 300;
    auto t = make(s);
    auto r = get(*t, server.url());
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::timeout);
    CHECK(r.err().message.find("within 300 ms") != std::string::npos);
}

TEST_CASE("http_get: the cancel flag stops a call in flight") {
    loopback_server server("");
    auto t = make();
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

TEST_CASE("http_get: non-loopback hosts and https are refused before any traffic") {
    auto t = make();
    for (const char* url : {"http://10.1.2.3/", "http://example.com/x", "http://[2001:db8::1]:8080/", "http://0.0.0.0/"}) {
        auto r = get(*t, url);
        REQUIRE_MESSAGE(!r.ok(), url);
        CHECK(r.err().code == errc::invalid_argument);
        CHECK_MESSAGE(r.err().message.find("not loopback and not in the allowed hosts") != std::string::npos,
                      r.err().message);
    }
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
    auto t = make();
    auto r = get(*t, "http://127.0.0.1:" + std::to_string(port) + "/");
    REQUIRE_FALSE(r.ok());
    CHECK(r.err().code == errc::io_error);
    CHECK(r.err().message.find("cannot connect") != std::string::npos);
}
