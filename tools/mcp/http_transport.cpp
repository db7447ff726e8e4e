#include "tools/mcp/http_transport.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "base/log.h"
#include "tools/mcp/json_rpc.h"

namespace tachyon::tools::mcp {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

std::string cut_text(std::string_view s, size_t max = 300) {
    return s.size() <= max ? std::string(s) : std::string(s.substr(0, max)) + "...";
}

// A JSON-RPC error code for failures of the channel itself (the server answered no JSON-RPC).
constexpr int64_t k_transport_error = -32000;

class http_transport final : public transport {
public:
    explicit http_transport(http_options o) : options_(std::move(o)) {}
    ~http_transport() override { close(); }

    status open(transport_handlers handlers) override {
        handlers_ = std::move(handlers);
        auto u = parse_http_url(options_.url);
        if (!u) return make_error(u.err().code, "mcp server " + options_.server + ": " + u.err().message);
        url_ = *u;
        if (!options_.bearer_env.empty()) {
            const char* token = std::getenv(options_.bearer_env.c_str());
            if (token == nullptr || *token == '\0')
                return make_error(errc::invalid_argument, "mcp server " + options_.server + ": bearer_env '" + options_.bearer_env +
                                                              "' is not set (expected the bearer token in that environment variable)");
            authorization_ = std::string("Bearer ") + token;
        }
        work_.emplace(io_.get_executor());
        thread_ = std::thread([this] { io_.run(); });
        return {};
    }

    status send(std::string_view message) override { return send_traced(message, {}); }

    status send_traced(std::string_view message, std::string_view traceparent) override {
        if (dead_.load() || closing_.load()) return make_error(errc::io_error, "mcp server " + options_.server + ": the HTTP session has ended");
        std::string id;
        if (auto m = parse_message(message); m && m->type == message::kind::request) id = m->id;
        asio::co_spawn(io_, exchange(http::verb::post, std::string(message), id, std::string(traceparent)), asio::detached);
        return {};
    }

    void set_protocol_version(std::string version) override {
        std::lock_guard lock(mutex_);
        version_ = std::move(version);
    }

    void close() override {
        if (!work_ || closing_.exchange(true)) return;
        bool has_session;
        {
            std::lock_guard lock(mutex_);
            has_session = !session_id_.empty();
        }
        if (has_session && !dead_.load()) {
            // The end of the session, told to the server; it may answer 405 (it keeps sessions itself).
            std::promise<void> done;
            auto f = done.get_future();
            asio::co_spawn(io_, exchange(http::verb::delete_, {}, {}), [&done](std::exception_ptr) { done.set_value(); });
            f.wait_for(std::chrono::milliseconds(2000));
        }
        work_.reset();
        io_.stop();
        if (thread_.joinable()) thread_.join();
    }

private:
    void deliver(std::string_view text) {
        if (!closing_.load() && handlers_.message) handlers_.message(text);
    }
    void fail_request(const std::string& id, const std::string& why) {
        if (id.empty()) TACHYON_LOG(warn, "mcp server " << options_.server << ": " << why);
        else deliver(make_error_response(id, k_transport_error, why));
    }
    void end(std::string why) {
        if (dead_.exchange(true) || closing_.load()) return;
        if (handlers_.closed) handlers_.closed(std::move(why));
    }

    // Where an event stream stands, to resume it after a break: the last
    // event id the server gave and the reconnection delay it asked for.
    struct stream_mark {
        std::string last_event_id;
        std::chrono::milliseconds retry{1000};
        bool moved = false;  // an event came since the mark was last looked at
    };

    // Hands each complete event of `body` (from the start) to deliver(), and
    // drops it; returns whether the answer to `id` was among them.
    bool take_events(std::string& body, const std::string& id, bool all, stream_mark& mark) {
        bool answered = false;
        while (true) {
            size_t end = body.find("\n\n");
            size_t skip = 2;
            const size_t crlf = body.find("\r\n\r\n");
            if (crlf != std::string::npos && (end == std::string::npos || crlf < end)) end = crlf, skip = 4;
            if (end == std::string::npos) {
                if (!all || body.empty()) break;
                end = body.size(), skip = 0;
            }
            std::string data;
            size_t start = 0;
            const std::string_view event(body.data(), end);
            while (start < event.size()) {
                size_t nl = event.find('\n', start);
                if (nl == std::string_view::npos) nl = event.size();
                std::string_view line = event.substr(start, nl - start);
                if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
                auto field = [&line](std::string_view name) {
                    if (line.rfind(name, 0) != 0 || line.size() <= name.size() || line[name.size()] != ':') return false;
                    line.remove_prefix(name.size() + 1);
                    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
                    return true;
                };
                if (field("data")) {
                    if (!data.empty()) data += '\n';
                    data += line;
                } else if (field("id")) {
                    mark.last_event_id = std::string(line);
                    mark.moved = true;
                } else if (field("retry") && !line.empty() && line.size() < 9 && line.find_first_not_of("0123456789") == std::string_view::npos) {
                    mark.retry = std::chrono::milliseconds(std::stol(std::string(line)));
                }
                start = nl + 1;
            }
            body.erase(0, end + skip);
            if (data.empty()) continue;  // a comment, an id or a retry hint
            if (auto m = parse_message(data); m && !id.empty() && m->id == id &&
                                              (m->type == message::kind::response || m->type == message::kind::error))
                answered = true;
            deliver(data);
        }
        return answered;
    }

    // Connects, sends one request and reads the answer's header into
    // `parser`. Returns what failed, or empty. `session`: the MCP-Session-Id sent.
    asio::awaitable<std::string> send_request(beast::tcp_stream& stream, beast::flat_buffer& buffer, http::response_parser<http::string_body>& parser,
                                              http::verb verb, std::string body, const std::string& traceparent,
                                              const std::string& last_event_id, std::string& session) {
        tcp::resolver resolver(co_await asio::this_coro::executor);
        auto [rec, results] = co_await resolver.async_resolve(url_.host, url_.port, tuple_awaitable);
        if (rec) co_return "cannot resolve " + url_.host + " (" + rec.message() + ")";
        stream.expires_after(options_.connect_timeout);
        auto [cec, ep] = co_await stream.async_connect(results, tuple_awaitable);
        if (cec) co_return "cannot connect to " + options_.url + " (" + cec.message() + ")";
        http::request<http::string_body> req{verb, url_.target, 11};
        req.set(http::field::host, url_.host + ":" + url_.port);
        req.set(http::field::user_agent, "tachyon");
        req.set(http::field::accept, verb == http::verb::get ? "text/event-stream" : "application/json, text/event-stream");
        for (const auto& [k, v] : options_.headers) req.set(k, v);
        if (!authorization_.empty()) req.set(http::field::authorization, authorization_);
        if (!traceparent.empty()) req.set("traceparent", traceparent);
        if (!last_event_id.empty()) req.set("Last-Event-ID", last_event_id);
        {
            std::lock_guard lock(mutex_);
            session = session_id_;
            if (!session.empty()) req.set("MCP-Session-Id", session);
            if (!version_.empty()) req.set("MCP-Protocol-Version", version_);
        }
        if (verb == http::verb::post) {
            req.set(http::field::content_type, "application/json");
            req.body() = std::move(body);
        }
        req.prepare_payload();
        stream.expires_after(options_.read_timeout);
        auto [wec, wn] = co_await http::async_write(stream, req, tuple_awaitable);
        if (wec) co_return "cannot send to " + options_.url + " (" + wec.message() + ")";
        parser.body_limit(options_.max_body_bytes);
        auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, tuple_awaitable);
        if (hec) co_return "no answer from " + options_.url + " (" + hec.message() + ")";
        co_return std::string();
    }

    // Reads an event stream until it ends or brings the answer to `id`;
    // returns whether it did.
    asio::awaitable<bool> read_events(beast::tcp_stream& stream, beast::flat_buffer& buffer, http::response_parser<http::string_body>& parser,
                                      const std::string& id, stream_mark& mark) {
        bool answered = false;
        while (!parser.is_done() && !answered) {
            stream.expires_after(options_.read_timeout);
            auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, tuple_awaitable);
            if (ec && ec != http::error::end_of_stream) break;
            answered = take_events(parser.get().body(), id, false, mark);
            if (ec) break;
        }
        if (!answered) answered = take_events(parser.get().body(), id, true, mark);
        co_return answered;
    }

    // A request's event stream broke before its answer: while the server
    // gave event ids, wait the delay it asked for and resume with GET and
    // Last-Event-ID (MCP 2025-11-25). Gives up after a few failed attempts
    // in a row, or when a resumed stream ends with nothing new.
    asio::awaitable<bool> resume_events(const std::string& id, stream_mark& mark) {
        constexpr int k_max_quiet_resumes = 3;
        asio::steady_timer pause(co_await asio::this_coro::executor);
        for (int quiet = 0; quiet < k_max_quiet_resumes && !mark.last_event_id.empty() && !closing_.load(); ++quiet) {
            pause.expires_after(mark.retry);
            co_await pause.async_wait(tuple_awaitable);
            beast::tcp_stream stream(co_await asio::this_coro::executor);
            beast::flat_buffer buffer;
            http::response_parser<http::string_body> parser;
            std::string session;
            const std::string failed = co_await send_request(stream, buffer, parser, http::verb::get, {}, {}, mark.last_event_id, session);
            if (!failed.empty()) {
                TACHYON_LOG(info, "mcp server " << options_.server << ": resuming the event stream after " << mark.last_event_id << ": " << failed);
                continue;
            }
            const auto& res = parser.get();
            if (res.result_int() / 100 != 2 || std::string(res[http::field::content_type]).rfind("text/event-stream", 0) != 0) {
                TACHYON_LOG(info, "mcp server " << options_.server << ": resuming the event stream after " << mark.last_event_id << ": HTTP "
                                                << res.result_int());
                co_return false;
            }
            mark.moved = false;
            if (co_await read_events(stream, buffer, parser, id, mark)) co_return true;
            if (!mark.moved) co_return false;  // the server has nothing more for it (a cancelled call)
            quiet = -1;                        // it went on, and broke again: the count starts again
        }
        co_return false;
    }

    // The session's own event stream (GET): what the server sends outside
    // any request, such as notifications/tools/list_changed. Opened once the
    // server gave a session id; a server that offers none (405, or another
    // refusal) is left alone; a stream that ends or breaks is opened again
    // after the server's retry delay, resumed from its last event id.
    asio::awaitable<void> listen() {
        constexpr int k_max_failed_listens = 3;
        stream_mark mark;
        asio::steady_timer pause(co_await asio::this_coro::executor);
        for (int failures = 0; failures < k_max_failed_listens && !closing_.load() && !dead_.load();) {
            beast::tcp_stream stream(co_await asio::this_coro::executor);
            beast::flat_buffer buffer;
            http::response_parser<http::string_body> parser;
            std::string session;
            const std::string failed = co_await send_request(stream, buffer, parser, http::verb::get, {}, {}, mark.last_event_id, session);
            if (failed.empty()) {
                const auto& res = parser.get();
                if (res.result_int() / 100 != 2 || std::string(res[http::field::content_type]).rfind("text/event-stream", 0) != 0) co_return;
                parser.body_limit(boost::none);  // a long-lived stream; each event is dropped once handed on
                mark.moved = false;
                co_await read_events(stream, buffer, parser, {}, mark);
                failures = mark.moved ? 0 : failures + 1;
            } else {
                ++failures;
            }
            pause.expires_after(mark.retry);
            co_await pause.async_wait(tuple_awaitable);
        }
    }

    asio::awaitable<void> exchange(http::verb verb, std::string body, std::string id, std::string traceparent = {}) {
        const std::string& who = options_.server;
        beast::tcp_stream stream(co_await asio::this_coro::executor);
        beast::flat_buffer buffer;
        http::response_parser<http::string_body> parser;
        std::string session;
        const std::string failed = co_await send_request(stream, buffer, parser, verb, std::move(body), traceparent, {}, session);
        if (!failed.empty()) co_return fail_request(id, failed);
        if (verb == http::verb::delete_) co_return;
        const auto& res = parser.get();
        const unsigned code = res.result_int();
        if (auto it = res.find("MCP-Session-Id"); it != res.end()) {
            bool opened = false;
            {
                std::lock_guard lock(mutex_);
                opened = session_id_.empty();
                if (opened) session_id_ = std::string(it->value());
            }
            if (opened) asio::co_spawn(io_, listen(), asio::detached);
        }
        if (code == 404 && !session.empty()) {
            TACHYON_LOG(info, "mcp server " << who << ": session " << session << " expired (HTTP 404); it will be initialized again");
            // Closing fails what waits on this session, this request too; the client initializes again.
            co_return end("session expired (HTTP 404)");
        }
        if (code == 202) co_return;  // a notification or response, accepted
        const std::string type(res[http::field::content_type]);
        if (code / 100 == 2 && type.rfind("text/event-stream", 0) == 0) {
            stream_mark mark;
            bool answered = co_await read_events(stream, buffer, parser, id, mark);
            if (!answered && !id.empty() && !mark.last_event_id.empty()) {
                stream.close();
                answered = co_await resume_events(id, mark);
            }
            if (!answered && !id.empty()) fail_request(id, "the event stream from " + options_.url + " ended without an answer");
            co_return;
        }
        stream.expires_after(options_.read_timeout);
        auto [bec, bn] = co_await http::async_read(stream, buffer, parser, tuple_awaitable);
        if (bec) co_return fail_request(id, "cannot read the answer from " + options_.url + " (" + bec.message() + ")");
        const std::string& text = parser.get().body();
        if (code / 100 != 2) co_return fail_request(id, "HTTP " + std::to_string(code) + " from " + options_.url + ": " + cut_text(text));
        if (type.rfind("application/json", 0) != 0)
            co_return fail_request(id, "answered with Content-Type '" + type + "' (expected application/json or text/event-stream)");
        if (!text.empty()) deliver(text);
    }

    http_options options_;
    http_url url_;
    transport_handlers handlers_;
    std::string authorization_;
    asio::io_context io_;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
    std::thread thread_;
    std::mutex mutex_;
    std::string session_id_, version_;
    std::atomic<bool> closing_{false}, dead_{false};
};

}  // namespace

result<http_url> parse_http_url(std::string_view url) {
    const std::string_view scheme = "http://";
    if (url.rfind(scheme, 0) != 0) {
        return make_error(errc::unsupported, "url '" + std::string(url) + "': expected http://host[:port]/path" +
                                                 (url.rfind("https://", 0) == 0 ? " (https is not supported)" : ""));
    }
    std::string_view rest = url.substr(scheme.size());
    const size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    http_url out;
    out.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
    if (authority.find('@') != std::string_view::npos)
        return make_error(errc::invalid_argument, "url '" + std::string(url) + "': credentials do not belong in a URL (use headers or bearer_env)");
    out.port = "80";
    if (!authority.empty() && authority.front() == '[') {  // [v6 address][:port]
        const size_t close = authority.find(']');
        if (close == std::string_view::npos) return make_error(errc::invalid_argument, "url '" + std::string(url) + "': unclosed '[' in the host");
        out.host = std::string(authority.substr(1, close - 1));
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') return make_error(errc::invalid_argument, "url '" + std::string(url) + "': expected ':port' after ']'");
            out.port = std::string(authority.substr(close + 2));
        }
    } else if (const size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
        out.host = std::string(authority.substr(0, colon));
        out.port = std::string(authority.substr(colon + 1));
    } else {
        out.host = std::string(authority);
    }
    if (out.host.empty() || out.port.empty() || out.port.find_first_not_of("0123456789") != std::string::npos)
        return make_error(errc::invalid_argument, "url '" + std::string(url) + "': expected http://host[:port]/path");
    return out;
}

std::unique_ptr<transport> make_http_transport(http_options options) {
    return std::make_unique<http_transport>(std::move(options));
}

}  // namespace tachyon::tools::mcp
