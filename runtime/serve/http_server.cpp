#include "runtime/serve/http_server.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <array>
#include <charconv>
#include <deque>
#include <future>
#include <list>
#include <optional>
#include <thread>

#include "base/log.h"
#include "runtime/common/async_flag.h"
#include "runtime/common/json_util.h"
#include "runtime/remote/remote_chat.h"
#include "runtime/serve/http_mcp.h"
#include "runtime/telemetry/run_trace.h"

namespace tachyon::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

using request_t = bhttp::request<bhttp::string_body>;
using response_t = bhttp::response<bhttp::string_body>;

// What shutdown may touch of a live connection; used on the connection's strand only.
struct session_ctl {
    asio::any_io_executor ex;
    beast::tcp_stream* stream = nullptr;  // null once the session ended
    bool busy = false;                    // between reading a request and finishing its response
    std::vector<std::weak_ptr<openai::chat_generation>> generations;
    bool linger = false;                  // a request was refused before its body was read
};

// Compares in time independent of where the strings differ.
bool constant_time_equal(std::string_view a, std::string_view b) {
    const size_t n = std::max(a.size(), b.size());
    unsigned diff = static_cast<unsigned>(a.size() ^ b.size());
    for (size_t i = 0; i < n; ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= static_cast<unsigned>(x ^ y);
    }
    return diff == 0;
}

std::vector<std::string_view> split_path(std::string_view path) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < path.size()) {
        if (path[i] == '/') {
            ++i;
            continue;
        }
        size_t j = path.find('/', i);
        if (j == std::string_view::npos) j = path.size();
        out.push_back(path.substr(i, j - i));
        i = j;
    }
    return out;
}

response_t make_response(const request_t& req, bhttp::status status, std::string body, std::string_view content_type) {
    response_t res{status, req.version()};
    res.set(bhttp::field::server, "tachyon");
    res.set(bhttp::field::content_type, content_type);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

response_t json_response(const request_t& req, bhttp::status status, std::string body) {
    return make_response(req, status, std::move(body), "application/json");
}

response_t error_response(const request_t& req, const openai::api_error& e) {
    auto res = json_response(req, static_cast<bhttp::status>(e.status), openai::error_json(e));
    if (e.status == 429) res.set(bhttp::field::retry_after, "1");
    if (e.status == 401) res.set(bhttp::field::www_authenticate, "Bearer");
    return res;
}

openai::api_error api_error_of(int status, std::string type, std::string message, std::string param = {}, std::string code = {}) {
    openai::api_error e;
    e.status = status;
    e.type = std::move(type);
    e.message = std::move(message);
    e.param = std::move(param);
    e.code = std::move(code);
    return e;
}

// SSE framing of one data line.
std::string sse_data(std::string_view json) {
    std::string out = "data: ";
    out += json;
    out += "\n\n";
    return out;
}

}  // namespace

bool is_loopback(const std::string& host) {
    if (host == "localhost") return true;
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(host, ec);
    return !ec && addr.is_loopback();
}

struct server::impl : std::enable_shared_from_this<impl> {
    server_options options;
    std::vector<metrics::model_entry> models;
    metrics& stats;
    run_registry* runs;
    asio::io_context io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
    std::optional<tcp::acceptor> acceptor;
    std::vector<std::thread> threads;
    uint16_t bound_port = 0;
    bool started = false, stopped = false;
    std::atomic<bool> stopping{false};
    std::atomic<int> n_sessions{0};
    std::atomic<int> n_chats{0};
    std::mutex ctl_mutex;
    std::list<std::weak_ptr<session_ctl>> ctls;

    impl(server_options o, std::vector<metrics::model_entry> m, metrics& s, run_registry* r)
        : options(std::move(o)), models(std::move(m)), stats(s), runs(r) {}

    awaitable<void> listen();
    awaitable<void> session(tcp::socket socket);
    awaitable<bool> handle(beast::tcp_stream& stream, request_t& req, session_ctl& ctl);
    awaitable<bool> write(beast::tcp_stream& stream, response_t res, std::string_view route);
    awaitable<bool> chat(beast::tcp_stream& stream, request_t& req, session_ctl& ctl);
    awaitable<bool> run_events(beast::tcp_stream& stream, request_t& req, std::shared_ptr<run_record> run);
    std::string models_json() const;
    void for_each_session(const std::function<void(session_ctl&)>& fn);
};

awaitable<bool> server::impl::write(beast::tcp_stream& stream, response_t res, std::string_view route) {
    if (stopping.load()) res.keep_alive(false);
    const bool keep = res.keep_alive();
    stats.count_request(route, static_cast<int>(res.result_int()));
    stream.expires_after(options.write_timeout);
    auto [ec, n] = co_await bhttp::async_write(stream, res, use_tuple);
    co_return !ec && keep;
}

std::string server::impl::models_json() const {
    std::string out = "{\"object\":\"list\",\"data\":[";
    for (size_t i = 0; i < models.size(); ++i) {
        if (i) out += ",";
        out += "{\"id\":" + json::quote(models[i].id) + ",\"object\":\"model\",\"created\":0,\"owned_by\":\"tachyon\"}";
    }
    if (options.remote)
        out += std::string(models.empty() ? "" : ",") + "{\"id\":" + json::quote(options.remote_id) +
               ",\"object\":\"model\",\"created\":0,\"owned_by\":" + json::quote(options.remote->url) + "}";
    out += "]}";
    return out;
}

awaitable<void> server::impl::listen() {
    for (;;) {
        auto [ec, socket] = co_await acceptor->async_accept(asio::make_strand(io), use_tuple);
        if (stopping.load() || ec == asio::error::operation_aborted) co_return;
        if (ec) {
            // Out of descriptors and the like: back off instead of spinning.
            TACHYON_LOG(warn, __func__ << ": accept: " << ec.message());
            asio::steady_timer t(io, std::chrono::milliseconds(50));
            co_await t.async_wait(use_tuple);
            continue;
        }
        auto ex = socket.get_executor();
        asio::co_spawn(ex, session(std::move(socket)), [](std::exception_ptr e) {
            if (!e) return;
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                TACHYON_LOG(error, "session: " << x.what());
            }
        });
    }
}

void server::impl::for_each_session(const std::function<void(session_ctl&)>& fn) {
    std::lock_guard lock(ctl_mutex);
    for (auto& w : ctls) {
        auto ctl = w.lock();
        if (!ctl) continue;
        asio::post(ctl->ex, [ctl, fn] { fn(*ctl); });
    }
}

awaitable<void> server::impl::session(tcp::socket socket) {
    auto self = shared_from_this();
    ++n_sessions;
    beast::tcp_stream stream(std::move(socket));
    auto ctl = std::make_shared<session_ctl>();
    ctl->ex = co_await asio::this_coro::executor;
    ctl->stream = &stream;
    std::list<std::weak_ptr<session_ctl>>::iterator slot;
    {
        std::lock_guard lock(ctl_mutex);
        slot = ctls.insert(ctls.end(), ctl);
    }
    struct cleanup {
        impl& s;
        std::shared_ptr<session_ctl> ctl;
        std::list<std::weak_ptr<session_ctl>>::iterator slot;
        ~cleanup() {
            ctl->stream = nullptr;
            {
                std::lock_guard lock(s.ctl_mutex);
                s.ctls.erase(slot);
            }
            --s.n_sessions;
        }
    } guard{*this, ctl, slot};

    // 413: answered before the body is read; the connection closes after it.
    auto too_large = [this](unsigned version) {
        request_t head;
        head.version(version);
        head.keep_alive(false);
        return error_response(head, api_error_of(413, "invalid_request_error", "request body exceeds " + std::to_string(options.body_limit) + " bytes"));
    };
    beast::flat_buffer buffer;
    try {
        for (;;) {
            if (stopping.load()) break;
            ctl->busy = false;
            bhttp::request_parser<bhttp::string_body> parser;
            parser.header_limit(options.header_limit);
            parser.body_limit(options.body_limit);
            stream.expires_after(options.idle_timeout);
            auto [ec, n] = co_await bhttp::async_read_header(stream, buffer, parser, use_tuple);
            if (ec == bhttp::error::header_limit) {
                request_t dummy;
                dummy.keep_alive(false);
                co_await write(stream, error_response(dummy, api_error_of(431, "invalid_request_error", "request headers exceed " + std::to_string(options.header_limit) + " bytes")), "other");
                break;
            }
            if (ec == bhttp::error::body_limit) {  // Content-Length over the limit, seen with the header
                co_await write(stream, too_large(parser.get().version()), "other");
                ctl->linger = true;
                break;
            }
            if (ec) break;  // closed, timed out, or not HTTP
            ctl->busy = true;
            const auto& head = parser.get();
            if (beast::iequals(head[bhttp::field::expect], "100-continue")) {
                bhttp::response<bhttp::empty_body> cont{bhttp::status::continue_, head.version()};
                stream.expires_after(options.write_timeout);
                auto [wec, wn] = co_await bhttp::async_write(stream, cont, use_tuple);
                if (wec) break;
            }
            stream.expires_after(options.read_timeout);
            std::tie(ec, n) = co_await bhttp::async_read(stream, buffer, parser, use_tuple);
            if (ec == bhttp::error::body_limit) {  // a chunked body grew past the limit
                co_await write(stream, too_large(head.version()), "other");
                ctl->linger = true;
                break;
            }
            if (ec) break;
            request_t req = parser.release();
            if (!co_await handle(stream, req, *ctl)) break;
        }
    } catch (const std::exception& e) {
        TACHYON_LOG(error, __func__ << ": " << e.what());
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    if (ctl->linger) {
        // The client may still be sending a body we refused: read it away
        // (bounded) so that closing does not reset the connection before
        // the client has read the error response.
        std::array<char, 8192> sink;
        stream.expires_after(std::chrono::seconds(2));
        for (size_t total = 0; total < (8u << 20);) {
            auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), use_tuple);
            if (ec) break;
            total += n;
        }
    }
    stream.close();
}

awaitable<bool> server::impl::handle(beast::tcp_stream& stream, request_t& req, session_ctl& ctl) {
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const auto parts = split_path(path);
    const auto method = req.method();
    auto not_allowed = [&](std::string_view route) -> awaitable<bool> {
        co_return co_await write(stream, error_response(req, api_error_of(405, "invalid_request_error", "method " + std::string(req.method_string()) + " not allowed on " + std::string(path))), route);
    };

    if (parts.size() == 1 && parts[0] == "healthz") {
        if (method != bhttp::verb::get && method != bhttp::verb::head) co_return co_await not_allowed("/healthz");
        std::string body = stopping.load() ? R"({"status":"stopping"})" : R"({"status":"ok"})";
        co_return co_await write(stream, json_response(req, bhttp::status::ok, std::move(body)), "/healthz");
    }
    if (!options.api_key.empty()) {
        const std::string_view auth(req[bhttp::field::authorization].data(), req[bhttp::field::authorization].size());
        constexpr std::string_view bearer = "Bearer ";
        const bool ok = auth.size() > bearer.size() && beast::iequals(auth.substr(0, bearer.size()), bearer) &&
                        constant_time_equal(auth.substr(bearer.size()), options.api_key);
        if (!ok)
            co_return co_await write(stream, error_response(req, api_error_of(401, "authentication_error", "missing or invalid API key (expected 'Authorization: Bearer <key>')", {}, "invalid_api_key")), "unauthorized");
    }
    if (parts.size() == 1 && parts[0] == "mcp" && options.mcp) co_return co_await options.mcp->serve(stream, req, stopping.load());
    if (parts.size() == 1 && parts[0] == "metrics") {
        if (method != bhttp::verb::get) co_return co_await not_allowed("/metrics");
        // Computed before co_await: g++ 12 miscompiles conditional temporaries inside an await expression.
        run_state_counts counts;
        if (runs) counts = runs->counts();
        std::string text = stats.render(models, counts);
        co_return co_await write(stream, make_response(req, bhttp::status::ok, std::move(text), "text/plain; version=0.0.4"), "/metrics");
    }
    if (parts.size() >= 2 && parts[0] == "v1" && parts[1] == "models") {
        if (method != bhttp::verb::get) co_return co_await not_allowed("/v1/models");
        if (parts.size() == 2) co_return co_await write(stream, json_response(req, bhttp::status::ok, models_json()), "/v1/models");
        for (const auto& m : models)
            if (parts.size() == 3 && m.id == parts[2])
                co_return co_await write(stream, json_response(req, bhttp::status::ok, "{\"id\":" + json::quote(m.id) + ",\"object\":\"model\",\"created\":0,\"owned_by\":\"tachyon\"}"), "/v1/models/{id}");
        const std::string name(parts.size() > 2 ? parts[2] : std::string_view());
        co_return co_await write(stream, error_response(req, api_error_of(404, "invalid_request_error", "model '" + name + "' not found", "model", "model_not_found")), "/v1/models/{id}");
    }
    if (parts.size() == 3 && parts[0] == "v1" && parts[1] == "chat" && parts[2] == "completions") {
        if (method != bhttp::verb::post) co_return co_await not_allowed("/v1/chat/completions");
        co_return co_await chat(stream, req, ctl);
    }
    if (parts.size() >= 2 && parts[0] == "v1" && parts[1] == "runs" && runs) {
        if (parts.size() == 2) {
            if (method == bhttp::verb::get) {
                std::string query(target.substr(std::min(target.size(), path.size() + 1)));
                auto page = co_await runs->async_list_json(std::move(query));
                if (!page) co_return co_await write(stream, error_response(req, openai::to_api_error(page.err())), "/v1/runs");
                std::string out = std::move(page).value();
                co_return co_await write(stream, json_response(req, bhttp::status::ok, std::move(out)), "/v1/runs");
            }
            if (method != bhttp::verb::post) co_return co_await not_allowed("/v1/runs");
            if (stopping.load())
                co_return co_await write(stream, error_response(req, api_error_of(503, "server_error", "the server is shutting down")), "/v1/runs");
            std::string traceparent(req["traceparent"]);
            auto run = co_await runs->async_start(req.body(), std::move(traceparent));
            if (!run) co_return co_await write(stream, error_response(req, openai::to_api_error(run.err())), "/v1/runs");
            co_return co_await write(stream, json_response(req, bhttp::status::created, (*run)->status_json()), "/v1/runs");
        }
        std::string id(parts[2]);
        auto run = co_await runs->async_find(id);
        const std::string route = parts.size() == 3 ? "/v1/runs/{id}" : "/v1/runs/{id}/" + std::string(parts[3]);
        if (!run)
            co_return co_await write(stream, error_response(req, api_error_of(404, "not_found_error", "run '" + std::string(parts[2]) + "' not found", "id")), route);
        if (parts.size() == 3) {
            if (method != bhttp::verb::get) co_return co_await not_allowed(route);
            co_return co_await write(stream, json_response(req, bhttp::status::ok, run->status_json()), route);
        }
        if (parts.size() == 4 && parts[3] == "events") {
            if (method != bhttp::verb::get) co_return co_await not_allowed(route);
            co_return co_await run_events(stream, req, run);
        }
        if (parts.size() == 4 && parts[3] == "cancel") {
            if (method != bhttp::verb::post) co_return co_await not_allowed(route);
            co_await runs->async_cancel(run);
            co_return co_await write(stream, json_response(req, bhttp::status::accepted, run->status_json()), route);
        }
        // Durable runs: continue from the journal, with a person's decision on a parked call.
        if (parts.size() == 4 && (parts[3] == "resume" || parts[3] == "decide" || parts[3] == "approve" || parts[3] == "reject")) {
            if (method != bhttp::verb::post) co_return co_await not_allowed(route);
            if (stopping.load())
                co_return co_await write(stream, error_response(req, api_error_of(503, "server_error", "the server is shutting down")), route);
            std::vector<call_decision> decisions;
            if (parts[3] != "resume") {
                auto d = run_registry::parse_decision(req.body(), parts[3]);
                if (!d) co_return co_await write(stream, error_response(req, openai::to_api_error(d.err())), route);
                decisions.push_back(std::move(d).value());
            }
            auto resumed = co_await runs->async_resume(id, std::move(decisions));
            if (!resumed) {
                if (resumed.err().code == errc::unsupported)  // running: not now
                    co_return co_await write(stream, error_response(req, api_error_of(409, "conflict_error", resumed.err().message, "id")), route);
                co_return co_await write(stream, error_response(req, openai::to_api_error(resumed.err())), route);
            }
            co_return co_await write(stream, json_response(req, bhttp::status::accepted, (*resumed)->status_json()), route);
        }
    }
    co_return co_await write(stream, error_response(req, api_error_of(404, "not_found_error", "no route for " + std::string(req.method_string()) + " " + std::string(path))), "other");
}

awaitable<bool> server::impl::chat(beast::tcp_stream& stream, request_t& req, session_ctl& ctl) {
    constexpr std::string_view route = "/v1/chat/completions";
    auto parsed = openai::parse_chat_request(req.body());
    if (!parsed) co_return co_await write(stream, error_response(req, openai::to_api_error(parsed.err())), route);
    const metrics::model_entry* model = nullptr;
    for (const auto& m : models)
        if (m.id == parsed->model) model = &m;
    const bool proxied = !model && options.remote && parsed->model == options.remote_id;
    if (!model && !proxied) {
        std::string known;
        for (const auto& m : models) known += (known.empty() ? "" : ", ") + m.id;
        if (options.remote) known += (known.empty() ? "" : ", ") + options.remote_id;
        co_return co_await write(stream, error_response(req, api_error_of(404, "invalid_request_error", "model '" + parsed->model + "' not found (served: " + known + ")", "model", "model_not_found")), route);
    }
    if (stopping.load())
        co_return co_await write(stream, error_response(req, api_error_of(503, "server_error", "the server is shutting down")), route);
    if (n_chats.fetch_add(1) >= options.max_chat_requests) {
        n_chats.fetch_sub(1);
        co_return co_await write(stream, error_response(req, api_error_of(429, "rate_limit_error", "too many chat completions in progress (at most " + std::to_string(options.max_chat_requests) + "); retry shortly", {}, "rate_limit_exceeded")), route);
    }
    struct chat_slot {
        impl& s;
        ~chat_slot() { s.n_chats.fetch_sub(1); }
    } slot_guard{*this};

    // Tracing: the completion as one chat span, a child of the request's traceparent.
    std::shared_ptr<telemetry::tracer> tracer = options.tracer;
    std::shared_ptr<telemetry::chat_span_info> span_info;
    telemetry::span_start span_where;
    if (tracer) {
        span_where = tracer->start_root(std::string(req["traceparent"]));
        span_info = std::make_shared<telemetry::chat_span_info>();
        span_info->model = parsed->model;
        span_info->remote = proxied;
        span_info->provider = proxied ? options.remote->provider : "tachyon";  // a passed-on completion: the backend's
        span_info->temperature = parsed->temperature;
        span_info->top_p = parsed->top_p;
        if (parsed->max_tokens) span_info->max_tokens = *parsed->max_tokens;
        span_info->seed = parsed->seed;
        span_info->start = std::chrono::steady_clock::now();
    }

    auto ex = co_await asio::this_coro::executor;
    const bool streamed = parsed->stream;
    const bool include_usage = parsed->include_usage;
    // The local engine's generation, or one passed on to the remote server: the same deltas either way.
    std::shared_ptr<openai::chat_generation> local;
    std::shared_ptr<remote::remote_chat> passed_on;
    if (proxied) {
        std::string session;
        if (auto it = req.find("X-Session-Id"); it != req.end()) session = std::string(it->value());
        // The backend continues this completion's span, or the caller's trace without tracing here.
        std::string traceparent = tracer ? telemetry::format_traceparent(span_where.context) : std::string(req["traceparent"]);
        passed_on = remote::remote_chat::create(*options.remote, std::move(parsed).value(), options.remote_id, ex, options.generation, session,
                                                std::move(traceparent));
    } else {
        auto gen = openai::chat_generation::create(model->host, std::move(parsed).value(), model->id, ex, options.generation);
        if (!gen) co_return co_await write(stream, error_response(req, openai::to_api_error(gen.err())), route);
        local = *gen;
        std::erase_if(ctl.generations, [](const auto& w) { return w.expired(); });
        ctl.generations.push_back(local);
    }
    const auto cancel_generation = [&] {
        if (local) local->cancel();
        else passed_on->cancel();
    };

    // Shared with the callbacks, which may outlive this coroutine (client gone).
    struct shared_state {
        explicit shared_state(const asio::any_io_executor& e) : signal(e, asio::steady_timer::time_point::max()), done(e) {}
        asio::steady_timer signal;  // cancelled when `chunks` grows
        async_flag done;
        std::deque<std::string> chunks;
        bool first_token = false;
        std::optional<result<openai::completion>> out;
    };
    auto st = std::make_shared<shared_state>(ex);
    stats.chat_started();
    const openai::completion head = local ? local->head() : passed_on->head();
    metrics* m = &stats;
    auto on_delta = [st, m, head, streamed, span_info](const openai::delta& d) {
        if (!d.role && !st->first_token) {
            st->first_token = true;
            m->chat_first_token();
            if (span_info) span_info->first_token = std::chrono::steady_clock::now();
        }
        if (!streamed) return;
        st->chunks.push_back(sse_data(openai::chunk_json(head, d)));
        st->signal.cancel();
    };
    const bool local_error = local != nullptr;  // a remote server's failure is a bad gateway
    auto on_done = [st, m, head, streamed, include_usage, local_error, tracer, span_info, span_where](result<openai::completion> c) {
        const int prompt = c ? c->tokens.prompt_tokens : 0;
        m->chat_finished(st->first_token, prompt, c ? c->tokens.completion_tokens : 0, c ? c->tokens.cached_tokens : 0);
        if (span_info) {
            span_info->end = std::chrono::steady_clock::now();
            if (c) {
                span_info->response_id = c->id;
                span_info->input_tokens = c->tokens.prompt_tokens;
                span_info->output_tokens = c->tokens.completion_tokens;
                span_info->cached_tokens = c->tokens.cached_tokens;
                span_info->finish_reason = c->finish_reason;
            } else {
                span_info->error = c.err().message;
            }
            tracer->end(telemetry::chat_completion_span(*tracer, span_where, *span_info));
        }
        if (streamed) {
            if (c) {
                openai::delta last;
                last.finish_reason = c->finish_reason;
                st->chunks.push_back(sse_data(openai::chunk_json(head, last)));
                if (include_usage) st->chunks.push_back(sse_data(openai::usage_chunk_json(head, c->tokens)));
            } else {
                st->chunks.push_back(sse_data(openai::error_json(api_error_of(local_error ? 500 : 502, "server_error", c.err().message))));
            }
            st->chunks.push_back("data: [DONE]\n\n");
        }
        st->out = std::move(c);
        st->done.set();
        st->signal.cancel();
    };
    if (local) local->start(on_delta, on_done);
    else passed_on->start(on_delta, on_done);

    if (!streamed) {
        // Nothing is written until the completion is done, so a client that
        // goes away is noticed by watching the socket: readable with nothing
        // to read is the peer's close (a pipelined next request is data, left
        // in place for the next read; a client that shuts down its sending
        // side after the request counts as gone).
        std::weak_ptr<openai::chat_generation> weak_gen = local;
        std::weak_ptr<remote::remote_chat> weak_passed = passed_on;
        auto& socket = stream.socket();
        socket.async_wait(tcp::socket::wait_read, [weak_gen, weak_passed, &socket](boost::system::error_code ec) {
            if (ec) return;  // cancelled: the completion finished first
            char byte = 0;
            boost::system::error_code peek_ec;
            const size_t n = socket.receive(asio::buffer(&byte, 1), tcp::socket::message_peek, peek_ec);
            if (peek_ec || n == 0) {  // the client is gone: stop decoding for it
                if (auto g = weak_gen.lock()) g->cancel();
                if (auto p = weak_passed.lock()) p->cancel();
            }
        });
        co_await st->done.wait();
        boost::system::error_code ignored;
        socket.cancel(ignored);
        if (!*st->out) co_return co_await write(stream, error_response(req, api_error_of(local ? 500 : 502, "server_error", st->out->err().message)), route);
        co_return co_await write(stream, json_response(req, bhttp::status::ok, openai::completion_json(**st->out)), route);
    }

    bhttp::response<bhttp::empty_body> res{bhttp::status::ok, req.version()};
    res.set(bhttp::field::server, "tachyon");
    res.set(bhttp::field::content_type, "text/event-stream");
    res.set(bhttp::field::cache_control, "no-cache");
    res.chunked(true);
    res.keep_alive(req.keep_alive() && !stopping.load());
    const bool keep = res.keep_alive();
    stats.count_request(route, 200);
    bhttp::response_serializer<bhttp::empty_body> sr{res};
    stream.expires_after(options.write_timeout);
    auto [ec, n] = co_await bhttp::async_write_header(stream, sr, use_tuple);
    for (;;) {
        if (ec) {
            cancel_generation();  // the client is gone: stop decoding for it
            co_return false;
        }
        if (!st->chunks.empty()) {
            std::string batch;
            while (!st->chunks.empty()) {
                batch += st->chunks.front();
                st->chunks.pop_front();
            }
            stream.expires_after(options.write_timeout);
            std::tie(ec, n) = co_await asio::async_write(stream, bhttp::make_chunk(asio::buffer(batch)), use_tuple);
            continue;
        }
        if (st->done.is_set()) break;
        co_await st->signal.async_wait(use_tuple);
    }
    stream.expires_after(options.write_timeout);
    std::tie(ec, n) = co_await asio::async_write(stream, bhttp::make_chunk_last(), use_tuple);
    co_return !ec && keep;
}

awaitable<bool> server::impl::run_events(beast::tcp_stream& stream, request_t& req, std::shared_ptr<run_record> run) {
    const std::string route = "/v1/runs/{id}/events";
    int64_t from = 0;
    if (auto it = req.find("Last-Event-ID"); it != req.end()) {
        const std::string_view v(it->value().data(), it->value().size());
        int64_t last = 0;
        auto [ptr, perr] = std::from_chars(v.data(), v.data() + v.size(), last);
        if (perr != std::errc() || ptr != v.data() + v.size() || last < -1)
            co_return co_await write(stream, error_response(req, api_error_of(400, "invalid_request_error", "Last-Event-ID: expected an event id (an integer), got '" + std::string(v) + "'", "Last-Event-ID")), route);
        from = last + 1;
    }
    auto ex = co_await asio::this_coro::executor;
    auto signal = std::make_shared<asio::steady_timer>(ex);
    std::weak_ptr<asio::steady_timer> weak = signal;
    auto wake = [ex, weak] {
        asio::post(ex, [weak] {
            if (auto s = weak.lock()) s->cancel();
        });
    };

    bhttp::response<bhttp::empty_body> res{bhttp::status::ok, req.version()};
    res.set(bhttp::field::server, "tachyon");
    res.set(bhttp::field::content_type, "text/event-stream");
    res.set(bhttp::field::cache_control, "no-cache");
    res.chunked(true);
    res.keep_alive(req.keep_alive() && !stopping.load());
    const bool keep = res.keep_alive();
    stats.count_request(route, 200);
    bhttp::response_serializer<bhttp::empty_body> sr{res};
    stream.expires_after(options.write_timeout);
    auto [ec, n] = co_await bhttp::async_write_header(stream, sr, use_tuple);
    std::vector<std::pair<int64_t, std::string>> events;
    while (!ec) {
        events.clear();
        bool done = false;
        run->read_events(from, events, done, wake);
        if (!events.empty()) {
            std::string batch;
            for (const auto& [seq, line] : events) batch += "id: " + std::to_string(seq) + "\ndata: " + line + "\n\n";
            from = events.back().first + 1;
            stream.expires_after(options.write_timeout);
            std::tie(ec, n) = co_await asio::async_write(stream, bhttp::make_chunk(asio::buffer(batch)), use_tuple);
            continue;
        }
        if (done) break;  // during a shutdown too: the run has until the deadline to end
        signal->expires_after(options.heartbeat);
        auto [wec] = co_await signal->async_wait(use_tuple);
        if (!wec) {
            // Quiet for a while: a comment line keeps proxies and clients from timing out.
            stream.expires_after(options.write_timeout);
            const std::string ping = ": ping\n\n";
            std::tie(ec, n) = co_await asio::async_write(stream, bhttp::make_chunk(asio::buffer(ping)), use_tuple);
        }
    }
    if (ec) co_return false;
    stream.expires_after(options.write_timeout);
    std::tie(ec, n) = co_await asio::async_write(stream, bhttp::make_chunk_last(), use_tuple);
    co_return !ec && keep && !stopping.load();
}

server::server(server_options options, std::vector<metrics::model_entry> models, metrics& m, run_registry* runs)
    : impl_(std::make_shared<impl>(std::move(options), std::move(models), m, runs)) {}

server::~server() { shutdown(); }

uint16_t server::port() const { return impl_->bound_port; }

status server::start() {
    impl& s = *impl_;
    if (s.started) return make_error(errc::invalid_argument, "server already started");
    if (!is_loopback(s.options.host) && s.options.api_key.empty())
        return make_error(errc::invalid_argument, "--host " + s.options.host + ": binding to a non-loopback address requires an API key (--api-key-file)");
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(s.options.host == "localhost" ? "127.0.0.1" : s.options.host, ec);
    if (ec) return make_error(errc::invalid_argument, "--host " + s.options.host + ": not an IP address");
    tcp::endpoint ep(addr, s.options.port);
    tcp::acceptor a(s.io);
    const std::string where = s.options.host + ":" + std::to_string(s.options.port);
    if (a.open(ep.protocol(), ec); ec) return make_error(errc::io_error, "listen on " + where + ": " + ec.message());
    (void)a.set_option(asio::socket_base::reuse_address(true), ec);
    if (a.bind(ep, ec); ec) return make_error(errc::io_error, "listen on " + where + ": " + ec.message());
    if (a.listen(asio::socket_base::max_listen_connections, ec); ec) return make_error(errc::io_error, "listen on " + where + ": " + ec.message());
    s.bound_port = a.local_endpoint().port();
    s.acceptor.emplace(std::move(a));
    s.work.emplace(s.io.get_executor());
    asio::co_spawn(s.io, s.listen(), asio::detached);
    for (int i = 0; i < std::max(1, s.options.n_threads); ++i) s.threads.emplace_back([&s] { s.io.run(); });
    s.started = true;
    return {};
}

void server::shutdown() {
    impl& s = *impl_;
    if (!s.started || s.stopped) return;
    s.stopped = true;
    // Stage 1: stop accepting, close idle connections, let requests and runs
    // in flight finish (event streams follow their runs to the end).
    s.stopping.store(true);
    std::promise<void> closed;
    asio::post(s.io, [&s, &closed] {
        boost::system::error_code ec;
        if (s.acceptor) s.acceptor->close(ec);
        closed.set_value();
    });
    closed.get_future().wait();
    // An MCP session's GET stream waits for messages, not for a request to finish.
    if (s.options.mcp) s.options.mcp->end_get_streams();
    s.for_each_session([](session_ctl& c) {
        if (!c.busy && c.stream) c.stream->cancel();
    });
    const auto deadline = std::chrono::steady_clock::now() + s.options.shutdown_deadline;
    while ((s.n_sessions.load() > 0 || (s.runs && s.runs->n_active() > 0)) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // Stage 2: cancel what is left; runs end (journals closed) before the threads stop.
    if (s.runs) s.runs->cancel_all();
    if (s.options.mcp) s.options.mcp->shutdown();  // MCP calls cancelled, their streams ended
    s.for_each_session([](session_ctl& c) {
        for (auto& g : c.generations)
            if (auto gen = g.lock()) gen->cancel();
        if (c.stream) c.stream->close();
    });
    const auto hard_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (s.n_sessions.load() > 0 && std::chrono::steady_clock::now() < hard_deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (s.runs && !s.runs->wait_idle(s.options.shutdown_deadline)) TACHYON_LOG(warn, "shutdown: agent runs still going after the deadline");
    s.work.reset();
    s.io.stop();
    for (auto& t : s.threads) t.join();
    s.threads.clear();
    // A request still waiting on the database gets its answer on the
    // database's thread, which hands it to this server's executor: that
    // thread ends now, while the executor exists (the answers stay queued
    // on the stopped io_context and go with it).
    if (s.runs) s.runs->close_database();
}

}  // namespace tachyon::http
