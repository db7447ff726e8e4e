#include "runtime/mcp/mcp_server.h"

#include <simdjson.h>

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>

#include "base/log.h"
#include "runtime/common/json_util.h"
#include "runtime/constrain/json_schema.h"
#include "runtime/telemetry/trace_context.h"
#include "tools/mcp/json_rpc.h"
#include "tools/mcp/mcp_client.h"

namespace tachyon {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr int64_t k_server_parse_error = -32700;
constexpr int64_t k_server_invalid_request = -32600;

std::string mcp_text_result(std::string_view text, bool is_error, std::string_view structured = {}) {
    std::string out = "{\"content\":[{\"type\":\"text\",\"text\":" + json::quote(text) + "}]";
    if (!structured.empty()) out += ",\"structuredContent\":" + std::string(structured);
    return out + ",\"isError\":" + (is_error ? "true" : "false") + "}";
}

// Reports each model turn of a run as a progress notification.
class mcp_progress_observer final : public run_observer {
public:
    mcp_progress_observer(const mcp_server::sender* send, std::string token, int max_steps)
        : send_(send), token_(std::move(token)), max_steps_(max_steps) {}
    void on_turn_end(const run_turn& t) override {
        if (token_.empty()) return;
        (*send_)(tools::mcp::make_notification("notifications/progress", "{\"progressToken\":" + token_ + ",\"progress\":" + std::to_string(t.step) +
                                                                       ",\"total\":" + std::to_string(max_steps_) +
                                                                       ",\"message\":" + json::quote("turn " + std::to_string(t.step) + " done") + "}"));
    }

private:
    const mcp_server::sender* send_;
    std::string token_;
    int max_steps_;
};

}  // namespace

std::string agent_tool_schema(const agent_definition& agent) {
    std::string props = "\"task\":{\"type\":\"string\",\"description\":\"What the agent is asked to do.\"}";
    std::string required = "\"task\"";
    for (const auto& [name, in] : agent.inputs) {
        props += "," + json::quote(name) + ":{\"type\":\"string\"";
        if (!in.description.empty() || in.type != agent_input_type::string)
            props += ",\"description\":" + json::quote(std::string(to_string(in.type)) + (in.description.empty() ? "" : ": " + in.description));
        props += "}";
        required += "," + json::quote(name);
    }
    return "{\"type\":\"object\",\"properties\":{" + props + "},\"required\":[" + required + "],\"additionalProperties\":false}";
}

struct mcp_server::impl {
    mcp_server_options options;
    sender send_raw;
    std::mutex send_mutex;
    sender send;  // send_raw, one message at a time
    std::optional<boost::asio::thread_pool> own_workers;  // when options.pool is not given
    boost::asio::thread_pool* workers = nullptr;
    std::mutex mutex;
    std::condition_variable idle;  // n_calls reached 0
    std::map<std::string, std::shared_ptr<std::atomic<bool>>> running;  // request id -> its cancel flag
    int n_calls = 0;  // posted to the workers and not yet answered
    bool stopped = false;

    impl(mcp_server_options o, sender s) : options(std::move(o)), send_raw(std::move(s)) {
        if (options.pool == nullptr) own_workers.emplace(static_cast<size_t>(std::max(1, options.n_workers)));
        workers = options.pool != nullptr ? options.pool : &*own_workers;
        send = [this](std::string m) {
            std::lock_guard lock(send_mutex);
            send_raw(std::move(m));
        };
    }

    std::string list_tools() const {
        std::string out = "{\"tools\":[";
        bool first = true;
        for (const auto& t : options.tools) {
            if (!first) out += ',';
            first = false;
            const auto f = t->flags();
            out += "{\"name\":" + json::quote(t->name()) + ",\"description\":" + json::quote(t->description()) +
                   ",\"inputSchema\":" + std::string(t->parameters_schema()) + ",\"annotations\":{\"readOnlyHint\":" +
                   (f.read_only ? "true" : "false") + ",\"idempotentHint\":" + (f.idempotent ? "true" : "false") + "}}";
        }
        for (const auto& a : options.agents) {
            if (!first) out += ',';
            first = false;
            out += "{\"name\":" + json::quote(a->name) + ",\"description\":" +
                   json::quote(a->description.empty() ? "Runs the agent " + a->name + " to a verified answer." : a->description) +
                   ",\"inputSchema\":" + agent_tool_schema(*a);
            if (!a->output_schema.empty() && a->output_schema.find("\"type\":\"object\"") != std::string::npos)
                out += ",\"outputSchema\":" + a->output_schema;
            out += ",\"annotations\":{\"readOnlyHint\":false,\"openWorldHint\":true}}";
        }
        return out + "]}";
    }

    // One tools/call, on a worker. Returns the result object.
    std::string call_tool(const tools::tool& t, const std::string& arguments, const std::atomic<bool>& cancel, const std::string& traceparent) {
        auto schema = json_schema::parse(t.parameters_schema(), std::string(t.name()), "argument");
        if (!schema) return mcp_text_result("tool " + std::string(t.name()) + " declares a bad schema: " + schema.err().message, true);
        if (auto valid = schema->validate(arguments); !valid) return mcp_text_result(valid.err().message, true);
        tools::call_context ctx;
        ctx.cancel = &cancel;
        ctx.traceparent = traceparent;
        result<std::string> r = make_error(errc::internal, "tool threw");
        try {
            r = const_cast<tools::tool&>(t).invoke(arguments, ctx);
        } catch (const std::exception& e) {
            r = make_error(errc::internal, std::string(t.name()) + ": internal error: " + e.what());
        }
        return r ? mcp_text_result(*r, false) : mcp_text_result(r.err().message, true);
    }

    std::string call_agent(const std::shared_ptr<const agent_definition>& agent, const std::string& arguments,
                           const std::shared_ptr<std::atomic<bool>>& cancel, const std::string& progress_token, const sender& reply,
                           const std::string& traceparent) {
        simdjson::dom::parser parser;
        element args;
        if (parser.parse(simdjson::padded_string(arguments)).get(args) || args.type() != element_type::OBJECT)
            return mcp_text_result(agent->name + ": arguments must be a JSON object", true);
        auto schema = json_schema::parse(agent_tool_schema(*agent), agent->name, "argument");
        if (auto valid = schema->validate(arguments); !valid) return mcp_text_result(valid.err().message, true);
        run_request req;
        req.agent = agent;
        req.journal_dir = options.journal_dir;
        req.traceparent = traceparent;
        for (auto field : args.get_object()) {
            const std::string value(field.value.get_string().value());
            if (field.key == "task") req.task = value;
            else req.inputs[std::string(field.key)] = value;
        }
        auto checked = check_run_inputs(*agent, req.inputs, options.confinement ? &*options.confinement : nullptr);
        if (!checked) return mcp_text_result(checked.err().message, true);
        req.inputs = std::move(checked).value();
        mcp_progress_observer observer(&reply, progress_token, agent->budgets.max_steps);
        run_outcome out = options.service->run(std::move(req), &observer, cancel);
        if (out.state != "succeeded") return mcp_text_result(agent->name + ": run " + out.run_id + " ended " + out.state +
                                                             (out.error.empty() ? std::string() : ": " + out.error), true);
        const bool object = !out.answer.empty() && out.answer.front() == '{';
        std::string text = out.answer;
        if (!object) {
            // A prose answer is a JSON string: the caller reads its text.
            simdjson::dom::parser p2;
            std::string_view s;
            if (!p2.parse(simdjson::padded_string(out.answer)).get_string().get(s)) text = std::string(s);
        }
        return mcp_text_result(text, false, object && !agent->output_schema.empty() ? std::string_view(out.answer) : std::string_view());
    }

    // A tools/call span as the MCP semantic conventions name it (server side).
    void end_call_span(const telemetry::span_start& where, std::chrono::steady_clock::time_point started, const std::string& tool,
                       const std::string& id, const std::string& result, bool cancelled) {
        telemetry::span s;
        s.context = where.context;
        s.parent = where.parent;
        s.name = "tools/call " + tool;
        s.kind = telemetry::span_kind::server;
        s.start_unix_nano = options.tracer->unix_nanos(started);
        s.end_unix_nano = options.tracer->unix_nanos(std::chrono::steady_clock::now());
        s.set("mcp.method.name", std::string("tools/call"));
        s.set("gen_ai.operation.name", std::string("execute_tool"));
        s.set("gen_ai.tool.name", tool);
        s.set("jsonrpc.request.id", id.size() >= 2 && id.front() == '"' ? id.substr(1, id.size() - 2) : id);
        if (cancelled) {
            s.set("error.type", std::string("cancelled"));
            s.status = telemetry::status_code::error;
            s.status_message = "cancelled";
        } else if (result.ends_with(",\"isError\":true}")) {
            s.set("error.type", std::string("tool_error"));
            s.status = telemetry::status_code::error;
        }
        options.tracer->end(std::move(s));
    }

    void on_call(const tools::mcp::message& m, const sender& reply) {
        simdjson::dom::parser parser;
        element params;
        std::string_view name;
        if (m.params.empty() || parser.parse(simdjson::padded_string(m.params)).get(params) || params["name"].get_string().get(name))
            return reply(tools::mcp::make_error_response(m.id, tools::mcp::k_invalid_params, "tools/call needs params {\"name\": ..., \"arguments\": {...}}"));
        element a, meta, token;
        const std::string arguments = !params["arguments"].get(a) ? simdjson::minify(a) : "{}";
        const bool has_meta = !params["_meta"].get(meta) && meta.is_object();
        const std::string progress = has_meta && !meta["progressToken"].get(token) ? simdjson::minify(token) : "";
        std::string_view caller_trace;
        // Only a well-formed one goes on (into the run, and the headers of a tool's own requests).
        if (has_meta && meta["traceparent"].get_string().get(caller_trace)) caller_trace = {};
        if (!caller_trace.empty() && !telemetry::parse_traceparent(caller_trace)) caller_trace = {};
        std::shared_ptr<tools::tool> tool;
        std::shared_ptr<const agent_definition> agent;
        for (const auto& t : options.tools)
            if (t->name() == name) tool = t;
        for (const auto& ag : options.agents)
            if (ag->name == name) agent = ag;
        if (!tool && !agent) return reply(tools::mcp::make_error_response(m.id, tools::mcp::k_invalid_params, "unknown tool '" + std::string(name) + "'"));
        auto cancel = std::make_shared<std::atomic<bool>>(false);
        {
            std::lock_guard lock(mutex);
            if (stopped) return reply(tools::mcp::make_error_response(m.id, k_server_invalid_request, "the server is shutting down"));
            if (running.count(m.id))
                return reply(tools::mcp::make_error_response(m.id, k_server_invalid_request, "request id " + m.id + " is already in use by a running call"));
            running[m.id] = cancel;
            ++n_calls;
        }
        boost::asio::post(*workers, [this, id = m.id, name = std::string(name), tool, agent, arguments, progress, cancel, reply,
                                     caller = std::string(caller_trace)] {
            // The call's server span, a child of the caller's; what the call does is a child of it.
            telemetry::span_start where;
            std::string traceparent = caller;
            if (options.tracer) {
                where = options.tracer->start_root(caller);
                traceparent = telemetry::format_traceparent(where.context);
            }
            const auto started = std::chrono::steady_clock::now();
            std::string r = tool ? call_tool(*tool, arguments, *cancel, traceparent) : call_agent(agent, arguments, cancel, progress, reply, traceparent);
            if (options.tracer) end_call_span(where, started, name, id, r, cancel->load());
            {
                std::lock_guard lock(mutex);
                running.erase(id);  // the id is free again before its answer arrives
            }
            // A cancelled request is not answered (the caller has moved on).
            if (!cancel->load()) reply(tools::mcp::make_response(id, r));
            std::lock_guard lock(mutex);
            if (--n_calls == 0) idle.notify_all();
        });
    }

    void handle(std::string_view text, const sender& reply) {
        auto parsed = tools::mcp::parse_message(text);
        if (!parsed) return reply(tools::mcp::make_error_response("null", k_server_parse_error, parsed.err().message));
        const tools::mcp::message& m = *parsed;
        if (m.type == tools::mcp::message::kind::notification) {
            if (m.method == "notifications/cancelled") {
                simdjson::dom::parser parser;
                element p, id;
                if (!parser.parse(simdjson::padded_string(m.params)).get(p) && !p["requestId"].get(id)) {
                    std::lock_guard lock(mutex);
                    if (auto it = running.find(simdjson::minify(id)); it != running.end()) it->second->store(true);
                }
            }
            return;  // initialized, progress, ...: nothing to answer
        }
        if (m.type != tools::mcp::message::kind::request) return;  // answers to requests this server never sends
        if (m.method == "initialize") {
            std::string version = tools::mcp::supported_protocol_versions().front();
            simdjson::dom::parser parser;
            element p;
            std::string_view asked;
            if (!parser.parse(simdjson::padded_string(m.params)).get(p) && !p["protocolVersion"].get_string().get(asked))
                for (const auto& v : tools::mcp::supported_protocol_versions())
                    if (v == asked) version = v;
            return reply(tools::mcp::make_response(m.id, "{\"protocolVersion\":" + json::quote(version) +
                                                     ",\"capabilities\":{\"tools\":{\"listChanged\":" + (options.tools_list_changed ? "true" : "false") + "}},"
                                                     "\"serverInfo\":{\"name\":\"tachyon\",\"version\":\"0.1.0\"}}"));
        }
        if (m.method == "ping") return reply(tools::mcp::make_response(m.id, "{}"));
        if (m.method == "tools/list") return reply(tools::mcp::make_response(m.id, list_tools()));
        if (m.method == "tools/call") return on_call(m, reply);
        reply(tools::mcp::make_error_response(m.id, tools::mcp::k_method_not_found, "tachyon does not offer '" + m.method + "'"));
    }

    void shutdown() {
        {
            std::lock_guard lock(mutex);
            if (stopped) return;
            stopped = true;
            for (auto& [id, flag] : running) flag->store(true);
        }
        std::unique_lock lock(mutex);
        idle.wait(lock, [this] { return n_calls == 0; });
        lock.unlock();
        if (own_workers) own_workers->join();
    }
};

mcp_server::mcp_server(std::unique_ptr<impl> i) : impl_(std::move(i)) {}
mcp_server::~mcp_server() { shutdown(); }

result<std::unique_ptr<mcp_server>> mcp_server::make(mcp_server_options options, sender send) {
    std::set<std::string> names;
    for (const auto& t : options.tools)
        if (!names.insert(std::string(t->name())).second)
            return make_error(errc::invalid_argument, "mcp serve: tool '" + std::string(t->name()) + "' is offered twice");
    for (const auto& a : options.agents)
        if (!names.insert(a->name).second)
            return make_error(errc::invalid_argument, "mcp serve: agent '" + a->name + "' (" + a->file + ") has the name of another tool or agent");
    if (!options.agents.empty() && options.service == nullptr)
        return make_error(errc::invalid_argument, "mcp serve: agents need an agent service to run on");
    return std::unique_ptr<mcp_server>(new mcp_server(std::make_unique<impl>(std::move(options), std::move(send))));
}

void mcp_server::handle(std::string_view message) { impl_->handle(message, impl_->send); }
void mcp_server::handle(std::string_view message, sender reply) {
    // One message at a time to `reply`, as to the server's sender.
    auto lock = std::make_shared<std::mutex>();
    impl_->handle(message, [lock, reply = std::move(reply)](std::string m) {
        std::lock_guard guard(*lock);
        reply(std::move(m));
    });
}
void mcp_server::shutdown() { impl_->shutdown(); }

}  // namespace tachyon
