#include "tools/http_get.h"

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

constexpr std::string_view schema = R"js({"type":"object","properties":{)js"
                                     R"js("url":{"type":"string","description":"http:// URL on loopback or an allowed host"}},)js"
                                     R"js("required":["url"],"additionalProperties":false})js";

// How often a call in flight checks its cancel flag.
constexpr auto poll_interval = std::chrono::milliseconds(20);

error fail(errc code, std::string message) { return make_error(code, "http_get: " + std::move(message)); }

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
    if (colon == std::string_view::npos) return fail(errc::invalid_argument, std::string("'").append(url) + "' is not an http:// URL");
    const std::string scheme = lower(url.substr(0, colon));
    if (scheme == "https")
        return fail(errc::unsupported, std::string("'").append(url) + "': https is not supported (no TLS); use http:// on loopback or an allowed host");
    if (scheme != "http") return fail(errc::unsupported, std::string("'").append(url) + "': only http:// URLs are supported");
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
        return fail(errc::invalid_argument, std::string("'").append(url) + "': credentials in URLs are not supported");
    if (!authority.empty() && authority[0] == '[') {
        const size_t close = authority.find(']');
        if (close == std::string_view::npos) return fail(errc::invalid_argument, std::string("'").append(url) + "': bad IPv6 host");
        out.host = std::string(authority.substr(1, close - 1));
        authority = authority.substr(close + 1);
        if (!authority.empty() && authority[0] == ':') out.port = std::string(authority.substr(1));
        else if (!authority.empty()) return fail(errc::invalid_argument, std::string("'").append(url) + "': bad host");
    } else {
        const size_t port_colon = authority.rfind(':');
        out.host = std::string(authority.substr(0, port_colon));
        if (port_colon != std::string_view::npos) out.port = std::string(authority.substr(port_colon + 1));
    }
    if (out.host.empty()) return fail(errc::invalid_argument, std::string("'").append(url) + "' has no host");
    if (out.port.empty() || out.port.size() > 5 || !std::all_of(out.port.begin(), out.port.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
        std::stoi(out.port) == 0 || std::stoi(out.port) > 65535)
        return fail(errc::invalid_argument, std::string("'").append(url) + "': port must be a number from 1 to 65535");
    for (char c : out.target)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F)
            return fail(errc::invalid_argument, std::string("'").append(url) + "': spaces and control characters must be percent-encoded");
    out.host = lower(out.host);
    return out;
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
    explicit http_get_tool(http_get_settings settings) : settings_(std::move(settings)) {
        for (auto& h : settings_.allowed_hosts) h = lower(h);
    }

    std::string_view name() const override { return "http_get"; }
    std::string_view description() const override {
        return "GET an http:// URL on this machine (or an allowed host). Returns the status, headers and body.";
    }
    std::string_view parameters_schema() const override { return schema; }

    result<std::string> invoke(std::string_view arguments_json, const call_context& ctx) override {
        simdjson::dom::parser json;
        simdjson::dom::object args;
        if (json.parse(arguments_json.data(), arguments_json.size()).get_object().get(args) != simdjson::SUCCESS)
            return fail(errc::invalid_argument, "arguments must be a JSON object");
        std::string_view url;
        if (args["url"].get_string().get(url) != simdjson::SUCCESS)
            return fail(errc::invalid_argument, "'url' must be a string");
        auto parsed = parse_url(url);
        if (!parsed.ok()) return parsed.err();
        try {
            return fetch(std::string(url), *parsed, ctx);
        } catch (const std::exception& e) {  // Beast/Asio throw only on resource failures; keep them in this call
            return fail(errc::internal, std::string("'").append(url) + "': " + e.what());
        }
    }

private:
    bool host_allowed(const std::string& host) const {
        return std::find(settings_.allowed_hosts.begin(), settings_.allowed_hosts.end(), host) != settings_.allowed_hosts.end();
    }

    result<std::string> fetch(const std::string& url, const parsed_url& u, const call_context& ctx) {
        const bool allowlisted = host_allowed(u.host);
        boost::system::error_code ec;
        const auto literal = asio::ip::make_address(u.host, ec);
        const bool is_literal = !ec;
        if (!allowlisted) {
            // Refuse before resolving: a DNS query for a foreign name would
            // already leave the machine.
            if (is_literal ? !literal.is_loopback() : u.host != "localhost")
                return fail(errc::invalid_argument, "host '" + u.host + "' is not loopback and not in the allowed hosts" +
                                                        allowed_list());
        }

        exchange x;
        x.request.method(http::verb::get);
        x.request.target(u.target);
        x.request.version(11);
        x.request.set(http::field::host, u.host.find(':') != std::string::npos ? "[" + u.host + "]:" + u.port : u.host + ":" + u.port);
        x.request.set(http::field::user_agent, "tachyon");
        x.request.set(http::field::connection, "close");
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
            if (e == beast::error::timeout) return finish(fail(errc::timeout, "'" + url + "': no complete response within " +
                                                                                 std::to_string(settings_.read_timeout_ms) + " ms"));
            if (e == http::error::body_limit)
                return finish(fail(errc::resource_exhausted, "'" + url + "': body larger than " +
                                                                 std::to_string(settings_.max_body_bytes) + " bytes"));
            if (e) return finish(fail(errc::io_error, "'" + url + "': reading the response: " + e.message()));
            finish(std::nullopt);
        };
        const auto on_write = [&, url](beast::error_code e, size_t) {
            if (e == beast::error::timeout) return finish(fail(errc::timeout, "'" + url + "': request not sent within " +
                                                                                 std::to_string(settings_.read_timeout_ms) + " ms"));
            if (e) return finish(fail(errc::io_error, "'" + url + "': sending the request: " + e.message()));
            http::async_read(x.stream, x.buffer, x.parser, on_read);
        };
        const auto on_connect = [&, url](beast::error_code e, const tcp::endpoint&) {
            if (e == beast::error::timeout) return finish(fail(errc::timeout, "'" + url + "': no connection within " +
                                                                                 std::to_string(settings_.connect_timeout_ms) + " ms"));
            if (e) return finish(fail(errc::io_error, "'" + url + "': cannot connect: " + e.message()));
            x.stream.expires_after(read_timeout);
            http::async_write(x.stream, x.request, on_write);
        };
        const auto connect_to = [&, url](const std::vector<tcp::endpoint>& endpoints) {
            std::vector<tcp::endpoint> usable;
            for (const auto& endpoint : endpoints)
                if (allowlisted || endpoint.address().is_loopback()) usable.push_back(endpoint);
            if (usable.empty())
                return finish(fail(errc::invalid_argument, "host '" + u.host + "' does not resolve to a loopback address"));
            x.stream.expires_after(connect_timeout);
            x.stream.async_connect(usable, on_connect);
        };
        if (is_literal) {
            connect_to({tcp::endpoint(literal, static_cast<unsigned short>(std::stoi(u.port)))});
        } else {
            x.resolver.async_resolve(u.host, u.port, [&, url](beast::error_code e, tcp::resolver::results_type r) {
                if (e) return finish(fail(errc::not_found, "'" + url + "': cannot resolve '" + u.host + "': " + e.message()));
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
                finish(fail(errc::cancelled, "'" + url + "': cancelled"));
            } else if (!is_literal && !x.stream.socket().is_open() && std::chrono::steady_clock::now() > resolve_deadline) {
                x.resolver.cancel();
                finish(fail(errc::timeout, "'" + url + "': name not resolved within " +
                                               std::to_string(settings_.connect_timeout_ms) + " ms"));
            }
        }
        if (x.failure) return *x.failure;
        if (!x.done) return fail(errc::internal, "'" + url + "': request ended without a result");
        return describe(x.parser.get());
    }

    std::string allowed_list() const {
        if (settings_.allowed_hosts.empty()) return " (only loopback is allowed)";
        std::string out = " (allowed: loopback";
        for (const auto& h : settings_.allowed_hosts) out += ", " + h;
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
};

}  // namespace

result<std::shared_ptr<tool>> make_http_get_tool(const http_get_settings& settings) {
    if (settings.connect_timeout_ms < 1 || settings.read_timeout_ms < 1 || settings.max_body_bytes == 0)
        return make_error(errc::invalid_argument, "http_get: timeouts and the body cap must be positive");
    return std::shared_ptr<tool>(std::make_shared<http_get_tool>(settings));
}

}  // namespace tachyon::tools
