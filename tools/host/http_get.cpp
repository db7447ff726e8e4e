#include "tools/host/http_get.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <simdjson.h>

namespace tachyon::tools {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

constexpr std::string_view http_get_schema = R"js({"type":"object","properties":{)js"
                                     R"js("url":{"type":"string","description":"http:// URL on an allowed host"}},)js"
                                     R"js("required":["url"],"additionalProperties":false})js";

// How often a call in flight checks its cancel flag.
constexpr auto poll_interval = std::chrono::milliseconds(20);

error http_get_error(errc code, std::string message) { return make_error(code, "http_get: " + std::move(message)); }

struct parsed_url {
    std::string host;  // without brackets for IPv6
    std::string port = "80";
    std::string target = "/";
};

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

result<parsed_url> parse_url(std::string_view url) {
    const size_t colon = url.find("://");
    if (colon == std::string_view::npos) return http_get_error(errc::invalid_argument, std::string("'").append(url) + "' is not an http:// URL");
    const std::string scheme = lower(url.substr(0, colon));
    if (scheme == "https")
        return http_get_error(errc::unsupported, std::string("'").append(url) + "': https is not supported (no TLS); use http:// on an allowed host");
    if (scheme != "http") return http_get_error(errc::unsupported, std::string("'").append(url) + "': only http:// URLs are supported");
    std::string_view rest = url.substr(colon + 3);
    const size_t slash = rest.find_first_of("/?#");
    std::string_view authority = rest.substr(0, slash);
    parsed_url out;
    if (slash != std::string_view::npos) {
        std::string_view target = rest.substr(slash);
        target = target.substr(0, target.find('#'));
        out.target = target.empty() || target[0] != '/' ? "/" + std::string(target) : std::string(target);
    }
    if (authority.find('@') != std::string_view::npos)
        return http_get_error(errc::invalid_argument, std::string("'").append(url) + "': credentials in URLs are not supported");
    if (!authority.empty() && authority[0] == '[') {
        const size_t close = authority.find(']');
        if (close == std::string_view::npos) return http_get_error(errc::invalid_argument, std::string("'").append(url) + "': bad IPv6 host");
        out.host = std::string(authority.substr(1, close - 1));
        authority = authority.substr(close + 1);
        if (!authority.empty() && authority[0] == ':') out.port = std::string(authority.substr(1));
        else if (!authority.empty()) return http_get_error(errc::invalid_argument, std::string("'").append(url) + "': bad host");
    } else {
        const size_t port_colon = authority.rfind(':');
        out.host = std::string(authority.substr(0, port_colon));
        if (port_colon != std::string_view::npos) out.port = std::string(authority.substr(port_colon + 1));
    }
    if (out.host.empty()) return http_get_error(errc::invalid_argument, std::string("'").append(url) + "' has no host");
    if (out.port.empty() || out.port.size() > 5 || !std::all_of(out.port.begin(), out.port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(out.port) == 0 || std::stoi(out.port) > 65535)
        return http_get_error(errc::invalid_argument, std::string("'").append(url) + "': port must be a number from 1 to 65535");
    for (char c : out.target)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F)
            return http_get_error(errc::invalid_argument, std::string("'").append(url) + "': spaces and control characters must be percent-encoded");
    out.host = lower(out.host);
    return out;
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// 1..65535, or 0 when `text` is not such a port.
uint16_t port_number(std::string_view text) {
    if (!all_digits(text) || text.size() > 5) return 0;
    const int n = std::stoi(std::string(text));
    return n >= 1 && n <= 65535 ? static_cast<uint16_t>(n) : 0;
}

// One allowed_hosts entry.
struct allowed_host {
    std::string host;   // lower case, IPv6 without brackets
    uint16_t port = 0;  // 0: every port, of public addresses only
    std::optional<asio::ip::address> address;  // when host is an IP address: compared as one ("::1" == "0::1")
};

// Why `a` needs a HOST:PORT entry, or nullptr for a public address.
const char* restricted_kind(const asio::ip::address& a) {
    if (a.is_v6()) {
        const auto v6 = a.to_v6();
        const auto b = v6.to_bytes();  // [16] network order
        const auto embedded_v4 = [&b](size_t at) {
            return asio::ip::address(asio::ip::address_v4({b[at], b[at + 1], b[at + 2], b[at + 3]}));
        };
        if (v6.is_v4_mapped()) return restricted_kind(embedded_v4(12));  // ::ffff:a.b.c.d
        if (v6.is_unspecified()) return "unspecified";
        if (v6.is_loopback()) return "loopback";
        if (std::all_of(b.begin(), b.begin() + 12, [](unsigned char c) { return c == 0; })) return "IPv4-compatible";
        if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) {  // NAT64 64:ff9b::/96 and 64:ff9b:1::/48
            if (b[4] == 0x00 && b[5] == 0x01) return "private local NAT64";
            return restricted_kind(embedded_v4(12));
        }
        if (b[0] == 0x20 && b[1] == 0x02) return restricted_kind(embedded_v4(2));  // 6to4 2002:a.b.c.d::/48
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";
        if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "site-local";
        if ((b[0] & 0xfe) == 0xfc) return "private unique local";
        if (b[0] == 0xff) return "multicast";
        if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return "documentation";
        if (b[0] == 0x01 && std::all_of(b.begin() + 1, b.begin() + 8, [](unsigned char c) { return c == 0; }))
            return "discard";  // 100::/64
        return nullptr;
    }
    const uint32_t v = a.to_v4().to_uint();
    const auto in = [v](uint32_t net, int bits) { return (v >> (32 - bits)) == (net >> (32 - bits)); };
    if (in(0x00000000, 8)) return "unspecified";
    if (in(0x7f000000, 8)) return "loopback";
    if (in(0x0a000000, 8) || in(0xac100000, 12) || in(0xc0a80000, 16)) return "private";
    if (in(0x64400000, 10)) return "shared CGNAT";
    if (in(0xa9fe0000, 16)) return "link-local";
    if (in(0xc0000000, 24)) return "IETF protocol";
    if (in(0xc0000200, 24) || in(0xc6336400, 24) || in(0xcb007100, 24)) return "documentation";
    if (in(0xc6120000, 15)) return "benchmarking";
    if (in(0xe0000000, 4)) return "multicast";
    if (in(0xf0000000, 4)) return "reserved or broadcast";
    return nullptr;
}

result<allowed_host> parse_allowed_host(std::string_view entry) {
    const auto bad = [entry](const std::string& why) {
        return http_get_error(errc::invalid_argument, "allowed_hosts entry '" + std::string(entry) + "': " + why +
                                                " (expected HOST, HOST:PORT or [IPV6]:PORT)");
    };
    allowed_host out;
    std::string_view port;
    if (!entry.empty() && entry.front() == '[') {
        const size_t close = entry.find(']');
        if (close == std::string_view::npos) return bad("no ']' after the IPv6 address");
        out.host = lower(entry.substr(1, close - 1));
        const std::string_view rest = entry.substr(close + 1);
        if (!rest.empty() && rest.front() != ':') return bad("unexpected text after ']'");
        if (!rest.empty()) port = rest.substr(1);
        if (rest.size() == 1) return bad("no port after ':'");
    } else if (std::count(entry.begin(), entry.end(), ':') == 1) {
        const size_t colon = entry.find(':');
        out.host = lower(entry.substr(0, colon));
        port = entry.substr(colon + 1);
        if (port.empty()) return bad("no port after ':'");
    } else {
        out.host = lower(entry);  // a name, or an IPv6 address without brackets (and so without a port)
    }
    if (out.host.empty()) return bad("no host");
    for (char c : out.host)
        if (static_cast<unsigned char>(c) <= 0x20 || c == '/' || c == '@' || c == '?' || c == '#' || c == '[' || c == ']')
            return bad("not a host name or address");
    if (!port.empty() && (out.port = port_number(port)) == 0) return bad("port must be a number from 1 to 65535");
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(out.host, ec);
    if (!ec) out.address = address;
    if (out.port == 0) {
        // A HOST entry stands for public addresses only; one that can only be
        // restricted would silently allow nothing.
        const char* kind = out.address ? restricted_kind(*out.address) : nullptr;
        if (out.host == "localhost" || (out.host.size() > 10 && out.host.ends_with(".localhost"))) kind = "loopback";
        if (kind != nullptr)
            return http_get_error(errc::invalid_argument, "allowed_hosts entry '" + std::string(entry) + "' is not a public address (" + kind +
                                                    "), so it needs its port: write '" +
                                                    (out.host.find(':') != std::string::npos ? "[" + out.host + "]" : out.host) +
                                                    ":PORT'");
    }
    return out;
}

// "host:port" as a user writes it in allowed_hosts.
std::string host_port(const std::string& host, const std::string& port) {
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
}

// One request, driven by callbacks on a private io_context that invoke() runs.
struct exchange {
    asio::io_context ioc;
    tcp::resolver resolver{ioc};
    beast::tcp_stream stream{ioc};
    beast::flat_buffer buffer;
    http::request<http::empty_body> request;
    http::response_parser<http::string_body> parser;
    std::optional<error> failure;
    bool done = false;
};

class http_get_tool final : public tool {
public:
    http_get_tool(http_get_settings settings, std::vector<allowed_host> allowed)
        : settings_(std::move(settings)), allowed_(std::move(allowed)) {
        // The model reads where it may go; without that it can only guess.
        description_ = "GET an http:// URL on an allowed host (";
        if (settings_.allowed_hosts.empty()) description_ += "none are allowed";
        for (size_t i = 0; i < settings_.allowed_hosts.size(); ++i)
            description_ += (i ? ", " : "") + lower(settings_.allowed_hosts[i]);
        description_ += "). Returns the status, headers and body.";
    }

    std::string_view name() const override { return "http_get"; }
    std::string_view description() const override { return description_; }
    tool_flags flags() const override { return {.read_only = true, .idempotent = true}; }  // GET: safe by HTTP's rules
    std::string_view parameters_schema() const override { return http_get_schema; }

    result<std::string> invoke(std::string_view arguments_json, const call_context& ctx) override {
        simdjson::dom::parser json;
        simdjson::dom::object args;
        if (json.parse(arguments_json.data(), arguments_json.size()).get_object().get(args) != simdjson::SUCCESS)
            return http_get_error(errc::invalid_argument, "arguments must be a JSON object");
        std::string_view url;
        if (args["url"].get_string().get(url) != simdjson::SUCCESS)
            return http_get_error(errc::invalid_argument, "'url' must be a string");
        auto parsed = parse_url(url);
        if (!parsed.ok()) return parsed.err();
        try {
            return fetch(std::string(url), *parsed, ctx);
        } catch (const std::exception& e) {  // Beast/Asio throw only on resource failures; keep them in this call
            return http_get_error(errc::internal, std::string("'").append(url) + "': " + e.what());
        }
    }

private:
    // How an entry allows (host, port): for every address, for public ones, or not at all.
    enum class permit { none, public_only, any_address };

    permit permitted(const std::string& host, uint16_t port) const {
        boost::system::error_code ec;
        const auto address = asio::ip::make_address(host, ec);
        permit out = permit::none;
        for (const auto& a : allowed_) {
            const bool same_host = a.address && !ec ? *a.address == address : a.host == host;
            if (!same_host) continue;
            if (a.port == port) return permit::any_address;
            if (a.port == 0) out = permit::public_only;
        }
        return out;
    }

    result<std::string> fetch(const std::string& url, const parsed_url& u, const call_context& ctx) {
        const uint16_t port = port_number(u.port);
        const permit allowed = permitted(u.host, port);
        boost::system::error_code ec;
        const auto literal = asio::ip::make_address(u.host, ec);
        const bool is_literal = !ec;
        // Refuse before resolving: a DNS query for a foreign name would
        // already leave the machine.
        if (allowed == permit::none)
            return http_get_error(errc::invalid_argument, "'" + url + "': host '" + u.host + "' port " + u.port +
                                                    " is not in the allowed hosts" + allowed_list() + "; to allow it, add '" +
                                                    host_port(u.host, u.port) + "' to the http_get setting allowed_hosts");

        exchange x;
        x.request.method(http::verb::get);
        x.request.target(u.target);
        x.request.version(11);
        x.request.set(http::field::host, u.host.find(':') != std::string::npos ? "[" + u.host + "]:" + u.port : u.host + ":" + u.port);
        x.request.set(http::field::user_agent, "tachyon");
        x.request.set(http::field::connection, "close");
        // The call's key, the same on a retry after a crash: a service that
        // honours it answers a repeated request without doing the work twice.
        if (!ctx.idempotency_key.empty()) x.request.set("Idempotency-Key", ctx.idempotency_key);
        x.parser.body_limit(settings_.max_body_bytes);
        x.parser.header_limit(64 * 1024);

        const auto connect_timeout = std::chrono::milliseconds(settings_.connect_timeout_ms);
        const auto read_timeout = std::chrono::milliseconds(settings_.read_timeout_ms);
        const auto finish = [&x](std::optional<error> e) {
            if (x.done) return;  // a handler aborted by the close below
            if (e) x.failure = std::move(e);
            x.done = true;
            beast::error_code ignored;
            x.stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
            x.stream.close();
        };
        const auto on_read = [&, url](beast::error_code e, size_t) {
            if (e == beast::error::timeout) return finish(http_get_error(errc::timeout, "'" + url + "': no complete response within " +
                                                                                 std::to_string(settings_.read_timeout_ms) + " ms"));
            if (e == http::error::body_limit)
                return finish(http_get_error(errc::resource_exhausted, "'" + url + "': body larger than " +
                                                                 std::to_string(settings_.max_body_bytes) + " bytes"));
            if (e) return finish(http_get_error(errc::io_error, "'" + url + "': reading the response: " + e.message()));
            finish(std::nullopt);
        };
        const auto on_write = [&, url](beast::error_code e, size_t) {
            if (e == beast::error::timeout) return finish(http_get_error(errc::timeout, "'" + url + "': request not sent within " +
                                                                                 std::to_string(settings_.read_timeout_ms) + " ms"));
            if (e) return finish(http_get_error(errc::io_error, "'" + url + "': sending the request: " + e.message()));
            http::async_read(x.stream, x.buffer, x.parser, on_read);
        };
        const auto on_connect = [&, url](beast::error_code e, const tcp::endpoint&) {
            if (e == beast::error::timeout) return finish(http_get_error(errc::timeout, "'" + url + "': no connection within " +
                                                                                 std::to_string(settings_.connect_timeout_ms) + " ms"));
            if (e) return finish(http_get_error(errc::io_error, "'" + url + "': cannot connect: " + e.message()));
            x.stream.expires_after(read_timeout);
            http::async_write(x.stream, x.request, on_write);
        };
        // Every address the name gave is checked here, and the connect goes
        // to the checked ones only: nothing is looked up again.
        const auto connect_to = [&, url](const std::vector<tcp::endpoint>& endpoints) {
            std::vector<tcp::endpoint> usable;
            std::string refused;
            for (const auto& endpoint : endpoints) {
                const char* kind = restricted_kind(endpoint.address());
                if (kind == nullptr || allowed == permit::any_address) {
                    usable.push_back(endpoint);
                    continue;
                }
                refused += (refused.empty() ? "" : ", ") + endpoint.address().to_string() + " (" + kind + ")";
            }
            if (usable.empty())
                return finish(http_get_error(errc::invalid_argument,
                                   "'" + url + "': host '" + u.host + "' " + (is_literal ? "is " : "resolves to ") + refused +
                                       ", which is refused unless allowlisted with its port; to allow it, add '" +
                                       host_port(u.host, u.port) + "' to the http_get setting allowed_hosts"));
            x.stream.expires_after(connect_timeout);
            x.stream.async_connect(usable, on_connect);
        };
        if (is_literal) {
            connect_to({tcp::endpoint(literal, port)});
        } else {
            x.resolver.async_resolve(u.host, u.port, [&, url](beast::error_code e, tcp::resolver::results_type r) {
                if (e) return finish(http_get_error(errc::not_found, "'" + url + "': cannot resolve '" + u.host + "': " + e.message()));
                std::vector<tcp::endpoint> endpoints;
                for (const auto& entry : r) endpoints.push_back(entry.endpoint());
                connect_to(endpoints);
            });
        }

        // Run the exchange here, looking at the cancel flag between slices.
        // The resolver has no timeout of its own: the connect deadline covers it.
        const auto resolve_deadline = std::chrono::steady_clock::now() + connect_timeout;
        while (!x.ioc.stopped()) {
            x.ioc.run_for(poll_interval);
            if (x.done) continue;
            if (ctx.cancelled()) {
                x.resolver.cancel();
                finish(http_get_error(errc::cancelled, "'" + url + "': cancelled"));
            } else if (!is_literal && !x.stream.socket().is_open() && std::chrono::steady_clock::now() > resolve_deadline) {
                x.resolver.cancel();
                finish(http_get_error(errc::timeout, "'" + url + "': name not resolved within " +
                                               std::to_string(settings_.connect_timeout_ms) + " ms"));
            }
        }
        if (x.failure) return *x.failure;
        if (!x.done) return http_get_error(errc::internal, "'" + url + "': request ended without a result");
        return describe(x.parser.get());
    }

    std::string allowed_list() const {
        if (allowed_.empty()) return " (none are allowed)";
        std::string out = " (allowed: ";
        for (size_t i = 0; i < allowed_.size(); ++i)
            out += (i ? ", " : "") + (allowed_[i].port ? host_port(allowed_[i].host, std::to_string(allowed_[i].port)) : allowed_[i].host);
        return out + ")";
    }

    static std::string describe(const http::response<http::string_body>& res) {
        std::string out = "HTTP " + std::to_string(res.result_int()) + " " + std::string(res.reason()) + "\n";
        const unsigned code = res.result_int();
        if (code >= 300 && code < 400) {
            const auto location = res.find(http::field::location);
            out += "redirect not followed";
            if (location != res.end()) out += "; location: " + std::string(location->value());
            out += "\n";
        }
        if (const auto type = res.find(http::field::content_type); type != res.end())
            out += "content-type: " + std::string(type->value()) + "\n";
        out += "\n";
        out += res.body();
        return out;
    }

    http_get_settings settings_;
    std::vector<allowed_host> allowed_;  // [n_allowed] parsed settings_.allowed_hosts
    std::string description_;
};

}  // namespace

std::string_view http_get_parameters_schema() { return http_get_schema; }

result<std::shared_ptr<tool>> make_http_get_tool(const http_get_settings& settings) {
    if (settings.connect_timeout_ms < 1 || settings.read_timeout_ms < 1 || settings.max_body_bytes == 0)
        return make_error(errc::invalid_argument, "http_get: timeouts and the body cap must be positive");
    std::vector<allowed_host> allowed;
    for (const auto& entry : settings.allowed_hosts) {
        auto a = parse_allowed_host(entry);
        if (!a.ok()) return a.err();
        allowed.push_back(std::move(*a));
    }
    return std::shared_ptr<tool>(std::make_shared<http_get_tool>(settings, std::move(allowed)));
}

result<std::string> restricted_address_kind(std::string_view address) {
    boost::system::error_code ec;
    const auto a = asio::ip::make_address(std::string(address), ec);
    if (ec) return make_error(errc::invalid_argument, "'" + std::string(address) + "' is not an IPv4 or IPv6 address");
    const char* kind = restricted_kind(a);
    return std::string(kind != nullptr ? kind : "");
}

}  // namespace tachyon::tools
