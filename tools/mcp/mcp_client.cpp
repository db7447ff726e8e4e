#include "tools/mcp/mcp_client.h"

#include <simdjson.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "tools/mcp/http_transport.h"
#include "tools/mcp/json_rpc.h"
#include "tools/mcp/mcp_schema.h"
#include "tools/mcp/stdio_transport.h"

namespace tachyon::tools::mcp {
namespace {

using clock = std::chrono::steady_clock;
using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr auto k_poll = std::chrono::milliseconds(20);  // how often a waiting call looks at its cancel flag
constexpr auto k_backoff_first = std::chrono::milliseconds(100);
constexpr auto k_backoff_max = std::chrono::milliseconds(5000);
constexpr int k_max_list_pages = 1000;

std::string cut_line(std::string_view s, size_t max = 200) {
    if (s.size() <= max) return std::string(s);
    size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return std::string(s.substr(0, n)) + "...";
}

std::string string_or(element e, const char* key, std::string fallback = {}) {
    std::string_view v;
    if (e[key].get_string().get(v)) return fallback;
    return std::string(v);
}

bool bool_or(element e, const char* key, bool fallback) {
    bool v = false;
    if (e[key].get_bool().get(v)) return fallback;
    return v;
}

// The content of a tool result as the model reads it.
std::string content_text(element content) {
    std::string out;
    if (content.type() != element_type::ARRAY) return out;
    for (element item : content.get_array()) {
        const std::string type = string_or(item, "type");
        std::string piece;
        if (type == "text") {
            piece = string_or(item, "text");
        } else if (type == "image" || type == "audio") {
            piece = "[" + type + ": " + string_or(item, "mimeType", "unknown type") + ", " +
                    std::to_string(string_or(item, "data").size()) + " bytes of base64]";
        } else if (type == "resource_link") {
            piece = "[resource link: " + string_or(item, "uri") + "]";
        } else if (type == "resource") {
            element r;
            if (!item["resource"].get(r)) {
                std::string_view text;
                piece = !r["text"].get_string().get(text) ? std::string(text) : "[resource: " + string_or(r, "uri") + " (binary)]";
            }
        } else {
            piece = "[content of type '" + type + "']";
        }
        if (!out.empty()) out += '\n';
        out += piece;
    }
    return out;
}

}  // namespace

const std::vector<std::string>& supported_protocol_versions() {
    static const std::vector<std::string> v = {"2025-11-25", "2025-06-18", "2025-03-26"};
    return v;
}

struct pending_request {
    bool done = false;
    bool ok = false;
    std::string result;  // minified JSON, or the error text
    clock::time_point deadline, hard_deadline;
    progress_callback progress;
};

struct client::state {
    std::string server;
    std::chrono::milliseconds timeout{0};
    std::mutex mutex;  // everything below but `conn`
    std::condition_variable cv;
    uint64_t generation = 0;
    bool alive = false;
    bool closed = false;
    std::string down_reason;
    int64_t next_id = 1;
    std::map<std::string, std::shared_ptr<pending_request>, std::less<>> pending;  // by id (minified JSON)
    bool tools_stale = true;
    std::vector<remote_tool> tools;  // all the server lists
    std::string version;
    int n_starts = 0;
    int n_deaths = 0;  // since the last call that succeeded: the backoff grows with it
    clock::time_point next_start{};
    std::shared_ptr<transport> live;  // the transport of `generation`, for sends outside `lifecycle`

    std::mutex lifecycle;  // starting, listing and closing, one at a time
    std::shared_ptr<transport> conn;

    std::shared_ptr<transport> current() {
        std::lock_guard lock(mutex);
        return live;
    }
    void set_live(std::shared_ptr<transport> t) {
        std::lock_guard lock(mutex);
        live = std::move(t);
    }

    void fail_all(const std::string& why) {
        for (auto& [id, p] : pending) {
            p->done = true;
            p->ok = false;
            p->result = why;
        }
        pending.clear();
        cv.notify_all();
    }

    void on_closed(uint64_t gen, std::string why) {
        std::lock_guard lock(mutex);
        if (gen != generation || closed) return;
        TACHYON_LOG(warn, "mcp server " << server << ": " << why);
        alive = false;
        ++n_deaths;
        down_reason = why;
        next_start = clock::now() + std::min<std::chrono::milliseconds>(k_backoff_first * (1 << std::min(n_deaths - 1, 16)), k_backoff_max);
        fail_all("mcp server " + server + " " + why);
    }

    void reply(std::string_view text) {
        if (auto t = current())
            if (auto st = t->send(text); !st) TACHYON_LOG(warn, st.err().message);
    }

    void on_message(uint64_t gen, std::string_view text) {
        auto parsed = parse_message(text);
        if (!parsed) {
            TACHYON_LOG(warn, "mcp server " << server << ": dropped a line that is not JSON-RPC (" << parsed.err().message << "): "
                                            << cut_line(text));
            return;
        }
        message& m = *parsed;
        if (m.type == message::kind::response || m.type == message::kind::error) {
            std::lock_guard lock(mutex);
            if (gen != generation) return;
            auto it = pending.find(m.id);
            if (it == pending.end()) {
                TACHYON_LOG(warn, "mcp server " << server << ": answered id " << (m.id.empty() ? "null" : m.id)
                                                << ", which no request is waiting for (dropped)"
                                                << (m.type == message::kind::error ? ": " + m.error_message : std::string()));
                return;
            }
            auto p = it->second;
            pending.erase(it);
            p->done = true;
            p->ok = m.type == message::kind::response;
            p->result = p->ok ? std::move(m.result)
                              : m.error_message + " (JSON-RPC error " + std::to_string(m.error_code) + ")";
            cv.notify_all();
            return;
        }
        if (m.type == message::kind::request) {
            // The client offers no capabilities; it answers ping and refuses the rest.
            if (m.method == "ping") reply(make_response(m.id, "{}"));
            else reply(make_error_response(m.id, k_method_not_found, "tachyon does not offer '" + m.method + "'"));
            return;
        }
        simdjson::dom::parser parser;
        element params;
        const bool has_params = !m.params.empty() && !parser.parse(simdjson::padded_string(m.params)).get(params);
        if (m.method == "notifications/progress" && has_params) {
            element token;
            if (params["progressToken"].get(token)) return;
            const std::string id = simdjson::minify(token);
            progress_callback cb;
            double progress = 0;
            std::optional<double> total;
            {
                std::lock_guard lock(mutex);
                auto it = pending.find(id);
                if (it == pending.end() || gen != generation) return;
                auto& p = *it->second;
                p.deadline = std::min(clock::now() + timeout, p.hard_deadline);
                cb = p.progress;
            }
            element v;
            if (!params["progress"].get(v)) progress = v.is_double() ? v.get_double().value() : v.is_int64() ? double(v.get_int64().value()) : 0;
            if (!params["total"].get(v) && (v.is_double() || v.is_int64()))
                total = v.is_double() ? v.get_double().value() : double(v.get_int64().value());
            if (cb) cb(progress, total, string_or(params, "message"));
        } else if (m.method == "notifications/tools/list_changed") {
            std::lock_guard lock(mutex);
            tools_stale = true;
        } else if (m.method == "notifications/message" && has_params) {
            element data;
            const std::string what = !params["data"].get(data) ? (data.is_string() ? std::string(data.get_string().value())
                                                                                   : simdjson::minify(data))
                                                               : std::string();
            TACHYON_LOG(info, "mcp server " << server << " (" << string_or(params, "level", "log") << "): " << cut_line(what, 2000));
        }
    }
};

client::client(server_config config, transport_factory make, output_validator validate)
    : config_(std::move(config)), make_transport_(std::move(make)), validate_(std::move(validate)), state_(std::make_shared<state>()) {
    state_->server = config_.name;
    state_->timeout = config_.request_timeout;
}

client::~client() { close(); }

result<std::shared_ptr<client>> client::connect(server_config config, output_validator validate) {
    if (!config.url.empty()) {
        if (!config.command.empty())
            return make_error(errc::invalid_argument, "mcp server " + config.name + ": give either command (stdio) or url (HTTP), not both");
        http_options h;
        h.server = config.name;
        h.url = config.url;
        h.headers = config.headers;
        h.bearer_env = config.bearer_env;
        h.read_timeout = config.max_request_time;
        if (auto u = parse_http_url(h.url); !u) return make_error(u.err().code, "mcp server " + config.name + ": " + u.err().message);
        return connect(std::move(config), [h] { return make_http_transport(h); }, std::move(validate));
    }
    auto options = stdio_options{};
    options.server = config.name;
    options.command = config.command;
    options.env = config.env;
    options.cwd = config.cwd;
    options.grace = config.shutdown_grace;
    return connect(std::move(config), [options] { return make_stdio_transport(options); }, std::move(validate));
}

result<std::shared_ptr<client>> client::connect(server_config config, transport_factory make_transport, output_validator validate) {
    if (config.name.empty()) return make_error(errc::invalid_argument, "mcp server: name is empty");
    std::shared_ptr<client> c(new client(std::move(config), std::move(make_transport), std::move(validate)));
    {
        std::lock_guard lock(c->state_->lifecycle);
        TACHYON_TRY(c->start_session());
    }
    auto listed = c->tools();
    if (!listed) return listed.err();
    return c;
}

std::string client::protocol_version() const {
    std::lock_guard lock(state_->mutex);
    return state_->version;
}

int client::n_starts() const {
    std::lock_guard lock(state_->mutex);
    return state_->n_starts;
}

// With `lifecycle` held.
status client::start_session() {
    state& s = *state_;
    if (s.conn) {
        s.set_live(nullptr);
        s.conn->close();
        s.conn.reset();
    }
    uint64_t gen;
    {
        std::lock_guard lock(s.mutex);
        gen = ++s.generation;
        ++s.n_starts;
    }
    s.conn = make_transport_();
    state* sp = &s;
    transport_handlers h;
    h.message = [sp, gen](std::string_view text) { sp->on_message(gen, text); };
    h.closed = [sp, gen](std::string why) { sp->on_closed(gen, std::move(why)); };
    if (auto st = s.conn->open(std::move(h)); !st) {
        s.conn.reset();
        std::lock_guard lock(s.mutex);
        ++s.n_deaths;
        s.down_reason = "could not start: " + st.err().message;
        s.next_start = clock::now() + std::min<std::chrono::milliseconds>(k_backoff_first * (1 << std::min(s.n_deaths - 1, 16)), k_backoff_max);
        return st.err();
    }
    s.set_live(s.conn);
    {
        std::lock_guard lock(s.mutex);
        s.alive = true;
        s.tools_stale = true;
    }
    const std::string params = "{\"protocolVersion\":" + json::quote(supported_protocol_versions().front()) +
                               ",\"capabilities\":{},\"clientInfo\":{\"name\":\"tachyon\",\"version\":\"0.1.0\"}}";
    auto answer = request("initialize", params, nullptr, {}, false);
    auto give_up = [&](error e) -> status {
        s.set_live(nullptr);
        s.conn->close();
        s.conn.reset();
        std::lock_guard lock(s.mutex);
        s.alive = false;
        s.down_reason = e.message;
        return e;
    };
    if (!answer) return give_up(answer.err());
    simdjson::dom::parser parser;
    element init;
    std::string_view version;
    if (parser.parse(simdjson::padded_string(*answer)).get(init) || init["protocolVersion"].get_string().get(version))
        return give_up(make_error(errc::parse_error, "mcp server " + config_.name + ": initialize answered without a protocolVersion"));
    const auto& known = supported_protocol_versions();
    if (std::find(known.begin(), known.end(), version) == known.end()) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        return give_up(make_error(errc::unsupported, "mcp server " + config_.name + ": speaks protocol version '" + std::string(version) +
                                                         "', which tachyon does not (supported: " + list + ")"));
    }
    {
        std::lock_guard lock(s.mutex);
        s.version = std::string(version);
    }
    s.conn->set_protocol_version(std::string(version));
    if (auto st = s.conn->send(make_notification("notifications/initialized", "")); !st) return give_up(st.err());
    return {};
}

status client::ensure_running() {
    state& s = *state_;
    std::lock_guard life(s.lifecycle);
    clock::time_point when;
    {
        std::lock_guard lock(s.mutex);
        if (s.closed) return make_error(errc::cancelled, "mcp server " + config_.name + ": the session is closed");
        if (s.alive) return {};
        when = s.next_start;
    }
    // A server that died is started again after its backoff, if the wait fits in a request.
    const auto now = clock::now();
    if (when > now) {
        if (when - now > config_.request_timeout)
            return make_error(errc::io_error, "mcp server " + config_.name + " is down (" + s.down_reason + "); next start in " +
                                                  std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(when - now).count()) + " ms");
        std::this_thread::sleep_until(when);
    }
    TACHYON_LOG(info, "mcp server " << config_.name << ": starting again (" << s.down_reason << ")");
    return start_session();
}

result<std::string> client::request(std::string_view method, std::string params_json, const std::atomic<bool>* cancel,
                                    progress_callback on_progress, bool may_restart, bool retried, std::string_view traceparent) {
    state& s = *state_;
    const std::string original_params = params_json;
    if (may_restart) TACHYON_TRY(ensure_running());
    auto p = std::make_shared<pending_request>();
    int64_t id;
    {
        std::lock_guard lock(s.mutex);
        if (!s.alive) return make_error(errc::io_error, "mcp server " + config_.name + " is down (" + s.down_reason + ")");
        id = s.next_id++;
        const auto now = clock::now();
        p->hard_deadline = now + config_.max_request_time;
        p->deadline = std::min(now + config_.request_timeout, p->hard_deadline);
        p->progress = std::move(on_progress);
        s.pending.emplace(std::to_string(id), p);
    }
    // params._meta: the request id doubles as a call's progress token (one
    // map finds both), and the caller's span goes along as `traceparent`
    // on every transport, as the MCP semantic conventions of OpenTelemetry
    // say (HTTP sends the header too).
    std::string meta;
    if (method == "tools/call") meta = "\"progressToken\":" + std::to_string(id);
    if (!traceparent.empty()) meta += (meta.empty() ? "" : ",") + std::string("\"traceparent\":") + json::quote(traceparent);
    if (!meta.empty()) {
        if (params_json.empty()) params_json = "{}";
        if (params_json.front() == '{') {
            const bool no_members = params_json.find_first_not_of(" \t\r\n", 1) == params_json.size() - 1;
            params_json.insert(1, "\"_meta\":{" + meta + "}" + (no_members ? "" : ","));
        }
    }
    auto t = s.current();
    if (auto st = t ? t->send_traced(make_request(id, method, params_json), traceparent) : status(make_error(errc::io_error, "not running")); !st) {
        std::lock_guard lock(s.mutex);
        s.pending.erase(std::to_string(id));
        return make_error(errc::io_error, "mcp server " + config_.name + ": " + std::string(method) + ": " + st.err().message);
    }
    std::unique_lock lock(s.mutex);
    const auto start = clock::now();
    while (!p->done) {
        const bool cancelled = cancel && cancel->load(std::memory_order_relaxed);
        const auto now = clock::now();
        if (cancelled || now >= p->deadline) {
            s.pending.erase(std::to_string(id));
            lock.unlock();
            const std::string reason = cancelled ? "cancelled by the caller" : "timed out";
            s.reply(make_notification("notifications/cancelled", "{\"requestId\":" + std::to_string(id) + ",\"reason\":" + json::quote(reason) + "}"));
            const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
            if (cancelled) return make_error(errc::cancelled, "mcp server " + config_.name + ": " + std::string(method) + " cancelled");
            return make_error(errc::timeout, "mcp server " + config_.name + ": " + std::string(method) + " got no answer within " +
                                                 std::to_string(waited) + " ms (timed out)");
        }
        s.cv.wait_until(lock, std::min(p->deadline, now + k_poll));
    }
    if (!p->ok && may_restart && !retried && p->result.find("session expired (HTTP 404)") != std::string::npos) {
        // An HTTP server that forgot the session: initialize again and ask once more.
        lock.unlock();
        return request(method, original_params, cancel, std::move(p->progress), true, true, traceparent);
    }
    if (!p->ok) {
        // A dead server's message names it already.
        if (p->result.rfind("mcp server ", 0) == 0) return make_error(errc::io_error, p->result);
        return make_error(errc::io_error, "mcp server " + config_.name + ": " + std::string(method) + " failed: " + p->result);
    }
    return std::move(p->result);
}

result<std::vector<remote_tool>> client::list_tools() {
    std::vector<remote_tool> out;
    std::string cursor;
    for (int page = 0;; ++page) {
        if (page == k_max_list_pages)
            return make_error(errc::out_of_range, "mcp server " + config_.name + ": tools/list gave more than " +
                                                      std::to_string(k_max_list_pages) + " pages (a cursor that never ends?)");
        auto answer = request("tools/list", cursor.empty() ? "{}" : "{\"cursor\":" + json::quote(cursor) + "}", nullptr, {}, false);
        if (!answer) return answer.err();
        simdjson::dom::parser parser;
        element doc, list;
        if (parser.parse(simdjson::padded_string(*answer)).get(doc) || doc["tools"].get(list) || list.type() != element_type::ARRAY)
            return make_error(errc::parse_error, "mcp server " + config_.name + ": tools/list answered without a \"tools\" array");
        for (element t : list.get_array()) {
            remote_tool rt;
            rt.name = string_or(t, "name");
            if (rt.name.empty()) return make_error(errc::parse_error, "mcp server " + config_.name + ": tools/list has a tool without a name");
            const bool wanted = config_.tools.empty() ||
                                std::find(config_.tools.begin(), config_.tools.end(), rt.name) != config_.tools.end();
            rt.description = string_or(t, "description", string_or(t, "title"));
            element schema;
            if (t["inputSchema"].get(schema)) {
                if (!wanted) continue;
                return make_error(errc::parse_error, "mcp server " + config_.name + ": tool " + rt.name + " has no inputSchema");
            }
            auto g = config_.grounded.find(rt.name);
            auto normal = normalize_input_schema(simdjson::minify(schema), config_.name, rt.name,
                                                 g != config_.grounded.end() ? g->second : std::set<std::string>{});
            if (!normal) {
                if (!wanted) continue;  // a tool nobody asked for may be odd
                return normal.err();
            }
            rt.input_schema = std::move(normal).value();
            element v;
            if (!t["outputSchema"].get(v)) rt.output_schema = simdjson::minify(v);
            element ann;
            if (!t["annotations"].get(ann) && ann.type() == element_type::OBJECT) {
                rt.read_only = bool_or(ann, "readOnlyHint", false);
                rt.idempotent = bool_or(ann, "idempotentHint", false);
            }
            if (config_.read_only.count(rt.name)) rt.read_only = true;
            out.push_back(std::move(rt));
        }
        cursor = string_or(doc, "nextCursor");
        if (cursor.empty()) break;
    }
    return out;
}

result<std::vector<remote_tool>> client::tools() {
    TACHYON_TRY(ensure_running());
    state& s = *state_;
    std::lock_guard life(s.lifecycle);
    bool stale;
    {
        std::lock_guard lock(s.mutex);
        stale = s.tools_stale;
        s.tools_stale = false;
    }
    if (stale) {
        auto listed = list_tools();
        if (!listed) {
            std::lock_guard lock(s.mutex);
            s.tools_stale = true;
            return listed.err();
        }
        std::lock_guard lock(s.mutex);
        s.tools = std::move(listed).value();
    }
    std::lock_guard lock(s.mutex);
    if (config_.tools.empty()) return s.tools;
    std::vector<remote_tool> out;
    for (const auto& want : config_.tools) {
        auto it = std::find_if(s.tools.begin(), s.tools.end(), [&](const remote_tool& t) { return t.name == want; });
        if (it == s.tools.end()) {
            std::string list;
            for (const auto& t : s.tools) list += (list.empty() ? "" : ", ") + t.name;
            return make_error(errc::not_found, "mcp server " + config_.name + " has no tool '" + want + "' (its tools: " +
                                                   (list.empty() ? std::string("none") : list) + ")");
        }
        out.push_back(*it);
    }
    return out;
}

result<call_result> client::call_tool(std::string_view tool, std::string_view arguments_json, const std::atomic<bool>* cancel,
                                      progress_callback on_progress, std::string_view traceparent) {
    auto listed = tools();  // lists again when the server said its tools changed
    if (!listed) return listed.err();
    auto it = std::find_if(listed->begin(), listed->end(), [&](const remote_tool& t) { return t.name == tool; });
    if (it == listed->end())
        return make_error(errc::not_found, "mcp server " + config_.name + " no longer lists tool '" + std::string(tool) + "'");
    const std::string output_schema = it->output_schema;
    auto answer = request("tools/call", "{\"name\":" + json::quote(tool) + ",\"arguments\":" + std::string(arguments_json) + "}", cancel,
                          std::move(on_progress), true, false, traceparent);
    if (!answer) return answer.err();
    const std::string where = "mcp server " + config_.name + ": tool " + std::string(tool);
    simdjson::dom::parser parser;
    element doc;
    if (parser.parse(simdjson::padded_string(*answer)).get(doc) || doc.type() != element_type::OBJECT)
        return make_error(errc::parse_error, where + ": tools/call answered with no result object");
    call_result out;
    out.is_error = bool_or(doc, "isError", false);
    element content, structured;
    if (!doc["content"].get(content)) out.text = content_text(content);
    if (!doc["structuredContent"].get(structured)) out.structured = simdjson::minify(structured);
    if (!out.is_error && !output_schema.empty()) {
        if (out.structured.empty())
            return make_error(errc::parse_error, where + ": declares an outputSchema but returned no structuredContent");
        if (validate_) {
            if (auto st = validate_(output_schema, out.structured); !st)
                return make_error(errc::parse_error, where + ": structuredContent does not match its outputSchema: " + st.err().message);
        }
    }
    if (out.text.empty() && !out.structured.empty()) out.text = out.structured;
    if (out.text.size() > config_.max_output_bytes) {
        size_t n = config_.max_output_bytes;
        while (n > 0 && (static_cast<unsigned char>(out.text[n]) & 0xC0) == 0x80) --n;
        const size_t dropped = out.text.size() - n;
        out.text.resize(n);
        out.text += "\n[mcp " + config_.name + ": output cut at " + std::to_string(config_.max_output_bytes) + " bytes; " +
                    std::to_string(dropped) + " more bytes dropped]";
    }
    std::lock_guard lock(state_->mutex);
    state_->n_deaths = 0;
    return out;
}

status client::ping() {
    auto answer = request("ping", "{}", nullptr, {});
    if (!answer) return answer.err();
    return {};
}

void client::close() {
    state& s = *state_;
    std::lock_guard life(s.lifecycle);
    {
        std::lock_guard lock(s.mutex);
        if (s.closed) return;
        s.closed = true;
    }
    s.set_live(nullptr);
    if (s.conn) {
        s.conn->close();
        s.conn.reset();
    }
    std::lock_guard lock(s.mutex);
    s.alive = false;
    s.fail_all("mcp server " + config_.name + ": the session is closed");
}

}  // namespace tachyon::tools::mcp
