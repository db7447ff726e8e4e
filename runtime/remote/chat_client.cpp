#include "runtime/remote/chat_client.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <random>

#include "base/log.h"
#include "runtime/common/json_util.h"
#include "runtime/remote/sse_parser.h"

namespace tachyon::remote {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

std::string first_bytes(std::string_view s, size_t n = 300) {
    std::string out = json::sanitize_utf8(s.size() <= n ? s : s.substr(0, n));
    for (char& c : out)
        if (c == '\n' || c == '\r') c = ' ';
    return out + (s.size() > n ? "..." : "");
}

std::string seconds_text(std::chrono::milliseconds ms) {
    const int64_t v = ms.count();
    return v % 1000 == 0 ? std::to_string(v / 1000) + " s" : std::to_string(v) + " ms";
}

void append_message(std::string& out, const remote_message& m) {
    out += "{\"role\": ";
    json::append_quoted(out, m.role);
    out += ", \"content\": ";
    json::append_quoted(out, m.content);
    if (!m.tool_calls.empty()) {
        out += ", \"tool_calls\": [";
        for (size_t i = 0; i < m.tool_calls.size(); ++i) {
            const auto& c = m.tool_calls[i];
            if (i > 0) out += ", ";
            out += "{\"id\": ";
            json::append_quoted(out, c.id);
            out += ", \"type\": \"function\", \"function\": {\"name\": ";
            json::append_quoted(out, c.name);
            out += ", \"arguments\": ";
            json::append_quoted(out, c.arguments_json);
            out += "}}";
        }
        out += "]";
    }
    if (!m.tool_call_id.empty()) {
        out += ", \"tool_call_id\": ";
        json::append_quoted(out, m.tool_call_id);
    }
    out += "}";
}

// Retry-After in seconds (the HTTP-date form is rare for these servers: a default then).
std::optional<std::chrono::milliseconds> retry_after(std::string_view value) {
    int64_t s = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
    if (ec != std::errc() || s < 0) return std::nullopt;
    return std::chrono::milliseconds(std::min<int64_t>(s, 600) * 1000);
}

}  // namespace

std::string request_body(const remote_model& model, const turn_request& r) {
    // Key order is fixed and the messages come first after the model: a
    // later turn's body starts like the earlier ones up to the new messages.
    std::string out = "{\"model\": ";
    json::append_quoted(out, model.name);
    out += ", \"messages\": [";
    for (size_t i = 0; i < r.messages.size(); ++i) {
        if (i > 0) out += ", ";
        append_message(out, r.messages[i]);
    }
    out += "]";
    if (!r.tools.empty()) {
        out += ", \"tools\": [";
        for (size_t i = 0; i < r.tools.size(); ++i) out += (i > 0 ? ", " : "") + r.tools[i];
        out += "], \"tool_choice\": \"auto\", \"parallel_tool_calls\": true";
    }
    if (!r.response_schema_json.empty())
        out += ", \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"answer\", \"schema\": " + r.response_schema_json + "}}";
    out += ", \"temperature\": " + std::to_string(r.sampling.temperature);
    if (r.sampling.temperature > 0 && r.sampling.top_p < 1) out += ", \"top_p\": " + std::to_string(r.sampling.top_p);
    // Servers read the seed as a signed 64-bit integer.
    if (r.sampling.seed != 0) out += ", \"seed\": " + std::to_string(r.sampling.seed & 0x7fffffffffffffffULL);
    out += ", \"max_tokens\": " + std::to_string(std::max(1, r.max_tokens));
    if (!r.forced_tokens.empty()) {
        out += ", \"tachyon_forced_tokens\": [";
        for (size_t i = 0; i < r.forced_tokens.size(); ++i) out += (i > 0 ? "," : "") + std::to_string(r.forced_tokens[i]);
        out += "]";
    }
    out += ", \"stream\": true, \"stream_options\": {\"include_usage\": true}}";
    return out;
}

struct chat_stream::impl {
    asio::any_io_executor ex;
    remote_model model;
    endpoint where;
    std::optional<beast::tcp_stream> stream;
    asio::steady_timer backoff;
    bool cancelled = false;
    std::mt19937_64 rng{std::random_device{}()};

    impl(asio::any_io_executor e, remote_model m) : ex(e), model(std::move(m)), backoff(e) {}

    std::string who() const { return "remote model " + model.describe(); }
    error fail(errc code, const std::string& what) const { return make_error(code, who() + ": " + what); }

    // Backoff before retry `attempt` (1-based): 250 ms doubling, times a
    // jitter in [0.5, 1.5) so that clients that failed together do not
    // come back together; at least what Retry-After asked for.
    std::chrono::milliseconds backoff_for(int attempt, std::optional<std::chrono::milliseconds> asked) {
        const double base = 250.0 * static_cast<double>(1 << std::min(attempt - 1, 6));
        const double jitter = std::uniform_real_distribution<double>(0.5, 1.5)(rng);
        auto ms = std::chrono::milliseconds(static_cast<int64_t>(base * jitter));
        if (asked) ms = std::max(ms, *asked);
        return ms;
    }
};

chat_stream::chat_stream(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
chat_stream::~chat_stream() = default;

std::shared_ptr<chat_stream> chat_stream::create(asio::any_io_executor ex, remote_model model) {
    return std::shared_ptr<chat_stream>(new chat_stream(std::make_unique<impl>(ex, std::move(model))));
}

const remote_model& chat_stream::model() const { return impl_->model; }

void chat_stream::cancel() {
    impl_->cancelled = true;
    impl_->backoff.cancel();
    if (impl_->stream) {
        beast::error_code ec;
        impl_->stream->socket().shutdown(tcp::socket::shutdown_both, ec);
        impl_->stream->socket().close(ec);
    }
}

asio::awaitable<result<turn_result>> chat_stream::run(turn_request request, turn_callbacks cb) {
    auto self = shared_from_this();  // alive while the coroutine runs
    impl& s = *impl_;
    turn_result out;
    auto where = parse_endpoint(s.model.url);
    if (!where) co_return s.fail(where.err().code, where.err().message);
    s.where = *where;
    std::string authorization;
    if (!s.model.api_key_env.empty()) {
        const char* key = std::getenv(s.model.api_key_env.c_str());
        if (key == nullptr || *key == '\0')
            co_return s.fail(errc::invalid_argument, "api_key_env '" + s.model.api_key_env + "' is not set (expected the API key in that environment variable)");
        authorization = std::string("Bearer ") + key;
    }
    http::request<http::string_body> req{http::verb::post, s.where.base_target + "/chat/completions", 11};
    req.set(http::field::host, s.where.host + ":" + s.where.port);
    req.set(http::field::user_agent, "tachyon");
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream");
    if (!authorization.empty()) req.set(http::field::authorization, authorization);
    if (!request.session_id.empty()) req.set("X-Session-Id", request.session_id);
    if (!request.request_id.empty()) req.set("X-Request-Id", request.request_id);
    if (!request.traceparent.empty()) req.set("traceparent", request.traceparent);
    for (const auto& [k, v] : s.model.headers) req.set(k, v);
    req.body() = request_body(s.model, request);
    req.prepare_payload();

    const auto cancelled = [&]() -> result<turn_result> {
        out.finish_reason = "cancelled";
        return out;
    };
    tool_call_assembler calls;
    for (int attempt = 0;; ++attempt) {
        if (s.cancelled) co_return cancelled();
        if (attempt > 0) {
            // Only reached before the first token: nothing has been handed on yet.
            co_await s.backoff.async_wait(tuple_awaitable);
            if (s.cancelled) co_return cancelled();
        }
        ++out.n_attempts;
        const bool may_retry = attempt < s.model.max_retries;
        auto retry_in = [&](std::optional<std::chrono::milliseconds> asked) {
            s.backoff.expires_after(s.backoff_for(attempt + 1, asked));
        };

        tcp::resolver resolver(s.ex);
        auto [rec, endpoints] = co_await resolver.async_resolve(s.where.host, s.where.port, tuple_awaitable);
        if (rec) {
            if (may_retry) { retry_in(std::nullopt); continue; }
            co_return s.fail(errc::io_error, "cannot resolve " + s.where.host + ": " + rec.message());
        }
        s.stream.emplace(s.ex);
        s.stream->expires_after(s.model.timeouts.connect);
        auto [cec, ep] = co_await s.stream->async_connect(endpoints, tuple_awaitable);
        if (s.cancelled) co_return cancelled();
        if (cec) {
            if (may_retry) { retry_in(std::nullopt); continue; }
            co_return s.fail(cec == beast::error::timeout ? errc::timeout : errc::io_error,
                             cec == beast::error::timeout ? "no connection within " + seconds_text(s.model.timeouts.connect) + " (connect_timeout_s)"
                                                          : "cannot connect: " + cec.message() + " (after " + std::to_string(out.n_attempts) + " attempt(s))");
        }
        s.stream->expires_after(s.model.timeouts.first_token);
        auto [wec, wn] = co_await http::async_write(*s.stream, req, tuple_awaitable);
        if (s.cancelled) co_return cancelled();
        if (wec) {
            if (may_retry) { retry_in(std::nullopt); continue; }
            co_return s.fail(errc::io_error, "sending the request failed: " + wec.message());
        }
        beast::flat_buffer buffer;
        http::response_parser<http::buffer_body> parser;
        parser.body_limit(boost::none);
        auto [hec, hn] = co_await http::async_read_header(*s.stream, buffer, parser, tuple_awaitable);
        if (s.cancelled) co_return cancelled();
        if (hec) {
            if (hec == beast::error::timeout)
                co_return s.fail(errc::timeout, "no answer within " + seconds_text(s.model.timeouts.first_token) + " (timeout_s)");
            if (may_retry) { retry_in(std::nullopt); continue; }
            co_return s.fail(errc::io_error, "reading the response failed: " + hec.message());
        }
        const unsigned status = parser.get().result_int();
        char chunk[16384];
        if (status != 200) {
            // The first bytes of the body say why.
            std::string body;
            while (!parser.is_done() && body.size() < 2048) {
                parser.get().body().data = chunk;
                parser.get().body().size = sizeof chunk;
                auto [bec, bn] = co_await http::async_read(*s.stream, buffer, parser, tuple_awaitable);
                body.append(chunk, sizeof chunk - parser.get().body().size);
                if (bec && bec != http::error::need_buffer) break;
            }
            beast::error_code ignored;
            s.stream->socket().close(ignored);
            const auto asked = retry_after(std::string_view(parser.get()[http::field::retry_after]));
            if ((status == 429 || status == 503) && may_retry) {
                TACHYON_LOG(info, s.who() << ": answered " << status << ", retrying" << (asked ? " after Retry-After" : ""));
                retry_in(asked);
                continue;
            }
            co_return s.fail(status == 429 || status == 503 ? errc::resource_exhausted : status == 404 ? errc::not_found : errc::internal,
                             "answered " + std::to_string(status) + " " + std::string(parser.get().reason()) + ": " + first_bytes(body) +
                                 (status == 429 || status == 503 ? " (after " + std::to_string(out.n_attempts) + " attempt(s))" : ""));
        }

        // The event stream: from here nothing is retried.
        sse_parser sse;
        std::vector<std::string> events;
        bool done = false;
        auto handle = [&](const std::string& data) -> tachyon::status {
            auto c = parse_chunk(data);
            if (!c) return s.fail(c.err().code, c.err().message);
            if (c->done) {
                done = true;
                return {};
            }
            if (c->usage) out.usage = c->usage;
            if (!c->finish_reason.empty()) out.finish_reason = c->finish_reason;
            if (!c->content.empty()) {
                ++out.n_content;
                if (cb.on_content) cb.on_content(c->content);
            }
            std::vector<assembled_call> complete;
            for (const auto& f : c->tools) {
                ++out.n_content;
                calls.add(f, complete);
            }
            for (const auto& call : complete)
                if (cb.on_call) cb.on_call(call);
            return {};
        };
        while (!done && !parser.is_done()) {
            parser.get().body().data = chunk;
            parser.get().body().size = sizeof chunk;
            s.stream->expires_after(out.n_content == 0 ? s.model.timeouts.first_token : s.model.timeouts.idle);
            auto [rec2, rn] = co_await http::async_read(*s.stream, buffer, parser, tuple_awaitable);
            if (s.cancelled) co_return cancelled();
            const size_t got = sizeof chunk - parser.get().body().size;
            if (got > 0) {
                if (auto st = sse.feed(std::string_view(chunk, got), events); !st) co_return s.fail(st.err().code, st.err().message);
                for (const auto& e : events) {
                    if (done) break;
                    if (auto st = handle(e); !st) co_return st.err();
                }
                events.clear();
            }
            if (rec2 == http::error::need_buffer) continue;
            if (rec2 == beast::error::timeout)
                co_return s.fail(errc::timeout, out.n_content == 0
                                                    ? "no token within " + seconds_text(s.model.timeouts.first_token) + " (timeout_s)"
                                                    : "the stream went silent for " + seconds_text(s.model.timeouts.idle) + " (idle_timeout_s)");
            if (rec2 && rec2 != http::error::end_of_stream)
                co_return s.fail(errc::io_error, "the stream broke after " + std::to_string(sse.n_events()) + " event(s): " + rec2.message());
            if (rec2) break;
        }
        if (!done) {
            if (sse.finish(events))
                for (const auto& e : events)
                    if (auto st = handle(e); !st) co_return st.err();
            if (!done)
                co_return s.fail(errc::parse_error, "the stream ended without [DONE] after " + std::to_string(sse.n_events()) +
                                                        " event(s) (expected data: [DONE] as the last event)");
        }
        beast::error_code ignored;
        s.stream->socket().shutdown(tcp::socket::shutdown_both, ignored);
        s.stream->socket().close(ignored);
        break;
    }
    std::vector<assembled_call> complete;
    std::vector<tool_call_assembler::broken_call> broken;
    calls.finish(complete, broken);
    for (const auto& call : complete)
        if (cb.on_call) cb.on_call(call);
    for (const auto& b : broken)
        if (cb.on_call_error) cb.on_call_error(b.index, b.name, b.message);
    out.calls = calls.calls();
    if (out.finish_reason.empty()) out.finish_reason = "stop";
    co_return out;
}

}  // namespace tachyon::remote
