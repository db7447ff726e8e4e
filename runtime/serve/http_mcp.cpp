#include "runtime/serve/http_mcp.h"

#include <simdjson.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include "base/log.h"
#include "runtime/common/json_util.h"
#include "tools/mcp/json_rpc.h"
#include "tools/mcp/mcp_client.h"

namespace tachyon::http {
// The same aliases as http_server.cpp's (a unity batch may hold both).
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

using mcp_clock = std::chrono::steady_clock;
constexpr auto mcp_use_tuple = asio::as_tuple(asio::use_awaitable);

constexpr int64_t k_mcp_parse_error = -32700;
constexpr int64_t k_mcp_invalid_request = -32600;
constexpr int64_t k_mcp_server_error = -32000;

constexpr size_t k_mcp_stream_history = 256;  // events kept per stream, for a client that resumes
constexpr size_t k_mcp_kept_streams = 32;     // answered POST streams kept per session, for the same

// One event stream of a session: the answer to one POST request (numbers
// 1, 2, ...: the call's progress notifications, then its response), or the
// session's standalone stream (number 0, read with GET /mcp: messages tied
// to no request, such as notifications/tools/list_changed). Its events are
// numbered from 1; an event's SSE id is "<stream>-<event>", unique in the
// session. The last k_mcp_stream_history events are kept, so that a client
// whose connection broke resumes with GET and Last-Event-ID. One connection
// writes a stream at a time: a newer one (a resumption) takes it over and
// the older one ends. Workers push; the writing coroutine reads on its strand.
struct mcp_channel {
    uint64_t number = 0;
    std::mutex mutex;
    std::deque<std::string> history;  // events first_event, first_event + 1, ...
    uint64_t first_event = 1;
    bool answered = false;  // the response is in `history`
    bool closed = false;    // no response will come: cancelled, or the session ended
    uint64_t delivered = 0; // the last event a connection was sent
    uint64_t writer = 0;    // counts the connections that took the stream; the last one writes
    std::function<void()> wake;  // posts to the writing connection's strand

    uint64_t last_event_locked() const { return first_event + history.size() - 1; }  // 0: none yet
    bool finished() {
        std::lock_guard lock(mutex);
        return answered || closed;
    }
    void push(std::string m, bool response) {
        std::function<void()> w;
        {
            std::lock_guard lock(mutex);
            if (answered || closed) return;
            history.push_back(std::move(m));
            if (history.size() > k_mcp_stream_history) {
                history.pop_front();
                ++first_event;
            }
            answered = response;
            w = wake;
        }
        if (w) w();
    }
    void close() {
        std::function<void()> w;
        {
            std::lock_guard lock(mutex);
            closed = true;
            w = wake;
        }
        if (w) w();
    }
    // Makes the caller the stream's writer; returns its turn. The writer
    // before it is woken, finds it has been replaced, and ends its response.
    uint64_t attach(std::function<void()> w) {
        std::function<void()> before;
        uint64_t turn;
        {
            std::lock_guard lock(mutex);
            before = std::move(wake);
            wake = std::move(w);
            turn = ++writer;
        }
        if (before) before();
        return turn;
    }
    void detach(uint64_t turn) {
        std::lock_guard lock(mutex);
        if (writer == turn) wake = nullptr;
    }
    bool has_writer() {
        std::lock_guard lock(mutex);
        return static_cast<bool>(wake);
    }
};

std::string mcp_event_id(uint64_t stream, uint64_t event) { return std::to_string(stream) + "-" + std::to_string(event); }

// "3-17" -> {3, 17}; nullopt for anything else.
std::optional<std::pair<uint64_t, uint64_t>> parse_mcp_event_id(std::string_view id) {
    const size_t dash = id.find('-');
    if (dash == std::string_view::npos || dash == 0 || dash + 1 == id.size()) return std::nullopt;
    auto number = [](std::string_view d) -> std::optional<uint64_t> {
        if (d.size() > 18 || d.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
        return std::stoull(std::string(d));
    };
    auto stream = number(id.substr(0, dash)), event = number(id.substr(dash + 1));
    if (!stream || !event) return std::nullopt;
    return std::pair{*stream, *event};
}

struct mcp_session {
    std::string id;
    std::string version;
    std::unique_ptr<mcp_server> server;
    std::mutex mutex;
    mcp_clock::time_point last_used = mcp_clock::now();
    std::map<std::string, std::shared_ptr<mcp_channel>> open;     // request id -> the stream answering it, until answered
    std::map<uint64_t, std::shared_ptr<mcp_channel>> streams;     // POST streams by number, the latest kept for resumption
    std::shared_ptr<mcp_channel> standalone = std::make_shared<mcp_channel>();  // number 0
    uint64_t n_streams = 0;
    bool ended = false;

    void touch() {
        std::lock_guard lock(mutex);
        last_used = mcp_clock::now();
    }
    bool idle_since(mcp_clock::time_point t) {
        std::lock_guard lock(mutex);
        std::erase_if(open, [](const auto& kv) { return kv.second->finished(); });
        return open.empty() && !standalone->has_writer() && last_used < t;
    }
    // A new POST stream, kept for resumption; the oldest answered ones give way.
    std::shared_ptr<mcp_channel> new_stream_locked() {
        auto c = std::make_shared<mcp_channel>();
        c->number = ++n_streams;
        streams[c->number] = c;
        for (auto it = streams.begin(); streams.size() > k_mcp_kept_streams && it != streams.end();)
            it = it->second->finished() ? streams.erase(it) : std::next(it);
        return c;
    }
    // Cancels the calls, waits for them and ends their streams. Blocks.
    void end() {
        {
            std::lock_guard lock(mutex);
            if (ended) return;
            ended = true;
        }
        server->shutdown();
        std::map<std::string, std::shared_ptr<mcp_channel>> left;
        std::map<uint64_t, std::shared_ptr<mcp_channel>> kept;
        {
            std::lock_guard lock(mutex);
            left.swap(open);
            kept.swap(streams);
        }
        for (auto& [id, c] : left) c->close();
        for (auto& [n, c] : kept) c->close();
        standalone->close();
    }
};

std::string random_mcp_session_id() {
    std::random_device rd;
    std::string out;
    static constexpr char hex[] = "0123456789abcdef";
    for (int i = 0; i < 4; ++i) {
        uint32_t v = rd();
        for (int j = 0; j < 8; ++j, v >>= 4) out += hex[v & 15];
    }
    return out;
}

bool mcp_accepts(const mcp_endpoint::request_t& req, std::string_view type) {
    const auto it = req.find(bhttp::field::accept);
    if (it == req.end()) return type == "application/json";
    const std::string_view v(it->value().data(), it->value().size());
    return v.find(type) != std::string_view::npos || v.find("*/*") != std::string_view::npos;
}

}  // namespace

bool is_loopback_origin(std::string_view origin) {
    const size_t scheme = origin.find("://");
    if (scheme == std::string_view::npos) return false;
    std::string_view rest = origin.substr(scheme + 3);
    rest = rest.substr(0, rest.find('/'));
    std::string host;
    if (!rest.empty() && rest.front() == '[') {
        const size_t close = rest.find(']');
        if (close == std::string_view::npos) return false;
        host = std::string(rest.substr(1, close - 1));
    } else {
        host = std::string(rest.substr(0, rest.find(':')));
    }
    if (host == "localhost") return true;
    boost::system::error_code ec;
    const auto addr = asio::ip::make_address(host, ec);
    return !ec && addr.is_loopback();
}

struct mcp_endpoint::impl {
    mcp_endpoint_options options;
    asio::thread_pool workers;
    asio::thread_pool closer{1};  // ends sessions off the I/O threads (they wait for their calls)
    mutable std::mutex mutex;
    std::map<std::string, std::shared_ptr<mcp_session>> sessions;
    bool stopped = false;

    explicit impl(mcp_endpoint_options o) : options(std::move(o)), workers(static_cast<size_t>(std::max(1, options.n_workers))) {
        options.server.pool = &workers;
        options.server.tools_list_changed = true;  // notify() sends it on the standalone stream
    }

    void end_later(std::shared_ptr<mcp_session> s) {
        asio::post(closer, [s] { s->end(); });
    }

    std::shared_ptr<mcp_session> find(const std::string& id) {
        std::lock_guard lock(mutex);
        auto it = sessions.find(id);
        return it == sessions.end() ? nullptr : it->second;
    }

    // A new session; an error message when the limit is reached.
    result<std::shared_ptr<mcp_session>> open_session() {
        std::vector<std::shared_ptr<mcp_session>> expired;
        std::lock_guard lock(mutex);
        if (stopped) return make_error(errc::unsupported, "the server is shutting down");
        const auto cutoff = mcp_clock::now() - options.session_idle;
        for (auto it = sessions.begin(); it != sessions.end();) {
            if (it->second->idle_since(cutoff)) {
                end_later(it->second);
                it = sessions.erase(it);
            } else {
                ++it;
            }
        }
        if (sessions.size() >= options.max_sessions)
            return make_error(errc::resource_exhausted, "too many MCP sessions open (at most " + std::to_string(options.max_sessions) +
                                                            "); end one with DELETE /mcp or retry later");
        auto s = std::make_shared<mcp_session>();
        s->id = random_mcp_session_id();
        // Answers go to their POST's stream; what the server sends on its own, to the standalone one.
        auto server = mcp_server::make(options.server, [standalone = s->standalone](std::string m) { standalone->push(std::move(m), false); });
        if (!server) return server.err();
        s->server = std::move(server).value();
        sessions[s->id] = s;
        return s;
    }

    void remove(const std::string& id) {
        std::shared_ptr<mcp_session> s;
        {
            std::lock_guard lock(mutex);
            auto it = sessions.find(id);
            if (it == sessions.end()) return;
            s = it->second;
            sessions.erase(it);
        }
        end_later(std::move(s));
    }

    asio::awaitable<bool> write(beast::tcp_stream& stream, const request_t& req, bhttp::status status, std::string body,
                                std::string_view content_type, bool stopping, const std::string& session_id = {}) {
        bhttp::response<bhttp::string_body> res{status, req.version()};
        res.set(bhttp::field::server, "tachyon");
        if (!content_type.empty()) res.set(bhttp::field::content_type, content_type);
        if (!session_id.empty()) res.set("MCP-Session-Id", session_id);
        if (status == bhttp::status::method_not_allowed) res.set(bhttp::field::allow, "GET, POST, DELETE");
        res.keep_alive(req.keep_alive() && !stopping);
        res.body() = std::move(body);
        res.prepare_payload();
        if (options.stats) options.stats->count_request("/mcp", static_cast<int>(res.result_int()));
        const bool keep = res.keep_alive();
        stream.expires_after(options.write_timeout);
        auto [ec, n] = co_await bhttp::async_write(stream, res, mcp_use_tuple);
        co_return !ec && keep;
    }

    // A refusal: a JSON-RPC error object (id null unless known), for clients that read it.
    asio::awaitable<bool> refuse(beast::tcp_stream& stream, const request_t& req, bhttp::status status, int64_t code,
                                 const std::string& message, bool stopping, const std::string& id = "null") {
        co_return co_await write(stream, req, status, tools::mcp::make_error_response(id, code, message), "application/json", stopping);
    }

    // The session a POST or GET names (`what`: "POST /mcp"), or null with
    // the refusal written (400 without the header, 404 for an unknown or
    // ended session) and whether the connection stays open.
    asio::awaitable<std::pair<std::shared_ptr<mcp_session>, bool>> session_for(beast::tcp_stream& stream, const request_t& req,
                                                                               const std::string& session_id, const std::string& what,
                                                                               bool stopping) {
        std::shared_ptr<mcp_session> s = session_id.empty() ? nullptr : find(session_id);
        if (s) co_return std::make_pair(std::move(s), true);
        // An if, not a conditional: g++ 12 evaluates both awaits of one.
        bool keep = false;
        if (session_id.empty())
            keep = co_await refuse(stream, req, bhttp::status::bad_request, k_mcp_invalid_request,
                                   what + ": the MCP-Session-Id header is missing (initialize first; its answer carries the id)", stopping);
        else
            keep = co_await refuse(stream, req, bhttp::status::not_found, k_mcp_invalid_request,
                                   "MCP session '" + session_id + "' not found (ended or expired): initialize again", stopping);
        co_return std::make_pair(std::shared_ptr<mcp_session>(), keep);
    }

    void notify(const std::string& message) {
        std::vector<std::shared_ptr<mcp_session>> all;
        {
            std::lock_guard lock(mutex);
            for (auto& [id, s] : sessions) all.push_back(s);
        }
        for (auto& s : all) s->standalone->push(message, false);
    }

    asio::awaitable<bool> serve(beast::tcp_stream& stream, request_t& req, bool stopping);
    asio::awaitable<bool> open_stream(beast::tcp_stream& stream, request_t& req, const std::string& session_id, bool stopping);
    asio::awaitable<bool> write_stream(beast::tcp_stream& stream, const request_t& req, std::shared_ptr<mcp_channel> c, uint64_t next,
                                       bool prime, bool stopping);
    asio::awaitable<bool> answer(beast::tcp_stream& stream, request_t& req, const std::shared_ptr<mcp_session>& s,
                                 const tools::mcp::message& m, bool stopping);
};

asio::awaitable<bool> mcp_endpoint::impl::serve(beast::tcp_stream& stream, request_t& req, bool stopping) {
    // A browser page of another site must not reach a local server (DNS rebinding).
    if (auto it = req.find(bhttp::field::origin); it != req.end()) {
        const std::string origin(it->value());
        if (!is_loopback_origin(origin))
            co_return co_await refuse(stream, req, bhttp::status::forbidden, k_mcp_server_error,
                                      "Origin '" + origin + "' is not allowed (expected a loopback origin such as http://localhost)", stopping);
    }
    const auto method = req.method();
    if (method != bhttp::verb::post && method != bhttp::verb::delete_ && method != bhttp::verb::get)
        co_return co_await refuse(stream, req, bhttp::status::method_not_allowed, k_mcp_server_error,
                                  "method " + std::string(req.method_string()) + " not allowed on /mcp (expected POST, GET for the session's "
                                  "event stream, or DELETE to end a session)", stopping);
    if (auto it = req.find("MCP-Protocol-Version"); it != req.end()) {
        const std::string v(it->value());
        const auto& known = tools::mcp::supported_protocol_versions();
        if (std::find(known.begin(), known.end(), v) == known.end()) {
            std::string list;
            for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
            co_return co_await refuse(stream, req, bhttp::status::bad_request, k_mcp_invalid_request,
                                      "MCP-Protocol-Version '" + v + "' is not supported (expected one of " + list + ")", stopping);
        }
    }
    std::string session_id;
    if (auto it = req.find("MCP-Session-Id"); it != req.end()) session_id = std::string(it->value());

    if (method == bhttp::verb::get) co_return co_await open_stream(stream, req, session_id, stopping);
    if (method == bhttp::verb::delete_) {
        if (session_id.empty())
            co_return co_await refuse(stream, req, bhttp::status::bad_request, k_mcp_invalid_request, "DELETE /mcp needs the MCP-Session-Id header", stopping);
        if (!find(session_id))
            co_return co_await refuse(stream, req, bhttp::status::not_found, k_mcp_invalid_request, "MCP session '" + session_id + "' not found (ended or expired)", stopping);
        remove(session_id);
        co_return co_await write(stream, req, bhttp::status::no_content, {}, {}, stopping);
    }

    const std::string_view type(req[bhttp::field::content_type].data(), req[bhttp::field::content_type].size());
    if (type.rfind("application/json", 0) != 0)
        co_return co_await refuse(stream, req, bhttp::status::unsupported_media_type, k_mcp_invalid_request,
                                  "POST /mcp: Content-Type '" + std::string(type) + "' (expected application/json)", stopping);
    if (!mcp_accepts(req, "application/json") && !mcp_accepts(req, "text/event-stream"))
        co_return co_await refuse(stream, req, bhttp::status::not_acceptable, k_mcp_invalid_request,
                                  "POST /mcp: the Accept header must allow application/json or text/event-stream", stopping);
    const std::string& body = req.body();
    const size_t first = body.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && body[first] == '[')
        co_return co_await refuse(stream, req, bhttp::status::bad_request, k_mcp_invalid_request,
                                  "POST /mcp: JSON-RPC batches are not supported (expected one message per request)", stopping);
    auto parsed = tools::mcp::parse_message(body);
    if (!parsed) co_return co_await refuse(stream, req, bhttp::status::bad_request, k_mcp_parse_error, "POST /mcp: " + parsed.err().message, stopping);
    const tools::mcp::message& m = *parsed;

    if (m.type == tools::mcp::message::kind::request && m.method == "initialize") {
        auto s = open_session();
        if (!s) {
            const bool full = s.err().code == errc::resource_exhausted;
            co_return co_await refuse(stream, req, full || s.err().code == errc::unsupported ? bhttp::status::service_unavailable : bhttp::status::internal_server_error,
                                      k_mcp_server_error, s.err().message, stopping, m.id);
        }
        std::string answer;
        (*s)->server->handle(body, [&answer](std::string a) { answer = std::move(a); });  // answered at once
        if (auto p = tools::mcp::parse_message(answer); p && p->type == tools::mcp::message::kind::response) {
            simdjson::dom::parser parser;
            std::string_view v;
            if (!parser.parse(simdjson::padded_string(p->result))["protocolVersion"].get_string().get(v)) (*s)->version = std::string(v);
        }
        co_return co_await write(stream, req, bhttp::status::ok, std::move(answer), "application/json", stopping, (*s)->id);
    }
    auto found = co_await session_for(stream, req, session_id, "POST /mcp", stopping);
    if (!found.first) co_return found.second;
    std::shared_ptr<mcp_session> s = std::move(found.first);
    s->touch();
    if (m.type != tools::mcp::message::kind::request) {
        // A cancelled call is not answered: its stream ends now.
        if (m.type == tools::mcp::message::kind::notification && m.method == "notifications/cancelled") {
            simdjson::dom::parser parser;
            simdjson::dom::element p, id;
            if (!parser.parse(simdjson::padded_string(m.params)).get(p) && !p["requestId"].get(id)) {
                std::shared_ptr<mcp_channel> c;
                {
                    std::lock_guard lock(s->mutex);
                    if (auto it = s->open.find(simdjson::minify(id)); it != s->open.end()) c = it->second;
                }
                s->server->handle(body);
                if (c) c->close();
                co_return co_await write(stream, req, bhttp::status::accepted, {}, {}, stopping);
            }
        }
        s->server->handle(body);
        co_return co_await write(stream, req, bhttp::status::accepted, {}, {}, stopping);
    }
    co_return co_await answer(stream, req, s, m, stopping);
}

// GET /mcp: the session's standalone stream from now on (409 while it is
// open), or, with Last-Event-ID, the stream that event belongs to
// (standalone or a POST's) from the event after it: what the client missed
// is replayed, then the stream goes on. A resumption takes the stream over
// and the connection writing it before ends (a message goes out on one
// connection only). A POST's stream that has ended with nothing after that
// event is 410.
asio::awaitable<bool> mcp_endpoint::impl::open_stream(beast::tcp_stream& stream, request_t& req, const std::string& session_id, bool stopping) {
    auto found = co_await session_for(stream, req, session_id, "GET /mcp", stopping);
    if (!found.first) co_return found.second;
    std::shared_ptr<mcp_session> s = std::move(found.first);
    const auto accept = req.find(bhttp::field::accept);
    if (accept == req.end() || std::string_view(accept->value().data(), accept->value().size()).find("text/event-stream") == std::string_view::npos)
        co_return co_await refuse(stream, req, bhttp::status::not_acceptable, k_mcp_invalid_request,
                                  "GET /mcp: the Accept header must allow text/event-stream (GET opens the session's event stream)", stopping);
    s->touch();
    const auto last = req.find("Last-Event-ID");
    if (last == req.end()) {
        // One GET stream per session: a second one is refused; a client
        // whose connection broke resumes (with the id it has) and takes it over.
        if (s->standalone->has_writer())
            co_return co_await refuse(stream, req, bhttp::status::conflict, k_mcp_invalid_request,
                                      "GET /mcp: this session's event stream is open already (one at a time; a client that lost it "
                                      "resumes it with Last-Event-ID)", stopping);
        // What no connection was sent yet (no GET was open) comes first.
        uint64_t next;
        {
            std::lock_guard lock(s->standalone->mutex);
            next = s->standalone->delivered + 1;
        }
        co_return co_await write_stream(stream, req, s->standalone, next, true, stopping);
    }
    const std::string last_id(last->value());
    const auto parsed = parse_mcp_event_id(last_id);
    std::shared_ptr<mcp_channel> c;
    if (parsed && parsed->first == 0) {
        c = s->standalone;
    } else if (parsed) {
        std::lock_guard lock(s->mutex);
        if (auto it = s->streams.find(parsed->first); it != s->streams.end()) c = it->second;
    }
    if (!c)
        co_return co_await refuse(stream, req, bhttp::status::bad_request, k_mcp_invalid_request,
                                  "GET /mcp: Last-Event-ID '" + last_id + "' names no event stream of this session (expected an id this session sent, "
                                  "such as 3-1; the last " + std::to_string(k_mcp_kept_streams) + " answered streams are kept)", stopping);
    bool ended = false;
    {
        std::lock_guard lock(c->mutex);
        ended = (c->answered || c->closed) && parsed->second >= c->last_event_locked();
    }
    // A POST's stream that has ended (answered, or its call cancelled) with nothing after that event: gone, so a client stops resuming it.
    if (ended)
        co_return co_await refuse(stream, req, bhttp::status::gone, k_mcp_invalid_request,
                                  "GET /mcp: the event stream of '" + last_id + "' has ended and nothing follows that event", stopping);
    co_return co_await write_stream(stream, req, c, parsed->second + 1, false, stopping);
}

namespace {

// A timer that the channel's next message cancels, so that the coroutine
// waiting on it wakes, and the turn of that attachment (detach it with it).
std::pair<std::shared_ptr<asio::steady_timer>, uint64_t> attach_waker(const asio::any_io_executor& ex, mcp_channel& c) {
    auto signal = std::make_shared<asio::steady_timer>(ex);
    std::weak_ptr<asio::steady_timer> weak = signal;
    const uint64_t turn = c.attach([ex, weak] {
        asio::post(ex, [weak] {
            if (auto t = weak.lock()) t->cancel();
        });
    });
    return {std::move(signal), turn};
}

}  // namespace

// Writes `c`'s events from number `next` on as an event stream, `prime`:
// first an event with an id and no data, that a client can resume from
// before any message came (MCP 2025-11-25). It ends after a POST stream's
// response, when the stream closes, or when a newer connection takes the
// stream over; a client gone (a write fails) leaves the call running, for a
// resumption to pick up (cancelling is notifications/cancelled's job).
asio::awaitable<bool> mcp_endpoint::impl::write_stream(beast::tcp_stream& stream, const request_t& req, std::shared_ptr<mcp_channel> c,
                                                       uint64_t next, bool prime, bool stopping) {
    auto ex = co_await asio::this_coro::executor;
    auto [signal, turn] = attach_waker(ex, *c);
    struct detach_guard {
        std::shared_ptr<mcp_channel> c;
        uint64_t turn;
        ~detach_guard() { c->detach(turn); }
    } guard{c, turn};

    bhttp::response<bhttp::empty_body> res{bhttp::status::ok, req.version()};
    res.set(bhttp::field::server, "tachyon");
    res.set(bhttp::field::content_type, "text/event-stream");
    res.set(bhttp::field::cache_control, "no-cache");
    res.chunked(true);
    res.keep_alive(req.keep_alive() && !stopping);
    const bool keep = res.keep_alive();
    if (options.stats) options.stats->count_request("/mcp", 200);
    bhttp::response_serializer<bhttp::empty_body> sr{res};
    stream.expires_after(options.write_timeout);
    auto [ec, n] = co_await bhttp::async_write_header(stream, sr, mcp_use_tuple);
    std::string text;
    if (prime) text = "id: " + mcp_event_id(c->number, next - 1) + "\nretry: " + std::to_string(options.retry.count()) + "\ndata: \n\n";
    bool done = false;
    while (!ec) {
        // Taken right before waiting (no suspension in between): what
        // arrived during a write is not left for the next heartbeat.
        bool finished = false, replaced = false;
        {
            std::lock_guard lock(c->mutex);
            if (next < c->first_event) {
                TACHYON_LOG(info, "mcp stream " << c->number << ": events " << next << " to " << c->first_event - 1 << " are no longer kept");
                next = c->first_event;
            }
            for (; next <= c->last_event_locked(); ++next)
                text += "id: " + mcp_event_id(c->number, next) + "\nevent: message\ndata: " + c->history[next - c->first_event] + "\n\n";
            finished = c->answered || c->closed;
            replaced = c->writer != turn;
        }
        if (!text.empty()) {
            stream.expires_after(options.write_timeout);
            std::tie(ec, n) = co_await asio::async_write(stream, bhttp::make_chunk(asio::buffer(text)), mcp_use_tuple);
            text.clear();
            if (!ec) {
                std::lock_guard lock(c->mutex);
                c->delivered = std::max(c->delivered, next - 1);
            }
            continue;
        }
        if (finished || replaced) {
            done = true;
            break;
        }
        signal->expires_after(options.heartbeat);
        auto [wec] = co_await signal->async_wait(mcp_use_tuple);
        if (!wec) {
            // Quiet for a while (an agent decoding): a comment keeps proxies from timing out, and finds a client gone.
            const std::string ping = ": ping\n\n";
            stream.expires_after(options.write_timeout);
            std::tie(ec, n) = co_await asio::async_write(stream, bhttp::make_chunk(asio::buffer(ping)), mcp_use_tuple);
        }
    }
    if (!done) co_return false;  // the client is gone
    stream.expires_after(options.write_timeout);
    std::tie(ec, n) = co_await asio::async_write(stream, bhttp::make_chunk_last(), mcp_use_tuple);
    co_return !ec && keep;
}

// A request: its answer as JSON when it comes at once (or the client reads
// no event stream), else an event stream of its progress and its answer.
asio::awaitable<bool> mcp_endpoint::impl::answer(beast::tcp_stream& stream, request_t& req, const std::shared_ptr<mcp_session>& s,
                                                 const tools::mcp::message& m, bool stopping) {
    const bool streamed = mcp_accepts(req, "text/event-stream");
    std::shared_ptr<mcp_channel> c;
    bool ended = false, taken = false;
    {
        std::lock_guard lock(s->mutex);
        ended = s->ended;
        auto it = s->open.find(m.id);
        taken = it != s->open.end() && !it->second->finished();
        if (!ended && !taken) {
            std::erase_if(s->open, [](const auto& kv) { return kv.second->finished(); });
            c = streamed ? s->new_stream_locked() : std::make_shared<mcp_channel>();
            s->open[m.id] = c;
        }
    }
    if (ended) co_return co_await refuse(stream, req, bhttp::status::not_found, k_mcp_invalid_request, "MCP session '" + s->id + "' has ended", stopping);
    if (taken)
        co_return co_await refuse(stream, req, bhttp::status::bad_request, k_mcp_invalid_request,
                                  "request id " + m.id + " is already in use by a request of this session", stopping, m.id);
    auto is_response = [](const std::string& text) {
        auto p = tools::mcp::parse_message(text);
        return p && (p->type == tools::mcp::message::kind::response || p->type == tools::mcp::message::kind::error);
    };
    s->server->handle(req.body(), [c, is_response](std::string text) {
        const bool response = is_response(text);
        c->push(std::move(text), response);
    });
    bool at_once = false;
    {
        std::lock_guard lock(c->mutex);
        at_once = c->answered && c->history.size() == 1;
    }
    if (streamed && !at_once) co_return co_await write_stream(stream, req, c, 1, s->version >= "2025-11-25", stopping);

    // At once (tools/list, ping, a refused call), or a client that reads JSON only: wait, drop progress.
    auto ex = co_await asio::this_coro::executor;
    auto [signal, turn] = attach_waker(ex, *c);
    std::string response;
    bool closed = false;
    while (true) {
        {
            std::lock_guard lock(c->mutex);
            if (c->answered) response = c->history.back();
            closed = c->closed;
        }
        if (!response.empty() || closed) break;
        signal->expires_after(options.heartbeat);
        co_await signal->async_wait(mcp_use_tuple);
    }
    c->detach(turn);
    if (response.empty())
        co_return co_await refuse(stream, req, bhttp::status::ok, k_mcp_server_error, "the call was cancelled or its session ended", stopping, m.id);
    co_return co_await write(stream, req, bhttp::status::ok, std::move(response), "application/json", stopping);
}

result<std::unique_ptr<mcp_endpoint>> mcp_endpoint::make(mcp_endpoint_options options) {
    // The options are checked once here, as every session's server is made from them.
    auto probe = mcp_server::make(options.server, [](std::string) {});
    if (!probe) return probe.err();
    return std::unique_ptr<mcp_endpoint>(new mcp_endpoint(std::make_shared<impl>(std::move(options))));
}

mcp_endpoint::mcp_endpoint(std::shared_ptr<impl> i) : impl_(std::move(i)) {}
mcp_endpoint::~mcp_endpoint() { shutdown(); }

asio::awaitable<bool> mcp_endpoint::serve(beast::tcp_stream& stream, request_t& req, bool stopping) {
    auto keep = impl_;  // alive while the request is
    co_return co_await keep->serve(stream, req, stopping);
}

void mcp_endpoint::shutdown() {
    std::map<std::string, std::shared_ptr<mcp_session>> all;
    {
        std::lock_guard lock(impl_->mutex);
        if (impl_->stopped) return;
        impl_->stopped = true;
        all.swap(impl_->sessions);
    }
    for (auto& [id, s] : all) s->end();
    impl_->closer.join();
    impl_->workers.join();
}

void mcp_endpoint::end_get_streams() {
    std::vector<std::shared_ptr<mcp_session>> all;
    {
        std::lock_guard lock(impl_->mutex);
        for (auto& [id, s] : impl_->sessions) all.push_back(s);
    }
    for (auto& s : all) s->standalone->close();
}

void mcp_endpoint::notify(std::string_view method, std::string_view params_json) {
    impl_->notify(tools::mcp::make_notification(method, params_json));
}

size_t mcp_endpoint::n_sessions() const {
    std::lock_guard lock(impl_->mutex);
    return impl_->sessions.size();
}

}  // namespace tachyon::http
